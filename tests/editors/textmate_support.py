"""Run the TextMate grammar through vscode-textmate (node) and lex the same files with lark."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from lark import Lark
from lark.exceptions import UnexpectedInput

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"


def ensure_node_tooling() -> None:
    """Install vscode-textmate from editors/package-lock.json when it is missing; fail without node."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("node and npm are needed to test the TextMate grammar (node 18 or newer); "
                           "install them (e.g. `apt-get install nodejs npm`) and rerun")
    # One installer at a time when tests run in parallel workers.
    with open(EDITORS / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (EDITORS / "node_modules" / "vscode-textmate").is_dir():
            done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EDITORS, capture_output=True,
                                  text=True, timeout=300)
            if done.returncode != 0:
                raise RuntimeError(f"`npm ci` in editors/ failed:\n{done.stdout}\n{done.stderr}")


def tokenize(files: list[Path]) -> dict[Path, list[tuple[int, int, int, str]]]:
    """TextMate tokens per file: (line, start column, end column, scopes), 0-based."""
    ensure_node_tooling()
    done = subprocess.run(["node", str(EDITORS / "tokenize.mjs"), *map(str, files)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"the tokenizer crashed:\n{done.stderr}"
    data = json.loads(done.stdout)
    return {Path(name): [tuple(token) for token in tokens] for name, tokens in data.items()}


def scopes_by_column(tokens) -> dict[int, list[str]]:
    """line -> the scope string of each column of that line."""
    lines: dict[int, list[str]] = {}
    for line, start, end, scopes in tokens:
        row = lines.setdefault(line, [])
        row.extend([""] * (end - len(row)))
        row[start:end] = [scopes] * (end - start)
    return lines


@lru_cache(maxsize=1)
def _lark_lexer() -> Lark:
    return Lark.open(str(REPO / "craftc" / "grammar.lark"), parser="lalr", lexer="basic")


def lark_tokens(text: str):
    """The compiler's own tokens of ``text`` (comments included), up to a lexing error if any."""
    tokens = []
    try:
        for token in _lark_lexer().lex(text, dont_ignore=True):
            tokens.append(token)
    except UnexpectedInput:
        pass   # malformed input: check what lexed before the bad character
    return tokens


def token_spans(token):
    """(line, start column, end column) pieces of a lark token, 0-based, one per source line."""
    pieces = str(token).split("\n")
    for offset, piece in enumerate(pieces):
        line = token.line - 1 + offset
        start = token.column - 1 if offset == 0 else 0
        yield line, start, start + len(piece)
