"""Where each step's outputs live in a run directory: the paths one step writes and another reads.

The runner gives every step its own directory, ``RUN_DIR/<step>/`` (built in a
temporary sibling and renamed into place, see `runtime.runner`), with a
``manifest.json``. A path here is a `RunPath`: the step whose directory holds it and
the path inside that directory. A step writes ``ctx.out_dir / P.path`` and a later
step reads ``ctx.input(P)``, which also checks that the producing step finished.
Step configs that a launch reads (GRPO's ``grpo_config.json``) hold paths relative to
their own step dir: ``P.relative_to_step("grpo")`` gives ``../world/warehouse.duckdb``.

Example:
    >>> WAREHOUSE.under("runs/ads").as_posix()
    'runs/ads/world/warehouse.duckdb'
    >>> sft_final("stuffed").path, SFT_FINAL.relative_to_step("grpo")
    ('stuffed/final', '../sft/craft/final')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "RunPath", "MANIFEST", "API_FACTORY", "FINAL", "ADAPTER", "SFT_ARMS",
    "WAREHOUSE", "WORLD_PROFILE", "DISTILL_INSTANCES", "CANDIDATES", "TEACHER_ALTERNATIVES", "LEAKAGE", "GATE_INSTANCES", "ACCEPTED",
    "OUTCOMES", "FUNNEL_JSON", "FUNNEL_MD", "DATASET_DIR", "EVAL_INSTANCES", "CORPUS",
    "SFT_BASE", "sft_arm_dir", "sft_final", "trained_model", "EVAL_ARM_MODELS", "reads_grpo", "SFT_FINAL", "SFT_SUMMARY", "GRPO_FINAL", "GRPO_SUMMARY", "GRPO_STEP_CONFIG", "TRAIN_INSTANCES", "MEASURE_INSTANCES", "ROWS_AUDIT",
    "EVAL_JSON", "REPORT_JSON",
]

MANIFEST = "manifest.json"
"""Every step dir's record of what it read and wrote; a step dir without one is unfinished."""

API_FACTORY = "runtime.world.api:WarehouseApi"
"""What sandboxed code gets as ``api``: a `SandboxPool`'s ``api_factory`` (``module:callable``)."""

FINAL = "final"          # a trained model dir (an ordinary Hugging Face model dir)
ADAPTER = "adapter"      # the LoRA adapter of a stage with `lora { ... }`, beside its merged `final`

SFT_ARMS = {"craft": "stripped", "stuffed": "stuffed"}
"""The sft step's arms (each a directory of the step) and the dataset mode each trains on."""


@dataclass(frozen=True)
class RunPath:
    """A path inside one step's output directory."""

    step: str
    path: str            # relative to RUN_DIR/<step>, with forward slashes

    def under(self, run_dir: str | Path) -> Path:
        """The path in the run directory ``run_dir``."""
        return Path(run_dir) / self.step / self.path

    def relative_to_step(self, step: str) -> str:
        """The path as seen from ``RUN_DIR/<step>``, for configs that live there."""
        if step == self.step:
            return self.path
        return (PurePosixPath("..") / self.step / self.path).as_posix()


# world
WAREHOUSE = RunPath("world", "warehouse.duckdb")
WORLD_PROFILE = RunPath("world", "profile.json")

# distill, gate
DISTILL_INSTANCES = RunPath("distill", "instances.json")
CANDIDATES = RunPath("distill", "candidates.jsonl")
TEACHER_ALTERNATIVES = RunPath("distill", "teacher_alternatives.json")   # values the teacher may swap in
LEAKAGE = RunPath("dataset", "leakage.json")      # the dataset step's audit of dev and test against training
GATE_INSTANCES = RunPath("gate", "instances.json")       # the distill step's, carried forward
ACCEPTED = RunPath("gate", "accepted.jsonl")
OUTCOMES = RunPath("gate", "outcomes.jsonl")
FUNNEL_JSON = RunPath("gate", "funnel.json")
FUNNEL_MD = RunPath("gate", "funnel.md")

# dataset: one directory per mode (stripped, stuffed) plus the held-out instances and
# the corpus tiny_moe's tokenizer is trained on.
DATASET_DIR = RunPath("dataset", "dataset")
EVAL_INSTANCES = RunPath("dataset", "dataset/eval_instances.json")
CORPUS = RunPath("dataset", "dataset/corpus.txt")


# sft, grpo
SFT_BASE = RunPath("sft", "base")                          # a base model the step built (tiny_moe, gguf)


def sft_arm_dir(arm: str) -> RunPath:
    """The output directory of one sft arm (`SFT_ARMS`)."""
    return RunPath("sft", arm)


def sft_final(arm: str) -> RunPath:
    """The model one sft arm trained."""
    return RunPath("sft", f"{arm}/{FINAL}")


def trained_model(kind: str, adapter: bool = False) -> RunPath:
    """The model (or, with ``adapter``, the LoRA adapter) a training stage of ``kind`` leaves.

    An sft stage's is its ``craft`` arm's (the stuffed arm is the eval's baseline).
    """
    name = ADAPTER if adapter else FINAL
    return RunPath("sft", f"craft/{name}") if kind == "sft" else RunPath("grpo", name)


SFT_FINAL = trained_model("sft")                           # what GRPO starts from
SFT_SUMMARY = "sft_summary.json"                           # in each arm's directory
GRPO_FINAL = trained_model("grpo")
GRPO_SUMMARY = RunPath("grpo", "grpo_summary.json")
GRPO_STEP_CONFIG = RunPath("grpo", "grpo_config.json")     # what the stage's launch.sh reads (either engine)
TRAIN_INSTANCES = RunPath("grpo", "train_instances.json")  # the rows Stage II plays (`rows fresh` or sft)
MEASURE_INSTANCES = RunPath("grpo", "measure_instances.json")  # the dev split, measured before and after
ROWS_AUDIT = RunPath("grpo", "rows_audit.json")            # fresh rows checked against SFT's data, dev, test

# eval, report
EVAL_ARM_MODELS = {"craft": ("craft", True), "sft_only": ("craft", False), "stuffed": ("stuffed", False)}
"""Each evaluated arm's model: the sft arm it comes from, and whether GRPO trained it after."""


def reads_grpo(arms) -> bool:
    """Whether any of these eval arms decodes GRPO's model; the grpo step trains only then.

    >>> reads_grpo(("craft", "stuffed")), reads_grpo(("sft_only",))
    (True, False)
    """
    return any(EVAL_ARM_MODELS[arm][1] for arm in arms)


EVAL_JSON = RunPath("eval", "eval.json")
REPORT_JSON = RunPath("report", "report.json")
