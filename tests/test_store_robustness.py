"""A result store that degrades gracefully: each folder that is not a readable run is skipped with a warning
naming it and why (store.runset.RunSet.skipped), every other run stays readable with the same numbers, the
report lists the skipped folders, and a failed render never leaves a stale index.html looking current."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from IPython.display import Markdown
from test_views import three_runs

from accelbench import report
from accelbench.analysis import runs, views
from accelbench.report import plots, render
from accelbench.store import runset

GOOD = {"run-a", "run-b", "run-c"}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """three_runs, made once: each test copies it (making runs takes seconds)."""
    return three_runs(tmp_path_factory.mktemp("template"))


@pytest.fixture
def outputs(template: Path, tmp_path: Path) -> Path:
    out = tmp_path / "outputs"
    shutil.copytree(template, out)
    return out


def _bad_copy(outputs: Path, name: str = "run-bad", of: str = "cpu/run-a", scenario: str = "cpu") -> Path:
    """A copy of a good run folder under a new run id (its manifest says so too)."""
    d = outputs / "results" / scenario / name
    shutil.copytree(outputs / "results" / of, d)
    _edit(d, run_id=name)
    return d


def _edit(d: Path, **fields) -> None:
    m = json.loads((d / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps({**m, **fields}))


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def _manifest_text(text: str):
    return lambda d: (d / "manifest.json").write_text(text)


def _schema_version(d: Path) -> None:
    _edit(d, schema_version=99)


def _status(d: Path) -> None:
    _edit(d, status="exploded")


def _wrong_columns(d: Path) -> None:
    pd.DataFrame({"a": [1], "b": ["x"]}).to_parquet(d / "levels.parquet")


def _wrong_types(d: Path) -> None:
    req = pd.read_parquet(d / "requests.parquet")
    req.assign(submit_s=req["submit_s"].astype(str)).to_parquet(d / "requests.parquet")


def _truncate(name: str):
    return lambda d: _cut_in_half(d / name)


def _no_manifest(d: Path) -> None:
    (d / "manifest.json").unlink()


def _other_run_id(d: Path) -> None:
    _edit(d, run_id="run-elsewhere")


BAD = {  # how a folder is broken -> what its reason says
    "invalid-json": (_manifest_text("{not json"), r"manifest\.json: not valid JSON"),
    "empty-manifest": (_manifest_text(""), r"manifest\.json: empty"),
    "not-an-object": (_manifest_text("[1, 2, 3]"), r"manifest\.json: a JSON list, not an object"),
    "not-a-run-manifest": (_manifest_text('{"status": "completed"}'), r"manifest\.json: not a readable run manifest"),
    "future-schema": (_schema_version, r"schema version 99 is newer than this accelbench reads"),
    "unknown-status": (_status, r"unknown status 'exploded' \(known: completed, partial"),
    "no-manifest": (_no_manifest, r"no manifest\.json"),
    "run-id-not-folder": (_other_run_id, r"run_id 'run-elsewhere' is not its folder's name 'run-bad'"),
    "truncated-levels": (_truncate("levels.parquet"), r"levels\.parquet: not a readable Parquet file"),
    "truncated-requests": (_truncate("requests.parquet"), r"requests\.parquet: not a readable Parquet file"),
    "wrong-columns": (_wrong_columns, r"levels\.parquet: missing column\(s\) level_kind, level_value, repetition"),
    "wrong-types": (_wrong_types, r"requests\.parquet: column submit_s holds (large_)?string, not numbers"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_run_folder_is_skipped_naming_it_and_why_and_the_others_read_as_before(case, outputs, template,
                                                                                    caplog):
    before = views.summary(template)
    break_it, reason = BAD[case]
    bad = _bad_copy(outputs)
    break_it(bad)
    with caplog.at_level(logging.WARNING, logger=runset.__name__):
        rs = runset.run_set(outputs)
    assert set(rs.manifests) == GOOD
    [(folder, why)] = rs.skipped
    assert folder == bad.resolve() and re.search(reason, why), why
    assert any(str(bad.resolve()) in r.getMessage() and why in r.getMessage() for r in caplog.records)
    after = views.summary(outputs)  # every good run's numbers as without the bad folder
    pd.testing.assert_frame_equal(after.drop(columns="run_dir", errors="ignore"),
                                  before.drop(columns="run_dir", errors="ignore"))
    assert len(views.measured_requests(outputs)) == len(views.measured_requests(template))
    shown = report.table("skipped", outputs).data
    assert shown.to_dict("records") == [{"Folder (under results/)": "cpu/run-bad", "Why skipped": why}]
    assert "**1 folder(s) skipped**" in report.overview(outputs).data


def test_a_hidden_staging_folder_holding_a_manifest_is_not_a_run(outputs):
    staging = outputs / "results" / "cpu" / ".run-s.partial"
    shutil.copytree(outputs / "results" / "cpu" / "run-a", staging)
    _edit(staging, run_id="run-s")
    (outputs / "results" / "cpu" / ".run-t.partial").mkdir()  # a run just started: nothing to say about it
    rs = runset.run_set(outputs)
    assert set(rs.manifests) == GOOD
    assert [(f.name, why.split(" (")[0]) for f, why in rs.skipped] == [(".run-s.partial", "a hidden folder")]
    assert "run-s" not in set(views.summary(outputs)["run_id"])


def test_a_run_id_read_twice_is_skipped_the_second_time(outputs):
    _bad_copy(outputs, name="run-a", of="cpu/run-a", scenario="h200")  # the same run, copied under h200/
    rs = runset.run_set(outputs)
    assert set(rs.manifests) == GOOD and rs.run_dir["run-a"].parent.name == "cpu"
    [(folder, why)] = rs.skipped
    assert folder.parent.name == "h200" and "run id 'run-a' already read from" in why


def test_a_manifest_rewritten_in_place_is_read_again(outputs):
    d = outputs / "results" / "cpu" / "run-a"
    assert runset.run_set(outputs).manifests["run-a"].note is None
    _edit(d, note="finished in place")
    assert runset.run_set(outputs).manifests["run-a"].note == "finished in place"


def test_a_manifest_with_odd_environment_values_still_labels_its_run(outputs):
    """The environment's parts are kept as recorded (not typed): odd values are shown, never a crash."""
    d = _bad_copy(outputs, name="run-odd")
    m = json.loads((d / "manifest.json").read_text())
    m["environment"] |= {"gpus": {"names": "H200"}, "neuron": {"devices": 3}, "cpu": {"model": ["x"]}}
    m["engine_effective"] = {"max_num_batched_tokens": "lots"}
    m["serve_validation"] = {"status": 1, "levels": "c1", "tokenizer": {"synthetic": True, "vocab_size": "many"},
                             "server_command": ["--max-num-batched-tokens"]}
    (d / "manifest.json").write_text(json.dumps(m))
    r = runs.runs(outputs).set_index("run_id")
    assert r.loc["run-odd", "system"].startswith("1× ") and "0 Neuron devices seen" in r.loc["run-odd", "system"]
    notes = report.validation_notes(outputs).data
    assert "validation 1" in notes and "many words" in notes and "harness lots" in notes


@pytest.mark.parametrize("case", ["truncated-levels", "not-an-object"])
def test_every_table_and_chart_is_drawn_beside_a_bad_folder(case, outputs):
    BAD[case][0](_bad_copy(outputs))
    for name in report.TABLES:
        shown = report.table(name, outputs)
        assert isinstance(shown, Markdown) or shown.to_html(), name
    for chart in (plots.latency_vs_concurrency, plots.ttft_distributions, plots.throughput_vs_concurrency,
                  plots.throughput_vs_rate, plots.pareto_frontier, plots.cost_vs_concurrency,
                  plots.energy_vs_concurrency, plots.roofline_vs_concurrency):
        chart(outputs)
    for prose in (report.overview, report.validation_notes, report.methods, report.cost_basis):
        assert prose(outputs).data
    assert "cpu/run-bad" in report.table("skipped", outputs).to_html()


# --- the rendered report -------------------------------------------------------------------------------

def test_a_failed_render_replaces_the_old_report_with_a_page_saying_why(outputs, monkeypatch):
    import papermill

    index = outputs / "report" / "index.html"
    index.parent.mkdir(parents=True)
    index.write_text("<html>the report of last week</html>")

    def fail(*args, **kwargs):
        raise RuntimeError("cell 7 failed: <b>boom</b>")

    monkeypatch.setattr(papermill, "execute_notebook", fail)
    with pytest.raises(RuntimeError, match="cell 7 failed"):
        report.render_report(outputs)
    html = index.read_text()
    assert "last week" not in html and render.FAILED_TITLE in html
    assert "RuntimeError: cell 7 failed: &lt;b&gt;boom&lt;/b&gt;" in html  # why, as text
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.html"]  # no temporary file left


def test_a_successful_render_replaces_index_html_whole(outputs, monkeypatch):
    index = outputs / "report" / "index.html"
    index.parent.mkdir(parents=True)
    index.write_text(render.failure_page(outputs, outputs / "none", RuntimeError("earlier")))
    monkeypatch.setattr(render, "_render", lambda output_dir, executed: "<html>new report</html>")
    assert report.render_report(outputs) == index
    assert index.read_text() == "<html>new report</html>"
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.html"]


@pytest.mark.slow
def test_the_report_renders_beside_truncated_parquet_naming_the_folders(outputs):
    """Defect 3 of issue 17: a levels.parquet and a requests.parquet cut in half, each in its own run folder."""
    _cut_in_half(_bad_copy(outputs, name="run-cut-levels") / "levels.parquet")
    _cut_in_half(_bad_copy(outputs, name="run-cut-requests") / "requests.parquet")
    index = outputs / "report" / "index.html"
    index.parent.mkdir(parents=True)
    index.write_text("<html>stale</html>")
    html = report.render_report(outputs).read_text()
    assert "stale" not in html and "Traceback" not in html and "PapermillExecutionError" not in html
    for folder, file in (("cpu/run-cut-levels", "levels.parquet"), ("cpu/run-cut-requests", "requests.parquet")):
        assert re.search(rf"<td[^>]*>{folder}</td>\s*<td[^>]*>{re.escape(file)}: not a readable Parquet file", html)
    assert "**2 folder(s) skipped**" not in html and "2 folder(s) skipped" in html
    for run_label in ("cpu · run-a", "cpu · run-c", "h200"):  # every good run in the report
        assert re.search(rf"<td[^>]*>{re.escape(run_label)}</td>", html), run_label
