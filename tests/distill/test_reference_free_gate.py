"""The gate without a visible reference: the params the judges are told were asked."""

from __future__ import annotations

import pytest

from runtime.distill.step import asked_params

from distill_support import FIXTURES


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    from craftc.emit.compile import compile_to_dir
    from craftc.ir import Plan

    plan_dir = tmp_path_factory.mktemp("reference_free") / "plan"
    assert compile_to_dir(FIXTURES / "mini_ads.craft", plan_dir).ok
    return Plan.model_validate_json((plan_dir / "plan.json").read_text()).recipe


def test_asked_params_are_the_slots_of_the_phrasings_shown_not_words_that_look_like_a_value(recipe):
    drilldown = next(w for w in recipe.workflows if w.name == "spend_drilldown")
    # "spend" is a word of the first question, not the industry it asks for: that comes in turn 2.
    instance = {"params": {"days": 30, "industry": "spend"},
                "turns": [{"ask": "Total spend per advertiser over the last 30 days", "phrasing_index": 0},
                          {"ask": "Only spend advertisers", "phrasing_index": 0},
                          {"ask": "Now split it by week", "phrasing_index": 0}]}
    assert asked_params(drilldown, instance, 0) == {"days": 30}
    assert asked_params(drilldown, instance, 1) == {"days": 30, "industry": "spend"}
    assert asked_params(drilldown, instance, 2) == {"days": 30, "industry": "spend"}   # a conversation keeps them
