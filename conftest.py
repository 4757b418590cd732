"""Collection settings for the whole repository (each tests/ directory has its own conftest).

`make test` also runs the docstring examples of craftc/ and runtime/: pyproject.toml
turns on ``--doctest-modules`` and lists both packages in ``testpaths``. Doctest
collection imports every module it is given, so two kinds of file are kept out of it:

- Python files under tests/: reference solutions there are ``${param}`` templates, not
  importable Python, and test modules hold no docstring examples. pytest's own test
  collection of tests/ is unchanged.
- The verl engine's plugin modules (tool, tool parser, agent loop, reward), which import
  the optional ``verl`` extra at the top because verl loads them by name. verl cannot
  share the main environment (it pins an older transformers, see the Makefile's
  ``test-verl``), so where it is not installed they are not collected.

`make test` spreads the suite over pytest-xdist workers (``-n auto``), one unit of work
at a time (`UnitScheduling`): a test module, or the modules that share a session fixture
too costly to build twice. Under xdist each worker's torch, and the training processes
it launches, use one thread: two workers with two threads each on two cores would fight
over them.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

_TESTS = Path(__file__).parent / "tests"
_ROOT = Path(__file__).parent

# The units that take minutes, by path prefix, started first and in this order: started
# last, one would end the run alone on one worker while the others wait. Modules that
# share a session fixture taking minutes to build are one unit (kept on one worker, so
# the fixture is built once). Under `make test` on 2 cores (about 20 minutes in all on the
# slower of two machines measured, 13 on the faster) the smoke run's unit took 16 minutes,
# tests/distill 8, references hidden 2 (docs/experiments/2026-12-07-test-suite-time.md).
FIRST_UNITS = (
    ("tests/e2e/test_smoke_pipeline.py", "smoke run (e2e_support.smoke_run)"),
    ("tests/e2e/test_plan_is_the_program.py", "smoke run (e2e_support.smoke_run)"),
    ("tests/e2e/test_eval_resume.py", "smoke run (e2e_support.smoke_run)"),
    ("tests/e2e/test_eval_processes.py", "smoke run (e2e_support.smoke_run)"),
    ("tests/distill/", "distilled mini recipe (distill_support)"),
    ("tests/e2e/test_references_hidden.py", "tests/e2e/test_references_hidden.py"),
    ("tests/e2e/test_new_domain.py", "tests/e2e/test_new_domain.py"),
)

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

collect_ignore_glob: list[str] = []
if find_spec("verl") is None:
    collect_ignore_glob += ["runtime/train/verl/agent_loop.py", "runtime/train/verl/reward.py",
                            "runtime/train/verl/tool.py", "runtime/train/verl/tool_parser.py"]


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent):
    collectors = yield
    if file_path.is_relative_to(_TESTS):
        return [c for c in collectors if not isinstance(c, DoctestModule)]
    return collectors


def xdist_unit(nodeid: str) -> str:
    """The xdist unit a test runs in: its unit in `FIRST_UNITS`, else its module.

    >>> xdist_unit("tests/e2e/test_plan_is_the_program.py::test_a_penalty_weight_drives_the_reward")
    'smoke run (e2e_support.smoke_run)'
    >>> xdist_unit("tests/compiler/test_fuzz.py::test_two_thousand_seeded_mutations_only_produce_diagnostics")
    'tests/compiler/test_fuzz.py'
    """
    module = nodeid.split("::", 1)[0]
    return next((unit for prefix, unit in FIRST_UNITS if module.startswith(prefix)), module)


_FIRST_ORDER = list(dict.fromkeys(unit for _, unit in FIRST_UNITS))


def _unit_rank(nodeid: str) -> int:
    """Where a test's unit starts: `FIRST_UNITS` first, in their listed order."""
    unit = xdist_unit(nodeid)
    return _FIRST_ORDER.index(unit) if unit in _FIRST_ORDER else len(_FIRST_ORDER)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Under xdist, the tests of `FIRST_UNITS` first (each worker collects the same
    order, which the scheduler's test indices point into); alone, collection order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: _unit_rank(item.nodeid))     # stable: the rest keep their order


if find_spec("xdist") is not None:
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        """xdist's per-scope scheduling with `xdist_unit` as the scope, the units handed
        out in collection order. (Units from marks, `--dist loadgroup`, are not used:
        pytest 9.2 keeps a node's id where xdist 3.8 no longer writes the group into it.)"""

        def __init__(self, config, log=None):
            config.option.loadscopereorder = False     # xdist would put the units with most tests first
            super().__init__(config, log)

        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    @pytest.hookimpl(tryfirst=True)       # before xdist's own, which picks by --dist
    def pytest_xdist_make_scheduler(config, log):
        return UnitScheduling(config, log)
