"""Judges on hand-made PLAN/CODE pairs, the vote modes, and the three-block parser."""

from __future__ import annotations

import pytest

from craftc.ir import BlockFormat, Entity, EntityField, EntityKey, FieldType, Metric, Schema
from runtime.distill.blocks import format_turn, parse_turn
from runtime.distill.code_facts import code_facts
from runtime.distill.judges import (JudgeCase, NoDdlLeakJudge, PlanCodeJudge, PromptParamsJudge,
                                    Verdict, vote)
from runtime.distill.vocabulary import SchemaVocabulary

SCHEMA = Schema(
    name="ads", version=1, source="ads.craft",
    entities=(Entity(name="DailyStat", table="adw.fct_dly_stat", view="daily_stat",
                     key=EntityKey(name="id", column="stat_id"),
                     fields=(EntityField(name="clicks", type=FieldType(kind="int"), column="clk_cnt"),
                             EntityField(name="impressions", type=FieldType(kind="int"), column="imp_cnt"),
                             EntityField(name="cost", type=FieldType(kind="money"), column="cost_micros"))),),
    metrics=(Metric(name="ctr", doc="Click-through rate: clicks per impression",
                    expr="sum(DailyStat.clicks) / sum(DailyStat.impressions)", sql="", entities=("DailyStat",)),
             Metric(name="cpc", doc="Average cost per click, USD",
                    expr="sum(DailyStat.cost) / sum(DailyStat.clicks)", sql="", entities=("DailyStat",))),
)
VOCAB = SchemaVocabulary.from_schema(SCHEMA)
CTR_CODE = 'result = api.query("SELECT sum(clicks) / sum(impressions) AS ctr FROM daily_stat WHERE day > 14")'


@pytest.mark.parametrize("plan, passed", [
    ("Compute the click-through rate over the daily stats.", True),
    ("Compute the CTR.", True),
    ("Compute the average cost per click.", False),          # cost is never read
])
def test_plan_code_checks_that_named_metrics_are_computed(plan, passed):
    verdict = PlanCodeJudge(VOCAB).judge(JudgeCase("q", plan, CTR_CODE, {}))
    assert verdict.passed is passed
    assert verdict.reason


WITH_CLICKS = Schema(
    name="ads", version=1, source="ads.craft",
    entities=SCHEMA.entities + (Entity(name="Click", table="adw.clk", view="click",
                                       key=EntityKey(name="id", column="clk_id")),
                                Entity(name="Keyword", table="adw.kw", view="keyword",
                                       key=EntityKey(name="id", column="kw_id")),
                                Entity(name="Ad", table="adw.ad", view="ad", key=EntityKey(name="id", column="ad_id"))),
    metrics=SCHEMA.metrics + (Metric(name="spend", doc="Spend: total cost, USD", expr="sum(DailyStat.cost)",
                                     sql="", entities=("DailyStat",)),
                              Metric(name="roas", doc="Return on ad spend: value per dollar",
                                     expr="sum(DailyStat.cost) / sum(DailyStat.cost)", sql="",
                                     entities=("DailyStat",))))


@pytest.mark.parametrize("plan, passed", [
    # "clicks" is also a daily-stat field the code reads: the same business word
    ("Count the clicks per day.", True),
    # a metric's name ("cost per click") is not a mention of the Click entity
    ("Compute the average cost per click.", True),
    # nor is "return on ad spend" a mention of ads, although "spend" is a metric too
    ("Compute the return on ad spend per day.", True),
    # an entity the code never touches, under no field of that name either
    ("Count the clicks per keyword.", False),
])
def test_plan_code_does_not_mistake_fields_and_metric_names_for_entities(plan, passed):
    code = 'result = api.query("SELECT day, sum(clicks) AS clicks, sum(cost) / sum(clicks) AS cpc FROM daily_stat")'
    verdict = PlanCodeJudge(SchemaVocabulary.from_schema(WITH_CLICKS)).judge(JudgeCase("q", plan, code, {}))
    assert verdict.passed is passed, verdict.reason


def test_plan_code_reads_sql_assigned_to_a_variable():
    code = 'sql = """\nSELECT sum(cost) / sum(clicks) AS cpc FROM daily_stat\n"""\nresult = api.query(sql)'
    assert PlanCodeJudge(VOCAB).judge(JudgeCase("q", "Average cost per click.", code, {})).passed


@pytest.mark.parametrize("params, passed", [
    ({"days": 14}, True),                  # as an SQL literal
    ({"days": 30}, False),                 # asked 30, code uses 14
    ({"name": "Acme"}, False),
])
def test_prompt_params_wants_every_value_in_the_code(params, passed):
    verdict = PromptParamsJudge(VOCAB).judge(JudgeCase("q", "p", CTR_CODE, params))
    assert verdict.passed is passed
    if not passed:
        assert "never uses" in verdict.reason


def test_prompt_params_accepts_params_lookups_and_python_literals():
    code = 'result = api.query("SELECT * FROM daily_stat WHERE x = ?", [params["name"]]).head(5)'
    assert PromptParamsJudge(VOCAB).judge(JudgeCase("q", "p", code, {"name": "Acme", "n": 5})).passed


@pytest.mark.parametrize("plan, passed, needle", [
    ("Sum clicks and impressions per day.", True, "business words"),
    ("Read adw.fct_dly_stat and add up clk_cnt.", False, "fct_dly_stat"),
    ("SELECT the clicks per day.", False, "SELECT"),
])
def test_no_ddl_leak(plan, passed, needle):
    verdict = NoDdlLeakJudge(VOCAB).judge(JudgeCase("q", plan, CTR_CODE, {}))
    assert (verdict.passed, needle in verdict.reason) == (passed, True)


def test_unparseable_code_fails_plan_code_with_the_syntax_error():
    verdict = PlanCodeJudge(VOCAB).judge(JudgeCase("q", "CTR", "result = api.query(", {}))
    assert not verdict.passed and "does not parse" in verdict.reason


def test_sql_the_tokenizer_cannot_read_fails_plan_code_instead_of_raising():
    # An unclosed quoted identifier stops sqlglot's tokenizer (TokenError, not a
    # ParseError); a model in GRPO writes such code, and the judge must just say no.
    code = 'result = api.query("SELECT \\"name FROM daily_stat")'
    assert any("SQL does not parse" in p for p in code_facts(code).problems)
    assert not PlanCodeJudge(VOCAB).judge(JudgeCase("q", "CTR", code, {})).passed


VERDICTS = [Verdict("a", True, "ok", 3.0), Verdict("b", False, "bad b", 1.0), Verdict("c", False, "bad c", 1.0)]


@pytest.mark.parametrize("mode, threshold, passed", [
    ("majority", 0.5, False),
    ("unanimous", 0.5, False),
    ("weighted", 0.6, True),               # 3 of 5 weight passes
    ("weighted", 0.7, False),
])
def test_vote_modes(mode, threshold, passed):
    result = vote(VERDICTS, mode, threshold)
    assert result.passed is passed
    assert "bad b" in result.reason and f"1/3 judges pass ({mode})" in result.reason


def test_majority_passes_with_one_dissent():
    assert vote(VERDICTS[:1] * 2 + VERDICTS[1:2], "majority").passed


def test_blocks_round_trip_and_report_problems():
    fmt = BlockFormat()
    text = format_turn("think", "Plan it.", "```python\nresult = 1\n```", fmt)
    turn = parse_turn(text, fmt)
    assert (turn.plan, turn.code, turn.complete, turn.problems) == ("Plan it.", "result = 1", True, ())
    truncated = parse_turn(text[: text.index("</CODE>") - 3], fmt)
    assert not truncated.complete
    assert any("unclosed <CODE>" in p for p in truncated.problems)
    missing = parse_turn("<THINK>x</THINK><CODE>result = 1</CODE>", fmt)
    assert missing.problems == ("missing <PLAN> block",)
    answer = parse_turn("<ANSWER>42 campaigns</ANSWER>", fmt)
    assert answer.complete and answer.answer == "42 campaigns"


def test_the_gate_queues_at_most_two_chunks_so_an_interrupt_waits_for_one(compiled):
    from runtime.distill.gates import GateCase, TriGate

    class CountingPool:
        def __init__(self):
            self.batches = 0

        def run_many(self, jobs):
            self.batches += 1
            return [None] * len(jobs)

    plan, _, _ = compiled
    pool = CountingPool()
    text = format_turn("t", "Count the stats.", "result = 1", plan.recipe.format)
    chunks = [[GateCase(f"c{n}", "i", 0, text, "q", {})] for n in range(10)]
    outcomes = TriGate(plan.recipe, pool).run_chunks(chunks)
    first = next(outcomes)
    assert [o.candidate_id for o in first] == ["c0"]
    outcomes.close()  # what an interrupt does to the generator
    assert pool.batches <= 2


def test_a_physical_table_named_like_the_entitys_plural_is_a_business_word():
    from craftc.frontend import load_schema
    from runtime.distill.vocabulary import SchemaVocabulary

    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    hello = load_schema(root / "examples/hello/schema.craft").schema      # table "shop.products"
    vocab = SchemaVocabulary.from_schema(hello)
    plan = "Rank the products by list price, most expensive first."
    assert NoDdlLeakJudge(vocab).judge(JudgeCase("q", plan, "result = 1", {})).passed
    assert not NoDdlLeakJudge(vocab).judge(JudgeCase("q", "Read shop.products.", "result = 1", {})).passed
