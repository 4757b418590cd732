"""A plan diff as data: what changed, per resource and per file, and what it touches.

Rendering (text, Markdown, JSON) lives in :mod:`craftc.diff.render`; nothing here
formats for a screen.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["Action", "AttributeChange", "ResourceChange", "FileChange", "Impact", "SchemaChange", "PlanDiff"]

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

    @property
    def same(self) -> bool:
        return not self.resources and not self.files

    def to_dict(self) -> dict:
        """The JSON twin of the rendered diff."""
        data = asdict(self)
        data["same"] = self.same
        return data
