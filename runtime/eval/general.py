"""General-skill regression check: lm-eval benchmarks on the base and each trained model.

``eval { general ifeval, gsm8k }`` names lm-eval tasks; ``general_include`` adds a
directory of local task YAML (lm-eval's own format), and ``general_limit`` caps the
examples per task. Each model runs through lm-eval's Hugging Face backend
(``hf``, on CPU unless a GPU is there) with the recipe's seed; the change of each
trained model against the base is the mean of the per-example differences, with a
seeded 95% paired bootstrap interval, so "no regression" is a claim with an error bar.

lm-eval is an optional dependency (the ``eval`` extra); a recipe that sets
``general`` without it installed stops with the install command.

Example:
    >>> paired_delta({0: 1.0, 1: 0.0, 2: 1.0}, {0: 1.0, 1: 1.0, 2: 1.0})["delta"]
    0.3333
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.eval.stats import bootstrap_mean

__all__ = ["GeneralEvalError", "run_general", "paired_delta", "general_markdown", "LM_EVAL_MISSING"]

LM_EVAL_MISSING = ("eval `general` needs lm-eval, which is not installed; `pip install 'craft[eval]'` "
                   "(or `pip install lm-eval`), or drop `general` from the eval block")


class GeneralEvalError(RuntimeError):
    """A general benchmark that cannot run; the message names it and the fix."""


def _score(sample: dict[str, Any], metric: str) -> float | None:
    value = sample.get(metric)
    if isinstance(value, bool | int | float):
        return float(value)
    return None


def _per_example(result: dict, task: str) -> tuple[str, dict[int, float]]:
    """The task's first scalar metric and its value per doc id."""
    samples = result["samples"][task]
    metrics = [m for m in samples[0]["metrics"] if _score(samples[0], m) is not None] if samples else []
    if not metrics:
        raise GeneralEvalError(f"general benchmark `{task}` logged no per-example score")
    metric = metrics[0]
    return metric, {s["doc_id"]: _score(s, metric) for s in samples}


def paired_delta(base: dict[int, float], trained: dict[int, float], seed: int = 0) -> dict[str, Any]:
    """Mean change over the examples both models answered, with a paired bootstrap interval."""
    shared = sorted(set(base) & set(trained))
    diffs = [trained[i] - base[i] for i in shared]
    low, high = bootstrap_mean(diffs, seed)
    delta = sum(diffs) / len(diffs) if diffs else 0.0
    return {"delta": round(delta, 4), "ci95": [round(low, 4), round(high, 4)], "n": len(diffs)}


def _task_manager(tasks: list[str], include: str | None):
    """lm-eval's task index, with every named task checked against it.

    Built once per general eval: it reads every task YAML lm-eval ships (about 15,000 tasks,
    some 15 s on a 2-core CPU), and each model is scored against the same index.
    """
    try:
        from lm_eval.tasks import TaskManager
    except ImportError:
        raise GeneralEvalError(LM_EVAL_MISSING) from None
    manager = TaskManager(include_path=str(include) if include else None)
    unknown = [t for t in tasks if t not in manager.all_tasks]
    if unknown:
        where = f" or in `{include}`" if include else ""
        raise GeneralEvalError(f"general benchmark `{unknown[0]}` is not an lm-eval task{where}; "
                               "see `lm-eval ls tasks`, or point `general_include` at its YAML directory")
    return manager


def _evaluate(model_dir: Path, tasks: list[str], manager, limit: int, seed: int) -> dict:
    import lm_eval
    import torch

    return lm_eval.simple_evaluate(
        model="hf", device="cuda" if torch.cuda.is_available() else "cpu", model_args={"pretrained": str(model_dir), "dtype": "float32"}, tasks=tasks,
        task_manager=manager, limit=limit, log_samples=True, batch_size=8, random_seed=seed,
        numpy_random_seed=seed, torch_random_seed=seed, fewshot_random_seed=seed)


def run_general(models: dict[str, Path], tasks: tuple[str, ...], include: str | None, limit: int,
                seed: int = 0, log=print) -> dict[str, Any]:
    """Scores per model and task, and each trained model's change against ``models["base"]``.

    Args:
        models: ``{"base": dir, "<arm>": dir, ...}``; ``base`` is the reference.
        tasks: lm-eval task names.
        include: A directory of extra task YAML, or None.
        limit: Examples per task.
        seed: Seeds lm-eval and the bootstrap.
    """
    manager = _task_manager(list(tasks), include)
    per_model: dict[str, dict[str, tuple[str, dict[int, float]]]] = {}
    for name, model_dir in models.items():
        log(f"eval: general benchmarks {', '.join(tasks)} on {name}")
        result = _evaluate(model_dir, list(tasks), manager, limit, seed)
        per_model[name] = {task: _per_example(result, task) for task in tasks}
    report: dict[str, Any] = {"tasks": list(tasks), "limit": limit, "models": {}, "changes": {}}
    import lm_eval

    report["lm_eval"] = lm_eval.__version__ if hasattr(lm_eval, "__version__") else "unknown"
    for name, scores in per_model.items():
        report["models"][name] = {task: {"metric": metric, "score": round(sum(v.values()) / len(v), 4) if v else None,
                                         "n": len(v)} for task, (metric, v) in scores.items()}
        if name != "base":
            report["changes"][name] = {task: {"metric": metric, **paired_delta(per_model["base"][task][1], v, seed)}
                                       for task, (metric, v) in scores.items()}
    return report


def general_markdown(report: dict[str, Any]) -> str:
    """The changes as a Markdown table: one row per trained model and task."""
    lines = ["# General skills", "", f"lm-eval {report['lm_eval']}, at most {report['limit']} examples per task; "
             "change = trained - base, 95% paired bootstrap interval.", "",
             "| model | task | metric | base | trained | change | 95% CI |", "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    base = report["models"]["base"]
    for name, changes in report["changes"].items():
        for task, c in changes.items():
            lines.append(f"| {name} | {task} | {c['metric']} | {base[task]['score']} | "
                         f"{report['models'][name][task]['score']} | {c['delta']:+.4f} | "
                         f"[{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}] |")
    return "\n".join(lines) + "\n"
