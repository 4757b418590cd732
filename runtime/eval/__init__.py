"""Evaluation of every arm against the schema-stuffed baseline (see docs/evaluation.md)."""

from runtime.eval.metrics import METRICS, discovery_loops, metric_values, summarise, turn_passed
from runtime.eval.scoring import keeps_constraints, required_constraints, score_episode
from runtime.eval.stats import bootstrap_mean, wilson

__all__ = [
    "METRICS", "bootstrap_mean", "discovery_loops", "keeps_constraints", "metric_values",
    "required_constraints", "score_episode", "summarise", "turn_passed", "wilson",
]
