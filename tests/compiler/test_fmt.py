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
        "  stage sft { epochs 3  lr 3e-4 }\n"
        "}\n"
    )


def test_own_line_comments_stay_before_the_item_they_precede():
    text = "# header\nrecipe r {\n  # the seed\n  seed 7\n\n  # training\n  stage sft { epochs 3 }\n  # last words\n}\n"
    out = format_source(text)
    assert out.splitlines() == [
        "# header", "recipe r {", "  # the seed", "  seed 7", "", "  # training",
        "  stage sft { epochs 3 }", "  # last words", "}",
    ]


def test_blank_lines_around_comments_are_kept():
    text = "# header\n\nrecipe r {\n  seed 7\n\n  # ---- training\n\n  stage sft { epochs 3 }\n}\n"
    assert format_source(text) == text


def test_the_documented_style_is_kept():
    text = (
        "schema s version 1 {\n"
        '  doc "A shop"\n'
        "  entity Product {\n"
        '    doc   "Something it sells"\n'
        '    table "shop.products"\n'
        '    key   id -> column "product_id"\n'
        "    field name string\n"
        "  }\n"
        "}\n"
    )
    assert format_source(text) == text
    assert format_source(text.replace("doc   ", "doc ").replace("key   ", "key ")) == text
    recipe = (
        "recipe r {\n"
        "  gate execution { reject error, syntax, timeout 3s  memory 1024 }\n"
        "  gate output    { reject empty }\n"
        "  stage sft  { epochs 4 }\n"
        "  stage grpo { from sft  group 4 }\n"
        "  reward {\n"
        "    outcome 0.4  process 0.3  consistency 0.2  judge 0.1\n"
        "    penalties { discovery_call 0.05 }\n"
        "  }\n"
        "}\n"
    )
    assert format_source(recipe) == recipe
    assert format_source(recipe.replace("output    {", "output {").replace("sft  {", "sft {")) == recipe


def test_a_multi_line_turn_stays_multi_line_and_a_long_one_is_wrapped():
    turn = ('    turn "What did each advertiser spend in the last {days} days?"\n'
            '      or "Spend per advertiser, past {days} days"\n'
            '      solution "s1.py"\n'
            '      expect same_rows ordered\n')
    text = "recipe r {\n  conversation c {\n" + turn + '    turn "Only travel" solution "s2.py"\n  }\n}\n'
    assert format_source(text) == text
    long_line = turn.replace("\n      ", " ").replace('"s1.py"', '"' + "x" * 60 + '.py"')
    wrapped = format_source("recipe r {\n  conversation c {\n" + long_line + "  }\n}\n").splitlines()
    assert [line.split()[0] for line in wrapped[2:6]] == ["turn", "or", "solution", "expect"]
    assert max(map(len, wrapped)) <= 100


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
