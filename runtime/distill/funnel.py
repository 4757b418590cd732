"""The funnel report: how many candidates each gate let through, and why it rejected.

Written as ``funnel.json`` (the data), ``funnel.md`` (for people and pull
requests) and printed as a rich table. For the synthetic teacher it adds a
confusion table, noise kind x gate: ``first`` is the gate that stopped the
candidate, ``would`` counts every gate that would have rejected it, and
``intended`` is the gate the kind is built for (see `noise.INTENDED_GATE`).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

from runtime.distill.noise import INTENDED_GATE

__all__ = ["build_funnel", "funnel_markdown", "print_funnel"]

EXAMPLES_PER_REASON = 2
EXAMPLE_CHARS = 400


def build_funnel(outcomes: list[dict[str, Any]], candidates: dict[str, dict[str, Any]],
                 order: tuple[str, ...]) -> dict[str, Any]:
    """Counts per gate and reason, examples, and (synthetic) the confusion table.

    Args:
        outcomes: `GateOutcome.to_dict()` records.
        candidates: candidate records by id (``text`` and ``metadata``).
        order: the gate order.
    """
    total = len(outcomes)
    remaining, gates = total, []
    for gate in order:
        rejected = [o for o in outcomes if o["gate"] == gate]
        reasons = Counter(o["reason_class"] for o in rejected)
        examples: dict[str, list[dict[str, str]]] = defaultdict(list)
        for o in rejected:
            bucket = examples[o["reason_class"]]
            if len(bucket) < EXAMPLES_PER_REASON:
                bucket.append({"candidate_id": o["candidate_id"], "reason": o["reason"][:300],
                               "text": candidates[o["candidate_id"]]["text"][:EXAMPLE_CHARS]})
        gates.append({"gate": gate, "entered": remaining, "rejected": len(rejected),
                      "passed": remaining - len(rejected), "reasons": dict(sorted(reasons.items())),
                      "examples": dict(sorted(examples.items()))})
        remaining -= len(rejected)
    funnel: dict[str, Any] = {"candidates": total, "accepted": remaining,
                              "acceptance_rate": round(remaining / total, 4) if total else 0.0,
                              "gates": gates}
    labelled = [(o, candidates[o["candidate_id"]]["metadata"]) for o in outcomes
                if "clean" in candidates[o["candidate_id"]]["metadata"]]
    if labelled:
        funnel["confusion"] = _confusion(labelled, order)
    return funnel


def _confusion(labelled, order: tuple[str, ...]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for outcome, meta in labelled:
        kind = "clean" if meta.get("clean") else meta.get("noise_kind") or "unknown"
        row = rows.setdefault(kind, {"kind": kind, "intended": INTENDED_GATE.get(kind), "total": 0,
                                     "accepted": 0, "first": Counter(), "would": Counter()})
        row["total"] += 1
        row["accepted"] += outcome["accepted"]
        if outcome["gate"]:
            row["first"][outcome["gate"]] += 1
        for gate, answer in outcome["would_reject"].items():
            if answer:
                row["would"][gate] += 1
    table = []
    for kind in sorted(rows, key=lambda k: (k == "clean", list(INTENDED_GATE).index(k) if k in INTENDED_GATE else 99)):
        row = rows[kind]
        intended = row["intended"]
        table.append({**row, "first": {g: row["first"][g] for g in order},
                      "would": {g: row["would"][g] for g in order},
                      "caught_by_intended": row["would"][intended] if intended else None})
    corrupted = [r for r in table if r["kind"] != "clean"]
    clean = next((r for r in table if r["kind"] == "clean"), None)
    n_corrupted = sum(r["total"] for r in corrupted)
    return {
        "rows": table,
        "corrupted": n_corrupted,
        "corrupted_rejected": n_corrupted - sum(r["accepted"] for r in corrupted),
        "corrupted_rejected_rate": round(1 - sum(r["accepted"] for r in corrupted) / n_corrupted, 4) if n_corrupted else None,
        "clean": clean["total"] if clean else 0,
        "clean_rejected_rate": round(1 - clean["accepted"] / clean["total"], 4) if clean and clean["total"] else None,
    }


def funnel_markdown(funnel: dict[str, Any]) -> str:
    """The funnel as Markdown tables."""
    lines = ["# Tri-Gate funnel", "",
             f"{funnel['candidates']} candidates -> {funnel['accepted']} accepted "
             f"({funnel['acceptance_rate']:.1%}).", "",
             *_losses_markdown(funnel.get("losses", [])),
             "| gate | entered | rejected | passed | reasons |", "| --- | ---: | ---: | ---: | --- |"]
    for g in funnel["gates"]:
        reasons = ", ".join(f"{k} {v}" for k, v in g["reasons"].items()) or "-"
        lines.append(f"| {g['gate']} | {g['entered']} | {g['rejected']} | {g['passed']} | {reasons} |")
    confusion = funnel.get("confusion")
    if confusion:
        gates = [g["gate"] for g in funnel["gates"]]
        lines += ["", "## Synthetic noise: which gate caught what", "",
                  "First gate that rejected (would-reject counts in brackets).", "",
                  "| kind | intended | total | " + " | ".join(gates) + " | accepted |",
                  "| --- | --- | ---: | " + " | ".join("---:" for _ in gates) + " | ---: |"]
        for row in confusion["rows"]:
            cells = " | ".join(f"{row['first'][g]} ({row['would'][g]})" for g in gates)
            lines.append(f"| {row['kind']} | {row['intended'] or '-'} | {row['total']} | {cells} | {row['accepted']} |")
        lines += ["", f"Corrupted rejected: {confusion['corrupted_rejected']}/{confusion['corrupted']}"
                      f" ({confusion['corrupted_rejected_rate']}); clean rejected rate: {confusion['clean_rejected_rate']}."]
    lines += ["", "## Examples", ""]
    for g in funnel["gates"]:
        for reason, examples in g["examples"].items():
            for example in examples:
                lines += [f"**{g['gate']} / {reason}** `{example['candidate_id']}`: {example['reason']}", "",
                          "```", example["text"].replace("```", "'''"), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _losses_markdown(losses: list[dict]) -> list[str]:
    from runtime.distill.losses import losses_markdown

    return losses_markdown(losses)


def print_funnel(funnel: dict[str, Any], console: Console) -> None:
    """The funnel and the confusion table as rich tables."""
    table = Table(title=f"Tri-Gate funnel: {funnel['candidates']} -> {funnel['accepted']}")
    for column in ("gate", "entered", "rejected", "passed", "reasons"):
        table.add_column(column, justify="left" if column in ("gate", "reasons") else "right")
    for g in funnel["gates"]:
        table.add_row(g["gate"], str(g["entered"]), str(g["rejected"]), str(g["passed"]),
                      ", ".join(f"{k} {v}" for k, v in g["reasons"].items()) or "-")
    console.print(table)
    confusion = funnel.get("confusion")
    if confusion:
        gates = [g["gate"] for g in funnel["gates"]]
        matrix = Table(title="synthetic noise kind x first rejecting gate (would reject)")
        for column in ("kind", "intended", "total", *gates, "accepted"):
            matrix.add_column(column)
        for row in confusion["rows"]:
            matrix.add_row(row["kind"], row["intended"] or "-", str(row["total"]),
                           *(f"{row['first'][g]} ({row['would'][g]})" for g in gates), str(row["accepted"]))
        console.print(matrix)


def dumps(funnel: dict[str, Any]) -> str:
    return json.dumps(funnel, indent=2, sort_keys=True, default=str) + "\n"
