"""Load schema specs into the Schema IR for the world tests, through the real front end."""

from __future__ import annotations

from pathlib import Path

from craftc.frontend import load_schema
from craftc.ir import Schema

ROOT = Path(__file__).resolve().parents[2]
ADS_SPEC = ROOT / "schema_specs" / "ads.craft"


def load_spec(path: Path = ADS_SPEC) -> Schema:
    """The checked Schema IR of a spec file; fails the test with the diagnostics otherwise."""
    result = load_schema(path)
    errors = [f"{d.code} {d.message}" for d in result.diagnostics if getattr(d, "severity", "error") == "error"]
    assert result.schema is not None and not errors, f"{path} does not load: {errors}"
    return result.schema


def spec_variant(tmp_path: Path, replacements: list[tuple[str, str]], name: str = "ads.craft") -> Schema:
    """A copy of the ads spec with textual edits applied (each edit must apply)."""
    text = ADS_SPEC.read_text()
    for old, new in replacements:
        assert old in text, f"edit target `{old}` not in the ads spec"
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return load_spec(path)
