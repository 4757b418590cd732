"""What every pipeline step receives and returns.

A step is a function ``run(ctx: StepContext) -> StepResult``. The runner gives it a
fresh, empty ``ctx.out_dir`` (a temporary directory next to the final one) and
renames it into place only when the step returns, so an interrupted step never
leaves half-written output. Earlier steps' outputs are read through
``ctx.input(path)`` with a path named in `runtime.layout` (or ``ctx.input_dir(step)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from craftc.ir import Plan
from runtime.layout import MANIFEST, RunPath

__all__ = ["StepContext", "StepResult", "StepError"]


class StepError(Exception):
    """A user-facing failure of a step: the message names the thing and the fix."""


@dataclass(frozen=True)
class StepContext:
    plan: Plan
    plan_dir: Path            # the compiled plan directory (read-only for steps)
    run_dir: Path             # the run directory; step outputs live in run_dir/<step>
    out_dir: Path             # where this step writes (renamed to run_dir/<step> on success)
    console: Console
    seed: int
    # Plan files this step read through `artifact()`; the runner records them in the
    # step's manifest (`plan_files`), so a reviewer sees which step each file drives.
    plan_files_read: set[str] = field(default_factory=set, compare=False)
    # False under `craftc run --no-launch`: training steps write their step configs and
    # print the launch commands instead of training (docs/training.md, the hand-off).
    launch: bool = True
    # `craftc run --replicates N`: which training replicate this step belongs to (0: the
    # run dir itself) and, for the report, how many the run has.
    replicate: int = 0
    replicates: int = 1

    def input_dir(self, step: str) -> Path:
        """The finished output directory of an earlier step."""
        path = self.run_dir / step
        if not (path / MANIFEST).exists():
            raise StepError(
                f"step output `{step}` is missing from {self.run_dir}; "
                f"run `craftc run {self.plan_dir} --only {step}` first"
            )
        return path

    def input(self, path: RunPath) -> Path:
        """A file or directory an earlier step wrote (see `runtime.layout`)."""
        return self.input_dir(path.step) / path.path

    def artifact(self, relpath: str) -> Path:
        """A file the compiler rendered into the plan dir (prompts, configs, ...)."""
        path = self.plan_dir / relpath
        self.plan_files_read.add(relpath)
        if not path.exists():
            raise StepError(
                f"plan artifact `{relpath}` is missing from {self.plan_dir}; "
                "recompile with `craftc compile`"
            )
        return path


@dataclass(frozen=True)
class StepResult:
    """Figures a step reports; they land in its manifest and in the report."""

    metrics: dict[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()      # notable files, relative to the step dir
    # Why the step had nothing to do for this plan (the grpo step when no eval arm decodes its
    # model); its manifest says so, and it is complete even under `--no-launch`.
    skipped: str | None = None
