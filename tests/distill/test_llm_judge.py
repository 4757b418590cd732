"""LLM judges in gate 3: a prompt from the plan, strict JSON verdicts, abstentions,
per-judge figures in the funnel, an on-disk cache that makes a rerun free, and a
clear stop when the endpoint goes away."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from distill_support import _run_step, compile_variant
from judge_server import JudgeServer

from runtime.distill.llm_judge import CACHE_FILE, parse_verdict
from runtime.step_context import StepError

GATE = "gate judge     { judges plan_code, prompt_params, no_ddl_leak  vote unanimous }"
# The test server answers at once and fails with HTTP 503, never by hanging: the long
# timeout only keeps a busy machine (a training run beside the suite) from failing a test.
LLM_GATE = """judge business {
    kind llm  judgement business
    backend { kind openai  model "judge-model"  base_url env("CRAFT_TEST_JUDGE_URL")  concurrency 4  max_retries 0  timeout 60s }
  }
  gate judge     { judges plan_code, prompt_params, no_ddl_leak, business  vote unanimous }"""
TEACHER = "teacher synthetic { candidates 6  noise 0.6 }"
# Each test gates every candidate (a sandbox job each) and asks the judge about it: eight
# training instances per workflow (the fixture's eval draws about 48) still give a few
# hundred candidates, every noise kind among them and more than the 20 a server answers
# before it goes away.
SMALL_TEACHER = "teacher synthetic { candidates 6  noise 0.6  instances 8 }"


@pytest.fixture(scope="module")
def distilled_with_llm_judge(compiled, tmp_path_factory):
    """The mini recipe with an llm judge in gate 3, compiled and distilled once."""
    _, _, source = compiled
    root = tmp_path_factory.mktemp("llm_judge")
    plan, plan_dir = compile_variant(root / "recipe", {GATE: LLM_GATE, TEACHER: SMALL_TEACHER})
    run_dir = root / "run"
    shutil.copytree(source / "world", run_dir / "world")
    _run_step(plan, plan_dir, run_dir, "distill")
    return plan, plan_dir, run_dir


@pytest.fixture
def judged_plan(distilled_with_llm_judge, tmp_path):
    """(plan, plan_dir, run_dir): a fresh copy of the distilled run, with no verdict cache."""
    plan, plan_dir, source = distilled_with_llm_judge
    run_dir = tmp_path / "run"
    for name in ("world", "distill"):
        shutil.copytree(source / name, run_dir / name)
    return plan, plan_dir, run_dir


def _gate(plan, plan_dir, run_dir):
    for name in ("gate", ".gate.partial"):
        if (run_dir / name).exists():
            shutil.rmtree(run_dir / name)
    _run_step(plan, plan_dir, run_dir, "gate")
    return json.loads((run_dir / "gate/funnel.json").read_text())


def _cached(run_dir) -> int:
    with sqlite3.connect(run_dir / "judge_cache" / CACHE_FILE) as db:
        return db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]


def test_only_a_strict_json_verdict_counts():
    assert parse_verdict('{"verdict": "pass", "reason": "fine"}') == (True, "fine")
    for text in ('VERDICT: PASS', '{"verdict": "PASS", "reason": "x"}', '{"verdict": "pass"}',
                 '{"verdict": "pass", "reason": "x", "score": 1}', '```json\n{"verdict": "pass", "reason": "x"}\n```'):
        assert parse_verdict(text)[0] is None, text


def test_the_plan_holds_the_judge_prompt_and_the_gate_reads_it(judged_plan, monkeypatch):
    plan, plan_dir, run_dir = judged_plan
    prompt = (plan_dir / "prompts/judges/business.md").read_text()
    assert "## system" in prompt and "$plan" in prompt and '"verdict"' in prompt
    with JudgeServer() as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        _gate(plan, plan_dir, run_dir)
    manifest = json.loads((run_dir / "gate/manifest.json").read_text())
    assert manifest["metrics"]["judges"]["business"]["cost"]["requests"] == server.requests


def test_funnel_reports_reject_rate_abstentions_and_kappa_per_judge(judged_plan, monkeypatch):
    plan, plan_dir, run_dir = judged_plan
    with JudgeServer() as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        funnel = _gate(plan, plan_dir, run_dir)
    per_judge = funnel["judges"]["per_judge"]
    assert set(per_judge) == {"plan_code", "prompt_params", "no_ddl_leak", "business"}
    business = per_judge["business"]
    assert business["abstained"] > 0, "every seventh reply is malformed"
    assert 0 < business["reject_rate"] < 1
    assert business["cost"]["requests"] == server.requests > 0
    assert business["cost"]["prompt_tokens"] > 0
    pairs = {tuple(k["judges"]): k for k in funnel["judges"]["kappa"]}
    assert len(pairs) == 6
    leak = pairs[("no_ddl_leak", "business")]
    assert leak["candidates"] == business["candidates"] - business["abstained"]
    assert leak["kappa"] is not None and leak["kappa"] > 0.2, "both catch leaked DDL: agreement beyond chance"
    markdown = (run_dir / "gate/funnel.md").read_text()
    assert "## Judges" in markdown and "Cohen's kappa" in markdown


def test_a_rerun_with_a_warm_cache_sends_no_request(judged_plan, monkeypatch):
    plan, plan_dir, run_dir = judged_plan
    with JudgeServer() as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        first = _gate(plan, plan_dir, run_dir)
        sent = server.requests
        second = _gate(plan, plan_dir, run_dir)
    assert sent > 0 and server.requests == sent, "the second gate run asked the server nothing"
    assert first["judges"] == {**second["judges"], "per_judge": {
        name: {**j, **({"cost": first["judges"]["per_judge"][name]["cost"]} if "cost" in j else {})}
        for name, j in second["judges"]["per_judge"].items()}}
    assert second["judges"]["per_judge"]["business"]["cost"]["cached"] == second["judges"]["per_judge"]["business"]["candidates"]


def test_malformed_verdicts_are_abstentions_and_the_vote_goes_on_without_them(judged_plan, monkeypatch):
    plan, plan_dir, run_dir = judged_plan
    with JudgeServer(mode="malformed") as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        funnel = _gate(plan, plan_dir, run_dir)
    business = funnel["judges"]["per_judge"]["business"]
    assert business["abstained"] == business["candidates"] and business["reject_rate"] is None
    assert funnel["accepted"] > 0, "the deterministic judges still decide"


def test_a_server_that_goes_away_stops_the_gate_with_one_line_and_the_rerun_resumes(judged_plan, monkeypatch):
    plan, plan_dir, run_dir = judged_plan
    with JudgeServer(fail_after=20) as server:
        monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", server.url)
        with pytest.raises(StepError) as err:
            _gate(plan, plan_dir, run_dir)
        message = str(err.value)
        assert "\n" not in message and server.url in message and "llm judge `business`" in message
        assert not (run_dir / "gate").exists(), "no gate output is written"
        cached = _cached(run_dir)
        assert 0 < cached <= 20
        server.fail_after, server.requests = None, 0
        funnel = _gate(plan, plan_dir, run_dir)
    total = funnel["judges"]["per_judge"]["business"]["candidates"]
    assert server.requests == _cached(run_dir) - cached, "only what was not cached is asked again"
    assert server.requests < total


def test_a_server_that_is_down_is_named(judged_plan, monkeypatch):
    from distill_support import _free_port

    plan, plan_dir, run_dir = judged_plan
    url = f"http://127.0.0.1:{_free_port()}/v1"
    monkeypatch.setenv("CRAFT_TEST_JUDGE_URL", url)
    with pytest.raises(StepError, match="cannot reach") as err:
        _gate(plan, plan_dir, run_dir)
    assert url.removesuffix("/v1") in str(err.value) and "\n" not in str(err.value)


def test_the_judge_asks_a_real_transformers_server_and_counts_its_replies(served_model, judged_plan):
    """A random tiny model never writes a JSON verdict: every reply is an abstention,
    counted, and the deterministic judges decide."""
    from craftc.ir import Teacher
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.judges import JudgeEnsemble
    from runtime.distill.step import gate_candidates
    from runtime.layout import API_FACTORY
    from runtime.distill.funnel import build_funnel
    from runtime.sandbox import SandboxPool

    model, url = served_model
    plan, plan_dir, run_dir = judged_plan
    backend = Teacher(kind="openai", model=model, base_url=url, max_new_tokens=12, timeout_s=60, concurrency=2)
    judges = tuple(j.model_copy(update={"backend": backend}) if j.name == "business" else j for j in plan.recipe.judges)
    recipe = plan.recipe.model_copy(update={"judges": judges})
    ensemble = JudgeEnsemble.from_recipe(recipe, prompts={"business": (plan_dir / "prompts/judges/business.md").read_text()},
                                         cache_dir=run_dir / "judge_cache")
    instances = json.loads((run_dir / "distill/instances.json").read_text())
    candidates = [json.loads(line) for line in (run_dir / "distill/candidates.jsonl").read_text().splitlines()]
    chosen = [c for c in candidates if c["workflow"] == "spend_by_advertiser"][:4]
    with SandboxPool(1, run_dir / "world/warehouse.duckdb", sandbox_limits(recipe), API_FACTORY) as pool:
        outcomes, _ = gate_candidates(recipe, instances, chosen, pool, None, ensemble)
    funnel = build_funnel(outcomes, {c["candidate_id"]: c for c in chosen}, recipe.gates.order)
    business = funnel["judges"]["per_judge"]["business"]
    assert business["candidates"] == len(outcomes) > 0
    assert business["abstained"] == business["candidates"] and business["reject_rate"] is None
    reasons = [v["reason"] for o in outcomes for v in o["judges"] if v["judge"] == "business"]
    assert all(r.startswith("malformed verdict") for r in reasons)
    assert business["cost"]["requests"] > 0 and business["cost"]["completion_tokens"] > 0
