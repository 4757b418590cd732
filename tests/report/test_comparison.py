"""Arm against arm: paired differences over the same turns, replicates, and the report's words."""

import math

from runtime.agent import Episode, UserTurn
from runtime.report.comparison import arm_pairs, paired_differences, replicate_results


def _arm(arm, outcomes, split="new_values"):
    """One episode per conversation; ``outcomes`` is a list of per-turn pass flags."""
    return [Episode(f"c{k}", "w", split, arm, [UserTurn(t, "q", final_ok=p, passed=p) for t, p in enumerate(turns)])
            for k, turns in enumerate(outcomes)]


def test_differences_are_paired_over_the_same_turns_and_clustered_by_conversation():
    craft = _arm("craft", [[True, True], [False, False], [True, False]])
    stuffed = _arm("stuffed", [[False, False], [False, False], [True, False]])
    rows = paired_differences({"craft": craft, "stuffed": stuffed})["all"]
    score = next(r for r in rows if r["metric"] == "agent_score")
    # per-turn differences 1, 1 | 0, 0 | 0, 0: mean 1/3; residuals by conversation
    # (2/3 + 2/3), (-1/3 - 1/3), (-1/3 - 1/3) -> se = sqrt(16/9 + 4/9 + 4/9) / 6 = sqrt(24)/18
    assert math.isclose(score["value"], 1 / 3, abs_tol=1e-6)
    assert math.isclose(score["se"], math.sqrt(24) / 18, abs_tol=1e-6)
    assert score["n"] == 6 and score["clusters"] == 3
    assert math.isclose(score["mde"], 2.801585 * score["se"], abs_tol=1e-5)


def test_an_excluded_turn_is_left_out_of_every_comparison():
    craft = _arm("craft", [[True, True]])
    stuffed = _arm("stuffed", [[False, True]])
    for episodes in (craft, stuffed):
        episodes[0].turns[0].excluded = "the reference returns no rows, so any empty answer would pass"
    score = next(r for r in paired_differences({"craft": craft, "stuffed": stuffed})["all"]
                 if r["metric"] == "agent_score")
    assert score["n"] == 1 and score["value"] == 0.0 and score["mde"] is None   # arms never differ: no MDE


def test_the_comparisons_are_craft_against_each_arm_then_each_arm_against_the_baseline():
    assert arm_pairs(["craft", "sft_only", "stuffed"]) == [("craft", "sft_only"), ("craft", "stuffed"),
                                                           ("sft_only", "stuffed")]
    assert arm_pairs(["craft", "stuffed"]) == [("craft", "stuffed")]


def test_replicates_give_each_arm_a_mean_a_spread_and_an_interval_with_both_noises():
    one = {"craft": _arm("craft", [[True], [True], [False], [False]]),
           "stuffed": _arm("stuffed", [[False], [False], [False], [False]])}
    two = {"craft": _arm("craft", [[True], [False], [False], [False]]),
           "stuffed": _arm("stuffed", [[False], [False], [False], [True]])}
    result = replicate_results([one, two])
    craft = result["arms"]["craft"]
    assert craft["per_replicate"] == [0.5, 0.25] and craft["mean"] == 0.375 and craft["replicates"] == 2
    assert math.isclose(craft["sd"], math.sqrt(((0.5 - 0.375) ** 2 + (0.25 - 0.375) ** 2) / 1), abs_tol=1e-6)
    # sampling error from the per-turn scores averaged over replicates: 1, .5, 0, 0 (mean .375)
    sampling = math.sqrt(sum((x - 0.375) ** 2 for x in (1, 0.5, 0, 0))) / 4
    assert math.isclose(craft["se"], math.sqrt(sampling ** 2 + craft["sd"] ** 2 / 2), abs_tol=1e-6)
    difference = result["differences"][0]
    assert (difference["a"], difference["b"]) == ("craft", "stuffed")
    assert difference["per_replicate"] == [0.5, 0.0] and difference["mean"] == 0.25
