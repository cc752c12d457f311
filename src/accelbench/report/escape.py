"""Untrusted text made literal where it enters the report: HTML for table cells, headers and captions,
Markdown for prose, matplotlib's mathtext for chart labels. Every string read from a run folder (a note, an
error, names, the CPU model, a method text) is untrusted: run folders travel between people and machines."""

from __future__ import annotations

import html
import re
from typing import Any

# Markdown that changes what is shown: escapes, code spans, emphasis, links and images, raw HTML and
# entities, math, strikethrough, table cells and headings. An underscore inside a word is left alone:
# CommonMark never reads it as emphasis (load_format stays readable in the Markdown source).
_MD_INLINE = re.compile(r"[\\`*\[\]<>&$~|#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# What opens a block at the start of a line: a list item, a quote, a heading underline, a definition
_MD_LINE_START = re.compile(r"^(\s*)([-+=:]|\d+(?=[.)]))")


def html_text(value: Any) -> str:
    """A value as HTML text that shows exactly its characters (no tag, attribute or entity takes effect)."""
    return html.escape(str(value))


def md_text(value: Any) -> str:
    """A value as inline Markdown that shows exactly its characters, on one line (line breaks become spaces,
    so it cannot open a block of its own)."""
    return _MD_INLINE.sub(lambda m: "\\" + m.group(0), " ".join(str(value).split()))


def md_block(value: Any) -> str:
    """Multi-line text as Markdown lines that show exactly their characters (each line as md_text, and what
    would open a list, quote or heading at its start escaped)."""
    lines = []
    for line in str(value).splitlines():
        line = _MD_INLINE.sub(lambda m: "\\" + m.group(0), line.rstrip())
        m = _MD_LINE_START.match(line)
        if m:
            marker = m.group(2)
            line = (m.group(1) + "\\" + marker + line[m.end():] if not marker[0].isdigit()
                    else m.group(1) + marker + "\\" + line[m.end():])
        lines.append(line)
    return "\n".join(lines)


def md_code(value: Any) -> str:
    """A value as a Markdown code span (plain escaped text where it holds a backtick)."""
    text = " ".join(str(value).split())
    return f"`{text}`" if "`" not in text else md_text(text)


def plot_text(value: Any) -> str:
    """A value as matplotlib text shown as it is: a '$' would start mathtext (and bad mathtext fails the
    chart)."""
    return str(value).replace("$", r"\$")
