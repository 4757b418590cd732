"""A small recipe built directly as IR, so emission is tested without the parser."""

from __future__ import annotations

import pytest

from craftc.ir import (
    Entity, EntityField, EntityKey, EntityRef, Expectation, FieldType, Metric, ModelSpec, Param,
    Recipe, Schema, GRPOStage, SFTStage, Turn, Workflow,
)

SOLUTION = '''"""Rank the ${n} campaigns with the most clicks."""
result = api.query("SELECT name, clicks FROM campaign ORDER BY clicks DESC").head(${n})
'''


def make_recipe(**overrides) -> Recipe:
    """A two-entity shop recipe with one workflow and an SFT + GRPO pair of stages."""
    schema = Schema(
        name="shop", version=1, doc="A tiny ad shop", source="schema.craft",
        entities=(
            Entity(name="Advertiser", table="raw.adv", view="advertiser",
                   key=EntityKey(name="id", column="adv_id"),
                   fields=(EntityField(name="name", type=FieldType(kind="string"), column="adv_name"),)),
            Entity(name="Campaign", doc="A budgeted campaign", table="raw.cmp", view="campaign",
                   key=EntityKey(name="id", column="cmp_id"),
                   fields=(EntityField(name="name", type=FieldType(kind="string"), column="name"),
                           EntityField(name="clicks", type=FieldType(kind="int"), column="clk")),
                   refs=(EntityRef(name="advertiser", target="Advertiser", column="adv_id"),)),
        ),
        metrics=(Metric(name="clicks_total", doc="All clicks", expr="sum(Campaign.clicks)",
                        sql="sum(campaign.clicks)", entities=("Campaign",)),),
    )
    workflow = Workflow(
        name="top_clicks", kind="workflow", params=(Param(name="n", kind="range", low=2, high=5),),
        entities=("Campaign",), metrics=("clicks_total",),
        turns=(Turn(asks=("Which {n} campaigns have the most clicks?",), solution="solutions/top_clicks/1.py",
                    expectations=(Expectation(kind="same_rows_as_solution", ordered=True),)),),
    )
    fields = dict(
        name="shop_agent", seed=7, schema=schema, workflows=(workflow,),
        models=(ModelSpec(name="tiny_moe", source="tiny_moe"),),
        stages=(SFTStage(name="sft", base="tiny_moe", epochs=1),
                GRPOStage(name="grpo", after="sft", base="tiny_moe", steps=4, lr=1e-5)),
    )
    fields.update(overrides)
    return Recipe(**fields)


@pytest.fixture
def recipe() -> Recipe:
    return make_recipe()


@pytest.fixture
def solutions() -> dict[str, str]:
    return {"solutions/top_clicks/1.py": SOLUTION}
