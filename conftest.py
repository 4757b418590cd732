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
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

_TESTS = Path(__file__).parent / "tests"

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
