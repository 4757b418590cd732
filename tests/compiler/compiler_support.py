"""Shared helpers for the compiler tests: fixture paths and loading by file kind."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIXTURES = HERE / "fixtures"
MALFORMED = HERE / "malformed"
