"""Run a compiled plan step by step into a run directory.

Each step's output lives in ``RUN_DIR/<step>/`` with a ``manifest.json``. A step is
*reused* when its inputs hash matches the one in its manifest; the inputs hash
covers exactly the parts of the plan the step reads plus the outputs of the steps it
reads, so a schema edit that only renames physical columns reruns the warehouse
build but reuses distillation and training (the world step reports a hash of the
*logical* data, which a physical rename does not change).

Steps write into a temporary sibling directory that is renamed into place only when
the step finishes, so an interrupted run leaves no half-written step behind and the
next ``craftc run`` resumes from the first step without a manifest.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import shutil
import signal
import time
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from craftc.atomic import remove_leftovers, replace_dir, write_atomic
from craftc.ir import EVAL_DECODING, EVAL_SCOPE, Plan
from runtime.cpu_share import CpuShare, under_load
from runtime.layout import MANIFEST
from runtime.plan import PlanError, load_plan, plan_content_hash
from runtime.step_context import StepContext, StepError, StepResult
from runtime.tracking import TRACKING_DIR, TrackingError, log_step_metrics, require_tracker

__all__ = ["STEPS", "UPSTREAM", "read_manifest", "LOGICAL_READERS", "REPLICATED_STEPS", "replicate_dir", "replicate_seed", "run_plan",
           "select_steps", "step_inputs_hash", "step_plan_parts"]

STEPS: tuple[str, ...] = ("world", "distill", "gate", "dataset", "sft", "grpo", "eval", "report")

# Where each step's code lives; imported only when the step runs, so `craftc run
# --only world` never pays for importing torch.
STEP_FUNCTIONS: dict[str, str] = {
    "world": "runtime.world.step:run_world",
    "distill": "runtime.distill.step:run_distill",
    "gate": "runtime.distill.step:run_gate",
    "dataset": "runtime.distill.step:run_dataset",
    "sft": "runtime.train.step:run_sft_step",
    "grpo": "runtime.train.grpo:run_grpo",
    "eval": "runtime.eval.step:run_eval",
    "report": "runtime.report.step:run_report",
}

# The earlier steps whose outputs each step reads.
UPSTREAM: dict[str, tuple[str, ...]] = {
    "world": (),
    "distill": ("world",),
    "gate": ("world", "distill"),
    "dataset": ("world", "distill", "gate"),
    "sft": ("dataset",),
    "grpo": ("world", "dataset", "sft"),
    "eval": ("world", "dataset", "sft", "grpo"),
    "report": ("sft", "grpo", "eval", "gate"),
}

# What `craftc run --replicates N` runs again for each extra seed, on the run's own data
# (world, distill, gate and dataset are shared: the replicates differ in training noise only).
REPLICATED_STEPS = ("sft", "grpo", "eval")
REPLICATES_DIR = "replicates"

# Training steps, which `--no-launch` prepares (step configs, launch commands) instead of
# running; a later run adopts what the launches trained with these functions.
ADOPTERS: dict[str, str] = {
    "sft": "runtime.train.step:adopt_sft_step",
    "grpo": "runtime.train.grpo:adopt_grpo_step",
}

# Steps that only need the *logical* content of the warehouse: a physical rename
# must not invalidate them.
LOGICAL_READERS = {"distill", "gate", "dataset", "grpo"}

# Eval settings that change only how eval decodes, which held-out split it scores, how many of
# that split's instances (`limit`) or how fast (craftc.ir.EVAL_DECODING, EVAL_SCOPE), not which
# instances are drawn, held out or trained on: the distill, dataset and grpo steps do not read
# them, so raising `limit` for a better-powered dev measurement reruns eval alone. A plan leaves
# a setting at its default out of plan.json, so adding one changes no hash of a plan that never set it.
EVAL_ONLY = EVAL_DECODING + EVAL_SCOPE

# Steps whose metrics go to the recipe's tracker (`track`): the funnel, training, eval.
TRACKED_STEPS = ("gate", "sft", "grpo", "eval")
VERSIONED_PACKAGES = ("craft", "duckdb", "torch", "transformers", "trl", "accelerate", "datasets")


# Steps that save finished work into their staging dir as they go and pick it up again:
# the trainers resume from their last checkpoint (runtime.train.sft, runtime.train.grpo),
# eval reads back the arms it finished (runtime.eval.arm_files). An interrupted run of one
# keeps that dir when its inputs are unchanged, so no finished training step or eval arm
# is redone. The other steps are rebuilt whole: they are cheap or keep their own cache outside.
RESUMABLE_STEPS = ("sft", "grpo", "eval")
RESUME_MARKER = ".craft-inputs-hash"


def _canonical_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _logical_schema(schema: dict) -> dict:
    """The schema without physical bindings: what agent code and prompts can see."""
    # `source` is the spec's file name: saving a binding-only edit as a new file
    # (ads_v1_1.craft) must not look like a logical change.
    physical = {"table", "column", "scale", "source"}

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in physical}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(schema)


def _warehouse_fingerprint(plan: Plan, plan_dir: Path | None) -> list:
    """An existing warehouse is run-time data: rebuilding it in place must rerun the world step."""
    from runtime.world.step import existing_warehouse

    recipe = plan.recipe
    try:
        path = existing_warehouse(recipe, plan_dir or Path("."))
    except StepError:
        path = None          # the world step reports it
    name = recipe.warehouse or os.environ.get(recipe.warehouse_env or "", "")
    if path is None:
        return [name or None, recipe.warehouse_env] if not name else [name, "missing"]
    try:
        stat = path.stat()
    except OSError:
        return [name, "missing"]
    return [name, stat.st_size, stat.st_mtime_ns]


def _plan_parts(step: str, recipe: dict, artifacts: dict[str, str], warehouse: list | None = None) -> dict[str, Any]:
    """The parts of the plan a step reads."""
    stages = recipe["stages"]
    models = recipe["models"]

    def arts(prefix: str) -> dict[str, str]:
        return {k: v for k, v in artifacts.items() if k.startswith(prefix)}

    logical = _logical_schema(recipe["schema"])
    common = {"seed": recipe["seed"]}
    # The eval block's decoding settings shape only how eval generates: changing them
    # must not redraw the instances or rebuild the dataset (and with them retrain).
    drawn = {k: v for k, v in recipe["eval"].items() if k not in EVAL_ONLY}
    parts: dict[str, dict[str, Any]] = {
        "world": {"schema": recipe["schema"], "scale": recipe["scale"], "binding": arts("sql/binding.sql"),
                  "warehouse": warehouse},
        "distill": {"schema": logical, "workflows": recipe["workflows"], "teacher": recipe["teacher"],
                    "format": recipe["format"], "tools": recipe["tools"], "eval": drawn,
                    "solutions": arts("solutions/")},
        "gate": {"schema": logical, "gates": recipe["gates"], "judges": recipe["judges"],
                 "format": recipe["format"], "spec": arts("specs/gates.json"),
                 "judge_prompts": arts("prompts/judges/"), "on_loss": recipe["on_loss"]},
        "dataset": {"prompts": arts("prompts/"), "input_builder": arts("specs/input_builder.json"),
                    "format": recipe["format"], "eval": drawn, "on_loss": recipe["on_loss"]},
        # Only the sft stages' own files: a GRPO setting must not retrain SFT. The eval
        # block's baseline_budget sets the stuffed arm's steps, so it is an SFT input.
        "sft": {"stages": [s for s in stages if s["kind"] == "sft"], "models": models,
                "configs": {k: v for s in stages if s["kind"] == "sft" for k, v in arts(f"stages/{s['name']}/").items()},
                "masking": arts("specs/masking.json"), "baseline_budget": recipe["eval"]["baseline_budget"]},
        # `rows fresh` draws its rows from the workflows, past the instances the splits hold.
        "grpo": {"stages": stages, "models": models, "reward": recipe["reward"],
                 "configs": arts("stages/"), "prompts": arts("prompts/"), "specs": arts("specs/"),
                 "schema": logical, "workflows": recipe["workflows"], "eval": drawn,
                 "solutions": arts("solutions/")},
        "eval": {"eval": recipe["eval"], "stages": stages, "prompts": arts("prompts/"),
                 "input_builder": arts("specs/input_builder.json"),
                 "workflows": recipe["workflows"], "format": recipe["format"]},
        "report": {"eval": recipe["eval"], "reward": recipe["reward"]},
    }
    return {**common, **parts[step]}


def step_plan_parts(step: str, plan_data: dict, physical: bool = True) -> dict[str, str]:
    """The canonical hash of each part of ``plan_data`` (a ``plan.json`` object) that ``step`` reads.

    These are the plan half of :func:`step_inputs_hash`, by part name, so a plan diff
    can say which steps a change reaches and why. With ``physical=False`` the physical
    bindings are left out (the schema's tables, columns and scales, the binding SQL):
    for the world step that is what its ``logical_data_hash`` depends on.
    """
    parts = _plan_parts(step, plan_data["recipe"], plan_data["artifacts"])
    if not physical:
        parts = {k: _logical_schema(v) if k == "schema" else v for k, v in parts.items() if k != "binding"}
    return {name: _canonical_hash(value) for name, value in parts.items()}


def read_manifest(step_dir: Path, status: str = "complete") -> dict | None:
    """A step dir's manifest when it has that status (a finished step's by default), else None."""
    try:
        data = json.loads((step_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("status") == status else None


def _write_manifest(step_dir: Path, manifest: dict) -> None:
    # Atomic: an adopted step's manifest is rewritten in its finished dir, not in staging.
    write_atomic(step_dir / MANIFEST, json.dumps(manifest, sort_keys=True, indent=2, default=str) + "\n")


def _adopt_prepared(step: str, plan: Plan, plan_dir: Path, run_dir: Path, console: Console) -> bool:
    """Complete a step that `--no-launch` prepared, once its launches have trained.

    Returns False when the step was not prepared; raises StepError (naming the launch
    command) when it was but its outputs are not there yet.
    """
    step_dir = run_dir / step
    manifest = read_manifest(step_dir, status="prepared")
    if manifest is None:
        return False
    ctx = StepContext(plan=plan, plan_dir=plan_dir, run_dir=run_dir, out_dir=step_dir, console=console,
                      seed=plan.recipe.seed)
    module_name, func_name = ADOPTERS[step].split(":")
    metrics = getattr(importlib.import_module(module_name), func_name)(ctx, step_dir)
    files, outputs_hash = _outputs(step_dir)
    # Upstream steps adopted first (UPSTREAM order), so the hash names what was trained on.
    _write_manifest(step_dir, {**manifest, "status": "complete", "metrics": metrics, "outputs": files,
                               "outputs_hash": outputs_hash, "launched_by_hand": True,
                               "inputs_hash": step_inputs_hash(step, plan, run_dir, plan_dir)})
    console.print(f"[green]✓[/] {step}: adopted what its launch trained ({step_dir})")
    return True


def _carry_hash(step: str, manifest: dict, reader: str) -> str:
    """What a downstream step sees of an upstream step's output."""
    if step == "world" and reader in LOGICAL_READERS:
        logical = manifest.get("metrics", {}).get("logical_data_hash")
        if logical:
            return f"logical:{logical}"
    return manifest["outputs_hash"]


def replicate_seed(seed: int, replicate: int) -> int:
    """The training seed of replicate ``replicate`` (0 is the recipe's own seed).

    >>> replicate_seed(7, 0), replicate_seed(7, 1) == replicate_seed(7, 1), replicate_seed(7, 1) != replicate_seed(7, 2)
    (7, True, True)
    """
    if replicate == 0:
        return seed
    return int(hashlib.sha256(f"{seed}:replicate:{replicate}".encode()).hexdigest()[:8], 16) % (2**31 - 1)


def replicate_dir(run_dir: Path, replicate: int) -> Path:
    """Where replicate ``replicate`` keeps its sft, grpo and eval steps (0: the run dir)."""
    return run_dir if replicate == 0 else run_dir / REPLICATES_DIR / f"r{replicate}"


def step_inputs_hash(step: str, plan: Plan, run_dir: Path, plan_dir: Path | None = None, replicate: int = 0,
                     replicates: int = 1) -> str:
    """Hash of everything the step reads; equal hashes mean the step can be reused."""
    data = plan.model_dump(mode="json", by_alias=True)
    upstream = {}
    for up in UPSTREAM[step]:
        manifest = read_manifest(run_dir / up)
        upstream[up] = _carry_hash(up, manifest, step) if manifest else "missing"
    warehouse = _warehouse_fingerprint(plan, plan_dir) if step == "world" else None
    value = {"step": step, "plan": _plan_parts(step, data["recipe"], data["artifacts"], warehouse),
             "upstream": upstream}
    if replicate:           # another training seed on the same data
        value["replicate"] = [replicate, replicate_seed(plan.recipe.seed, replicate)]
    if step == "report" and replicates > 1:   # the report reads every replicate's eval
        value["replicates"] = {r: (m or {}).get("outputs_hash", "missing") for r in range(1, replicates)
                               for m in [read_manifest(replicate_dir(run_dir, r) / "eval")]}
    return _canonical_hash(value)


def _outputs(step_dir: Path) -> tuple[list[dict[str, Any]], str]:
    files = []
    # Tracker files (event logs with wall-clock times) are not outputs: see runtime.tracking.
    for path in sorted(p for p in step_dir.rglob("*") if p.is_file() and p.name != MANIFEST
                       and TRACKING_DIR not in p.relative_to(step_dir).parts):
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        files.append({"path": path.relative_to(step_dir).as_posix(), "bytes": path.stat().st_size,
                      "sha256": digest.hexdigest()})
    return files, _canonical_hash([(f["path"], f["sha256"]) for f in files])


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _load_step_function(step: str) -> Callable[[StepContext], StepResult]:
    module_name, func_name = STEP_FUNCTIONS[step].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            raise StepError(f"step `{step}` is not available in this craft install "
                            f"(module `{module_name}` is missing)") from None
        raise
    return getattr(module, func_name)


def select_steps(only: str | None = None, from_step: str | None = None,
                 until: str | None = None) -> tuple[str, ...]:
    """The steps to run, in order, for the CLI's --only/--from/--until."""
    for name, value in (("--only", only), ("--from", from_step), ("--until", until)):
        if value is not None and value not in STEPS:
            raise StepError(f"unknown step `{value}` for {name}; the steps are: {', '.join(STEPS)}")
    if only:
        return (only,)
    start = STEPS.index(from_step) if from_step else 0
    stop = STEPS.index(until) + 1 if until else len(STEPS)
    if start >= stop:
        raise StepError(f"--from {from_step} comes after --until {until}; nothing to run")
    return STEPS[start:stop]


def _quarantine(step_dir: Path) -> Path:
    """Move a corrupt step dir aside instead of deleting it: no data is lost."""
    n = 1
    while (target := step_dir.with_name(f"{step_dir.name}.corrupt-{n}")).exists():
        n += 1
    step_dir.rename(target)
    return target


def _run_one(step: str, plan: Plan, plan_dir: Path, run_dir: Path, console: Console,
             force: bool, launch: bool = True, replicate: int = 0, replicates: int = 1) -> dict[str, Any]:
    step_dir = run_dir / step
    for up in UPSTREAM[step]:
        if up in ADOPTERS:
            try:
                _adopt_prepared(up, plan, plan_dir, run_dir, console)
            except StepError:
                if launch:      # --no-launch prepares on top of a prepared step
                    raise
    if step in ADOPTERS and launch and not force:
        try:
            _adopt_prepared(step, plan, plan_dir, run_dir, console)
        except StepError as exc:   # prepared but not launched yet: this run trains it
            console.print(f"[yellow]![/] {step}: prepared for a launch by hand that has not finished ({exc})")
    inputs_hash = step_inputs_hash(step, plan, run_dir, plan_dir, replicate, replicates)
    if step_dir.exists():
        manifest = read_manifest(step_dir)
        if manifest is None:
            moved = _quarantine(step_dir)
            console.print(f"[yellow]![/] {step}: output had no valid manifest (interrupted or corrupt); "
                          f"kept it as {moved.name} and rebuilding")
        elif manifest.get("inputs_hash") == inputs_hash and not force:
            console.print(f"[green]=[/] {step}: reused (inputs unchanged)")
            return {"step": step, "status": "reused", "wall_s": 0.0, **({"replicate": replicate} if replicate else {})}
    for up in UPSTREAM[step]:
        if read_manifest(run_dir / up) is None and (launch or read_manifest(run_dir / up, "prepared") is None):
            raise StepError(f"step `{step}` needs the output of `{up}`, which is not in {run_dir}; "
                            f"run `craftc run {plan_dir} --until {up}` first")

    tmp_dir = run_dir / f".tmp-{step}"
    marker = tmp_dir / RESUME_MARKER
    if step in RESUMABLE_STEPS and marker.is_file() and marker.read_text(encoding="utf-8") == inputs_hash:
        # A training step stopped part-way (kill, power loss) with the same inputs: its
        # checkpoints in the staging dir are kept and the trainer resumes from the last one.
        console.print(f"[yellow]![/] {step}: resuming the interrupted run from what it saved in "
                      f"{tmp_dir.relative_to(run_dir)}")
        cut = remove_leftovers(tmp_dir)
        if cut:
            console.print(f"[yellow]![/] {step}: removed {len(cut)} file(s) the interruption left half-written "
                          "(their finished versions, if any, are kept)")
    else:
        if tmp_dir.exists():
            shutil.rmtree(tmp_dir)
        tmp_dir.mkdir(parents=True)
        if step in RESUMABLE_STEPS:
            marker.write_text(inputs_hash, encoding="utf-8")
    console.rule(f"[bold]{step}" + (f" (replicate {replicate})" if replicate else ""))
    seed = replicate_seed(plan.recipe.seed, replicate)
    ctx = StepContext(plan=plan, plan_dir=plan_dir, run_dir=run_dir, out_dir=tmp_dir,
                      console=console, seed=seed, launch=launch, replicate=replicate, replicates=replicates)
    started = time.perf_counter()
    cpu = CpuShare()
    result = _load_step_function(step)(ctx)
    wall_s = round(time.perf_counter() - started, 3)
    other_cpu_share = cpu.stop()
    if under_load(other_cpu_share, wall_s):
        console.print(f"[yellow]![/] {step}: other processes took {other_cpu_share:.0%} of the machine's CPU while "
                      "it ran, so its wall time is not its cost alone (`other_cpu_share` in its manifest)")
    if step in TRACKED_STEPS and not (step in ADOPTERS and not launch):
        log_step_metrics(plan.recipe.track, tmp_dir, plan.recipe.name, f"{plan.recipe.name}-{step}", result.metrics)

    marker.unlink(missing_ok=True)
    files, outputs_hash = _outputs(tmp_dir)
    prepared = step in ADOPTERS and not launch and not result.skipped   # a skipped step has nothing to launch
    manifest = {
        "step": step, "status": "prepared" if prepared else "complete", "inputs_hash": inputs_hash, "plan_hash": plan.content_hash,
        "recipe": plan.recipe.name, "profile": plan.recipe.profile, "seed": seed,
        "metrics": result.metrics, "outputs": files, "outputs_hash": outputs_hash,
        "versions": _versions(), "wall_s": wall_s, "other_cpu_share": other_cpu_share,
        # plan.json is every step's input; the rest are the artifacts this step read.
        "plan_files": ["plan.json", *sorted(ctx.plan_files_read)],
        **({"skipped": result.skipped} if result.skipped else {}),
    }
    _write_manifest(tmp_dir, manifest)
    replace_dir(tmp_dir, step_dir)
    if prepared:
        console.print(f"[green]✓[/] {step}: prepared for a launch by hand; then rerun `craftc run` to go on")
        return {"step": step, "status": "prepared", "wall_s": wall_s}
    warnings = result.metrics.get("warnings") or ()
    if result.skipped:
        console.print(f"[green]✓[/] {step}: skipped: {result.skipped}")
        return {"step": step, "status": "skipped", "wall_s": wall_s, **({"replicate": replicate} if replicate else {})}
    if warnings:
        console.print(f"[yellow]![/] {step}: done in {wall_s:.1f}s with {len(warnings)} warning(s) "
                      "(above, and under `warnings` in its manifest)")
    else:
        console.print(f"[green]✓[/] {step}: done in {wall_s:.1f}s")
    return {"step": step, "status": "ran", "wall_s": wall_s, **({"replicate": replicate} if replicate else {})}


def _share_data_steps(run_dir: Path, replicate: int) -> Path:
    """A replicate's run dir, its data steps linked to the run's own (never copied)."""
    target = replicate_dir(run_dir, replicate)
    target.mkdir(parents=True, exist_ok=True)
    for step in STEPS[: STEPS.index(REPLICATED_STEPS[0])]:
        link = target / step
        if link.is_symlink() or not link.exists():
            if link.is_symlink():
                link.unlink()
            link.symlink_to(Path("..", "..", step))
    return target


def run_plan(plan_dir: Path | str, run_dir: Path | str | None = None, only: str | None = None,
             from_step: str | None = None, until: str | None = None, force: bool = False,
             console: Console | None = None, launch: bool = True, replicates: int = 1) -> int:
    """Run the selected steps of a plan; returns a process exit code.

    With ``replicates`` N > 1 the training steps (sft, grpo, eval) run again for N - 1
    more seeds in ``RUN_DIR/replicates/r<k>/``, on the run's own data steps, and the
    report, run last, reads them all. Each replicate's steps resume like the run's own.

    Example (not run here: needs a compiled plan dir)::

        run_plan("build/ads_analytics", only="world")   # -> 0
    """
    # soft_wrap: paths in messages must stay whole (copy-pasteable) on any terminal width
    console = console or Console(stderr=True, soft_wrap=True)
    plan_dir = Path(plan_dir)
    try:
        if replicates < 1:
            raise StepError(f"--replicates {replicates}: give 1 or more")
        plan = load_plan(plan_dir)
        steps = select_steps(only, from_step, until)
        if any(step in TRACKED_STEPS for step in steps):
            require_tracker(plan.recipe.track)
    except (StepError, TrackingError) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 1
    run_dir = Path(run_dir) if run_dir else Path("runs") / plan.recipe.name
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_bytes = (plan_dir / "plan.json").read_bytes()

    record: list[dict[str, Any]] = []
    previous = _interrupt_on_sigterm()
    try:
        for step in steps:
            if (plan_dir / "plan.json").read_bytes() != plan_bytes:
                raise PlanError(f"`{plan_dir}/plan.json` changed while this run was in progress; "
                                "rerun `craftc run` to continue with the new plan")
            if step == "report" and replicates > 1:
                continue            # after every replicate's eval, below
            record.append(_run_one(step, plan, plan_dir, run_dir, console, force, launch, replicates=replicates))
        for replicate in range(1, replicates):
            shared = _share_data_steps(run_dir, replicate)
            for step in (s for s in steps if s in REPLICATED_STEPS):
                record.append(_run_one(step, plan, plan_dir, shared, console, force, launch, replicate, replicates))
        if replicates > 1 and "report" in steps:
            step = "report"
            record.append(_run_one(step, plan, plan_dir, run_dir, console, force, launch, replicates=replicates))
    except StepError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 1
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: finished steps are kept; rerun the same command to resume")
        return 130
    except Exception as exc:  # an internal failure: summarise, keep the traceback behind a flag
        console.print(f"[bold red]internal error[/] in step `{step}`: {type(exc).__name__}: {exc}")
        if os.environ.get("CRAFT_DEBUG"):
            console.print(traceback.format_exc())
        else:
            console.print("set CRAFT_DEBUG=1 to see the traceback; finished steps are kept")
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        _write_run_record(run_dir, plan, record)
    return 0


def _interrupt_on_sigterm():
    """A terminated run (CI timeout, `kill`) stops like Ctrl-C: finished steps kept."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    return signal.signal(signal.SIGTERM, handler)


def _write_run_record(run_dir: Path, plan: Plan, record: list[dict[str, Any]]) -> None:
    """`run.json`: which steps ran and which were reused in the latest invocation."""
    data = {"plan_hash": plan.content_hash or plan_content_hash(plan.model_dump(mode="json", by_alias=True)),
            "recipe": plan.recipe.name, "profile": plan.recipe.profile, "steps": record}
    write_atomic(run_dir / "run.json", json.dumps(data, sort_keys=True, indent=2) + "\n")
