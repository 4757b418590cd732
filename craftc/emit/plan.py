"""Emit a plan dir: every artifact rendered in memory, then written atomically.

``render_plan_files`` is the pure part: recipe and solution texts in, a mapping of
plan-relative path -> bytes out (no clock, no environment, no absolute paths).
``emit_plan`` writes that mapping with :func:`craftc.emit.write.write_plan_files`: into a
temporary sibling directory renamed into place, so a reader sees either the previous
plan dir or the complete new one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from craftc.emit.binding_sql import binding_sql, logical_ddl
from craftc.emit.budget import token_budget
from craftc.emit.errors import EmitError
from craftc.emit.prompts import render_judge_prompts, render_prompts, split_turn_template
from craftc.emit.specs import gates_spec, input_builder_spec, masking_spec, reward_spec
from craftc.emit.stages import (accelerate_yaml, batches_json, curriculum_json, launch_script, peft_config_json,
                                schema_docs_json, trl_config_json)
from craftc.emit.verl import verl_files
from craftc.emit.write import write_plan_files
from craftc.ir import Plan, Recipe
from craftc.version import __version__

__all__ = ["canonical_json", "content_hash", "render_plan_files", "write_plan_files", "emit_plan", "schema_sql"]


def canonical_json(data) -> str:
    """The plan dir's JSON form: sorted keys, 2-space indent, UTF-8, trailing newline."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def content_hash(plan_data: dict) -> str:
    """sha256 of ``plan.json``'s data without ``content_hash``, in compact canonical JSON.

    The runtime recomputes it the same way (``runtime.plan.plan_content_hash``).
    """
    body = {k: v for k, v in plan_data.items() if k != "content_hash"}
    compact = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(compact.encode("utf-8")).hexdigest()


def schema_sql(recipe: Recipe) -> tuple[str, str]:
    """(binding SQL, logical DDL) from the world area's pure functions."""
    return binding_sql(recipe.schema_), logical_ddl(recipe.schema_)


def _text(text: str) -> bytes:
    return text.replace("\r\n", "\n").encode("utf-8")


def _solutions(recipe: Recipe, solution_sources: Mapping[str, str]) -> dict[str, bytes]:
    files, missing = {}, []
    for workflow in recipe.workflows:
        for turn in workflow.turns:
            if turn.solution is None:       # judged by its checks alone
                continue
            if turn.solution in solution_sources:
                files[turn.solution] = _text(solution_sources[turn.solution])
            else:
                missing.append(f"`{turn.solution}` (workflow `{workflow.name}`)")
    if missing:
        raise EmitError("no source text for the reference solution(s) " + ", ".join(missing)
                        + "; pass every turn's solution in `solution_sources`")
    return files


def render_plan_files(recipe: Recipe, solution_sources: Mapping[str, str]) -> dict[str, bytes]:
    """Render every file of the plan dir.

    Args:
        recipe: The resolved, checked recipe.
        solution_sources: Each turn's ``solution`` path (``solutions/<workflow>/<n>.py``)
            -> the reference solution's source text.

    Returns:
        Plan-relative path -> file bytes, ``plan.json`` included.

    Raises:
        EmitError: When a solution text is missing or a gate names an unknown judge.
    """
    binding, ddl = schema_sql(recipe)
    prompts = render_prompts(recipe, ddl)
    turns = split_turn_template(prompts["prompts/turn.md"])
    files: dict[str, bytes] = {path: _text(text) for path, text in prompts.items()}
    files.update({path: _text(text) for path, text in render_judge_prompts(recipe).items()})
    files["sql/binding.sql"] = _text(binding)
    files["sql/logical_ddl.sql"] = _text(ddl)
    files["specs/input_builder.json"] = _text(canonical_json(input_builder_spec(recipe, turns)))
    files["specs/masking.json"] = _text(canonical_json(masking_spec(recipe)))
    files["specs/gates.json"] = _text(canonical_json(gates_spec(recipe)))
    files["specs/reward.json"] = _text(canonical_json(reward_spec(recipe)))
    # For reviewers only (docs/plan-dir.md): no step runs from it.
    files["review/token_budget.json"] = _text(canonical_json(token_budget(recipe, prompts, turns)))
    files.update(_solutions(recipe, solution_sources))
    for stage in recipe.stages:
        base = f"stages/{stage.name}"
        if getattr(stage, "engine", "trl") == "verl":
            files.update({f"{base}/{name}": _text(text) for name, text in verl_files(recipe, stage).items()})
            continue
        files[f"{base}/trl_config.json"] = _text(trl_config_json(recipe, stage))
        files[f"{base}/accelerate.yaml"] = _text(accelerate_yaml(recipe, stage))
        files[f"{base}/launch.sh"] = _text(launch_script(recipe, stage))
        if stage.lora is not None:
            files[f"{base}/peft_config.json"] = _text(peft_config_json(recipe, stage))
        if stage.kind == "sft" and (stage.prefix_epochs or stage.question_dropout):
            files[f"{base}/curriculum.json"] = _text(curriculum_json(recipe, stage))
        if stage.kind == "sft" and stage.sampler != "random":
            files[f"{base}/batches.json"] = _text(batches_json(recipe, stage))
        if stage.kind == "sft" and stage.schema_docs:
            files[f"{base}/schema_docs.json"] = _text(schema_docs_json(recipe, stage))
    artifacts = {path: hashlib.sha256(data).hexdigest() for path, data in sorted(files.items())}
    plan = Plan(craftc_version=__version__, recipe=recipe, artifacts=artifacts)
    data = plan.model_dump(mode="json", by_alias=True)
    data["content_hash"] = content_hash(data)
    files["plan.json"] = _text(canonical_json(data))
    return dict(sorted(files.items()))


def emit_plan(recipe: Recipe, solution_sources: Mapping[str, str], out_dir: str | os.PathLike) -> Path:
    """Render the plan dir for ``recipe`` and write it to ``out_dir`` atomically.

    Args:
        recipe: The resolved, checked recipe.
        solution_sources: Turn solution path -> source text (see ``render_plan_files``).
        out_dir: The plan dir to (re)create. An existing plan dir is replaced; any
            other non-empty directory is refused.

    Returns:
        ``out_dir`` as a Path.

    Raises:
        EmitError: Naming what cannot be emitted and the fix.

    Example (not run here: needs a loaded recipe, see `craftc.load_recipe`)::

        emit_plan(recipe, {"solutions/top/1.py": text}, "build/hello")   # -> Path("build/hello")
    """
    return write_plan_files(render_plan_files(recipe, solution_sources), out_dir)
