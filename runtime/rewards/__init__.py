"""The composite GRPO reward: outcome, process, consistency and judge, each in [0, 1].

See docs/rewards.md for the exact definition of each component.
"""

from runtime.rewards.composite import TurnContext, checks_passed_share, passes_expectations, score_turn
from runtime.rewards.consistency import code_entities, consistency_reward, plan_code_agreement
from runtime.rewards.judge import ddl_leaks, judge_reward, params_honoured
from runtime.rewards.outcome import outcome_reward
from runtime.rewards.process import CodeFindings, inspect_code, process_reward, redundant_joins
from runtime.rewards.schema_terms import SchemaTerms
from runtime.rewards.spec import COMPONENTS, RewardSpec, RewardSpecError
from runtime.rewards.sqlscan import (
    code_literals, filter_predicates, group_keys, literal_values, normalise_literal, parse_queries,
    sql_strings, sql_words,
)
from runtime.rewards.total import total

__all__ = [
    "COMPONENTS", "CodeFindings", "RewardSpec", "RewardSpecError", "SchemaTerms", "TurnContext",
    "checks_passed_share", "code_entities", "code_literals", "consistency_reward", "ddl_leaks", "filter_predicates",
    "group_keys", "inspect_code", "judge_reward", "literal_values", "normalise_literal", "outcome_reward", "params_honoured",
    "parse_queries", "passes_expectations", "plan_code_agreement", "process_reward", "redundant_joins", "score_turn",
    "sql_strings", "sql_words", "total",
]
