"""Nothing in a run folder can attack the reader: every string read from one (a note, an error, the method
text, names, the CPU model, the declared accelerator, the bench serve record, the run id) reaches the report
as text, shown as its characters, never as HTML or Markdown that takes effect."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from IPython.display import Markdown
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from test_views import three_runs

from accelbench import report
from accelbench.errors import AccelbenchError
from accelbench.report import plots

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=\"document.title='pwned'\">"
LINK = "[click me](javascript:document.title='pwned') **not bold** `not code` $x$ <b>not bold</b> &amp;"
PAYLOADS = (SCRIPT, IMG, LINK)
HOSTILE_RUN_ID = "run-<img src=x onerror=\"document.title='pwned'\">"  # a folder name may hold it (no '/')


class Page(HTMLParser):
    """The elements a page has and the text it shows (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title:
            self.title += data

    @classmethod
    def of(cls, html: str) -> Page:
        page = cls()
        page.feed(html)
        return page

    def shown(self) -> str:
        return " ".join("".join(self.text).split())

    def injected(self) -> list[str]:
        """Elements or attributes that only a payload would have made."""
        bad = []
        for tag, attrs in self.elements:
            if tag == "script" and "pwned" in (attrs.get("src") or ""):
                bad.append(f"<script {attrs}>")
            if tag == "img" and (attrs.get("src") == "x" or "onerror" in attrs):
                bad.append(f"<img {attrs}>")
            if tag == "a" and (attrs.get("href") or "").startswith("javascript:"):
                bad.append(f"<a {attrs}>")
            if tag == "b" or any(k.startswith("on") for k in attrs):
                bad.append(f"<{tag} {attrs}>")
        return bad


def _hostile(outputs: Path) -> Path:
    """outputs with two more cpu runs whose every free-text field carries markup: one completed (validated
    against bench serve), one failed; the completed one under a run id that is markup too."""
    good = outputs / "results" / "cpu" / "run-a"
    for run_id, status in ((HOSTILE_RUN_ID, "completed"), ("run-failed-markup", "failed")):
        d = good.parent / run_id
        shutil.copytree(good, d)
        m = json.loads((d / "manifest.json").read_text())
        m |= dict(run_id=run_id, status=status, note=" ".join(PAYLOADS), method="\n".join(PAYLOADS),
                  error=" ".join(PAYLOADS) if status == "failed" else None)
        m["environment"]["cpu"]["model"] = f"Evil CPU {SCRIPT}"
        m["resolved"]["instance"]["accelerator_name"] = f"Evil accelerator {IMG}"
        if status == "completed":
            m["serve_validation"] = {"status": SCRIPT, "levels": [1.0], "error": LINK,
                                     "tokenizer": {"synthetic": True, "type": IMG, "vocab_size": 3, "words": LINK,
                                                   "pre_tokenizer": SCRIPT, "special_tokens_added": 0},
                                     "server_command": ["vllm", "--max-num-batched-tokens", IMG]}
        (d / "manifest.json").write_text(json.dumps(m))
    return outputs


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile(three_runs(tmp_path_factory.mktemp("hostile")))


def _html(shown) -> str:
    """What nbconvert writes for a report cell's result: a Styler's HTML, a Markdown's rendering."""
    return markdown2html_mistune(shown.data) if isinstance(shown, Markdown) else shown.to_html()


def test_escaping_shows_markup_as_its_characters():
    from accelbench.report import escape

    for text in (*PAYLOADS, "a_b _c_ *d* 1. e\n- f\n# g", "\\[h\\]"):
        page = Page.of(markdown2html_mistune(escape.md_text(text)))
        assert page.injected() == [] and page.shown() == " ".join(text.split()), text
        block = Page.of(markdown2html_mistune(escape.md_block(text)))
        assert block.injected() == [] and block.shown() == " ".join(text.split()), text
        assert Page.of(f"<p>{escape.html_text(text)}</p>").shown() == " ".join(text.split())
    assert escape.md_text("load_format max_num_batched_tokens") == "load_format max_num_batched_tokens"
    assert escape.plot_text("a $x^{$ b") == r"a \$x^{\$ b"


def test_tables_and_prose_show_run_folder_text_literally(hostile):
    shown = {name: report.table(name, hostile) for name in ("runs", "provenance_run", "provenance_machine")}
    shown |= {f.__name__: f(hostile) for f in (report.overview, report.validation_notes, report.methods)}
    for name, view in shown.items():
        page = Page.of(_html(view))
        assert page.injected() == [], name
    text = {name: Page.of(_html(view)).shown() for name, view in shown.items()}
    for payload in PAYLOADS:
        assert payload in text["runs"] and payload in text["provenance_run"] and payload in text["methods"]
    assert f"Evil CPU {SCRIPT}" in text["overview"] and f"Evil CPU {SCRIPT}" in text["provenance_machine"]
    assert f"Evil accelerator {IMG}" in text["provenance_machine"]
    assert HOSTILE_RUN_ID in text["provenance_run"] and HOSTILE_RUN_ID in text["overview"]
    for payload in (f"validation {SCRIPT}", f": {LINK}", f"({IMG}, 3 words {LINK}, {SCRIPT}, 0 special",
                    f"server {IMG}"):
        assert payload in text["validation_notes"], payload


def test_a_table_caption_and_a_failed_view_show_their_text_literally(hostile, monkeypatch):
    from accelbench.report import tables

    styled = tables.styled(report.table("runs", hostile).data.head(1), ["Run"], caption=SCRIPT)
    assert Page.of(styled.to_html()).injected() == [] and SCRIPT in Page.of(styled.to_html()).shown()

    def failing(_):
        raise AccelbenchError(f"cannot read {LINK}")

    monkeypatch.setitem(tables.TABLES, "runs", tables.TableSpec(failing, ("run_label",)))
    failed = report.table("runs", hostile)
    assert Page.of(_html(failed)).injected() == [] and f"cannot read {LINK}" in Page.of(_html(failed)).shown()


def test_charts_draw_labels_with_dollar_signs(tmp_path):
    """A '$' in a run label would start matplotlib's mathtext, and bad mathtext fails the chart."""
    outputs = three_runs(tmp_path)
    d = outputs / "results" / "cpu" / "run-$\\frac{$"
    shutil.copytree(outputs / "results" / "cpu" / "run-a", d)
    m = json.loads((d / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps(m | {"run_id": d.name}))
    fig = plots.latency_vs_concurrency(outputs)
    assert fig._repr_png_().startswith(b"\x89PNG")
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert "cpu · run-\\$\\frac{\\$, p50" in labels


def _dump_dom(html: Path, tmp_path: Path) -> str:
    """The page's DOM after Chromium loaded it and ran its scripts (with time for an image's onerror)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed")
    out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=5000", "--dump-dom",
                          html.resolve().as_uri()], check=True, capture_output=True, text=True, timeout=180)
    return out.stdout


@pytest.mark.slow
def test_a_report_from_hostile_run_folders_runs_no_script_in_chromium(tmp_path):
    outputs = _hostile(three_runs(tmp_path))
    # a run whose names carry markup: shown literally, or (where params names are checked) skipped, its reason
    # quoting them literally
    d = outputs / "results" / "cpu" / "run-names"
    shutil.copytree(outputs / "results" / "cpu" / "run-a", d)
    m = json.loads((d / "manifest.json").read_text())
    m["run_id"], m["scenario"] = d.name, SCRIPT
    m["resolved"]["workload"]["name"] = "w " + IMG  # ('$' in labels: test_charts_draw_labels_with_dollar_signs)
    m["resolved"]["scenario"]["name"] = SCRIPT
    (d / "manifest.json").write_text(json.dumps(m))
    index = report.render_report(outputs)
    html = index.read_text()
    assert "Traceback" not in html and "PapermillExecutionError" not in html
    # the control: a real script in the same page does run, so the check below can fail
    control = tmp_path / "control.html"
    control.write_text(html.replace("</body>", f"{SCRIPT}</body>"))
    assert Page.of(_dump_dom(control, tmp_path)).title == "pwned"
    dom = Page.of(_dump_dom(index, tmp_path))
    assert dom.title != "pwned" and "pwned" not in dom.title
    assert dom.injected() == []
    shown = dom.shown()
    for payload in (*PAYLOADS, f"Evil CPU {SCRIPT}", f"Evil accelerator {IMG}", HOSTILE_RUN_ID):
        assert payload in shown, payload
    assert re.search(r"cpu/run-names|cpu · run-names", shown)  # the markup-named run: shown, or skipped
