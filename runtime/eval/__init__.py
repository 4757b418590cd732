"""Evaluation of every arm against the schema-stuffed baseline (see docs/evaluation.md)."""

from runtime.eval.failures import FAILURE_CLASSES, ReferenceCatalog, classify_episode, classify_turn, failure_summary
from runtime.eval.metrics import METRICS, discovery_loops, metric_values, per_workflow, summarise, turn_passed
from runtime.eval.scoring import keeps_constraints, required_constraints, score_episode
from runtime.eval.stats import bootstrap_mean, wilson

__all__ = [
    "FAILURE_CLASSES", "METRICS", "ReferenceCatalog", "bootstrap_mean", "classify_episode", "classify_turn",
    "discovery_loops", "failure_summary", "keeps_constraints", "metric_values", "per_workflow",
    "required_constraints", "score_episode", "summarise", "turn_passed", "wilson",
]
