"""render_report: executes notebooks/summary.ipynb over an outputs folder (papermill) and writes it, code
hidden, as one self-contained HTML file, outputs/report/index.html."""

from __future__ import annotations

from pathlib import Path

from accelbench.config import paths

# The lab template without the CDN scripts (require.js, MathJax, mermaid) the report does not use, so
# index.html opens offline: its images are data URIs and its CSS is inline.
HTML_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def render_report(output_dir: Path | str = paths.OUTPUTS_DIR) -> Path:
    """Execute notebooks/summary.ipynb over `output_dir` (papermill) into <output_dir>/notebooks/, then
    write it as one self-contained HTML file without code: <output_dir>/report/index.html."""
    import papermill
    from nbconvert import HTMLExporter

    output_dir = Path(output_dir).resolve()
    executed = output_dir / "notebooks" / paths.SUMMARY_NOTEBOOK.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.SUMMARY_NOTEBOOK), str(executed), cwd=str(paths.ROOT),
                               parameters={"output_dir": str(output_dir)}, progress_bar=False)
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    exporter.raw_template = HTML_TEMPLATE
    html, _ = exporter.from_filename(str(executed))
    target = paths.report_dir(output_dir) / "index.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    return target
