"""``craftc compare``: one arm of one run against one arm of another, paired turn by turn.

For ablations: two runs of a recipe that differ in one setting (two profiles), scored on
the same split, are compared over the user turns both scored, with intervals clustered
by conversation and the smallest difference the turns can detect
(``runtime.report.comparison.run_differences``). Nothing is retrained or re-evaluated:
it reads each run's ``eval/episodes/<arm>.jsonl``.

With ``--replicates N`` (runs made by ``craftc run --replicates N``) replicate k of one run
is set against replicate k of the other: an ablation made with ``--from grpo`` on copies of
one run's SFT replicates shares each replicate's SFT model, so each pair differs only in
the setting. The mean difference over the pairs gets an interval that counts the
questions drawn and the spread between replicates (``replicate_results``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from craftc.commands.common import UserError

__all__ = ["run"]


def _episodes(run_dir: str, arm: str) -> list:
    from runtime.agent import Episode

    path = Path(run_dir) / "eval" / "episodes" / f"{arm}.jsonl"
    if not path.is_file():
        found = sorted(p.stem for p in path.parent.glob("*.jsonl")) if path.parent.is_dir() else []
        hint = f"its arms are {', '.join(found)}" if found else f"run `craftc run PLAN --run-dir {run_dir}` first"
        raise UserError(f"{path} is missing: no eval of arm `{arm}` in {run_dir}; {hint}")
    try:
        return [Episode.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not an eval episodes file ({exc}); rerun the eval step: "
                        f"`craftc run PLAN --run-dir {run_dir} --only eval --force`") from None


def _names(args, arm_b: str) -> tuple[str, str]:
    """How the two sides are named in the tables: the run dir's name and the arm."""
    # Resolved: `craftc compare . ../other` names the current dir, not "".
    names = (f"{Path(args.run_a).resolve().name}:{args.arm}", f"{Path(args.run_b).resolve().name}:{arm_b}")
    if names[0] == names[1]:        # two runs whose dirs share a name: the whole paths tell them apart
        names = (f"{args.run_a}:{args.arm}", f"{args.run_b}:{arm_b}")
    return names


def run(args) -> int:
    from runtime.report.comparison import markdown_differences, run_differences
    from runtime.workflows import HELD_OUT_KINDS

    arm_b = args.arm_b or args.arm
    if args.replicates < 1:
        raise UserError(f"--replicates {args.replicates}: give the number of replicates both runs have, 1 or more")
    if args.replicates > 1:
        return _compare_replicates(args, arm_b)
    a, b = _episodes(args.run_a, args.arm), _episodes(args.run_b, arm_b)
    names = _names(args, arm_b)
    result = run_differences(a, b, HELD_OUT_KINDS, names)
    if not result or not result["all"][0]["n"]:
        raise UserError(f"{names[0]} and {names[1]} scored no turn in common: compare runs scored on the same "
                        "split (`eval { split ... }`) of the same data")
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + "\n")
        return 0
    for split, rows in result.items():
        sys.stdout.write(f"\n{split}\n\n{markdown_differences(rows)}")
    return 0


def _compare_replicates(args, arm_b: str) -> int:
    """Replicate k of RUN_A against replicate k of RUN_B, for every k < ``args.replicates``."""
    from runtime.eval.metrics import paired_metric
    from runtime.report.comparison import COMPARED_METRICS, markdown_replicates, replicate_results
    from runtime.runner import replicate_dir

    names = _names(args, arm_b)
    pairs = []
    for k in range(args.replicates):
        a = _episodes(str(replicate_dir(Path(args.run_a), k)), args.arm)
        b = _episodes(str(replicate_dir(Path(args.run_b), k)), arm_b)
        if not paired_metric(a, b, "agent_score")["n"]:
            raise UserError(f"replicate {k} of {names[0]} and of {names[1]} scored no turn in common: compare runs "
                            "scored on the same split (`eval { split ... }`) of the same data")
        pairs.append({names[0]: a, names[1]: b})
    # The second side is the one measured against: one difference, A minus B.
    by_metric = {metric: replicate_results(pairs, metric, baseline=names[1]) for metric in COMPARED_METRICS}
    if args.format == "json":
        # `replicates` is the agent score, the table a results file's `:replicates` markers render.
        out = {"replicates": by_metric["agent_score"], "replicates_by_metric": by_metric}
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
        return 0
    for result in by_metric.values():
        sys.stdout.write(f"\n{markdown_replicates(result)}")
    return 0
