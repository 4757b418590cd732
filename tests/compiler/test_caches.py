"""craftc's disk caches (craftc/cache.py) make a warm compile fast and never change what it writes.

Each test compiles in a fresh interpreter with ``CRAFTC_CACHE_DIR`` in a temporary
directory: a cold compile fills the caches (lark's tables, the compiled templates, the
syntax trees, what each solution reads), a warm one reads them. Whatever happens to the
cache, the plan dir's bytes are those of a compile without any cache.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

from compiler_support import ROOT
from craftc import syntax_cache
from craftc.parser import parse_source

RECIPE = ROOT / "examples" / "hello" / "hello.craft"
# Compiles RECIPE into argv[1] and reports which of the heavy modules it imported.
PROBE = ("import sys\nfrom craftc.cli import main\n"
         "code = main(['compile', sys.argv[1], '-o', sys.argv[2]])\n"
         "print(code, 'lark' in sys.modules, 'sqlglot' in sys.modules)\n")


def compile_plan(out: Path, cache: Path | None, **env: str) -> tuple[str, dict[str, bytes]]:
    """(the probe's report, plan-relative path -> bytes) of compiling RECIPE into ``out``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CRAFTC_")}
    environ.update(PYTHONPATH=str(ROOT), **env)
    if cache is not None:
        environ["CRAFTC_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, "-c", PROBE, str(RECIPE), str(out)], env=environ, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    return done.stdout.splitlines()[-1], files


def test_a_warm_compile_parses_nothing_and_writes_the_same_plan(tmp_path):
    cache = tmp_path / "cache"
    cold, cold_files = compile_plan(tmp_path / "cold", cache)
    warm, warm_files = compile_plan(tmp_path / "warm", cache)
    assert cold == "0 True True"              # parsed with lark, solutions read with sqlglot
    assert warm == "0 False False"            # neither imported: every tree and read came from the cache
    assert warm_files == cold_files
    assert {p.name for p in cache.iterdir()} >= {"lark", "syntax", "solution-reads"}
    assert any(p.name.startswith("jinja2-") for p in cache.iterdir())


def test_corrupt_cache_entries_are_rebuilt_and_never_change_the_plan(tmp_path):
    cache = tmp_path / "cache"
    _, expected = compile_plan(tmp_path / "nocache", None, CRAFTC_NO_CACHE="1")
    compile_plan(tmp_path / "cold", cache)
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert len(entries) > 5
    for i, entry in enumerate(entries):
        # Half are cut short (an interrupted write), half are not what they claim to be.
        entry.write_bytes(entry.read_bytes()[:40] if i % 2 else b"\x80\x04not a cache entry at all")
    report, files = compile_plan(tmp_path / "after", cache)
    assert files == expected
    assert report == "0 True True"            # every entry was a miss, so everything was rebuilt
    report, files = compile_plan(tmp_path / "again", cache)
    assert (report, files) == ("0 False False", expected)   # ... and rewritten


def test_a_cache_dir_that_cannot_be_created_is_skipped(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("a file where the cache directory should be\n")
    _, expected = compile_plan(tmp_path / "nocache", None, CRAFTC_NO_CACHE="1")
    _, files = compile_plan(tmp_path / "plan", not_a_dir)
    assert files == expected


def test_craftc_no_cache_writes_no_cache(tmp_path):
    cache = tmp_path / "cache"
    compile_plan(tmp_path / "plan", cache, CRAFTC_NO_CACHE="1")
    assert not cache.exists()


def test_a_syntax_entry_is_used_only_for_the_same_text_and_name(tmp_path, monkeypatch):
    monkeypatch.setenv("CRAFTC_CACHE_DIR", str(tmp_path))
    path, text = RECIPE, RECIPE.read_text()
    tree = parse_source(text, "hello.craft").syntax
    syntax_cache.store(path, "hello.craft", text, tree)
    assert syntax_cache.lookup(path, "hello.craft", text) == tree
    assert syntax_cache.lookup(path, "hello.craft", text + "\n# edited\n") is None
    assert syntax_cache.lookup(path, "other/hello.craft", text) is None


def test_a_syntax_entry_never_unpickles_anything_but_a_syntax_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("CRAFTC_CACHE_DIR", str(tmp_path))
    path, text = RECIPE, RECIPE.read_text()
    syntax_cache.store(path, "hello.craft", text, parse_source(text, "hello.craft").syntax)
    (entry,) = (tmp_path / "syntax").iterdir()
    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (Path.touch, (marker,))

    entry.write_bytes(pickle.dumps(("key", Planted())))
    assert syntax_cache.lookup(path, "hello.craft", text) is None
    assert not marker.exists()


def test_the_syntax_cache_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("CRAFTC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(syntax_cache, "MAX_ENTRIES", 4)
    text = RECIPE.read_text()
    tree = parse_source(text, "hello.craft").syntax
    for i in range(7):
        copy = tmp_path / f"copy{i}.craft"
        copy.write_text(text)
        syntax_cache.store(copy, "hello.craft", text, tree)
    kept = sorted(p.name for p in (tmp_path / "cache" / "syntax").iterdir())
    assert 2 <= len(kept) <= 4
    assert syntax_cache.lookup(tmp_path / "copy6.craft", "hello.craft", text) == tree
