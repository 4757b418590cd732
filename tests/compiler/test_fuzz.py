"""Seeded mutations of valid files never make the front end raise: only diagnostics.

Each case truncates, deletes, duplicates or swaps tokens or lines, or inserts random
characters, then parses and checks the result (schema specs through ``load_schema``,
recipes through ``load_recipe`` next to their real schema and solutions).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from compiler_support import FIXTURES
from craftc.diagnostics import Diagnostic
from craftc.frontend import load_recipe, load_schema
from craftc.parser import parse_source

TOKEN = re.compile(r'"[^"\n]*"|\w+|[^\w\s]|\s+')
NOISE = '{}()[],.;:#"=->%$@!\\\t\n x9_é'


def mutate(text: str, rng: random.Random) -> str:
    tokens = TOKEN.findall(text)
    lines = text.splitlines(keepends=True)
    op = rng.randrange(7)
    if op == 0:
        return text[: rng.randrange(len(text))]
    if op == 1 and tokens:
        i = rng.randrange(len(tokens))
        return "".join(tokens[:i] + tokens[i + 1:])
    if op == 2 and tokens:
        i = rng.randrange(len(tokens))
        return "".join(tokens[: i + 1] + tokens[i:])
    if op == 3 and len(tokens) > 1:
        i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        tokens[i], tokens[j] = tokens[j], tokens[i]
        return "".join(tokens)
    if op == 4 and lines:
        i = rng.randrange(len(lines))
        return "".join(lines[:i] + lines[i + 1:] if rng.random() < 0.5 else lines[: i + 1] + lines[i:])
    if op == 5 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)
    pos = rng.randrange(len(text) + 1)
    junk = "".join(rng.choice(NOISE) for _ in range(rng.randint(1, 4)))
    return text[:pos] + junk + text[pos:]


def _load_mutant(tmp: Path, name: str, text: str, schema: bool):
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    result = (load_schema if schema else load_recipe)(path)
    assert all(isinstance(d, Diagnostic) for d in result.diagnostics)
    result.render()
    result.to_json()
    return result


def _workspace(tmp: Path) -> Path:
    (tmp / "solutions").mkdir(exist_ok=True)
    for src in (FIXTURES / "solutions").iterdir():
        (tmp / "solutions" / src.name).write_text(src.read_text())
    (tmp / "mini_schema.craft").write_text((FIXTURES / "mini_schema.craft").read_text())
    return tmp


def test_two_thousand_seeded_mutations_only_produce_diagnostics(tmp_path):
    ws = _workspace(tmp_path)
    recipe = (FIXTURES / "mini.craft").read_text()
    schema = (FIXTURES / "mini_schema.craft").read_text()
    rng = random.Random(20240607)
    caught = 0
    for i in range(2000):
        is_schema = i % 4 == 3
        mutant = mutate(schema if is_schema else recipe, rng)
        if rng.random() < 0.3:
            mutant = mutate(mutant, rng)
        result = _load_mutant(ws, "s.craft" if is_schema else "r.craft", mutant, is_schema)
        caught += bool(result.diagnostics)
    # Most mutations break something; the rest are harmless (e.g. a duplicated blank line).
    assert caught > 1200


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list('recipe schema stage { } ( ) , . "x" 3 10s 20% -> # \n')),
               max_size=120))
def test_arbitrary_token_soup_never_raises(text):
    result = parse_source(text, "soup.craft")
    assert all(isinstance(d, Diagnostic) for d in result.diagnostics)
    assert (result.syntax is None) == bool(result.diagnostics)
