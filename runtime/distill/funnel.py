"""The funnel report: how many candidates each gate let through, and why it rejected.

Written as ``funnel.json`` (the data), ``funnel.md`` (for people and pull
requests) and printed as a rich table. For the synthetic teacher it adds a
confusion table, noise kind x gate: ``first`` is the gate that stopped the
candidate, ``would`` counts every gate that would have rejected it, and
``intended`` is the gate the kind is built for (see `noise.INTENDED_GATE`). For a
model teacher it adds the tokens its candidates cost (``teacher``: prompt and completion
tokens per workflow, and per accepted candidate).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

from runtime.distill.judge_stats import judge_stats
from runtime.distill.noise import INTENDED_GATE
from runtime.distill.oracle import oracle_table

__all__ = ["build_funnel", "funnel_markdown", "print_funnel", "teacher_tokens", "thin_evidence"]

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
    judged = judge_stats(outcomes)
    if judged["per_judge"]:
        funnel["judges"] = judged
    repairs = _repairs(outcomes, candidates)
    if repairs:
        funnel["repairs"] = repairs
    discovery = _discovery(outcomes, candidates)
    if discovery:
        funnel["discovery"] = discovery
    labelled = [(o, candidates[o["candidate_id"]]["metadata"]) for o in outcomes
                if "clean" in candidates[o["candidate_id"]]["metadata"]]
    if labelled:
        funnel["confusion"] = _confusion(labelled, order)
    oracle = oracle_table(outcomes, candidates)
    if oracle:
        funnel["oracle"] = oracle
    teacher = teacher_tokens(outcomes, candidates)
    if teacher:
        funnel["teacher"] = teacher
    thin = thin_evidence(outcomes, candidates)
    if thin:
        funnel["thin_evidence"] = thin
    return funnel


def thin_evidence(outcomes: list[dict[str, Any]], candidates: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Accepted candidates whose only evidence is a result equal to a reference of at most one
    row or one value per column: how many, per workflow, and one reason; None when none."""
    thin = [o for o in outcomes if o["accepted"] and o.get("thin_evidence")]
    if not thin:
        return None
    per_workflow = Counter(candidates[o["candidate_id"]]["workflow"] for o in thin)
    accepted = sum(o["accepted"] for o in outcomes)
    return {"accepted": len(thin), "of_accepted": accepted, "per_workflow": dict(sorted(per_workflow.items())),
            "example": {"candidate_id": thin[0]["candidate_id"], "reason": thin[0]["thin_evidence"]}}


def _thin_line(thin: dict[str, Any]) -> str:
    workflows = ", ".join(f"{w} {n}" for w, n in thin["per_workflow"].items())
    return (f"Warning: {thin['accepted']} of {thin['of_accepted']} accepted "
            f"candidates rest only on a result equal to a reference of at most one row or one value "
            f"({thin['example']['reason']}): a wrong query easily returns the same. By workflow: {workflows}. "
            "Give those workflows a param or a check that the result must meet, or judge them.")


def teacher_tokens(outcomes: list[dict[str, Any]], candidates: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """A model teacher's tokens (``metadata.usage`` of each candidate), in total and per
    workflow, with the accepted candidates they bought; None for the synthetic teacher."""
    if not any("usage" in c["metadata"] for c in candidates.values()):
        return None
    accepted = {o["candidate_id"] for o in outcomes if o["accepted"]}
    rows: dict[str, dict[str, Any]] = {}
    for c in candidates.values():
        row = rows.setdefault(c["workflow"], {"candidates": 0, "accepted": 0, "prompt_tokens": 0,
                                              "completion_tokens": 0})
        usage = c["metadata"].get("usage") or {}
        row["candidates"] += 1
        row["accepted"] += c["candidate_id"] in accepted
        row["prompt_tokens"] += usage.get("prompt_tokens", 0)
        row["completion_tokens"] += usage.get("completion_tokens", 0)
    for row in rows.values():
        tokens = row["prompt_tokens"] + row["completion_tokens"]
        row["tokens_per_accepted"] = round(tokens / row["accepted"]) if row["accepted"] else None
    prompt = sum(r["prompt_tokens"] for r in rows.values())
    completion = sum(r["completion_tokens"] for r in rows.values())
    kept = sum(r["accepted"] for r in rows.values())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "accepted": kept,
            "tokens_per_accepted": round((prompt + completion) / kept) if kept else None,
            "per_workflow": dict(sorted(rows.items()))}


def _teacher_lines(teacher: dict[str, Any]) -> list[str]:
    lines = ["", "## Teacher tokens", "",
             f"{teacher['prompt_tokens']} prompt + {teacher['completion_tokens']} completion tokens for "
             f"{teacher['accepted']} accepted candidates ({teacher['tokens_per_accepted'] or '-'} per accepted).", "",
             "| workflow | candidates | accepted | prompt tokens | completion tokens | tokens per accepted |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in teacher["per_workflow"].items():
        lines.append(f"| {name} | {r['candidates']} | {r['accepted']} | {r['prompt_tokens']} | "
                     f"{r['completion_tokens']} | {r['tokens_per_accepted'] or '-'} |")
    return lines


def _repairs(outcomes: list[dict[str, Any]], candidates: dict[str, dict[str, Any]]) -> dict[str, int] | None:
    """How many candidates the teacher repaired after seeing its code's output, and how they fared."""
    repaired = [o for o in outcomes if candidates[o["candidate_id"]]["metadata"].get("repairs")]
    if not repaired:
        return None
    return {"repaired": len(repaired), "repaired_accepted": sum(o["accepted"] for o in repaired),
            "repairs": sum(candidates[o["candidate_id"]]["metadata"]["repairs"] for o in repaired),
            "failed_attempts_kept": sum(len(candidates[o["candidate_id"]].get("attempts", [])) for o in repaired)}


def _discovery(outcomes: list[dict[str, Any]], candidates: dict[str, dict[str, Any]]) -> dict[str, dict] | None:
    """Gated candidates whose CODE the synthetic teacher began with a discovery call, per rule
    (``teacher synthetic { discovery SHARE }``, `runtime.distill.discovery`), and how many were accepted."""
    out: dict[str, dict[str, int]] = {}
    for o in outcomes:
        rule = candidates[o["candidate_id"]]["metadata"].get("discovery")
        if rule:
            counts = out.setdefault(rule, {"gated": 0, "accepted": 0})
            counts["gated"] += 1
            counts["accepted"] += bool(o["accepted"])
    return dict(sorted(out.items())) or None


def _judge_lines(judges: dict[str, Any]) -> list[str]:
    lines = ["", "## Judges", "", "| judge | rejected | reject rate | abstained | requests | tokens | cached |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, j in judges["per_judge"].items():
        cost = j.get("cost")
        cells = (f"{cost['requests']} | {cost['prompt_tokens'] + cost['completion_tokens']} | {cost['cached']}"
                 if cost else "- | - | -")
        rate = "-" if j["reject_rate"] is None else f"{j['reject_rate']:.1%}"
        lines.append(f"| {name} | {j['rejected']} | {rate} | {j['abstained']} | {cells} |")
    if judges["kappa"]:
        lines += ["", "Agreement (Cohen's kappa, on candidates where neither abstained):", "",
                  "| judges | candidates | kappa |", "| --- | ---: | ---: |"]
        for k in judges["kappa"]:
            value = "n/a" if k["kappa"] is None else f"{k['kappa']:.2f}"
            lines.append(f"| {' / '.join(k['judges'])} | {k['candidates']} | {value} |")
    return lines


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
    if "thin_evidence" in funnel:
        lines += ["", _thin_line(funnel["thin_evidence"])]
    if "repairs" in funnel:
        r = funnel["repairs"]
        lines += ["", f"Teacher feedback: {r['repaired']} candidates repaired after their code failed "
                      f"({r['repairs']} repairs), {r['repaired_accepted']} of them accepted."]
    if "discovery" in funnel:
        parts = [f"{c['gated']} by the {rule} rule ({c['accepted']} accepted)" for rule, c in funnel["discovery"].items()]
        lines += ["", f"Discovery: gated candidates whose code looks the schema up first: {'; '.join(parts)}."]
    if "judges" in funnel:
        lines += _judge_lines(funnel["judges"])
    if "teacher" in funnel:
        lines += _teacher_lines(funnel["teacher"])
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
    lines += _agreement_markdown(funnel.get("agreement")) + _oracle_markdown(funnel.get("oracle"))
    lines += ["", "## Examples", ""]
    for g in funnel["gates"]:
        for reason, examples in g["examples"].items():
            for example in examples:
                lines += [f"**{g['gate']} / {reason}** `{example['candidate_id']}`: {example['reason']}", "",
                          "```", example["text"].replace("```", "'''"), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _agreement_markdown(agreement: dict[str, Any] | None) -> list[str]:
    if not agreement:
        return []
    return ["", "## Agreement (no visible reference)", "",
            f"{agreement['instance_turns']} instance turns voted; {agreement['agreed']} agreed on a result "
            f"(at least {agreement['threshold']:.0%} of the candidates that passed every check, and at least "
            f"{agreement['min_agreeing']}); {agreement['set_aside']} set aside ({agreement['set_aside_rate']:.1%})."
            + (f" {agreement['not_voting_off_question']} candidates did not vote: the judges found an asked param "
               "missing from their code." if agreement.get("not_voting_off_question") else "")]


def _cell(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def _oracle_markdown(oracle: dict[str, Any] | None) -> list[str]:
    if not oracle:
        return []
    lines = ["", "## Reference-free acceptance against the hidden references", "",
             "`oracle` is what the gate decides with the reference visible. Precision: accepted candidates "
             "the oracle accepts too; recall: oracle-accepted candidates accepted.", "",
             "| kind | total | accepted | oracle accepted | precision | recall | oracle-rejected rejected "
             "| oracle-accepted rejected | set aside |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in oracle["rows"]:
        lines.append(f"| {r['kind']} | {r['total']} | {r['accepted']} | {r['oracle_accepted']} | "
                     f"{_cell(r['precision'])} | {_cell(r['recall'])} | {_cell(r['oracle_rejected_rejected_rate'])} | "
                     f"{_cell(r['oracle_accepted_rejected_rate'])} | {r['set_aside']} |")
    return lines


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
    if "thin_evidence" in funnel:
        console.print(f"[yellow]{_thin_line(funnel['thin_evidence'])}[/yellow]")
    if "judges" in funnel:
        judges = Table(title="judges: reject rate, abstentions, cost")
        for column in ("judge", "rejected", "reject rate", "abstained", "requests", "cached"):
            judges.add_column(column, justify="left" if column == "judge" else "right")
        for name, j in funnel["judges"]["per_judge"].items():
            cost = j.get("cost") or {}
            judges.add_row(name, str(j["rejected"]), "-" if j["reject_rate"] is None else f"{j['reject_rate']:.1%}",
                           str(j["abstained"]), str(cost.get("requests", "-")), str(cost.get("cached", "-")))
        console.print(judges)
        for k in funnel["judges"]["kappa"]:
            console.print(f"kappa {' / '.join(k['judges'])}: "
                          f"{'n/a' if k['kappa'] is None else format(k['kappa'], '.2f')} ({k['candidates']} candidates)")
    if "teacher" in funnel:
        t = funnel["teacher"]
        console.print(f"teacher tokens: {t['prompt_tokens']} prompt + {t['completion_tokens']} completion for "
                      f"{t['accepted']} accepted candidates ({t['tokens_per_accepted'] or '-'} per accepted)")
    if "repairs" in funnel:
        r = funnel["repairs"]
        console.print(f"teacher feedback: {r['repaired']} candidates repaired, {r['repaired_accepted']} accepted")
    for rule, c in funnel.get("discovery", {}).items():
        console.print(f"discovery ({rule}): {c['gated']} candidates gated, {c['accepted']} accepted")
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
    agreement, oracle = funnel.get("agreement"), funnel.get("oracle")
    if agreement:
        console.print(f"agreement: {agreement['agreed']}/{agreement['instance_turns']} instance turns agreed, "
                      f"{agreement['set_aside']} set aside ({agreement['set_aside_rate']:.1%})")
    if oracle:
        console.print(f"against the hidden references: precision {_cell(oracle['precision'])}, recall "
                      f"{_cell(oracle['recall'])}, oracle-rejected rejected {_cell(oracle['oracle_rejected_rejected_rate'])}, "
                      f"oracle-accepted rejected {_cell(oracle['oracle_accepted_rejected_rate'])}")


def dumps(funnel: dict[str, Any]) -> str:
    return json.dumps(funnel, indent=2, sort_keys=True, default=str) + "\n"
