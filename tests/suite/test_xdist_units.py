"""How `make test` splits the suite over xdist workers (the root conftest.py).

A session fixture that takes minutes (the smoke run of the whole pipeline, the distilled
mini recipe) is built once only if every module that uses it runs in one unit; a
renamed module or a new user of the fixture would quietly build it twice.
"""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)
SMOKE_UNIT = root_conftest.xdist_unit("tests/e2e/test_smoke_pipeline.py::test")


def test_each_first_unit_names_an_existing_path():
    for prefix, _ in root_conftest.FIRST_UNITS:
        assert (ROOT / prefix).exists(), prefix


def test_every_module_that_uses_the_smoke_run_is_in_its_unit():
    takes_it = re.compile(r"^def \w+\([^)]*\bsmoke_run\b", re.M)     # a test or fixture taking it
    users = [p for p in (ROOT / "tests").rglob("test_*.py") if takes_it.search(p.read_text())]
    assert len(users) >= 2
    for path in users:
        assert root_conftest.xdist_unit(path.relative_to(ROOT).as_posix() + "::test") == SMOKE_UNIT, path


def test_the_distill_modules_share_one_unit_and_other_modules_are_their_own():
    distill = {root_conftest.xdist_unit(p.relative_to(ROOT).as_posix()) for p in (ROOT / "tests/distill").glob("test_*.py")}
    assert len(distill) == 1
    assert root_conftest.xdist_unit("tests/compiler/test_fuzz.py::test_x[1]") == "tests/compiler/test_fuzz.py"
    assert root_conftest.xdist_unit("runtime/eval/stats.py::runtime.eval.stats.wilson") == "runtime/eval/stats.py"
