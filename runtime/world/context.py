"""What the world's entity builders share: the date range, the seeded context, random dates.

The generator (``runtime.world.generate``) creates a :class:`WorldContext` and the ads
domain's builders (``runtime.world.ads_domain``, ``runtime.world.ads_facts``) draw from
it; both import it from here, so neither imports the other's module.
"""

from __future__ import annotations

import zlib
from datetime import date, timedelta

import numpy as np
import pandas as pd

from craftc.ir import Schema

__all__ = ["END_DATE", "START_DATE", "DAYS", "WorldContext", "random_dates"]

END_DATE = date(2024, 6, 30)       # fixed: the same seed must give the same bytes on any day
DAYS = 120
START_DATE = END_DATE - timedelta(days=DAYS - 1)


class WorldContext:
    """What entity builders share: the seed, the scale and the frames built so far."""

    def __init__(self, schema: Schema, seed: int, scale: float):
        self.schema, self.seed, self.scale = schema, seed, scale
        self.entities = {e.name: e for e in schema.entities}
        self.frames: dict[str, pd.DataFrame] = {}

    def rng(self, *parts: str) -> np.random.Generator:
        """An independent stream per (seed, entity, part): stable when others change."""
        return np.random.default_rng([self.seed, zlib.crc32(":".join(parts).encode())])

    def dim_rows(self, base: int) -> int:
        """Dimension sizes grow with the square root of scale, facts linearly."""
        return max(1, int(round(base * self.scale ** 0.5)))

    def ids(self, entity: str, n: int) -> np.ndarray:
        # Disjoint-looking id ranges per entity make a join on the wrong key visibly empty.
        base = (zlib.crc32(entity.encode()) % 89 + 10) * 100_000
        return base + np.arange(1, n + 1, dtype=np.int64)

    def keys(self, entity: str) -> np.ndarray:
        return self.frames[entity]["id"].to_numpy()

    def has(self, entity: str) -> bool:
        return entity in self.frames


def random_dates(rng: np.random.Generator, n: int, low: date, high: date) -> np.ndarray:
    span = (high - low).days + 1
    return np.datetime64(low, "D") + rng.integers(0, max(span, 1), n).astype("timedelta64[D]")
