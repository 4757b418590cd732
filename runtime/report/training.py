"""How much training each evaluated arm got: the report's "How each arm was trained".

A comparison is only as fair as its arms' training. Under `eval { baseline_budget
tokens }` (the default) the stuffed baseline reads as many tokens as the stripped arm,
and its examples are ten to a hundred times longer, so it takes a small share of the
stripped arm's steps and may end without having learned the block format. Its scores
then measure that, not the schema in its prompt; the report shows each arm's steps,
tokens and closing loss side by side, and says so when the baseline's code never ran.

Read from what the sft and grpo steps wrote (`sft/manifest.json`, each SFT arm's
`metrics.jsonl`, and the GRPO steps of `grpo/grpo_summary.json`); nothing is recomputed.
What the run cost in time (:func:`step_wall_times`) is read the same way, from each step's
manifest, so the docs' timings are generated from a run, never typed.
"""

from __future__ import annotations

import json
from pathlib import Path

from runtime.cpu_share import busy_steps_note
from runtime.layout import EVAL_ARM_MODELS, MANIFEST

__all__ = ["CLOSING_SHARE", "arm_training", "flat_groups_clause", "markdown_training", "step_wall_times",
           "undertrained_baseline", "wall_time_line"]

# The closing loss and token accuracy are means over this last share of the logged steps:
# one step's loss (one conversation) moves by a factor of several from step to step.
CLOSING_SHARE = 0.1


def _timed(step_dir: Path) -> dict:
    """The step's finished manifest, or {} (its ``wall_s`` and ``other_cpu_share`` are read)."""
    from runtime.runner import read_manifest

    return read_manifest(step_dir) or {}


def step_wall_times(run_dir: str | Path, replicates: int = 1) -> dict | None:
    """Each step's wall time when it ran, from its manifest; None when no step left one.

    A step reused by a later `craftc run` keeps the time it took when it ran, so the total is
    what the run's outputs cost, not what the last invocation spent. With replicates, the
    extra ones' training steps (``replicates/r<k>/``) are summed apart.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> for step, wall in (("world", 1.2), ("sft", 600.0)):
    ...     (root / step).mkdir()
    ...     _ = (root / step / MANIFEST).write_text(json.dumps({"status": "complete", "wall_s": wall}))
    >>> step_wall_times(root)
    {'steps': {'world': 1.2, 'sft': 600.0}, 'total_s': 601.2}
    """
    from runtime.runner import REPLICATED_STEPS, STEPS, replicate_dir

    run_dir = Path(run_dir)
    # The report itself is still running when it reads them.
    manifests = {step: _timed(run_dir / step) for step in STEPS if step != "report"}
    steps = {step: m["wall_s"] for step, m in manifests.items() if m.get("wall_s") is not None}
    if not steps:
        return None
    out = {"steps": steps, "total_s": round(sum(steps.values()), 3)}
    # What other processes took of the CPU while each step ran (runtime.cpu_share); runs
    # from before it was measured have none.
    shares = {step: m["other_cpu_share"] for step, m in manifests.items() if m.get("other_cpu_share") is not None}
    if shares:
        out["other_cpu_share"] = shares
    skipped = [step for step, m in manifests.items() if m.get("skipped")]
    if skipped:                     # the grpo step when no eval arm decodes its model
        out["skipped"] = skipped
    extra = [wall for r in range(1, replicates) for step in REPLICATED_STEPS
             if (wall := _timed(replicate_dir(run_dir, r) / step).get("wall_s")) is not None]
    if extra:
        out["replicates_s"] = round(sum(extra), 3)
    return out


def _minutes(seconds: float) -> str:
    """Seconds as minutes and seconds.

    >>> _minutes(59.4), _minutes(1878.6)
    ('59 s', '31 min 19 s')
    """
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def wall_time_line(timing: dict) -> str:
    """The run's wall time as one sentence: the data steps together, then each training step.

    >>> wall_time_line({"steps": {"world": 1.1, "distill": 78.7, "gate": 57.8, "dataset": 4.9, "sft": 1052.5,
    ...                 "grpo": 321.2, "eval": 361.7}, "total_s": 1877.9})
    'The steps took 31 min 18 s: the data steps (world, distill, gate, dataset) 2 min 22 s, sft 17 min 32 s, grpo 5 min 21 s, eval 6 min 2 s.'

    A step that shared the machine says so (``other_cpu_share``, :mod:`runtime.cpu_share`):

    >>> wall_time_line({"steps": {"sft": 1052.5, "eval": 361.7}, "total_s": 1414.2,
    ...                 "other_cpu_share": {"sft": 0.004, "eval": 0.41}})
    'The steps took 23 min 34 s: sft 17 min 32 s, eval 6 min 2 s; eval ran beside other work (other processes took 41% of the CPU), so its time is not its cost alone.'

    A step with nothing to do for the plan (the grpo step of `eval { arms sft_only }`) says so:

    >>> wall_time_line({"steps": {"sft": 600.0, "grpo": 0.01, "eval": 60.0}, "total_s": 660.0, "skipped": ["grpo"]})
    'The steps took 11 min 0 s: sft 10 min 0 s, grpo skipped, eval 1 min 0 s.'
    """
    from runtime.runner import REPLICATED_STEPS, STEPS

    steps = timing["steps"]
    # The steps before training are the data steps, which replicates share.
    data = [s for s in STEPS[:STEPS.index(REPLICATED_STEPS[0])] if s in steps]
    parts = [f"the data steps ({', '.join(data)}) {_minutes(sum(steps[s] for s in data))}"] if data else []
    parts += [f"{s} skipped" if s in timing.get("skipped", ()) else f"{s} {_minutes(steps[s])}"
              for s in REPLICATED_STEPS if s in steps]
    text = f"The steps took {_minutes(timing['total_s'])}: {', '.join(parts)}"
    if timing.get("replicates_s"):
        text += f"; the extra replicates' training {_minutes(timing['replicates_s'])} more"
    busy = busy_steps_note(timing.get("other_cpu_share") or {}, steps)
    if busy:
        text += f"; {busy}"
    return text + "."


def _closing_means(metrics_path: Path) -> dict:
    try:
        entries = [json.loads(line) for line in metrics_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError):
        return {}
    logged = [e for e in entries if "loss" in e]
    if not logged:
        return {}
    tail = logged[-max(1, round(CLOSING_SHARE * len(logged))):]
    means = {"closing_loss": sum(e["loss"] for e in tail) / len(tail)}
    if all("mean_token_accuracy" in e for e in tail):
        means["closing_token_accuracy"] = sum(e["mean_token_accuracy"] for e in tail) / len(tail)
    return means


def arm_training(run_dir: str | Path, arms: list[str], grpo_steps: int | None) -> dict | None:
    """Per evaluated arm: its SFT steps (warm-up and conversations), tokens read, closing
    loss and token accuracy, and its GRPO steps (``grpo_steps``, from the grpo summary the
    report already read); None when the sft step left no manifest.

    Returns ``{"baseline_budget": "tokens" | "steps" | None, "arms": {arm: {...}}}``.
    """
    run_dir = Path(run_dir)
    try:
        sft = json.loads((run_dir / "sft" / MANIFEST).read_text(encoding="utf-8"))["metrics"]
    except (OSError, json.JSONDecodeError, KeyError):
        return None
    out = {}
    for arm in arms:
        if arm not in EVAL_ARM_MODELS or EVAL_ARM_MODELS[arm][0] not in sft:
            continue
        sft_arm, after_grpo = EVAL_ARM_MODELS[arm]
        trained = sft[sft_arm]
        warm = trained.get("prefix_warm_up") or {}
        docs = trained.get("schema_docs") or {}     # `stage sft { schema_docs N }`, before the warm-up
        out[arm] = {"sft_arm": sft_arm, "warm_up_steps": warm.get("steps", 0), "steps": trained.get("steps"),
                    "tokens": trained.get("num_tokens", 0) + warm.get("num_tokens", 0) + docs.get("num_tokens", 0),
                    **_closing_means(run_dir / "sft" / sft_arm / "metrics.jsonl"),
                    "grpo_steps": grpo_steps if after_grpo else 0,
                    **({"schema_docs_steps": docs["steps"]} if docs else {})}
    return {"baseline_budget": sft.get("baseline_budget"), "arms": out}


def markdown_training(training: dict) -> str:
    """Arms as columns, like the results table.

    >>> t = {"baseline_budget": "tokens", "arms": {
    ...     "craft": {"warm_up_steps": 40, "steps": 20, "tokens": 12000, "closing_loss": 0.5,
    ...               "closing_token_accuracy": 0.9, "grpo_steps": 2},
    ...     "stuffed": {"warm_up_steps": 3, "steps": 2, "tokens": 12500, "closing_loss": 2.25, "grpo_steps": 0}}}
    >>> print(markdown_training(t), end="")
    | | craft | stuffed |
    | --- | --- | --- |
    | SFT warm-up steps | 40 | 3 |
    | SFT steps on conversations | 20 | 2 |
    | SFT tokens read | 12,000 | 12,500 |
    | SFT loss, last 10% of its steps | 0.500 | 2.250 |
    | SFT token accuracy, last 10% of its steps | 90.0% | n/a |
    | GRPO steps | 2 | 0 |
    >>> t["arms"]["craft"]["schema_docs_steps"] = 104           # `stage sft { schema_docs 4 }`
    >>> print(markdown_training(t).splitlines()[2])
    | SFT steps on the schema's documentation | 104 | n/a |
    """
    arms = training["arms"]
    names = list(arms)

    def row(label: str, key: str, show) -> str:
        return f"| {label} | " + " | ".join(show(arms[a][key]) if arms[a].get(key) is not None else "n/a"
                                            for a in names) + " |"

    docs = ([row("SFT steps on the schema's documentation", "schema_docs_steps", lambda v: f"{v:,}")]
            if any("schema_docs_steps" in arms[a] for a in names) else [])
    lines = ["| | " + " | ".join(names) + " |", "|" + " --- |" * (len(names) + 1), *docs,
             row("SFT warm-up steps", "warm_up_steps", lambda v: f"{v:,}"),
             row("SFT steps on conversations", "steps", lambda v: f"{v:,}"),
             row("SFT tokens read", "tokens", lambda v: f"{v:,}"),
             row(f"SFT loss, last {CLOSING_SHARE:.0%} of its steps", "closing_loss", lambda v: f"{v:.3f}"),
             row(f"SFT token accuracy, last {CLOSING_SHARE:.0%} of its steps", "closing_token_accuracy",
                 lambda v: f"{100 * v:.1f}%"),
             row("GRPO steps", "grpo_steps", lambda v: f"{v:,}")]
    return "\n".join(lines) + "\n"


def undertrained_baseline(training: dict | None, table: dict, baseline: str = "stuffed") -> str | None:
    """A warning when the baseline's code ran in no turn after a token-matched budget that
    gave it fewer SFT steps than another arm: its scores then say little about its prompt.

    >>> t = {"baseline_budget": "tokens", "arms": {"craft": {"warm_up_steps": 40, "steps": 20},
    ...                                          "stuffed": {"warm_up_steps": 3, "steps": 2}}}
    >>> row = {"metric": "execution_success", "arms": {"stuffed": {"value": 0.0, "n": 12}}}
    >>> undertrained_baseline(t, {"rows": [row]})
    "stuffed's code ran in none of its 12 user turns after 5 SFT steps, against craft's 60 (`eval { baseline_budget tokens }`: the same tokens, in longer examples): it may not have learned the block format, so the other arms' lead over it says little about the schema in its prompt; `eval { baseline_budget steps }` trains it for as many steps"
    >>> row["arms"]["stuffed"]["value"] = 0.25
    >>> undertrained_baseline(t, {"rows": [row]}) is None
    True
    """
    if not training or training.get("baseline_budget") != "tokens" or baseline not in training["arms"]:
        return None
    row = next((r for r in table["rows"] if r["metric"] == "execution_success"), None)
    cell = (row or {}).get("arms", {}).get(baseline)
    if not cell or cell.get("value") is None or cell["value"] > 0 or not cell.get("n"):
        return None

    def steps(arm: str) -> int:
        return (training["arms"][arm].get("warm_up_steps") or 0) + (training["arms"][arm].get("steps") or 0)

    others = {arm: steps(arm) for arm in training["arms"] if arm != baseline}
    if not others or max(others.values()) <= steps(baseline):
        return None
    most = max(others, key=others.get)
    return (f"{baseline}'s code ran in none of its {cell['n']} user turns after {steps(baseline):,} SFT steps, "
            f"against {most}'s {others[most]:,} (`eval {{ baseline_budget tokens }}`: the same tokens, in longer "
            "examples): it may not have learned the block format, so the other arms' lead over it says little "
            "about the schema in its prompt; `eval { baseline_budget steps }` trains it for as many steps")


def flat_groups_clause(dynamic: dict) -> str:
    """What GRPO did with its flat groups (those whose rollouts all scored one R_outcome), as a
    clause: report.md and the results digests (runtime.results_tables) both say it this way.
    ``groups`` counts the groups trained; with ``dynamic_sampling`` more were rolled out.

    >>> flat_groups_clause({"rounds": 0, "groups": 48, "dropped": 0, "flat_after": 30})
    '30 of 48 groups trained had rollouts that all scored one R_outcome and gave no gradient (none replaced: `dynamic_sampling 0`)'
    >>> flat_groups_clause({"rounds": 2, "groups": 48, "dropped": 53, "flat_after": 15})
    '53 rolled-out groups whose rollouts all scored one R_outcome were replaced (48 groups trained, 15 of them still flat after 2 rounds of `dynamic_sampling`)'
    """
    d = dynamic
    if d["rounds"] == 0:
        return (f"{d['flat_after']} of {d['groups']} groups trained had rollouts that all scored one R_outcome "
                "and gave no gradient (none replaced: `dynamic_sampling 0`)")
    return (f"{d['dropped']} rolled-out groups whose rollouts all scored one R_outcome were replaced "
            f"({d['groups']} groups trained, {d['flat_after']} of them still flat after {d['rounds']} rounds "
            "of `dynamic_sampling`)")
