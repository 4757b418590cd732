"""Golden-file helper: compare with the stored file, or rewrite it under CRAFT_UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent
REPO = GOLDEN.parent.parent
UPDATE = os.environ.get("CRAFT_UPDATE_GOLDEN") == "1"


def check_tree(name: str, files: dict[str, bytes]) -> None:
    """``files`` must equal the golden tree ``tests/golden/<name>/`` file for file."""
    root = GOLDEN / name
    if UPDATE:
        for old in sorted(root.rglob("*"), reverse=True) if root.exists() else []:
            old.unlink() if old.is_file() else old.rmdir()
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        return
    stored = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    hint = "if the change is intended, regenerate with `CRAFT_UPDATE_GOLDEN=1 pytest tests/golden`"
    assert sorted(files) == sorted(stored), f"the set of files differs from tests/golden/{name}; {hint}"
    for rel in files:
        assert files[rel].decode() == stored[rel].decode(), f"tests/golden/{name}/{rel} differs; {hint}"


def check_file(rel: str, text: str) -> None:
    """``text`` must equal ``tests/golden/<rel>``."""
    path = GOLDEN / rel
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"tests/golden/{rel} is missing; create it with `CRAFT_UPDATE_GOLDEN=1 pytest tests/golden`"
    assert text == path.read_text(encoding="utf-8"), (
        f"tests/golden/{rel} differs; if intended, regenerate with `CRAFT_UPDATE_GOLDEN=1 pytest tests/golden`")
