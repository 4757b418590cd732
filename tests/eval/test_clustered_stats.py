"""Clustered standard errors (Miller, arXiv 2411.00640) checked against values worked by hand."""

import math

import pytest

from runtime.eval.stats import (
    clustered_mean, minimum_detectable_difference, paired_clustered_difference, replicate_summary,
)

# Three conversations (clusters) of user turns, scored pass (1) or fail (0).
SCORES = [1, 1, 0, 0, 0, 1, 1, 1]
CLUSTERS = ["a", "a", "a", "b", "b", "c", "c", "c"]


def test_the_clustered_mean_matches_the_hand_computed_standard_error():
    # n = 8, mean = 5/8 = 0.625.
    # Residuals summed per cluster:
    #   a: (1-.625) + (1-.625) + (0-.625) =  0.375 + 0.375 - 0.625 =  0.125
    #   b: (0-.625) + (0-.625)            = -1.25
    #   c: 3 * (1-.625)                   =  1.125
    # Squares: 0.015625 + 1.5625 + 1.265625 = 2.84375
    # se = sqrt(2.84375) / 8 = 1.686342 / 8 = 0.210793
    # ci = 0.625 -+ 1.959964 * 0.210793 = 0.625 -+ 0.413146 = [0.211854, 1.038146], clipped to [0, 1].
    out = clustered_mean(SCORES, CLUSTERS)
    assert out == {"value": 0.625, "se": 0.210793, "ci": [0.211854, 1.0], "n": 8, "clusters": 3}
    assert clustered_mean(SCORES, CLUSTERS, bounds=None)["ci"] == [0.211854, 1.038146]


def test_clustering_widens_the_interval_when_a_conversations_turns_fail_together():
    # Whole conversations pass or fail: 4 + 4 + 2 + 2 units, mean 0.5.
    scores = [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0]
    clusters = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    # Clustered: per-cluster residual sums 2, -2, 0 -> se = sqrt(4 + 4 + 0) / 12 = 0.235702.
    # Independent: every residual is -+0.5 -> se = sqrt(12 * 0.25) / 12 = sqrt(3) / 12 = 0.144338.
    clustered = clustered_mean(scores, clusters)
    independent = clustered_mean(scores, range(len(scores)))
    assert clustered["se"] == pytest.approx(math.sqrt(8) / 12, abs=1e-6) == 0.235702
    assert independent["se"] == pytest.approx(math.sqrt(3) / 12, abs=1e-6) == 0.144338
    assert clustered["ci"][0] < independent["ci"][0] and clustered["ci"][1] > independent["ci"][1]
    assert (clustered["clusters"], independent["clusters"]) == (3, 12)


def test_the_paired_difference_matches_the_hand_computed_standard_error_and_p_value():
    # Two arms on the same 12 questions, three conversations of four turns.
    a = [1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0]
    b = [0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1]
    clusters = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    # Differences a - b: a: [1, 1, 1, 0]  b: [0, 0, 0, 0]  c: [1, 0, 0, -1]; mean = 3/12 = 0.25.
    # Residuals per cluster: a: 3 - 4*.25 = 2   b: 0 - 1 = -1   c: 0 - 1 = -1.
    # se = sqrt(4 + 1 + 1) / 12 = sqrt(6) / 12 = 0.204124
    # ci = 0.25 -+ 1.959964 * 0.204124 = 0.25 -+ 0.400076 = [-0.150076, 0.650076]
    # z = 0.25 / 0.204124 = 1.224745; p = erfc(1.224745 / sqrt(2)) = erfc(0.866025) = 0.220671
    out = paired_clustered_difference(a, b, clusters)
    assert out == {"value": 0.25, "se": 0.204124, "ci": [-0.150076, 0.650076], "n": 12, "clusters": 3,
                   "p_value": 0.220671}


def test_units_missing_from_either_arm_are_left_out_of_the_pairing():
    out = paired_clustered_difference([1, None, 1, 0], [0, 1, None, 0], ["a", "a", "b", "c"])
    # Kept: (1, 0) in a and (0, 0) in c -> differences [1, 0], mean 0.5, residuals 0.5 and -0.5.
    assert (out["n"], out["clusters"], out["value"]) == (2, 2, 0.5)
    assert out["se"] == round(math.sqrt(0.5) / 2, 6) == 0.353553


def test_the_minimum_detectable_difference_is_2_8_standard_errors_at_the_defaults():
    # z_0.975 + z_0.8 = 1.959964 + 0.841621 = 2.801585; times 0.1 = 0.280159.
    assert minimum_detectable_difference(0.1) == 0.280159
    # alpha 0.1, power 0.5: 1.644854 + 0 = 1.644854 standard errors.
    assert minimum_detectable_difference(1.0, alpha=0.1, power=0.5) == 1.644854
    assert minimum_detectable_difference(0.0) == 0.0


def test_replicates_add_training_noise_to_the_question_sampling_error():
    # Means 0.5, 0.6, 0.7: mean 0.6, sd = sqrt((0.01 + 0 + 0.01) / 2) = 0.1.
    # se = sqrt(0.05**2 + 0.1**2 / 3) = sqrt(0.0025 + 0.003333) = 0.076376
    # ci = 0.6 -+ 1.959964 * 0.076376 = 0.6 -+ 0.149695 = [0.450305, 0.749695]
    out = replicate_summary([0.5, 0.6, 0.7], sampling_se=0.05)
    assert out == {"mean": 0.6, "sd": 0.1, "min": 0.5, "max": 0.7, "replicates": 3, "se": 0.076376,
                   "ci": [0.450305, 0.749695]}


def test_one_replicate_has_no_spread_and_keeps_the_sampling_error():
    out = replicate_summary([0.4], sampling_se=0.1)
    assert (out["sd"], out["se"], out["replicates"]) == (0.0, 0.1, 1)
    assert out["ci"] == [round(0.4 - 1.959964 * 0.1, 6), round(0.4 + 1.959964 * 0.1, 6)]


def test_one_cluster_gives_no_standard_error():
    # Every residual sits in the one cluster and they sum to zero.
    out = clustered_mean([1, 0, 1, 0], ["a"] * 4)
    assert out == {"value": 0.5, "se": 0.0, "ci": [0.5, 0.5], "n": 4, "clusters": 1}


def test_all_equal_scores_give_a_zero_width_interval_and_no_difference():
    assert clustered_mean([1, 1, 1], ["a", "b", "c"])["ci"] == [1.0, 1.0]
    same = paired_clustered_difference([1, 0, 1], [1, 0, 1], ["a", "b", "c"])
    assert (same["value"], same["se"], same["p_value"]) == (0.0, 0.0, 1.0)
    # A constant nonzero difference has no variance to test against: no p-value.
    assert paired_clustered_difference([1, 1], [0, 0], ["a", "b"])["p_value"] is None


def test_empty_input():
    assert clustered_mean([], []) == {"value": None, "se": 0.0, "ci": [0.0, 0.0], "n": 0, "clusters": 0}
    assert paired_clustered_difference([], [], []) == {"value": None, "se": 0.0, "ci": [0.0, 0.0], "n": 0,
                                                       "clusters": 0, "p_value": None}
    assert replicate_summary([], 0.1)["mean"] is None


def test_counts_clip_only_below():
    out = clustered_mean([0, 0, 10], ["a", "b", "c"], bounds=(0.0, None))
    # mean 10/3; residuals -10/3, -10/3, 20/3 -> se = sqrt(100/9 + 100/9 + 400/9) / 3 = 2.721655
    assert out["se"] == 2.721655 and out["ci"][0] == 0.0 and out["ci"][1] > 3.34


def test_values_and_labels_must_pair_up():
    with pytest.raises(ValueError):
        clustered_mean([1, 0], ["a"])
