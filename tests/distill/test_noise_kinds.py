"""The synthetic teacher's `misplaced_field` corruption and the `noise_kinds` setting."""

from __future__ import annotations

import random
from typing import get_args

from craftc.ir import DEFAULT_NOISE_KINDS as IR_DEFAULT, NoiseKind
from runtime.distill.noise import DEFAULT_NOISE_KINDS, NOISE_KINDS, NoiseContext, Turn3, corrupt
from runtime.distill.vocabulary import SchemaVocabulary

FIELDS = {"daily_stat": frozenset({"ad_id", "cost", "date"}), "ad": frozenset({"id", "ad_group_id"}),
          "advertiser": frozenset({"id", "name", "industry"})}
CODE = '''sql = """
SELECT a.name AS advertiser, sum(s.cost) AS spend
FROM daily_stat s
JOIN ad ON ad.id = s.ad_id
JOIN advertiser a ON a.id = ad.id
WHERE s.date > (SELECT max(d.date) FROM daily_stat d)
GROUP BY a.name
"""
result = api.query(sql)'''


def _moved(seed: int) -> str:
    ctx = NoiseContext(SchemaVocabulary(), {}, {}, lambda turn: turn.code, FIELDS)
    out = corrupt(Turn3("think", "plan", CODE), "misplaced_field", ctx, random.Random(seed))
    assert out is not None
    return out.code


def test_a_field_moves_to_another_alias_of_its_select_that_lacks_it():
    seen = set()
    for seed in range(40):
        code = _moved(seed)
        changed = [(old, new) for old, new in zip(CODE.splitlines(), code.splitlines()) if old != new]
        assert len(changed) == 1, changed
        old, new = changed[0]
        assert "JOIN" not in old, "a join condition keeps its names: an alias there may not be in scope yet"
        assert "(SELECT max(d.date) FROM daily_stat d)" in new or "(SELECT" not in old, \
            "the subquery has one view: nothing of it moves, and nothing moves into it"
        seen.add(new.strip())
    assert "SELECT s.name AS advertiser, sum(s.cost) AS spend" in seen
    assert "SELECT a.name AS advertiser, sum(a.cost) AS spend" in seen
    assert "WHERE a.date > (SELECT max(d.date) FROM daily_stat d)" in seen


def test_a_query_of_one_view_has_nowhere_to_move_a_field():
    ctx = NoiseContext(SchemaVocabulary(), {}, {}, lambda turn: turn.code, FIELDS)
    code = 'result = api.query("SELECT s.cost FROM daily_stat s")'
    assert corrupt(Turn3("t", "p", code), "misplaced_field", ctx, random.Random(0)) is None


def test_the_compiler_and_the_teacher_know_the_same_kinds_and_default():
    assert get_args(NoiseKind) == NOISE_KINDS
    assert IR_DEFAULT == DEFAULT_NOISE_KINDS == tuple(k for k in NOISE_KINDS if k != "misplaced_field")
