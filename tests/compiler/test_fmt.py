"""craftc fmt: canonical, idempotent, and it keeps every comment."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler_support import FIXTURES, ROOT
from craftc.fmt import FormatError, format_file, format_source
from craftc.parser import parse_source

SAMPLES = [FIXTURES / "mini.craft", FIXTURES / "mini_schema.craft",
           *[p for p in (ROOT / "recipes").glob("*.craft")],
           *[p for p in (ROOT / "schema_specs").glob("*.craft")]]


def test_messy_input_becomes_one_construct_per_line():
    messy = 'recipe r {uses schema "s.craft"   seed 7 # lucky\n stage sft {epochs 3 lr 3e-4}}'
    assert format_source(messy) == (
        "recipe r {\n"
        '  uses schema "s.craft"\n'
        "  seed 7  # lucky\n"
        "  stage sft {\n"
        "    epochs 3\n"
        "    lr 3e-4\n"
        "  }\n"
        "}\n"
    )


def test_own_line_comments_stay_before_the_item_they_precede():
    text = "# header\nrecipe r {\n  # the seed\n  seed 7\n\n  # training\n  stage sft { epochs 3 }\n  # last words\n}\n"
    out = format_source(text)
    assert out.splitlines() == [
        "# header", "recipe r {", "  # the seed", "  seed 7", "", "  # training",
        "  stage sft {", "    epochs 3", "  }", "  # last words", "}",
    ]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_formatting_is_idempotent_and_keeps_comments_and_meaning(path: Path):
    text = path.read_text()
    once = format_source(text)
    assert format_source(once) == once
    assert once.count("#") >= sum(line.count("#") for line in text.splitlines()
                                  if line.strip().startswith("#") or "  #" in line)
    before, after = parse_source(text, "a"), parse_source(once, "a")
    assert before.syntax is not None and after.syntax is not None
    # Same syntax tree apart from positions: formatting never changes meaning.
    assert _shape(before.tree) == _shape(after.tree)


def _shape(tree):
    from lark import Tree
    if isinstance(tree, Tree):
        return (tree.data, [_shape(c) for c in tree.children])
    return str(tree)


def test_a_file_with_a_syntax_error_gives_diagnostics_not_text(tmp_path):
    with pytest.raises(FormatError) as err:
        format_source("recipe r { stage sft { epochs } }", "r.craft")
    assert err.value.diagnostics[0].code == "E005"
    bad = tmp_path / "bad.craft"
    bad.write_text("recipe r {\n  seed 7\n")
    result = format_file(bad)
    assert result.text is None and result.diagnostics[0].code == "E006"
    assert "Traceback" not in str(err.value)
