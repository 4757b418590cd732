"""The reward spec: component weights, aggregation, penalties, step rewards.

``R_total = sum_i w_i * R_i`` with ``aggregate sum``, or the same divided by
``sum_i w_i`` with ``aggregate normalized``. ``trl_weights`` are the weights to hand
TRL's ``reward_weights`` so that its logged ``reward`` is exactly ``R_total``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from craftc.ir import REWARD_COMPONENTS

__all__ = ["COMPONENTS", "RewardSpec", "RewardSpecError"]

# The components, in the order of TRL's `reward_weights`: declared once, in the IR.
COMPONENTS = REWARD_COMPONENTS


class RewardSpecError(ValueError):
    """A reward spec that cannot be aggregated."""


@dataclass(frozen=True)
class RewardSpec:
    """The plan's reward settings; every field comes from the plan (no defaults here)."""

    weights: dict[str, float]
    aggregate: str
    penalties: dict[str, float]
    step_rewards: bool

    def __post_init__(self) -> None:
        problems = [f"unknown component `{k}` (known: {', '.join(COMPONENTS)})"
                    for k in self.weights if k not in COMPONENTS]
        problems += [f"weight of `{k}` is negative ({w})" for k, w in self.weights.items() if w < 0]
        if self.aggregate not in ("sum", "normalized"):
            problems.append(f"aggregate must be `sum` or `normalized`, got `{self.aggregate}`")
        if self.aggregate == "normalized" and sum(self.weights.values()) <= 0:
            problems.append("weights sum to 0, so they cannot be normalised")
        if problems:
            raise RewardSpecError("invalid reward spec: " + "; ".join(problems) + "; fix the recipe's `reward` block")

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(c for c in COMPONENTS if c in self.weights)

    @property
    def trl_weights(self) -> list[float]:
        """Per-component weights, in ``components`` order, as optimised."""
        scale = sum(self.weights.values()) if self.aggregate == "normalized" else 1.0
        return [self.weights[c] / scale for c in self.components]

    @classmethod
    def from_ir(cls, reward) -> "RewardSpec":
        """From a ``craftc.ir.Reward``."""
        return cls(
            weights={c: float(getattr(reward, c)) for c in COMPONENTS},
            aggregate=reward.aggregate, penalties={k: float(v) for k, v in reward.penalties},
            step_rewards=bool(reward.step_rewards),
        )

    @classmethod
    def from_json(cls, path: str | Path) -> "RewardSpec":
        """From the plan's ``specs/reward.json`` (weights as given, not the normalised copy)."""
        try:
            data = json.loads(Path(path).read_text())
            return cls(weights={k: float(v) for k, v in data["weights"].items()}, aggregate=data["aggregate"],
                       penalties={k: float(v) for k, v in data["penalties"].items()},
                       step_rewards=bool(data["step_rewards"]))
        except (OSError, json.JSONDecodeError, KeyError, AttributeError, TypeError) as exc:
            raise RewardSpecError(f"cannot read reward spec {path} ({type(exc).__name__}: {exc}); "
                                  "recompile the plan") from None
