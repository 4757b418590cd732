"""The distill step keeps what it paid for: the teacher cache, failures, budget, cost.

Every test distils the mini ads recipe with an openai teacher against the fake server of
teacher_server.py (latency, injected 429s and 500s), never the network.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distill_support import SEED, _run_step, compile_variant
from teacher_server import TeacherServer

from runtime.step_context import StepError

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = "teacher synthetic { candidates 6  noise 0.6 }"
OPENAI = ('teacher openai {{ model "teacher-model"  base_url env("CRAFT_TEST_TEACHER_URL")  candidates 4  '
          'instances 4  concurrency 4  timeout 10s  {extra}}}')
CONCURRENCY = 4


def _plan(root: Path, extra: str = "max_retries 2 "):
    return compile_variant(root, {SYNTHETIC: OPENAI.format(extra=extra)})


def _run_dir(compiled, path: Path) -> Path:
    """A run dir holding only the world step's output."""
    _, _, source = compiled
    (path / "world").mkdir(parents=True)
    for name in ("warehouse.duckdb", "manifest.json"):
        shutil.copy(source / "world" / name, path / "world" / name)
    return path


def _distill(plan, plan_dir, run_dir):
    partial = run_dir / ".distill.partial"
    if partial.exists():       # the runner deletes an interrupted step's dir before it reruns the step
        shutil.rmtree(partial)
    return _run_step(plan, plan_dir, run_dir, "distill")


def _cached(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "teacher_cache" / "answers.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


@pytest.fixture(scope="module")
def openai_plan(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("openai_teacher"))


@pytest.fixture(scope="module")
def reference(openai_plan, compiled, tmp_path_factory):
    """An uninterrupted distillation: its candidates, its metrics and the server's counts."""
    plan, plan_dir = openai_plan
    run_dir = _run_dir(compiled, tmp_path_factory.mktemp("reference") / "run")
    with TeacherServer(latency=0.005, flaky=0.1) as server:
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            result = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    return (run_dir / "distill" / "candidates.jsonl").read_bytes(), result.metrics, server


def test_the_manifest_counts_the_tokens_the_server_reported(reference):
    candidates, metrics, server = reference
    cost = metrics["teacher_cost"]
    lines = candidates.decode().splitlines()
    assert cost["answers"] == len(lines) == metrics["candidates"] == sum(server.answered.values())
    assert cost["prompt_tokens"] == server.prompt_tokens > 0
    assert cost["completion_tokens"] == server.completion_tokens > 0
    assert cost["tokens"] == server.prompt_tokens + server.completion_tokens
    assert cost["paid_this_run"] == {"prompt_tokens": server.prompt_tokens,
                                     "completion_tokens": server.completion_tokens}
    per_workflow = cost["per_workflow"]
    assert sum(w["prompt_tokens"] for w in per_workflow.values()) == server.prompt_tokens
    assert sum(w["completion_tokens"] for w in per_workflow.values()) == server.completion_tokens
    assert sum(w["candidates"] for w in per_workflow.values()) == len(lines)
    # Every injected 429 and 500 was retried and counted; no answer was asked for twice.
    assert cost["retries"] == server.status[429] + server.status[500] > 0
    assert cost["failed"] == 0 and cost["reused"] == 0 and cost["sent"] == len(lines)
    assert max(server.answered.values()) == 1


def test_the_funnel_sums_the_teachers_tokens_per_workflow(reference):
    from runtime.distill.funnel import build_funnel, funnel_markdown

    candidates, metrics, server = reference
    records = [json.loads(line) for line in candidates.decode().splitlines()]
    outcomes = [{"candidate_id": r["candidate_id"], "gate": None if k % 3 else "execution",
                 "reason_class": "error", "reason": "x", "accepted": bool(k % 3), "would_reject": {}}
                for k, r in enumerate(records)]
    funnel = build_funnel(outcomes, {r["candidate_id"]: r for r in records}, ("execution",))
    teacher = funnel["teacher"]
    assert teacher["prompt_tokens"] == server.prompt_tokens
    assert teacher["completion_tokens"] == server.completion_tokens
    assert teacher["per_workflow"] == {
        w: {**c, "accepted": teacher["per_workflow"][w]["accepted"],
            "tokens_per_accepted": teacher["per_workflow"][w]["tokens_per_accepted"]}
        for w, c in metrics["teacher_cost"]["per_workflow"].items()}
    assert teacher["accepted"] == funnel["accepted"]
    assert "## Teacher tokens" in funnel_markdown(funnel)


def test_a_rerun_sends_nothing_and_writes_the_same_candidates(reference, openai_plan, compiled, tmp_path):
    plan, plan_dir = openai_plan
    candidates, _, _ = reference
    run_dir = _run_dir(compiled, tmp_path / "run")
    with TeacherServer(latency=0.005, flaky=0.1) as server:
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            first = _distill(plan, plan_dir, run_dir)
            shutil.rmtree(run_dir / "distill")
            posts = server.posts
            second = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    assert server.posts == posts, "the rerun asked the server again"
    assert second.metrics["teacher_cost"]["reused"] == first.metrics["candidates"]
    assert second.metrics["teacher_cost"]["sent"] == 0
    assert second.metrics["teacher_cost"]["paid_this_run"] == {"prompt_tokens": 0, "completion_tokens": 0}
    assert second.metrics["teacher_cost"]["tokens"] == first.metrics["teacher_cost"]["tokens"]
    assert (run_dir / "distill" / "candidates.jsonl").read_bytes() == candidates


_CHILD = """
import sys
sys.path[:0] = [{root!r}, {tests!r}]
from pathlib import Path
from rich.console import Console
from craftc.ir import Plan
from runtime.distill.step import run_distill
from runtime.step_context import StepContext
plan_dir, run_dir = Path({plan_dir!r}), Path({run_dir!r})
plan = Plan.model_validate_json((plan_dir / "plan.json").read_text())
out = run_dir / ".distill.partial"
out.mkdir()
run_distill(StepContext(plan, plan_dir, run_dir, out, Console(file=sys.stderr), {seed}))
"""


def test_kill_9_mid_step_then_rerun_pays_for_no_answer_twice(reference, openai_plan, compiled, tmp_path):
    plan, plan_dir = openai_plan
    candidates, metrics, _ = reference
    total = metrics["candidates"]
    run_dir = _run_dir(compiled, tmp_path / "run")
    with TeacherServer(latency=0.04, flaky=0.1) as server:
        env = {**os.environ, "CRAFT_TEST_TEACHER_URL": server.url}
        script = _CHILD.format(root=str(ROOT), tests=str(ROOT / "tests" / "distill"), plan_dir=str(plan_dir),
                               run_dir=str(run_dir), seed=SEED)
        child = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while sum(server.answered.values()) < 0.3 * total:
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        while server.in_flight:          # the server still answers what it was asked, to a closed socket
            time.sleep(0.01)
        answered_at_kill = set(server.answered)
        kept = _cached(run_dir)
        assert 0.3 * total <= len(answered_at_kill) < total, "the kill came after the step had finished"
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            result = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    resent = {key for key, n in server.answered.items() if n > 1}
    print(f"killed with {len(answered_at_kill)} of {total} answered, {kept} in the cache; the rerun sent "
          f"{result.metrics['teacher_cost']['sent']}, {len(resent)} of them answered before")
    # Only answers received and not yet committed when the process died are asked again:
    # at most one per worker.
    assert resent <= answered_at_kill
    assert len(resent) == len(answered_at_kill) - kept <= CONCURRENCY
    assert result.metrics["teacher_cost"]["reused"] == kept
    assert result.metrics["teacher_cost"]["sent"] == total - kept
    assert len(server.answered) == total
    assert (run_dir / "distill" / "candidates.jsonl").read_bytes() == candidates


def _broken(ask: str) -> bool:
    return "waste the most money" in ask


def test_requests_failing_after_every_retry_are_recorded_and_the_step_goes_on(compiled, tmp_path, reference):
    plan, plan_dir = _plan(tmp_path / "plan", "max_failed 15%  max_retries 2 ")
    _, metrics, _ = reference
    run_dir = _run_dir(compiled, tmp_path / "run")
    with TeacherServer(flaky=0.1, broken=_broken) as server:
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            result = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    failures = [json.loads(line) for line in (run_dir / "distill" / "teacher_failures.jsonl").read_text().splitlines()]
    assert failures and {f["workflow"] for f in failures} == {"wasted_spend"}
    assert all(f["attempts"] == 3 and "HTTP 500" in f["error"] for f in failures)
    cost = result.metrics["teacher_cost"]
    assert cost["failed"] == result.metrics["failed"] == len(failures)
    assert result.metrics["candidates"] == metrics["candidates"] - len(failures)
    written = [json.loads(line) for line in (run_dir / "distill" / "candidates.jsonl").read_text().splitlines()]
    assert len(written) == result.metrics["candidates"] and not any(c["workflow"] == "wasted_spend" for c in written)
    assert {f["candidate_id"] for f in failures}.isdisjoint(c["candidate_id"] for c in written)


def test_past_max_failed_the_step_stops_with_a_located_message_and_the_rerun_resumes(compiled, tmp_path):
    plan, plan_dir = _plan(tmp_path / "plan", "max_failed 1%  max_retries 1 ")
    run_dir = _run_dir(compiled, tmp_path / "run")
    with TeacherServer(broken=_broken) as server:
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            with pytest.raises(StepError) as err:
                _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    message = str(err.value)
    assert "failed after every retry, more than `max_failed 1.00%`" in message, message
    assert "/t1/c" in message and "HTTP 500" in message
    assert str(run_dir / "teacher_cache" / "answers.sqlite") in message and "raise `max_failed`" in message
    kept = _cached(run_dir)
    assert kept == len(server.answered) > 0
    with TeacherServer() as healthy:
        os.environ["CRAFT_TEST_TEACHER_URL"] = healthy.url
        try:
            result = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    assert result.metrics["teacher_cost"]["reused"] == kept
    assert sum(healthy.answered.values()) == result.metrics["candidates"] - kept
    assert set(healthy.answered).isdisjoint(server.answered)


def test_a_token_budget_stops_cleanly_and_a_higher_one_resumes(reference, compiled, tmp_path):
    candidates, metrics, _ = reference
    half = metrics["teacher_cost"]["tokens"] // 2
    run_dir = _run_dir(compiled, tmp_path / "run")
    plan, plan_dir = _plan(tmp_path / "low", f"max_retries 2  budget {half} ")
    with TeacherServer(latency=0.005, flaky=0.1) as server:
        os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
        try:
            with pytest.raises(StepError, match=f"teacher budget reached: .* of `budget {half}` tokens") as err:
                _distill(plan, plan_dir, run_dir)
            assert "Raise `budget` in the teacher block" in str(err.value)
            kept = _cached(run_dir)
            assert 0 < kept < metrics["candidates"]
            posts = server.posts
            with pytest.raises(StepError, match="teacher budget reached"):      # the same budget: nothing sent
                _distill(plan, plan_dir, run_dir)
            assert server.posts == posts
            plan, plan_dir = _plan(tmp_path / "high", f"max_retries 2  budget {half * 4} ")
            result = _distill(plan, plan_dir, run_dir)
        finally:
            del os.environ["CRAFT_TEST_TEACHER_URL"]
    assert result.metrics["teacher_cost"]["reused"] == kept
    assert max(server.answered.values()) == 1
    assert (run_dir / "distill" / "candidates.jsonl").read_bytes() == candidates


def test_a_corrupt_cache_is_named_with_the_fix_and_left_as_it_is(openai_plan, compiled, tmp_path, monkeypatch):
    plan, plan_dir = openai_plan
    monkeypatch.setenv("CRAFT_TEST_TEACHER_URL", "http://127.0.0.1:9/v1")
    run_dir = _run_dir(compiled, tmp_path / "run")
    cache = run_dir / "teacher_cache" / "answers.sqlite"
    cache.parent.mkdir()
    cache.write_bytes(b"not a database " * 100)
    with pytest.raises(StepError) as err:
        _distill(plan, plan_dir, run_dir)
    assert f"teacher cache `{cache}` cannot be used" in str(err.value)
    assert f"mv {cache} {cache}.bad" in str(err.value)
    assert cache.read_bytes() == b"not a database " * 100


def test_an_unreachable_endpoint_is_named_and_a_full_cache_needs_none(reference, openai_plan, compiled, tmp_path):
    from distill_support import _free_port

    plan, plan_dir = openai_plan
    candidates, _, _ = reference
    run_dir = _run_dir(compiled, tmp_path / "run")
    url = f"http://127.0.0.1:{_free_port()}/v1"
    os.environ["CRAFT_TEST_TEACHER_URL"] = url
    try:
        with pytest.raises(StepError, match=f"cannot reach {url}/models .*start the server"):
            _distill(plan, plan_dir, run_dir)
        with TeacherServer() as server:
            os.environ["CRAFT_TEST_TEACHER_URL"] = server.url
            _distill(plan, plan_dir, run_dir)
        shutil.rmtree(run_dir / "distill")
        os.environ["CRAFT_TEST_TEACHER_URL"] = url       # down again: every answer is cached
        result = _distill(plan, plan_dir, run_dir)
    finally:
        del os.environ["CRAFT_TEST_TEACHER_URL"]
    assert result.metrics["teacher_cost"]["sent"] == 0
    assert (run_dir / "distill" / "candidates.jsonl").read_bytes() == candidates
