"""``craftc compare``: one arm of one run against one arm of another, paired turn by turn.

For ablations: two runs of a recipe that differ in one setting (two profiles), scored on
the same split, are compared over the user turns both scored, with intervals clustered
by conversation and the smallest difference the turns can detect
(``runtime.report.comparison.run_differences``). Nothing is retrained or re-evaluated:
it reads each run's ``eval/episodes/<arm>.jsonl``.
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


def run(args) -> int:
    from runtime.report.comparison import markdown_differences, run_differences
    from runtime.workflows import HELD_OUT_KINDS

    arm_b = args.arm_b or args.arm
    a, b = _episodes(args.run_a, args.arm), _episodes(args.run_b, arm_b)
    names = (f"{Path(args.run_a).name}:{args.arm}", f"{Path(args.run_b).name}:{arm_b}")
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
