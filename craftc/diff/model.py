"""A plan diff as data: what changed, per resource and per file, and what it touches.

Rendering (text, Markdown, JSON) lives in :mod:`craftc.diff.render`; nothing here
formats for a screen.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["Action", "AttributeChange", "ResourceChange", "FileChange", "Impact", "SchemaChange", "Rename",
           "StepRerun", "RunCost", "ArmRetrain", "PlanDiff"]

Action = Literal["add", "change", "remove"]


@dataclass(frozen=True)
class AttributeChange:
    """One attribute of a resource: added (``old`` None), removed (``new`` None) or changed."""

    key: str
    action: Action
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class ResourceChange:
    """A resource (``entity.Campaign``, ``stage.sft``, ``reward``) that differs between the plans."""

    address: str
    action: Action
    attributes: tuple[AttributeChange, ...]
    unchanged: int = 0                     # attributes present and equal on both sides


@dataclass(frozen=True)
class FileChange:
    """A plan artifact whose bytes differ, with a unified diff when it is text."""

    path: str
    action: Action
    unified: str = ""


@dataclass(frozen=True)
class Impact:
    """What a schema resource's change reaches in the rest of the plan."""

    address: str
    workflows: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    bindings: tuple[str, ...] = ()
    stages: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchemaChange:
    """One schema change and its class: ``binding-only``, ``doc-only``, ``additive`` or ``breaking``.

    See :mod:`craftc.diff.classify` for what each class means for a trained model.
    """

    address: str                           # entity.Campaign, entity.Campaign.fields.daily_budget, metric.ctr
    category: str
    change: str                            # what happened, in words: "field removed", "table "a" -> "b""
    workflows: tuple[str, ...] = ()        # workflows that read the part (or, when added, use it)
    fix: str = ""


@dataclass(frozen=True)
class Rename:
    """A removal and an addition recognised as one object under a new name."""

    kind: str                              # entity, field, ref, metric or workflow
    old: str                               # addresses: entity.Ad.fields.final_url
    new: str


@dataclass(frozen=True)
class StepRerun:
    """Whether ``craftc run`` reruns one step of a run made with the old plan, once given the new one.

    ``direct`` lists the plan parts the step reads that changed (``schema``,
    ``stages``, ...); ``upstream`` the earlier steps whose changed output it reads.
    """

    step: str
    rerun: bool
    direct: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()
    output_changes: bool = False           # False: reruns, but its output is expected byte-identical
    wall_s: float | None = None            # the previous run's recorded wall time, with --run-dir


@dataclass(frozen=True)
class RunCost:
    """What the change costs in a previous run: the invalidated steps' recorded wall time."""

    run_dir: str
    wall_s: float                          # sum over the invalidated steps that have a manifest
    total_s: float                         # sum over every step that has a manifest
    missing: tuple[str, ...] = ()          # invalidated steps with no manifest in the run dir
    other_plan: bool = False               # the run's manifests name a plan other than the old one


@dataclass(frozen=True)
class ArmRetrain:
    """One arm the new plan's sft step trains, and what of the change reaches it.

    The stuffed arm is shown the schema's DDL in its prompt; the stripped arms (craft, and
    sft_only, craft before GRPO) are not. Every arm of the step trains again when sft reruns;
    ``prompt_changed`` says whether the arm's own prompt is part of why.
    """

    arm: str                               # craft | stuffed
    mode: str                              # stripped | stuffed: the prompt it trains on
    prompt: str                            # the plan file of that prompt: prompts/system_<mode>.md
    prompt_changed: bool
    retrains: bool                         # the sft step reruns


@dataclass(frozen=True)
class PlanDiff:
    """Everything that differs between plan ``before`` and plan ``after``."""

    before: str                            # how each side was named on the command line
    after: str
    resources: tuple[ResourceChange, ...] = ()
    files: tuple[FileChange, ...] = ()
    impacts: tuple[Impact, ...] = ()
    schema_changes: tuple[SchemaChange, ...] = ()
    verdict: str = ""                      # the dearest class of the schema changes; "" when none
    counts: dict[str, int] = field(default_factory=dict)
    renames: tuple[Rename, ...] = ()
    reruns: tuple[StepRerun, ...] = ()
    cost: RunCost | None = None
    arms: tuple[ArmRetrain, ...] = ()

    @property
    def same(self) -> bool:
        return not self.resources and not self.files

    def to_dict(self) -> dict:
        """The JSON twin of the rendered diff."""
        data = asdict(self)
        data["same"] = self.same
        return data
