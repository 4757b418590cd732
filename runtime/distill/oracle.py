"""What a reference is worth: reference-free acceptance measured against hidden references.

With ``references hidden`` the gate decides by checks and agreement alone. When the
recipe still has its solutions (the synthetic teacher needs them), this module runs
them *after* the gate has decided and asks, per candidate, what the gate would have
decided with the reference visible (the same execution, completeness and judge
answers; the turn's expectations against the reference result instead of checks and
agreement). The decision never reads this; the funnel reports precision and recall
of reference-free acceptance against it, per noise kind.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["measure_with_hidden_references", "oracle_table"]

_NOT_OUTPUT_QUALITY = ("check", "disagree", "no_agreement", "mismatch")


def measure_with_hidden_references(recipe, instances: list[dict], candidates: list[dict], outcomes: list[dict],
                                   gate) -> dict[str, Any]:
    """Sets ``outcome["oracle"]`` (``{"accepted": bool}``, or None where the reference is
    unusable) on every candidate of a hidden-reference turn; returns reference counts."""
    from runtime.workflows import check_result

    by_id = {i["instance_id"]: i for i in instances}
    turn_of = {c["candidate_id"]: (c["instance_id"], c["turn"]) for c in candidates}
    expectations = {wf.name: [t.expectations for t in wf.turns] for wf in recipe.workflows}
    keys = sorted({(i, t) for i, t in turn_of.values()
                   if not by_id[i]["turns"][t].get("reference_visible", True) and by_id[i]["turns"][t]["code"]})
    results = gate.pool.run_many([(by_id[i]["turns"][t]["code"], by_id[i]["params"]) for i, t in keys]) if keys else []
    references = {key: r.result_frame for key, r in zip(keys, results) if r.ok and r.result_rows}
    for outcome in outcomes:
        key = turn_of[outcome["candidate_id"]]
        if key not in keys:
            continue
        if key not in references:
            outcome["oracle"] = None
            continue
        instance = by_id[key[0]]
        answers = outcome["would_reject"]
        fine = not answers.get("execution") and not answers.get("judge") and \
            answers.get("output") in (None, *_NOT_OUTPUT_QUALITY)
        frame = gate.frames.get(outcome["candidate_id"])
        if fine and frame is not None and "mismatch" in recipe.gates.output.reject:
            fine = check_result(frame, references[key], expectations[instance["workflow"]][key[1]],
                                instance["params"], references.get((key[0], key[1] - 1))).passed
        outcome["oracle"] = {"accepted": bool(fine and frame is not None)}
    return {"instance_turns": len(keys), "unusable_references": len(keys) - len(references)}


def oracle_table(outcomes: list[dict], candidates: dict[str, dict]) -> dict[str, Any] | None:
    """Precision and recall of acceptance against the oracle, per noise kind and overall."""
    judged = [o for o in outcomes if o.get("oracle")]
    if not judged:
        return None
    rows: dict[str, Counter] = {}
    for o in judged:
        meta = candidates[o["candidate_id"]].get("metadata", {})
        kind = "clean" if meta.get("clean") else meta.get("noise_kind") or "unlabelled"
        for name in (kind, "all"):
            row = rows.setdefault(name, Counter())
            row["total"] += 1
            row["accepted"] += o["accepted"]
            row["oracle_accepted"] += o["oracle"]["accepted"]
            row["both"] += o["accepted"] and o["oracle"]["accepted"]
            row["set_aside"] += o.get("reason_class") == "no_agreement"
    table = [_rates(name, rows[name]) for name in sorted(rows, key=lambda k: (k == "all", k == "clean", k))]
    overall = _rates("all", rows["all"])
    return {"rows": table, "precision": overall["precision"], "recall": overall["recall"],
            "oracle_rejected_rejected_rate": overall["oracle_rejected_rejected_rate"],
            "oracle_accepted_rejected_rate": overall["oracle_accepted_rejected_rate"],
            "unjudged": sum(1 for o in outcomes if "oracle" in o and o["oracle"] is None)}


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _rates(kind: str, c: Counter) -> dict[str, Any]:
    oracle_rejected = c["total"] - c["oracle_accepted"]
    rejected_of_oracle_rejected = oracle_rejected - (c["accepted"] - c["both"])
    return {"kind": kind, "total": c["total"], "accepted": c["accepted"], "oracle_accepted": c["oracle_accepted"],
            "both": c["both"], "set_aside": c["set_aside"],
            "precision": _ratio(c["both"], c["accepted"]), "recall": _ratio(c["both"], c["oracle_accepted"]),
            "oracle_rejected_rejected_rate": _ratio(rejected_of_oracle_rejected, oracle_rejected),
            "oracle_accepted_rejected_rate": _ratio(c["oracle_accepted"] - c["both"], c["oracle_accepted"])}
