"""The `.craft` TextMate grammar (VS Code, and any editor that reads TextMate grammars).

It is generated from grammar.lark and the settings table, and it is checked by
tokenizing every .craft file in the repository with vscode-textmate, the tokenizer VS
Code itself uses, against the compiler's own lexer.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from craftc.editor import generated_files, grammar_keywords, main as editor_main, setting_keys
from textmate_support import REPO, lark_tokens, scopes_by_column, token_spans, tokenize

CRAFT_FILES = sorted(p for folder in ("recipes", "schema_specs", "examples", "tests")
                     for p in (REPO / folder).rglob("*.craft"))
# What each kind of compiler token must be scoped as in the editor.
EXPECTED_SCOPE = {"STRING": "string.quoted.", "COMMENT": "comment.line.", "NUMBER": "constant.numeric",
                  "INT": "constant.numeric", "DURATION": "constant.numeric.duration",
                  "PERCENT": "constant.numeric.percent"}


def expected_scope(token) -> str | None:
    if token.type in EXPECTED_SCOPE:
        return EXPECTED_SCOPE[token.type]
    if str(token) in grammar_keywords() and token.type == str(token).upper():
        return "keyword."
    return None


def test_the_committed_editor_files_are_the_generated_ones():
    for rel, text in generated_files().items():
        assert (REPO / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run `python -m craftc.editor`"
    assert editor_main([str(REPO), "--check"]) == 0


def test_the_grammar_knows_every_keyword_and_setting_key():
    grammar = (REPO / "editors" / "textmate" / "craft.tmLanguage.json").read_text()
    for word in (*grammar_keywords(), *setting_keys()):
        assert f"|{word}|" in grammar.replace("(?:", "|").replace(")\\\\b", "|"), word
    assert {"workflow", "stage", "one_of", "env"} <= set(grammar_keywords())
    assert {"epochs", "candidates", "holdout"} <= set(setting_keys())


def test_the_vscode_extension_contributes_the_language_and_grammar():
    extension = REPO / "editors" / "vscode"
    manifest = json.loads((extension / "package.json").read_text())
    language, = manifest["contributes"]["languages"]
    grammar, = manifest["contributes"]["grammars"]
    assert language["extensions"] == [".craft"] and language["id"] == grammar["language"] == "craft"
    assert (extension / language["configuration"]).is_file()
    assert grammar["scopeName"] == "source.craft" and (extension / grammar["path"]).is_file()
    config = json.loads((extension / language["configuration"]).read_text())
    assert config["comments"] == {"lineComment": "#"}


def test_a_stage_line_is_scoped_word_by_word(tmp_path):
    recipe = tmp_path / "line.craft"
    recipe.write_text('stage sft { base tiny_moe  epochs 3  lr 3e-4 }  # train\n'
                      'ask "Top {n} campaigns"\n')
    tokens = tokenize([recipe])[recipe]
    scoped = {(line, text_of(recipe, line, start, end)): scopes.split()[-1]
              for line, start, end, scopes in tokens if text_of(recipe, line, start, end).strip()}
    assert scoped[(0, "stage")] == "keyword.declaration.craft"
    assert scoped[(0, "sft")] == "entity.name.type.craft"
    assert scoped[(0, "epochs")] == "variable.other.property.craft"
    assert scoped[(0, "3")] == "constant.numeric.craft"
    assert scoped[(0, "3e-4")] == "constant.numeric.craft"
    assert scoped[(0, " train")] == "comment.line.number-sign.craft"
    assert scoped[(1, "{n}")] == "variable.other.placeholder.craft"


def text_of(path: Path, line: int, start: int, end: int) -> str:
    return path.read_text().split("\n")[line][start:end]


def test_every_craft_file_in_the_repository_is_scoped_like_the_compiler_lexes_it():
    assert len(CRAFT_FILES) >= 90, "the corpus should include recipes, specs, examples and the malformed tests"
    assert any("malformed" in p.parts for p in CRAFT_FILES)
    by_file = tokenize(CRAFT_FILES)
    checked, wrong = Counter(), []
    for path in CRAFT_FILES:
        columns = scopes_by_column(by_file[path])
        for token in lark_tokens(path.read_text(encoding="utf-8")):
            want = expected_scope(token)
            if want is None:
                continue
            for line, start, end in token_spans(token):
                got = set(columns.get(line, [])[start:end]) or {""}
                if any(want not in scopes for scopes in got):
                    wrong.append(f"{path.relative_to(REPO)}:{line + 1}:{start + 1} {token.type} {str(token)!r}"
                                 f" scoped {sorted(got)}, expected {want}*")
            checked[want] += 1
    assert not wrong, "\n".join(wrong[:20])
    # Every kind was met many times, so the loop above did check something.
    for want in ("string.quoted.", "comment.line.", "constant.numeric", "keyword."):
        assert checked[want] > 100, checked
    assert checked["constant.numeric.duration"] and checked["constant.numeric.percent"], checked


@pytest.mark.parametrize("text", ['ask "unterminated\nstage sft {', '"""never closed\n# still string', "}{)(->..%",
                                  "\x00\t\u00e9\ud7ff", ""])
def test_broken_input_never_crashes_the_tokenizer(tmp_path, text):
    broken = tmp_path / "broken.craft"
    broken.write_text(text, encoding="utf-8")
    assert broken in tokenize([broken])


def test_without_node_the_editor_tests_fail_with_what_to_install(monkeypatch):
    from textmate_support import ensure_node_tooling

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match=r"node and npm are needed .* install them"):
        ensure_node_tooling()


def test_a_settings_word_in_value_position_is_not_scoped_as_a_key(tmp_path):
    recipe = tmp_path / "value.craft"
    recipe.write_text("eval {\n  baseline_budget steps\n}\n")
    scoped = {text_of(recipe, line, start, end): scopes.split()[-1]
              for line, start, end, scopes in tokenize([recipe])[recipe]}
    assert scoped["baseline_budget"] == "variable.other.property.craft"
    assert scoped[" steps"] == "source.craft"
