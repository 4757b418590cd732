"""The results tables of README.md and docs/, written from result digests, never by hand.

A *digest* (``docs/results/NAME.json``) holds the figures of one run that the docs show:
the arms' metrics against the baseline, the agent score per held-out split, the failure
classes and GRPO's before/after. :func:`digest` is the one function that reads a run's
``report/report.json``; everything else reads digests, so when the report's format
changes only that function changes.

In a Markdown file, the text between

    <!-- results:NAME:begin -->
    <!-- results:NAME:end -->

is every table of ``docs/results/NAME.json`` (a digest of ``craftc compare`` output holds only
``differences``, or with ``--replicates`` only ``replicates``); ``results:NAME:PART`` (PART one of
``metrics``, ``splits``, ``failures``, ``grpo``, ``differences``, ``replicates``, ``timing``) is one
of them. Commands::

    python -m runtime.results_tables            # rewrite README.md and docs/**/*.md
    python -m runtime.results_tables --check    # exit 1 and name the files that differ
    python -m runtime.results_tables digest RUN_DIR/report/report.json -o docs/results/default.json

``make docs-results`` runs the first; ``tests/docs/test_results_tables.py`` the second.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from runtime.report.breakdown import answered_instead
from runtime.report.comparison import markdown_differences, markdown_replicates
from runtime.report.training import flat_groups_clause

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "docs" / "results"
DIGEST_VERSION = 2
PARTS = ("metrics", "splits", "failures", "grpo", "differences", "replicates", "timing")
SPLIT_LABELS = {"eval_params": "held-out params, seen phrasings", "eval_phrasings": "held-out phrasings",
                "eval_workflows": "held-out workflows",
                "new_values": "new values, trained phrasings", "new_phrasing": "new phrasing and new values",
                "new_workflow": "new workflow"}
MARKER = re.compile(r"(<!-- results:(?P<name>[\w.-]+?)(?::(?P<part>" + "|".join(PARTS) + r"))?:begin -->\n)"
                    r"(?P<body>.*?)(<!-- results:(?P=name)(?::(?P=part))?:end -->)", re.S)


# --- report.json -> digest: the one place that knows report.json's format ------------------

def digest(report: dict, source: str) -> dict:
    """The figures the docs show, from a run's ``report.json`` (``runtime/report/step.py: build_report``).

    >>> cell = {"value": 0.5, "ci": [0.25, 0.75], "n": 4}
    >>> table = {"arms": ["craft", "stuffed"], "baseline": "stuffed", "rows": [{"metric": "agent_score",
    ...          "label": "Agent score", "kind": "rate", "arms": {"craft": {**cell, "delta_pp": 50.0},
    ...          "stuffed": {"value": 0.0, "ci": [0.0, 0.5], "n": 4}}}]}
    >>> d = digest({"instances": 2, "arms": ["craft", "stuffed"], "tables": {"all": table, "eval_params": table}}, "a run")
    >>> d["user_turns"], d["splits"][0]["split"], d["metrics"][0]["arms"]["craft"]["delta_pp"]
    (4, 'eval_params', 50.0)
    >>> "split" in d, "replicates" in d         # only reports that have them
    (False, False)
    """
    keep = ("value", "ci", "delta_pp", "delta_ci_pp", "ratio", "ratio_ci", "no_ratio", "difference", "difference_ci")
    tables = report["tables"]
    overall = tables["all"]
    metrics = []
    for row in overall["rows"]:
        entry = {"metric": row["metric"], "label": row["label"], "kind": row["kind"],
                 "arms": {arm: {k: cell[k] for k in keep if k in cell} for arm, cell in row["arms"].items()}}
        if "published_ratio" in row:
            entry["published_ratio"] = row["published_ratio"]
        metrics.append(entry)
    splits = []
    for split, table in tables.items():
        if split == "all":
            continue
        [row] = [r for r in table["rows"] if r["metric"] == "agent_score"]
        splits.append({"split": split, "user_turns": max(c.get("n", 0) for c in row["arms"].values()),
                       "arms": {arm: {"value": c["value"], "ci": c["ci"]} for arm, c in row["arms"].items()}})
    [score] = [r for r in overall["rows"] if r["metric"] == "agent_score"]
    out = {"version": DIGEST_VERSION, "source": source, "instances": report.get("instances"),
           "user_turns": max(c.get("n", 0) for c in score["arms"].values()),
           "arms": report.get("arms", overall["arms"]), "baseline": overall.get("baseline", "stuffed"),
           "metrics": metrics, "splits": splits}
    if report.get("split"):             # the split scored and its size
        out["split"] = {k: report["split"][k] for k in ("name", "instances", "turns", "scored_turns", "excluded_turns")
                        if k in report["split"]}
    if report.get("differences", {}).get("all"):   # paired, clustered by conversation
        out["differences"] = [{k: row[k] for k in ("a", "b", "metric", "value", "ci", "p_value", "n", "clusters", "mde")}
                              for row in report["differences"]["all"]]
    if report.get("replicates"):
        rep = report["replicates"]
        out["replicates"] = {"metric": rep["metric"], "replicates": rep["replicates"],
                             "arms": {a: {k: r[k] for k in ("mean", "sd", "ci", "per_replicate")}
                                      for a, r in rep["arms"].items()},
                             "differences": [{k: r[k] for k in ("a", "b", "mean", "sd", "ci", "per_replicate", "mde")}
                                             for r in rep["differences"]]}
    if report.get("wall_time"):         # each step's wall time (runtime.report.training.step_wall_times)
        out["wall_time"] = report["wall_time"]
    if report.get("failures"):
        out["failures"] = {arm: {"counts": dict(f["counts"]), "failed_turns": f["failed_turns"],
                                 **({"answered_instead": f["answered_instead"]} if f.get("answered_instead") else {})}
                           for arm, f in report["failures"].items()}
    if report.get("grpo"):
        g = report["grpo"]
        out["grpo"] = {"steps": g.get("steps"), "measured_rows": g.get("measured_rows"),
                       **{k: g[k] for k in ("measured_on", "rows_drawn", "dynamic_sampling") if g.get(k)}}
        if len(g.get("curve") or []) > 2:      # measured between before and after (`measure_every`)
            out["grpo"]["curve"] = [{"step": p["step"], "total": p.get("total")} for p in g["curve"]]
        if g.get("change"):
            out["grpo"]["change"] = {when: {k: g["change"][when]["total"][k] for k in ("value", "ci")}
                                     for when in ("greedy", "sampled")}
        for key in ("before", "after", "before_sampled", "after_sampled"):
            if g.get(key):
                out["grpo"][key] = {"total": g[key].get("total"), "exec_success": g[key].get("exec_success")}
    return out


# --- digest -> Markdown --------------------------------------------------------------------

def _rate(cell: dict) -> str:
    low, high = cell["ci"]
    text = f"{100 * cell['value']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"
    if "delta_ci_pp" in cell:
        return text + f" ({cell['delta_pp']:+.1f} pp [{cell['delta_ci_pp'][0]:+.1f}, {cell['delta_ci_pp'][1]:+.1f}])"
    return text + (f" ({cell['delta_pp']:+.1f} pp)" if "delta_pp" in cell else "")


def _pp(value: float) -> str:
    return f"{100 * value:+.1f}"


def differences_table(d: dict) -> str:
    """Each paired difference (arm minus arm over the same turns), clustered by conversation:
    report.md's table (``runtime.report.comparison.markdown_differences``)."""
    return markdown_differences(d["differences"])


def replicates_table(d: dict) -> str:
    """Each arm's mean over training replicates, and each paired difference's, as report.md writes them.

    >>> print(replicates_table({"replicates": {"metric": "agent_score", "replicates": 2,
    ...     "arms": {"craft": {"mean": 0.35, "sd": 0.07, "ci": [0.25, 0.45], "per_replicate": [0.3, 0.4]}},
    ...     "differences": []}}), end="")
    | Arm | Agent score, mean of 2 [95% CI] | SD | Per replicate |
    | --- | --- | --- | --- |
    | craft | 35.0% [25.0, 45.0] | 7.0 pp | 30.0%, 40.0% |
    """
    return markdown_replicates(d["replicates"])


def _cost(cell: dict) -> str:
    low, high = cell["ci"]
    text = f"{cell['value']:.1f} [{low:.1f}, {high:.1f}]"
    if cell.get("ratio") is not None and "ratio_ci" in cell:
        return text + f" ({cell['ratio']:.3f}x [{cell['ratio_ci'][0]:.3f}, {cell['ratio_ci'][1]:.3f}])"
    if cell.get("ratio") is not None:
        return text + f" ({cell['ratio']:.2f}x)"
    if "difference" in cell:
        low, high = cell["difference_ci"]
        return text + f" ({cell['difference']:+.2f} [{low:+.2f}, {high:+.2f}]; no ratio: {cell['no_ratio']})"
    return text + (f" (no ratio: {cell['no_ratio']})" if "no_ratio" in cell else "")


def _cell(cell: dict | None, kind: str) -> str:
    if not cell or cell.get("value") is None:
        return "n/a"
    return _rate(cell) if kind == "rate" else _cost(cell)


def metrics_table(d: dict) -> str:
    """Every metric per arm, against the baseline, with the published cost ratios.

    >>> d = {"arms": ["craft", "stuffed"], "metrics": [{"label": "Input tokens / call", "kind": "cost",
    ...      "published_ratio": 0.11, "arms": {"craft": {"value": 180.0, "ci": [170.0, 190.0], "ratio": 0.036,
    ...      "ratio_ci": [0.03, 0.04]}, "stuffed": {"value": 5000.0, "ci": [4990.0, 5010.0]}}}]}
    >>> print(metrics_table(d), end="")
    | Metric | craft | stuffed | Published |
    | --- | --- | --- | --- |
    | Input tokens / call | 180.0 [170.0, 190.0] (0.036x [0.030, 0.040]) | 5000.0 [4990.0, 5010.0] | 0.11x |
    """
    arms = d["arms"]
    lines = ["| Metric | " + " | ".join(arms) + " | Published |", "|" + " --- |" * (len(arms) + 2)]
    for row in d["metrics"]:
        published = f"{row['published_ratio']:.2f}x" if row.get("published_ratio") is not None else ""
        lines.append(f"| {row['label']} | " + " | ".join(_cell(row["arms"].get(a), row["kind"]) for a in arms)
                     + f" | {published} |")
    return "\n".join(lines) + "\n"


def splits_table(d: dict) -> str:
    """The agent score per held-out split."""
    arms = d["arms"]
    lines = ["| Split | " + " | ".join(arms) + " |", "|" + " --- |" * (len(arms) + 1)]
    for s in d["splits"]:
        label = f"{SPLIT_LABELS.get(s['split'], s['split'])} ({s['user_turns']} turns)"
        lines.append(f"| {label} | " + " | ".join(_cell(s["arms"].get(a), "rate") for a in arms) + " |")
    return "\n".join(lines) + "\n"


def failures_table(d: dict) -> str:
    """Failed user turns per failure class (the classes some arm has) and arm."""
    failures = d["failures"]
    arms = [a for a in d["arms"] if a in failures]
    classes = [c for c in next(iter(failures.values()))["counts"] if any(failures[a]["counts"].get(c) for a in arms)]
    lines = ["| Failure class | " + " | ".join(arms) + " |", "|" + " --- |" * (len(arms) + 1)]
    lines += [f"| {c} | " + " | ".join(str(failures[a]["counts"].get(c, 0)) for a in arms) + " |" for c in classes]
    lines.append("| failed user turns | " + " | ".join(str(failures[a]["failed_turns"]) for a in arms) + " |")
    return "\n".join(lines) + "\n" + answered_instead(failures, arms)


def grpo_line(d: dict) -> str:
    """GRPO's measured rows before and after training, as one sentence."""
    g = d["grpo"]
    where = "dev" if g.get("measured_on") == "dev" else "training"
    rows = f"{g['measured_rows']} {where} rows" if g.get("measured_rows") else f"the {where} rows it measured"
    if not g.get("before"):                 # `measure 0`
        text = f"GRPO trained {g['steps']} steps and measured no rows before or after (`measure 0`)"
    else:
        text = (f"GRPO trained {g['steps']} steps; on {rows} greedy R_total went {g['before']['total']:.3f} -> "
                f"{g['after']['total']:.3f}")
        if g["before"].get("exec_success") is not None and g["after"].get("exec_success") is not None:
            text += f" (execution success {g['before']['exec_success']:.3f} -> {g['after']['exec_success']:.3f})"
    if g.get("before_sampled") and g.get("after_sampled"):
        text += f", sampled R_total {g['before_sampled']['total']:.3f} -> {g['after_sampled']['total']:.3f}"
    if g.get("change"):
        c = g["change"]["greedy"]
        text += f" (greedy change {_pp(c['value'])} pp [{_pp(c['ci'][0])}, {_pp(c['ci'][1])}], paired)"
    if g.get("curve"):
        text += "; greedy R_total over the steps " + ", ".join(f"{p['total']:.3f} (step {p['step']})"
                                                              for p in g["curve"])
    if g.get("dynamic_sampling"):
        d = g["dynamic_sampling"]
        rows_drawn = "fresh rows" if g.get("rows_drawn") == "fresh" else "SFT's rows"
        text += f"; on {rows_drawn}, {flat_groups_clause(d)}"
    return text + ".\n"


def render(d: dict, part: str | None = None) -> str:
    """The Markdown that stands between a digest's markers: one part, or all of them."""
    if part == "metrics":
        return metrics_table(d)
    if part == "splits":
        return splits_table(d)
    if part == "failures":
        return failures_table(d)
    if part == "grpo":
        return grpo_line(d)
    if part == "differences":
        return differences_table(d)
    if part == "replicates":
        return replicates_table(d)
    if part == "timing":
        from runtime.report.training import wall_time_line

        return wall_time_line(d["wall_time"]) + "\n"
    if "metrics" not in d:          # a comparison of runs (`craftc compare`): its differences or its replicates
        return differences_table(d) if "differences" in d else replicates_table(d)
    # A run without the stuffed arm (`eval { baseline none }`) has nothing to be measured against;
    # digests written before the report said so name `stuffed` anyway.
    baseline = d.get("baseline") if d.get("baseline") in d["arms"] else None
    if d.get("split"):
        sp = d["split"]
        against = (f" and paired deltas against `{baseline}` in percentage points; costs with paired ratios"
                   if baseline else "")
        out = [f"The {sp['name']} split: {sp['instances']} held-out instances, {sp['scored_turns']} user turns scored "
               f"({sp.get('excluded_turns', 0)} more run but not scored: their reference returns no rows). Rates with "
               f"95% intervals clustered by conversation{against}.\n\n"]
        if d.get("replicates"):
            out += [f"Over {d['replicates']['replicates']} training replicates:\n\n", replicates_table(d),
                    "\nThe first replicate alone:\n\n"]
        out += [metrics_table(d)]
        if d.get("differences"):
            out += ["\nPaired differences (the first replicate):\n\n", differences_table(d)]
        out += ["\nAgent score per held-out kind:\n\n", splits_table(d)]
    else:
        against = (f" and deltas against `{baseline}` in percentage points, costs with 95% bootstrap intervals "
                   "and paired ratios" if baseline else ", costs with 95% bootstrap intervals")
        out = [f"Over {d['instances']} held-out instances ({d['user_turns']} user turns); rates with 95% Wilson "
               f"intervals{against}:\n\n", metrics_table(d), "\nAgent score per held-out split:\n\n",
               splits_table(d)]
    if d.get("failures"):
        out += ["\nWhy turns failed (each failed user turn gets the first class that applies):\n\n", failures_table(d)]
    if d.get("grpo"):
        out += ["\n", grpo_line(d)]
    return "".join(out)


# --- files ---------------------------------------------------------------------------------

def load_digests(results_dir: Path = RESULTS_DIR) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(results_dir.glob("*.json"))}


def rewrite(text: str, digests: dict[str, dict], where: str = "") -> str:
    """``text`` with every marked block rewritten from its digest.

    >>> d = {"arms": ["craft"], "splits": [{"split": "eval_params", "user_turns": 4,
    ...      "arms": {"craft": {"value": 0.25, "ci": [0.05, 0.7]}}}]}
    >>> print(rewrite("a\\n<!-- results:x:splits:begin -->\\nold\\n<!-- results:x:splits:end -->\\n", {"x": d}), end="")
    a
    <!-- results:x:splits:begin -->
    | Split | craft |
    | --- | --- |
    | held-out params, seen phrasings (4 turns) | 25.0% [5.0, 70.0] |
    <!-- results:x:splits:end -->
    """
    def block(match: re.Match) -> str:
        name = match["name"]
        if name not in digests:
            raise SystemExit(f"{where}: no digest docs/results/{name}.json for the results:{name} markers")
        return match.group(1) + render(digests[name], match["part"]) + match.group(5)

    return MARKER.sub(block, text)


def targets(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/ that has results markers."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return [p for p in files if p.is_file() and "<!-- results:" in p.read_text(encoding="utf-8")]


def stale(root: Path = ROOT) -> list[Path]:
    """The files whose marked blocks differ from what the digests give."""
    digests = load_digests(root / "docs" / "results")
    return [p for p in targets(root)
            if rewrite(text := p.read_text(encoding="utf-8"), digests, str(p.relative_to(root))) != text]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["digest"]:
        parser = argparse.ArgumentParser(prog="python -m runtime.results_tables digest")
        parser.add_argument("report", type=Path, help="RUN_DIR/report/report.json")
        parser.add_argument("-o", "--output", type=Path, required=True, help="docs/results/NAME.json")
        parser.add_argument("--source", help="what run this is (default: the report's path)")
        args = parser.parse_args(argv[1:])
        out = digest(json.loads(args.report.read_text()), args.source or str(args.report))
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.output}; now run `make docs-results`")
        return 0
    parser = argparse.ArgumentParser(prog="python -m runtime.results_tables",
                                     description="Rewrite the results tables of README.md and docs/ from docs/results/*.json.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file differs")
    args = parser.parse_args(argv)
    if args.check:
        behind = stale()
        for path in behind:
            print(f"{path.relative_to(ROOT)}: results tables differ from docs/results; run `make docs-results`")
        return 1 if behind else 0
    digests = load_digests()
    for path in targets():
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, digests, str(path.relative_to(ROOT)))
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
