"""Arms side by side: `eval { processes N }` decodes the arms in N processes at once.

The arms are independent models. Where one arm's decoding step is a few small matrix
products that use a second thread poorly (the default's tiny_moe), N processes, the cores
divided between them, finish the arms sooner than one process with every core; where a
second thread nearly halves a step (SmolLM2) they gain nothing
(benchmarks/eval_processes.py times both on the same plan).

The step (``runtime.eval.step.run_eval``) calls :func:`decode_side_by_side` before its
own loop over the arms. The arms not yet finished are split into N groups, the arm with
the longest system prompt first (the stuffed baseline's schema makes its calls the dearest),
each group to the process that has the least prompt so far. Each process is
``runtime.eval.arm_process`` run as a program: it reads the plan and the run dir as the step does, decodes its arms
one after another, and writes each arm's ``episodes/<arm>.jsonl`` into the step's staging
dir the moment the arm is done. The step then reads the files back, as it reads back the
arms an interrupted run finished, so a kill anywhere keeps every finished arm.

When a process ends, its cores go to those still decoding (``runtime.train.core_share``,
read before each batch). Every process decodes in MKL's strict mode, so its floats, and
the tokens greedy decoding picks, do not depend on when that happened; they may differ
from a one-process eval's, so the setting lives in the plan.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["arm_groups", "decode_side_by_side"]


def arm_groups(costs: dict[str, float], processes: int) -> list[list[str]]:
    """The arms split into at most ``processes`` groups of about equal cost, dearest arm first.

    Each arm, dearest first (ties in the given order), joins the group with the least cost
    so far (the first such group on a tie); a group's arms keep that order. Deterministic.

    >>> arm_groups({"craft": 1.0, "sft_only": 1.0, "stuffed": 20.0}, 2)
    [['stuffed'], ['craft', 'sft_only']]
    >>> arm_groups({"craft": 1.0, "sft_only": 1.0}, 3)
    [['craft'], ['sft_only']]
    """
    order = sorted(costs, key=lambda arm: -costs[arm])      # sorted() is stable: ties keep their order
    groups: list[list[str]] = [[] for _ in range(min(processes, len(costs)))]
    loads = [0.0] * len(groups)
    for arm in order:
        lightest = loads.index(min(loads))
        groups[lightest].append(arm)
        loads[lightest] += costs[arm]
    return groups


# Characters every call adds to its arm's system prompt: the question, the earlier turns and
# the tool output. Only the arms' order of cost matters, and the prompts differ by far more.
_CALL_TEXT = 2000


def decode_side_by_side(ctx, inputs, arms: list[str]) -> set[str]:
    """Decode ``arms`` (those not finished yet) in ``eval { processes }`` processes at once.

    Returns the arms the processes decoded: their episode files are in ``ctx.out_dir``.
    An empty set when there is one group or fewer: the step then decodes in its own process.

    Raises:
        StepError: A process failed; its last lines are in the message.
    """
    from runtime.step_context import StepError
    from runtime.train.core_share import CORE_SHARE_ENV, write_share
    from runtime.train.launch import (MKL_REPRODUCIBLE, LaunchError, concurrent_threads, pinned_threads,
                                      run_launches, thread_count_free_floats)

    groups = arm_groups({arm: len(inputs.prompts[arm]) + _CALL_TEXT for arm in arms},
                        ctx.plan.recipe.eval.processes)
    if len(groups) < 2:
        return set()
    threads = concurrent_threads(len(groups))
    names = {"+".join(group): group for group in groups}
    ctx.console.print(f"eval: {' and '.join(names)} decode at the same time, {threads} CPU thread(s) per process; "
                      "each output line starts with its arms", highlight=False)
    commands = {name: _command(ctx, group) for name, group in names.items()}
    package_root = str(Path(__file__).resolve().parents[2])    # so `-m runtime...` imports this copy
    env = {"OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)}
    try:
        if pinned_threads() is not None or not thread_count_free_floats():
            run_launches(commands, env=env, what="eval process")   # the user's count, or one that must not change
        else:
            import tempfile

            with tempfile.TemporaryDirectory(prefix="craft-cores-") as tmp:
                share = Path(tmp) / "threads"
                write_share(share, threads)
                env |= {CORE_SHARE_ENV: str(share), MKL_REPRODUCIBLE[0]: MKL_REPRODUCIBLE[1]}

                def on_exit(name: str, running: list[str]) -> None:
                    more = concurrent_threads(len(running))
                    write_share(share, more)
                    ctx.console.print(f"eval: {name} is done: {' and '.join(running)} now decode"
                                      f"{'s' if len(running) == 1 else ''} on {more} CPU thread(s)", highlight=False)

                run_launches(commands, env=env, on_exit=on_exit, what="eval process")
    except LaunchError as err:
        raise StepError(f"eval: {err}") from None
    return {arm for group in groups for arm in group}


def _command(ctx, arms: list[str]) -> list[str]:
    return [sys.executable, "-m", "runtime.eval.arm_process", "--plan-dir", str(Path(ctx.plan_dir).resolve()),
            "--run-dir", str(Path(ctx.run_dir).resolve()), "--out-dir", str(Path(ctx.out_dir).resolve()),
            "--seed", str(ctx.seed), "--replicate", str(ctx.replicate), "--replicates", str(ctx.replicates), *arms]
