"""Each setting is declared once, in craftc/ir.py: editing that one line changes everything.

The test copies the compiler, changes one default in the copy's ir.py (the stage
`warmup`), and shows that the checks' table, the generated docs table and the compiled
plan all follow, with no other edit.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

from compiler_support import ROOT
from craftc.settings import BLOCK_KEYS

_PROBE = """
import json, sys
from craftc.settings import BLOCK_KEYS, render_settings_reference
from craftc.cli import main
assert main(["compile", sys.argv[1], "-o", sys.argv[2]]) == 0
plan = json.load(open(sys.argv[2] + "/plan.json"))
row = next(line for line in render_settings_reference().splitlines() if line.startswith("| `warmup`"))
print(json.dumps({"key": BLOCK_KEYS["stage"]["warmup"].default, "doc_row": row,
                  "plan": [s["warmup"] for s in plan["recipe"]["stages"]]}))
"""


def _probe(package_root, tmp_path):
    tmp_path.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT / "examples/hello/hello.craft"), str(tmp_path / "plan")],
        cwd=tmp_path, env={"PYTHONPATH": str(package_root), "PATH": ""}, capture_output=True,
        text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_one_edited_default_in_ir_py_reaches_the_checks_the_docs_and_the_plan(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(ROOT / "craftc", copy / "craftc", ignore=shutil.ignore_patterns("__pycache__"))
    ir = copy / "craftc/ir.py"
    text, edits = re.subn(r"warmup: float = Field\(0\.0,", "warmup: float = Field(0.1,", ir.read_text())
    assert edits == 1
    ir.write_text(text)

    before = _probe(ROOT, tmp_path / "before")
    after = _probe(copy, tmp_path / "after")
    assert before["key"] == BLOCK_KEYS["stage"]["warmup"].default == "0%"
    assert after["key"] == "10%"
    assert "| 0% |" in before["doc_row"] and "| 10% |" in after["doc_row"]
    assert set(before["plan"]) == {0.0} and set(after["plan"]) == {0.1}
