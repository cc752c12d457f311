"""Diff every table's values between two rendered reports (not the HTML bytes).

    python scripts/report_diff.py OLD/index.html NEW/index.html

Each <table> is read as its caption plus its cells' text, in document order; the tables are paired by
caption (then by order among equal captions) and every cell is compared as text, so a number that moved
by one rounding step shows. The prose outside tables (headings, paragraphs, list items: where the
findings and notes carry numbers too) is compared block by block. Exits 1 and prints each difference.
"""

from __future__ import annotations

import difflib
import sys
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path


BLOCKS = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "div", "table", "pre", "figcaption")


class Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._caption: list[str] | None = None
        self._depth = 0
        self._skip = 0  # inside <style> or <script>
        self.prose: list[str] = []
        self._block: list[str] = []

    def _flush(self) -> None:
        text = " ".join("".join(self._block).split())
        if text:
            self.prose.append(text)
        self._block = []

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self._skip += 1
        if tag in BLOCKS:
            self._flush()
        if tag == "table":
            self._depth += 1
            self.tables.append({"caption": "", "rows": []})
        elif self._depth and tag == "caption":
            self._caption = []
        elif self._depth and tag == "tr":
            self._row = []
        elif self._depth and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._skip -= 1
        if tag in BLOCKS:
            self._flush()
        if tag == "table":
            self._depth -= 1
        elif tag == "caption" and self._caption is not None:
            self.tables[-1]["caption"] = " ".join("".join(self._caption).split())
            self._caption = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data):
        if not self._depth and not self._skip:
            self._block.append(data)
        for part in (self._cell, self._caption):
            if part is not None:
                part.append(data)


def parse(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text())
    parser.close()
    return parser


def tables(path: Path) -> dict[tuple[str, int], list[list[str]]]:
    parser = parse(path)
    seen: dict[str, int] = defaultdict(int)
    out = {}
    for t in parser.tables:
        key = (t["caption"], seen[t["caption"]])
        seen[t["caption"]] += 1
        out[key] = t["rows"]
    return out


def diff(old: Path, new: Path) -> list[str]:
    a, b = tables(old), tables(new)
    problems = [f"only in {old}: table {k[0][:80]!r} #{k[1]}" for k in a if k not in b]
    problems += [f"only in {new}: table {k[0][:80]!r} #{k[1]}" for k in b if k not in a]
    for key in a.keys() & b.keys():
        ra, rb = a[key], b[key]
        if len(ra) != len(rb):
            problems.append(f"table {key[0][:60]!r}: {len(ra)} rows before, {len(rb)} after")
            continue
        for i, (x, y) in enumerate(zip(ra, rb)):
            if x != y:
                cells = [f"col {j}: {p!r} -> {q!r}" for j, (p, q) in enumerate(zip(x, y)) if p != q]
                if len(x) != len(y):
                    cells.append(f"{len(x)} cells before, {len(y)} after")
                problems.append(f"table {key[0][:60]!r} row {i}: " + "; ".join(cells))
    pa, pb = parse(old).prose, parse(new).prose
    for line in difflib.unified_diff(pa, pb, "before", "after", n=0, lineterm=""):
        if not line.startswith(("---", "+++", "@@")):
            problems.append(f"prose {line[:200]}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    old, new = map(Path, argv)
    problems = diff(old, new)
    n = len(tables(old))
    for p in problems:
        print(p)
    print(f"{n} tables before, {len(tables(new))} after; {len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
