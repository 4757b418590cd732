"""Every malformed recipe in tests/compiler/malformed/ gets its expected diagnostic.

Each file's first line says what it must produce: ``# expect: E102 at 12:11``
(line:col in the file itself) or ``# expect: E303 at solutions/x.py:2:5`` (a place in
another file, relative to the malformed/ directory). Files named ``schema_*`` are
loaded as schema specs, the rest as recipes. The rendered text must show the
diagnostic and never a Python traceback.
"""

from __future__ import annotations

import json
import re

import pytest

from compiler_support import MALFORMED
from craftc.frontend import load_recipe, load_schema

CASES = sorted(MALFORMED.glob("*.craft"))
HEADER = re.compile(r"# expect: ([EW]\d{3}) at (?:(\S+):)?(\d+):(\d+)")


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 45
    codes = {HEADER.match(p.read_text().splitlines()[0]).group(1) for p in CASES}
    assert len(codes) >= 30


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_malformed_file_reports_its_code_at_its_place(path):
    code, file, line, col = HEADER.match(path.read_text().splitlines()[0]).groups()
    load = load_schema if path.name.startswith("schema_") else load_recipe
    result = load(path)
    expected_file = file or path.name
    found = [(d.code, d.span.file if d.span else None, d.span.line if d.span else None,
              d.span.col if d.span else None) for d in result.diagnostics]
    assert (code, expected_file, int(line), int(col)) in found, result.render()
    rendered = result.render()
    assert f"[{code}]" in rendered
    assert "Traceback" not in rendered and "File \"" not in rendered
    assert json.loads(result.to_json())
    if code.startswith("E"):
        assert result.recipe is None
