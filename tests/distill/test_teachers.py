"""Teacher backends: the openai backend against a real local server, clear errors for
a wrong URL and a missing vLLM, and the synthetic teacher's determinism."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from craftc.ir import BlockFormat, Teacher
from runtime.distill.teachers import TeacherError, TeacherRequest, TeacherUnreachable, make_teacher
from distill_support import _free_port

REQUEST = TeacherRequest("You are an analyst.", ({"role": "user", "content": "Top 3 campaigns by CTR?"},), 2, 11,
                         {"ask": "Top 3 campaigns by CTR?", "params": {"n": 3}, "plan": "Rank campaigns by CTR.",
                          "code": 'result = api.query("SELECT 1 AS x LIMIT 3")'})


def test_wrong_url_fails_fast_with_the_url_and_the_fix():
    port = _free_port()  # nothing listens here
    teacher = make_teacher(Teacher(kind="openai", model="m", base_url=f"http://127.0.0.1:{port}/v1"),
                           None, BlockFormat())
    started = time.monotonic()
    with pytest.raises(TeacherUnreachable) as err:
        teacher.generate([REQUEST])
    assert time.monotonic() - started < 5
    assert f"http://127.0.0.1:{port}/v1/models" in str(err.value)
    assert "start the server" in str(err.value)


def test_missing_env_var_names_the_variable():
    with pytest.raises(TeacherError, match="CRAFT_TEST_NO_SUCH_URL"):
        make_teacher(Teacher(kind="openai", model="m", base_url_env="CRAFT_TEST_NO_SUCH_URL"), None, BlockFormat())


def test_vllm_missing_says_to_use_a_separate_environment():
    assert "vllm" not in sys.modules
    with pytest.raises(TeacherError, match="separate environment"):
        make_teacher(Teacher(kind="vllm", model="m"), None, BlockFormat())


def test_synthetic_teacher_is_deterministic_and_labels_noise():
    from craftc.ir import Schema

    schema = Schema(name="s", version=1, source="s.craft")
    teacher = make_teacher(Teacher(kind="synthetic", noise=0.5), schema, BlockFormat())
    many = [TeacherRequest(REQUEST.system, REQUEST.messages, 8, seed, REQUEST.context) for seed in range(10)]
    first, second = teacher.generate(many), teacher.generate(many)
    assert [c.text for c in first] == [c.text for c in second]
    assert teacher.name == "synthetic teacher"
    kinds = {c.metadata["noise_kind"] for c in first}
    assert None in kinds and len(kinds) > 3
    assert all(c.metadata["clean"] == (c.metadata["noise_kind"] is None) for c in first)


def test_scratchpad_task_and_both_open_a_first_turn_with_the_workflows_doc_and_keep_everything_else():
    from craftc.ir import Schema
    from runtime.distill.blocks import parse_turn

    schema = Schema(name="s", version=1, source="s.craft")
    first = TeacherRequest(REQUEST.system, REQUEST.messages, 4, 11,
                           {**REQUEST.context, "task": "Best campaigns by click-through rate"})
    follow_up = TeacherRequest(REQUEST.system, REQUEST.messages, 4, 11, {**REQUEST.context, "task": ""})
    question, task, both = (make_teacher(Teacher(kind="synthetic", noise=0.0, scratchpad=pad), schema, BlockFormat())
                            for pad in ("question", "task", "both"))

    def thinks(teacher, request):
        return [parse_turn(c.text, BlockFormat()).think.splitlines() for c in teacher.generate([request])]

    for restated, named, named_then_restated in zip(thinks(question, first), thinks(task, first), thinks(both, first)):
        assert "Top 3 campaigns by CTR?" in restated[0]                 # the question, word for word
        assert named[0] == "Task: Best campaigns by click-through rate."
        assert named[1:] == restated[1:] and "Parameters: n = 3." in named     # the same draws after it
        assert named_then_restated == [named[0], *restated]
    # A later turn has no task of its own: it restates its question under every setting.
    assert thinks(task, follow_up) == thinks(question, follow_up) == thinks(both, follow_up)


def test_openai_teacher_distills_against_a_real_server(served_model, compiled):
    from runtime.distill.funnel import build_funnel
    from runtime.distill.gates import sandbox_limits
    from runtime.distill.step import gate_candidates
    from runtime.layout import API_FACTORY
    from runtime.sandbox import SandboxPool

    model, url = served_model
    plan, plan_dir, run_dir = compiled
    spec = Teacher(kind="openai", model=model, base_url=url, max_new_tokens=24, concurrency=2, timeout_s=30)
    teacher = make_teacher(spec, plan.recipe.schema_, BlockFormat())
    candidates = teacher.generate([REQUEST, REQUEST])
    assert len(candidates) == 4 and all(c.metadata["teacher"] == "openai" for c in candidates)
    # The random model's text fails the gates; the pipeline still runs and counts them.
    import json

    if not (run_dir / "distill").exists():
        from distill_support import _run_step
        _run_step(plan, plan_dir, run_dir, "distill")
    instances = json.loads((run_dir / "distill" / "instances.json").read_text())
    train = next(i for i in instances if i["split"] == "train" and i["workflow"] == "spend_by_advertiser")
    records = [{"candidate_id": f"{train['instance_id']}/t1/c{k}", "instance_id": train["instance_id"],
                "workflow": train["workflow"], "turn": 0, "text": c.text, "metadata": c.metadata}
               for k, c in enumerate(candidates)]
    with SandboxPool(1, run_dir / "world" / "warehouse.duckdb", sandbox_limits(plan.recipe), API_FACTORY) as pool:
        outcomes, _ = gate_candidates(plan.recipe, instances, records, pool)
    funnel = build_funnel(outcomes, {r["candidate_id"]: r for r in records}, plan.recipe.gates.order)
    assert funnel["candidates"] == 4, "no candidate was set aside: the instance's reference has rows"
    assert funnel["gates"][0]["entered"] == 4
    assert sum(g["rejected"] for g in funnel["gates"]) + funnel["accepted"] == 4
