"""An eval process (`eval { processes N }`) decodes in the step's own context, a replicate's too."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from runtime.eval import arm_process, processes
from runtime.runner import replicate_dir, replicate_seed
from runtime.step_context import StepContext

FIELDS = ("plan_dir", "run_dir", "out_dir", "seed", "replicate", "replicates")


def test_an_eval_process_rebuilds_the_context_of_replicate_2_of_3(tmp_path, monkeypatch):
    # `craftc run --replicates 3`: replicate 2 trains and evaluates with its own seed in its
    # own run dir; an eval process it starts must decode that replicate's models, not the run's.
    plan = SimpleNamespace(name="the plan")
    run_dir = replicate_dir(tmp_path / "run", 2)
    ctx = StepContext(plan=plan, plan_dir=tmp_path / "plan", run_dir=run_dir, out_dir=run_dir / ".tmp-eval",
                      console=Console(file=io.StringIO()), seed=replicate_seed(7, 2), replicate=2, replicates=3)
    seen = []
    monkeypatch.setattr("runtime.plan.load_plan", lambda plan_dir: plan)
    monkeypatch.setattr("runtime.sandbox.guards.die_with_parent", lambda: None)   # not on the test's own process
    monkeypatch.setattr(arm_process, "decode_arms", lambda child, arms: seen.append((child, arms)))

    command = processes._command(ctx, ["sft_only", "craft"])
    assert command[1:3] == ["-m", "runtime.eval.arm_process"]
    assert arm_process.main(command[3:]) == 0
    [(child, arms)] = seen
    assert arms == ["sft_only", "craft"] and child.plan is plan
    assert {f: getattr(child, f) for f in FIELDS} == {
        **{f: getattr(ctx, f).resolve() for f in ("plan_dir", "run_dir", "out_dir")},
        "seed": replicate_seed(7, 2), "replicate": 2, "replicates": 3}
    assert child.run_dir.parts[-2:] == ("replicates", "r2") and child.seed != 7
