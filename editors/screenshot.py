"""Render a .craft file highlighted by the TextMate grammar to HTML, and to PNG with chromium.

    python editors/screenshot.py recipes/ads_analytics.craft docs/img/ads_analytics.png --lines 1-60

Tokens come from editors/tokenize.mjs (vscode-textmate, as in VS Code); colours are
VS Code's Dark Modern theme for the same scopes. The PNG needs a headless chromium
(`apt-get install chromium`); `--html` alone writes the page.
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Most specific scope prefix first; the first one a token carries gives its colour.
THEME = (("comment", "#6a9955"), ("string", "#ce9178"), ("constant.character.escape", "#d7ba7d"),
         ("variable.other.placeholder", "#9cdcfe"), ("constant.numeric", "#b5cea8"),
         ("constant.language", "#569cd6"), ("keyword.declaration", "#569cd6"),
         ("keyword.operator.word", "#c586c0"), ("keyword.operator", "#d4d4d4"), ("keyword", "#c586c0"),
         ("entity.name", "#4ec9b0"), ("storage.type", "#4ec9b0"), ("support", "#dcdcaa"),
         ("variable.other.property", "#9cdcfe"), ("variable", "#9cdcfe"))
BACKGROUND, FOREGROUND = "#1f1f1f", "#cccccc"


def colour(scopes: str) -> str:
    for scope in reversed(scopes.split()):
        for prefix, value in THEME:
            if scope.startswith(prefix):
                return value
    return FOREGROUND


def render_html(source: Path, first: int, last: int) -> str:
    done = subprocess.run(["node", str(HERE / "tokenize.mjs"), str(source)], capture_output=True, text=True,
                          check=True)
    tokens = json.loads(done.stdout)[str(source)]
    lines = source.read_text(encoding="utf-8").split("\n")
    rows: dict[int, list[str]] = {}
    for line, start, end, scopes in tokens:
        if first <= line + 1 <= last:
            text = html.escape(lines[line][start:end])
            rows.setdefault(line, []).append(f'<span style="color:{colour(scopes)}">{text}</span>')
    body = "\n".join(f'<span class="n">{n + 1}</span>{"".join(rows.get(n, []))}' for n in range(first - 1, last))
    return (f"<!doctype html><meta charset=utf-8><style>body{{margin:0;background:{BACKGROUND}}}"
            f"pre{{margin:0;padding:14px 18px;color:{FOREGROUND};font:14px/1.45 'DejaVu Sans Mono',monospace}}"
            f".n{{display:inline-block;width:2.5em;margin-right:1.2em;text-align:right;color:#6e7681}}</style>"
            f"<pre>{body}</pre>\n")


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        sys.exit("no chromium found: `apt-get install chromium`, or pass --html to write the page only")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={width},{height}",
                        f"--screenshot={png.resolve()}", page.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--lines", default="1-60", help="FIRST-LAST, 1-based (default 1-60)")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--html", action="store_true", help="write PNG's name with .html instead of a PNG")
    args = parser.parse_args()
    first, last = (int(x) for x in args.lines.split("-"))
    page_text = render_html(args.source, first, last)
    if args.html:
        args.png.with_suffix(".html").write_text(page_text, encoding="utf-8")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(page_text, encoding="utf-8")
        height = 28 + round((last - first + 1) * 14 * 1.45) + 2
        screenshot(page, args.png, args.width, height)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
