"""Where the arms win and lose: agent score per workflow, and failure classes with examples.

Both read what the eval step stored in ``eval.json`` (``per_workflow``, ``failures``);
nothing here re-scores an episode.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from runtime.eval.failures import FAILURE_CLASSES

__all__ = ["answered_instead", "build_workflow_table", "markdown_workflow_table", "markdown_failures"]

from runtime.eval.step import SPLIT_ORDER  # noqa: E402  (the held-out kinds, in report order)


def _split_rank(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def build_workflow_table(per_workflow: dict[str, list[dict]]) -> dict:
    """One row per (split, workflow), one cell per arm: ``{passed, n, value}``.

    Rows are ordered by split (new params, new phrasings, new workflows), then workflow;
    a workflow evaluated in two splits has a row in each.
    """
    arms = list(per_workflow)
    rows: dict[tuple[str, str], dict] = {}
    for arm, entries in per_workflow.items():
        for entry in entries:
            key = (entry["split"], entry["workflow"])
            row = rows.setdefault(key, {"workflow": entry["workflow"], "split": entry["split"], "arms": {}})
            row["arms"][arm] = {k: entry[k] for k in ("passed", "n", "value")}
    ordered = sorted(rows.values(), key=lambda r: (_split_rank(r["split"]), r["workflow"]))
    return {"metric": "agent_score", "arms": arms, "rows": ordered}


def _score_text(cell: dict | None) -> str:
    if not cell or not cell.get("n"):
        return "n/a"
    return f"{100 * cell['value']:.1f}% ({cell['passed']}/{cell['n']})"


def markdown_workflow_table(table: dict) -> str:
    """Workflows as rows, arms as columns: agent score with passing/all user turns."""
    arms = table["arms"]
    lines = ["| Workflow | Split | " + " | ".join(arms) + " |", "|" + " --- |" * (len(arms) + 2)]
    for row in table["rows"]:
        lines.append(f"| {row['workflow']} | {row['split']} | "
                     + " | ".join(_score_text(row["arms"].get(a)) for a in arms) + " |")
    return "\n".join(lines) + "\n"


def _inline(text: str) -> str:
    return text.replace("`", "'")


def markdown_failures(failures: dict[str, dict]) -> str:
    """Counts per class and arm, then one example per class and arm."""
    arms = list(failures)
    lines = ["| Failure class | " + " | ".join(arms) + " |", "|" + " --- |" * (len(arms) + 1)]
    for name in FAILURE_CLASSES:
        lines.append(f"| {name} | " + " | ".join(str(failures[a]["counts"].get(name, 0)) for a in arms) + " |")
    lines.append("| failed user turns | " + " | ".join(str(failures[a]["failed_turns"]) for a in arms) + " |")
    out = "\n".join(lines) + "\n" + answered_instead(failures, arms)
    for arm in arms:
        examples = failures[arm].get("examples", {})
        if not examples:
            continue
        out += f"\n### Examples: {arm}\n\n"
        for name in FAILURE_CLASSES:
            if name not in examples:
                continue
            e = examples[name]
            out += (f"- **{name}**: `{e['instance_id']}` ({e['workflow']}, {e['split']}) turn {e['turn']}: "
                    f"\"{e['question']}\"; plan: \"{e['plan']}\"; code: `{_inline(e['code']) or '(none)'}`\n")
    return out


def answered_instead(failures: dict[str, dict], arms: list[str]) -> str:
    """Per arm, the workflows whose code answered other workflows' questions, most first, and
    whose questions they answered: a model that recalls a few workflows' code shows here.

    >>> f = {"craft": {"answered_instead": [{"asked": "roas_by_geo", "answered": "spend_by_advertiser", "turns": 2},
    ...                                     {"asked": "budget_pacing", "answered": "spend_by_advertiser", "turns": 1},
    ...                                     {"asked": "keyword_quality", "answered": "wasted_spend", "turns": 1}]},
    ...      "stuffed": {}}
    >>> print(answered_instead(f, ["craft", "stuffed"]).strip())
    Answered with another workflow's code, by the workflow the code resembles (the asked workflows in brackets):
    <BLANKLINE>
    - craft: spend_by_advertiser 3 (roas_by_geo 2, budget_pacing 1); wasted_spend 1 (keyword_quality 1)
    """
    lines = []
    for arm in arms:
        pairs = failures.get(arm, {}).get("answered_instead")
        if not pairs:       # none, or an eval.json written before the pairs were kept
            continue
        total: Counter = Counter()
        asked: dict[str, Counter] = defaultdict(Counter)
        for pair in pairs:
            total[pair["answered"]] += pair["turns"]
            asked[pair["answered"]][pair["asked"]] += pair["turns"]
        parts = [f"{wf} {n} (" + ", ".join(f"{a} {m}" for a, m in sorted(asked[wf].items(), key=lambda x: (-x[1], x[0])))
                 + ")" for wf, n in sorted(total.items(), key=lambda x: (-x[1], x[0]))]
        lines.append(f"- {arm}: " + "; ".join(parts))
    if not lines:
        return ""
    return ("\nAnswered with another workflow's code, by the workflow the code resembles (the asked workflows "
            "in brackets):\n\n" + "\n".join(lines) + "\n")
