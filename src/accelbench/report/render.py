"""render_report: executes notebooks/summary.ipynb over an outputs folder (papermill) and writes it, code
hidden, as one self-contained HTML file, outputs/report/index.html: replaced atomically when the render
succeeds, and by a page saying why when it fails (never a stale report that looks current)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path

from accelbench.config import paths
from accelbench.report.escape import html_text

# The lab template without the CDN scripts (require.js, MathJax, mermaid) the report does not use, so
# index.html opens offline: its images are data URIs and its CSS is inline.
HTML_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
FAILED_TITLE = "accelbench report: the render failed"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colours in papermill's tracebacks


def render_report(output_dir: Path | str = paths.OUTPUTS_DIR) -> Path:
    """Execute notebooks/summary.ipynb over `output_dir` (papermill) into <output_dir>/notebooks/, then
    write it as one self-contained HTML file without code: <output_dir>/report/index.html.

    index.html is replaced only once the new one is complete; if the render fails (or is interrupted), it
    is replaced by a page saying so and why, and the error is raised."""
    output_dir = Path(output_dir).resolve()
    executed = output_dir / "notebooks" / paths.SUMMARY_NOTEBOOK.name
    target = paths.report_dir(output_dir) / "index.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        html = _render(output_dir, executed)
    except BaseException as e:  # re-raised: the old report must not outlive a failed or interrupted render
        _write(target, failure_page(output_dir, executed, e))
        raise
    _write(target, html)
    return target


def _render(output_dir: Path, executed: Path) -> str:
    import papermill
    from nbconvert import HTMLExporter

    executed.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.SUMMARY_NOTEBOOK), str(executed), cwd=str(paths.ROOT),
                               parameters={"output_dir": str(output_dir)}, progress_bar=False)
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    exporter.raw_template = HTML_TEMPLATE
    html, _ = exporter.from_filename(str(executed))
    return html


def _write(target: Path, text: str) -> None:
    """Write target whole or not at all: a reader never opens half a report."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def failure_page(output_dir: Path, executed: Path, error: BaseException) -> str:
    """A page in place of the report saying that the render failed, when, and why."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    detail = _ANSI.sub("", f"{type(error).__name__}: {error}".strip())
    lines = detail.splitlines()
    detail = "\n".join(lines[:80] + ([f"... ({len(lines) - 80} more lines)"] if len(lines) > 80 else []))
    notebook = (f"<p>The executed notebook, with the cell that failed, is {html_text(executed)}.</p>"
                if executed.exists() else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{FAILED_TITLE}</title></head>
<body style="font-family: sans-serif; max-width: 60em; margin: 2em auto;">
<h1>{FAILED_TITLE}</h1>
<p>The report over {html_text(output_dir)} could not be rendered at {when}. The previous report was removed
so that it is not read as current; run <code>accelbench report</code> again once the cause is fixed.</p>
{notebook}
<pre style="white-space: pre-wrap;">{html_text(detail)}</pre>
</body></html>
"""
