"""The ``report`` step: ``report.md``, ``report.json``, a rich table and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.report.breakdown import build_workflow_table, markdown_failures, markdown_workflow_table
from runtime.report.plots import plot_metric_bars, plot_training_curves
from runtime.agent import Episode
from runtime.agent.history import what_is_kept
from runtime.eval.arm_files import arm_file, read_arm
from runtime.eval.metrics import cut_off_counts, cut_off_line, instance_values, repair_counts
from runtime.eval.stats import paired_difference, paired_ratio
from runtime.eval.coverage import without_training_data
from runtime.layout import FUNNEL_JSON, GRPO_SUMMARY
from runtime.report.table import COST_METRICS, build_table, markdown_table
from runtime.report.comparison import (difference_text, markdown_differences, markdown_replicates, paired_differences,
                                       replicate_results)
from runtime.report.training import (arm_training, flat_groups_clause, markdown_training, step_wall_times,
                                     undertrained_baseline, wall_time_line)

__all__ = ["build_report", "cost_ratios", "markdown_repairs", "missing_ratios", "nothing_passed", "read_episodes",
           "rich_table", "run_report"]

SPLITS = ("all", "new_values", "new_phrasing", "new_workflow")
# What each held-out kind is new in, as the report's headings say it (docs/evaluation.md).
KIND_TITLES = {"all": "All scored turns",
               "new_values": "New values: value combinations no training turn has, asked in trained phrasings",
               "new_phrasing": "New phrasings: a phrasing never trained, asked with values never trained",
               "new_workflow": "New workflows: workflows never trained on"}

# What each `eval { baseline_budget ... }` gives the stuffed arm, as the report says it.
BUDGET_MEANING = {"tokens": "as many training tokens as the stripped arm, so fewer steps of its longer examples",
                  "steps": "as many steps as the stripped arm: the same epochs, at several times the compute"}


def read_episodes(episodes_dir: Path, arms: list[str]) -> dict[str, list[Episode]]:
    """Every arm's ``eval/episodes/<arm>.jsonl``; empty when one of them is missing."""
    files = {arm: arm_file(episodes_dir, arm) for arm in arms}
    if not all(f.is_file() for f in files.values()):
        return {}
    return {arm: read_arm(f) for arm, f in files.items()}


def cost_ratios(episodes: dict[str, list[Episode]], baseline: str = "stuffed", seed: int = 0) -> dict:
    """Each arm's cost ratio to the baseline per split, with a paired bootstrap interval.

    From each arm's episodes (:func:`read_episodes`): instances are paired by id, so the
    interval is over the questions both arms answered. Returns ``{split: {metric: {arm:
    ratio}}}`` (see ``runtime.eval.stats.paired_ratio``); empty without the baseline's
    episodes. A baseline that is 0 on every instance (a stuffed arm that never looks
    anything up) leaves the ratio None; the ratio then carries the paired difference, arm
    minus baseline, instead.
    """
    if baseline not in episodes:
        return {}
    arms = list(episodes)
    out: dict = {}
    for split in SPLITS:
        chosen = {arm: [e for e in eps if split == "all" or e.split == split] for arm, eps in episodes.items()}
        if not chosen[baseline]:
            continue
        for metric in COST_METRICS:
            base = instance_values(chosen[baseline], metric)
            for arm in arms:
                if arm == baseline:
                    continue
                mine = instance_values(chosen[arm], metric)
                pairs = [(mine[i], base[i]) for i in sorted(mine.keys() & base.keys())]
                ratio = paired_ratio(pairs, seed)
                if ratio["value"] is None and pairs:
                    ratio["difference"] = paired_difference(pairs, seed)
                out.setdefault(split, {}).setdefault(metric, {})[arm] = ratio
    return out


def replicate_episodes(run_dir: Path, arms: list[str], replicates: int) -> list[dict[str, list[Episode]]]:
    """Every replicate's episodes (the run dir's own first); empty when one is missing."""
    from runtime.runner import replicate_dir

    found = [read_episodes(replicate_dir(Path(run_dir), r) / "eval" / "episodes", arms) for r in range(replicates)]
    return found if all(found) else []


def build_report(eval_json: dict, run_dir: Path | None = None, replicates: int = 1) -> dict:
    """The report as data: the split scored, one table per held-out kind, paired
    differences with clustered intervals, replicates and GRPO before/after when present."""
    results = eval_json["results"]
    arms = eval_json.get("arms", list(results))
    episodes = read_episodes(Path(run_dir) / "eval" / "episodes", arms) if run_dir else {}
    ratios = cost_ratios(episodes)
    tables = {s: build_table(results, split=s, ratios=ratios.get(s)) for s in SPLITS
              if any(s in r for r in results.values())}
    report = {"instances": eval_json.get("instances"), "arms": arms, "baseline": "stuffed" if "stuffed" in arms else None,
              "tables": tables}
    if eval_json.get("split"):          # which held-out split, its size and what was not scored
        split = dict(eval_json["split"])
        split["excluded_turns"] = len(split.pop("excluded", []))
        report["split"] = split
    if episodes:                        # arm against arm over the same turns, clustered by conversation
        report["differences"] = paired_differences(episodes, SPLITS[1:])
        _paired_deltas(tables, report["differences"])
    if run_dir and replicates > 1:      # craftc run --replicates N
        found = replicate_episodes(Path(run_dir), arms, replicates)
        if found:
            report["replicates"] = replicate_results(found)
    if eval_json.get("limit"):          # eval { limit N }: a sample of the held-out instances
        report["limit"] = eval_json["limit"]
    if eval_json.get("not_evaluated"):  # workflows with no scored turn, and why
        report["not_evaluated"] = eval_json["not_evaluated"]
    lost = without_training_data(_gate_losses(run_dir)) if run_dir else {}
    if lost:                            # workflows the gate left with no accepted trajectory
        report["no_training_data"] = lost
    if eval_json.get("earlier_turns"):  # earlier_turns compact|thinks: what follow-up calls saw, in every arm
        report["earlier_turns"] = eval_json["earlier_turns"]
    if eval_json.get("copy_bias"):      # eval { copy_bias B }: how every arm decoded
        report["copy_bias"] = eval_json["copy_bias"]
    if eval_json.get("precision"):      # eval { precision bf16 }: the dtype every arm decoded in
        report["precision"] = eval_json["precision"]
    if eval_json.get("repeat_temperature"):  # eval { repeat_temperature T }: repeated failed code resampled
        report["repeat_temperature"] = eval_json["repeat_temperature"]
    if eval_json.get("per_workflow"):   # agent score per workflow and held-out split
        report["per_workflow"] = build_workflow_table(eval_json["per_workflow"])
    if eval_json.get("failures"):       # failure classes per arm, one example each
        report["failures"] = eval_json["failures"]
    if episodes:                        # what each arm did after its code failed
        report["repairs"] = {arm: repair_counts(eps) for arm, eps in episodes.items()}
        cut = {arm: cut_off_counts(eps) for arm, eps in episodes.items()}
        if any(c["cut_off"] for c in cut.values()):     # calls that stopped at max_new_tokens
            report["cut_off"] = {"max_new_tokens": eval_json.get("max_new_tokens"), "arms": cut}
    if "general" in eval_json:          # eval { general ... }: lm-eval changes against the base
        report["general"] = eval_json["general"]
    summary = GRPO_SUMMARY.under(run_dir) if run_dir else None
    if summary and summary.is_file():
        data = json.loads(summary.read_text())
        report["grpo"] = {k: data.get(k) for k in ("steps", "measured_rows", "before", "after", "sampled_per_row",
                                                    "before_sampled", "after_sampled", "reward_weights", "aggregate")}
        # Summaries from before fresh rows measured training rows and carry none of these.
        report["grpo"].update({k: data[k] for k in ("measured_on", "rows_drawn", "rows", "change", "curve")
                               if k in data})
        if "dynamic_sampling" in data:
            report["grpo"]["dynamic_sampling"] = {k: v for k, v in data["dynamic_sampling"].items() if k != "per_step"}
    training = arm_training(run_dir, report["arms"], report.get("grpo", {}).get("steps")) if run_dir else None
    if training:                        # each arm's steps, tokens and closing loss
        report["training"] = training
    timing = step_wall_times(run_dir, replicates) if run_dir else None
    if timing:                          # what each step cost in wall time when it ran
        report["wall_time"] = timing
    # Why the comparison may not mean what it seems: report.md opens with them, the step prints them.
    report["read_with_care"] = [w for w in (nothing_passed(tables["all"]), undertrained_baseline(training, tables["all"]))
                                if w] if "all" in tables else []
    if "cut_off" in report:             # answers cut mid-code cannot pass, whatever the model learned
        limit = report["cut_off"]["max_new_tokens"]
        report["read_with_care"] += [f"in {arm}, {cut_off_line(c, limit)}"
                                     for arm, c in report["cut_off"]["arms"].items() if c["cut_off"]]
    return report


def _gate_losses(run_dir: Path) -> list[dict]:
    """The gate step's losses (``gate/funnel.json``); none when the file is absent or unreadable."""
    try:
        return json.loads(FUNNEL_JSON.under(run_dir).read_text()).get("losses", [])
    except (OSError, ValueError, AttributeError):
        return []


def coverage_lines(report: dict) -> list[str]:
    """What the figures do not cover: workflows not evaluated, workflows with no training data.

    >>> coverage_lines({"not_evaluated": {"w": "no test instance"}, "no_training_data": {"v": "0 of 4 accepted"}})
    ['**Not evaluated** (1 workflow): `w`: no test instance.', '**No training data** (1 workflow): `v`: 0 of 4 accepted; the trained arms never saw it (gate/funnel.md says why).']
    """
    lines = []
    for key, title, tail in (("not_evaluated", "Not evaluated", ""),
                             ("no_training_data", "No training data",
                              "; the trained arms never saw it (gate/funnel.md says why)")):
        found = report.get(key) or {}
        if found:
            listed = "; ".join(f"`{w}`: {why}" for w, why in found.items())
            lines.append(f"**{title}** ({len(found)} workflow{'s' if len(found) > 1 else ''}): {listed}{tail}.")
    return lines


def _paired_deltas(tables: dict, differences: dict) -> None:
    """Each rate cell's delta against the baseline becomes the paired difference's, with its interval."""
    for split, table in tables.items():
        paired = {(row["a"], row["metric"]): row for row in differences.get(split, []) if row["b"] == table["baseline"]}
        for row in table["rows"]:
            for arm, cell in row["arms"].items():
                match = paired.get((arm, row["metric"]))
                if row["kind"] == "rate" and match and match["value"] is not None:
                    cell["delta_pp"] = round(100 * match["value"], 2)
                    cell["delta_ci_pp"] = [round(100 * x, 2) for x in match["ci"]]


def split_line(report: dict) -> str:
    """The report's first line: which split was scored and its size.

    >>> split_line({"instances": 3, "split": {"name": "test", "instances": 3, "turns": 5, "scored_turns": 4,
    ...             "excluded_turns": 1}})
    '**Split: test**, 3 held-out instances, 5 user turns: 4 scored, 1 run but not scored (its reference returns no rows or fails, so any empty answer would pass)'
    """
    split = report.get("split")
    if not split:
        return f"{report['instances']} held-out instances"
    line = (f"**Split: {split['name']}**, {split['instances']} held-out instances, {split['turns']} user turns: "
            f"{split['scored_turns']} scored")
    if split.get("excluded_turns"):
        line += (f", {split['excluded_turns']} run but not scored (its reference returns no rows or fails, so any "
                 "empty answer would pass)")
    return line


def render_markdown(report: dict) -> str:
    asked = split_line(report)
    if report.get("limit"):
        limit = report["limit"]
        asked += f" (`eval {{ limit {limit['per_split']} }}` kept them of {limit['held_out']}, spread over each kind)"
    if report.get("baseline"):
        method = ("Baseline: `stuffed` (full schema DDL in every prompt). Rates with 95% intervals clustered by "
                  "conversation (clustered standard errors); each delta against the baseline is the paired difference "
                  "over the turns both arms were scored on, with its own clustered interval; costs with 95% intervals "
                  "and ratios to the baseline, each ratio with a paired bootstrap interval over the instances both arms "
                  "ran (where the baseline's cost is 0, the paired difference instead).")
    else:
        method = ("No baseline arm was evaluated (`eval { baseline none }` or `arms`). Rates with 95% intervals "
                  "clustered by conversation (clustered standard errors); costs with 95% intervals.")
    parts = ["# craft results\n\n", f"{asked}. {method}\n"]
    if report.get("earlier_turns", "full") != "full":
        rule = report["earlier_turns"]
        parts.append(f"\nIn every arm a follow-up question saw each earlier turn shortened to {what_is_kept(rule)} "
                     f"(`earlier_turns {rule}`).\n")
    if report.get("copy_bias"):
        parts.append(f"\nEvery arm decoded greedily with `eval {{ copy_bias {report['copy_bias']:g} }}`: the logit of each "
                     "token that writes a word of the questions asked so far raised by that much (docs/evaluation.md).\n")
    if report.get("precision"):
        parts.append(f"\nEvery arm decoded with {report['precision']} weights (`eval {{ precision {report['precision']} }}`; "
                     "docs/evaluation.md, \"Decoding precision\").\n")
    if report.get("repeat_temperature"):
        parts.append(f"\nIn every arm a repair whose greedy code repeated code that had failed in its turn was decoded "
                     f"again, sampled at temperature {report['repeat_temperature']:g}, and the sample ran "
                     f"(`eval {{ repeat_temperature {report['repeat_temperature']:g} }}`; docs/evaluation.md, "
                     "\"Repairs that repeat themselves\").\n")
    parts += [f"\n**Read with care:** {warning}.\n" for warning in report.get("read_with_care", [])]
    parts += [f"\n{line}\n" for line in coverage_lines(report)]
    if report.get("replicates"):
        rep = report["replicates"]
        parts += [f"\n## Over {rep['replicates']} training replicates\n\nEach arm trained {rep['replicates']} times on "
                  "the same data with another seed (`craftc run --replicates N`), scored on the same turns: the mean, "
                  "its spread, and an interval counting both the questions drawn and the training noise.\n\n",
                  markdown_replicates(rep)]
    if report.get("differences", {}).get("all"):
        parts += ["\n## Paired differences\n\nArm minus arm over the turns both were scored on, 95% intervals "
                  "clustered by conversation; the last column is the smallest difference this split detects at 80% "
                  "power (alpha 0.05): a smaller one can go unseen.\n\n", markdown_differences(report["differences"]["all"])]
    for split, table in report["tables"].items():
        parts += [f"\n## {KIND_TITLES.get(split, split)}\n\n", markdown_table(table)]
    if report.get("training"):
        budget = report["training"].get("baseline_budget")
        parts += ["\n## How each arm was trained\n\nFrom the sft and grpo steps; `sft_only` is craft's SFT model "
                  "before GRPO." + (f" The stuffed baseline's budget: `eval {{ baseline_budget {budget} }}` "
                                    f"({BUDGET_MEANING.get(budget, '')})." if budget else "") + "\n\n",
                  markdown_training(report["training"])]
    if report.get("wall_time"):
        parts += [f"\n{wall_time_line(report['wall_time'])} Each step's time is the one it took when it ran "
                  "(a step a later `craftc run` reused keeps it), read from its manifest.\n"]
    if "per_workflow" in report:
        parts += ["\n## Agent score per workflow\n\nUser turns passing, per workflow and held-out split.\n\n",
                  markdown_workflow_table(report["per_workflow"])]
    if "failures" in report:
        parts += ["\n## Why turns failed\n\nEach failed user turn has one class, the first that applies in "
                  "this order (docs/evaluation.md).\n\n", markdown_failures(report["failures"])]
    if report.get("repairs"):
        parts += ["\n## Repairs\n\nModel calls after a failed attempt in the same user turn (code that did not run, "
                  "or no code block; the agent shown the error): how many wrote the failed code again, byte for byte, "
                  "and how many then ran.\n\n",
                  markdown_repairs(report["repairs"])]
    if "grpo" in report:
        g = report["grpo"]
        where = "dev" if g.get("measured_on") == "dev" else "training"
        rows = f"{g['measured_rows']} {where} prompts" if g.get("measured_rows") else f"{where} prompts"
        measured = bool(g.get("before"))     # `measure 0` measured nothing
        parts.append(f"\n## GRPO measured on {rows} ({g['steps']} steps)\n\n" if measured
                     else f"\n## GRPO ({g['steps']} steps, nothing measured: `measure 0`)\n\n")
        if g.get("rows_drawn") == "fresh":
            parts.append(f"GRPO played {g.get('rows')} fresh rows: values no split holds (`rows fresh`).")
            if g.get("dynamic_sampling"):
                parts.append(f" Of them, {flat_groups_clause(g['dynamic_sampling'])}.")
            parts.append("\n\n")
        labels = [("before", "before, greedy"), ("after", "after, greedy")] if measured else []
        if labels:
            parts.append("| | R_total | execution success |\n| --- | --- | --- |\n")
        if measured and g.get("before_sampled"):
            k = g.get("sampled_per_row")
            labels += [("before_sampled", f"before, {k} samples per prompt"),
                       ("after_sampled", f"after, {k} samples per prompt")]
        for key, label in labels:
            m = g.get(key) or {}
            parts.append(f"| {label} | {m.get('total', float('nan')):.3f} | {m.get('exec_success', float('nan')):.3f} |\n")
        if g.get("change"):
            from runtime.report.comparison import difference_text
            parts.append("\nAfter minus before over the same rollouts, 95% intervals clustered by instance: R_total "
                         f"{difference_text(g['change']['greedy']['total'])} greedy, "
                         f"{difference_text(g['change']['sampled']['total'])} sampled; R_outcome "
                         f"{difference_text(g['change']['greedy']['outcome'])} greedy.\n")
    if "general" in report:              # eval { general ... }: each trained model against the base
        from runtime.eval.general import general_markdown

        parts.append("\n#" + general_markdown(report["general"]))
    return "".join(parts)


def markdown_repairs(repairs: dict[str, dict]) -> str:
    """Arms as columns, like the failure table.

    >>> print(markdown_repairs({"craft": {"repairs": 4, "same_code": 1, "ran": 2}}), end="")
    | | craft |
    | --- | --- |
    | repairs | 4 |
    | wrote the failed code again | 1 (25%) |
    | ran | 2 (50%) |
    """
    arms = list(repairs)

    def share(arm: str, key: str) -> str:
        n, of = repairs[arm].get(key, 0), repairs[arm]["repairs"]
        return f"{n} ({100 * n / of:.0f}%)" if of else str(n)

    lines = ["| | " + " | ".join(arms) + " |", "|" + " --- |" * (len(arms) + 1),
             "| repairs | " + " | ".join(str(repairs[a]["repairs"]) for a in arms) + " |"]
    if any(repairs[a].get("resampled") for a in arms):      # eval { repeat_temperature }
        lines.append("| repeated failed code, decoded again sampled | "
                     + " | ".join(share(a, "resampled") for a in arms) + " |")
    lines += ["| wrote the failed code again | " + " | ".join(share(a, "same_code") for a in arms) + " |",
              "| ran | " + " | ".join(share(a, "ran") for a in arms) + " |"]
    return "\n".join(lines) + "\n"


def nothing_passed(table: dict) -> str | None:
    """A warning when no arm answered a single held-out turn: such a report shows that the
    pipeline runs, not what the recipe does, and should not be read as a comparison.

    >>> row = {"metric": "agent_score", "arms": {"craft": {"value": 0.0, "n": 29}, "stuffed": {"value": 0.0, "n": 29}}}
    >>> nothing_passed({"rows": [row]})
    'no arm answered any of its held-out turns (agent score 0.0% in craft, stuffed): the arms cannot be compared on this run; train longer or on a larger base (docs/training.md)'
    >>> row["arms"]["craft"]["value"] = 0.1
    >>> nothing_passed({"rows": [row]}) is None
    True
    """
    row = next((r for r in table["rows"] if r["metric"] == "agent_score"), None)
    if not row or any(cell.get("value") for cell in row["arms"].values()):
        return None
    return (f"no arm answered any of its held-out turns (agent score 0.0% in {', '.join(row['arms'])}): the arms "
            "cannot be compared on this run; train longer or on a larger base (docs/training.md)")


def missing_ratios(table: dict) -> list[str]:
    """One line per cost ratio the table could not give, and what it shows instead.

    >>> cell = {"value": 0.1, "ci": [0.0, 0.2], "no_ratio": "stuffed is 0", "difference": 0.1, "difference_ci": [0.0, 0.2]}
    >>> missing_ratios({"rows": [{"metric": "discovery_loops", "label": "Discovery loops / turn", "kind": "cost",
    ...                           "arms": {"craft": cell}}]})
    ['Discovery loops / turn: no ratio for craft (stuffed is 0); the report gives the paired difference, +0.10 [+0.00, +0.20]']
    """
    lines = []
    for row in table["rows"]:
        for arm, cell in row["arms"].items():
            if "no_ratio" not in cell:
                continue
            shown = (f"the paired difference, {cell['difference']:+.2f} [{cell['difference_ci'][0]:+.2f}, "
                     f"{cell['difference_ci'][1]:+.2f}]" if "difference" in cell else "no comparison")
            lines.append(f"{row['label']}: no ratio for {arm} ({cell['no_ratio']}); the report gives {shown}")
    return lines


def rich_table(table: dict):
    """The ``all`` table for the terminal."""
    from rich.table import Table

    from runtime.report.table import _cell_text

    against = f" vs {table['baseline']}" if table["baseline"] else ""    # `baseline none`: no baseline arm
    out = Table(title=f"craft results ({table['split']}){against}")
    out.add_column("Metric")
    for arm in table["arms"]:
        out.add_column(arm, justify="right")
    for row in table["rows"]:
        out.add_row(row["label"], *[_cell_text(row["arms"][a], row["kind"]) for a in table["arms"]])
    return out


def run_report(ctx):
    """Render the eval results as a table (terminal, Markdown, JSON) and plots."""
    from runtime.step_context import StepError, StepResult

    eval_path = ctx.input_dir("eval") / "eval.json"
    try:
        eval_json = json.loads(eval_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise StepError(f"cannot read {eval_path} ({exc}); rerun `craftc run PLAN --only eval`") from None
    report = build_report(eval_json, ctx.run_dir, ctx.replicates)
    out = Path(ctx.out_dir)
    plots = plot_metric_bars(report["tables"]["all"], out) + plot_training_curves(Path(ctx.run_dir), out)
    report["plots"] = plots
    (out / "report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    (out / "report.md").write_text(render_markdown(report))
    ctx.console.print(split_line(report).replace("**", ""))
    ctx.console.print(rich_table(report["tables"]["all"]))
    for row in report.get("differences", {}).get("all", []):
        if row["metric"] == "agent_score" and row["value"] is not None:
            power = f"{100 * row['mde']:.1f} pp" if row["mde"] is not None else "n/a (the arms never differ on a turn)"
            ctx.console.print(f"report: agent score {row['a']} - {row['b']}: {difference_text(row)} over {row['n']} "
                              f"turns ({row['clusters']} conversations); detectable at 80% power: {power}")
    for row in report.get("replicates", {}).get("differences", []):
        ctx.console.print(f"report: over {report['replicates']['replicates']} replicates, agent score {row['a']} - "
                          f"{row['b']}: {difference_text({'value': row['mean'], 'ci': row['ci']})} (sd {100 * row['sd']:.1f} pp)")
    rows = {r["metric"]: r for r in report["tables"]["all"]["rows"]}
    metrics = {f"{m}_ratio_{arm}": rows[m]["arms"][arm].get("ratio")
               for m in COST_METRICS for arm in report["arms"] if arm != "stuffed"}
    for line in missing_ratios(report["tables"]["all"]):
        ctx.console.print(f"[yellow]report: {line}[/yellow]")
    for warning in report["read_with_care"]:
        ctx.console.print(f"[yellow]report: {warning}[/yellow]")
    for line in coverage_lines(report):
        ctx.console.print(f"[yellow]report: {line.replace('**', '')}[/yellow]")
    if report.get("wall_time"):
        ctx.console.print(f"report: {wall_time_line(report['wall_time'])}")
    metrics.update({f"{m}_difference_{arm}": rows[m]["arms"][arm]["difference"]
                    for m in COST_METRICS for arm in report["arms"] if "difference" in rows[m]["arms"][arm]})
    return StepResult(metrics=metrics, outputs=("report.md", "report.json", *plots))
