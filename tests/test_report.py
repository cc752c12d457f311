"""The report's tables, charts and prose on hand-made run folders (exact values, made by test_views.py),
and the rendered HTML of a real cpu run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from IPython.display import Markdown
from PIL import Image
from test_views import H200_SYSTEM, _save, three_runs

from accelbench import report
from accelbench.analysis import cost, roofline, runs, validation, views
from accelbench.config import params, paths
from accelbench.errors import AccelbenchError
from accelbench.report import labels, plots
from accelbench.report.labels import LABELS

SECTIONS = ("Summary", "Latency", "Throughput", "Pareto frontier", "Cost efficiency", "Energy", "Roofline efficiency",
            "SLO goodput", "Validation", "Seed audit", "Recommendations", "SDK versions", "Engine cross-check",
            "Methods", "Provenance")


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    return three_runs(tmp_path)


def test_summary_table_shows_labels_and_ci_columns(outputs):
    latency = report.table("latency", outputs).data
    ci = "TTFT p50, 95% CI or range (ms)"
    assert list(latency.columns[:6]) == ["Run", "Level", "Engine starts", "Repetitions", LABELS["ttft_p50_ms"], ci]
    assert LABELS["ttft_p99_level_ms"] in latency.columns  # every request's p99 beside the interval's
    assert len(latency) == 6
    first = latency.iloc[0]
    assert first["Level"] == "concurrency 1" and first["TTFT p50 (ms)"] == pytest.approx(11.0)
    assert first[ci] == "range 10–12"  # two repetitions of one engine start: a range, called one
    flags = report.table("throughput", outputs).data
    assert {LABELS["output_tok_per_s"], LABELS["checks_failed"], LABELS["low_n"], "Unstable (CV > 5%)", "Saturated",
            "Errors (requests)", "Status"} <= set(flags.columns)
    by_level = flags.set_index(["Run", "Level"])
    assert by_level.loc[("cpu · run-a", "concurrency 4"), "Saturated"] == "n/a (closed loop)"
    assert by_level.loc[("cpu · run-a", "rate 2 req/s"), "Saturated"] == "no"
    assert by_level.loc[("cpu · run-c", "concurrency 1"), "Unstable (CV > 5%)"] == "n/a (1 repetition)"


def test_energy_is_absent_not_zero_where_not_measured(outputs, tmp_path):
    e = views.energy(outputs)
    assert e.loc[e["run_id"] == "run-b", "power_mean_w"].eq(300.0).all()
    assert e.loc[e["run_id"] == "run-a", "power_mean_w"].isna().all()
    html = report.table("energy", outputs).to_html()
    assert "not measured" in html
    cpu_only = tmp_path / "cpu-only"
    shutil.copytree(outputs / "results" / "cpu", cpu_only / "results" / "cpu")
    text = report.table("energy", cpu_only).data
    assert "not measured on this backend" in text and "(cpu)" in text


def test_provenance_shows_accelerators_as_measured_and_failed_runs(outputs):
    p = runs.provenance(outputs).set_index("run_id")
    assert p.loc["run-b", "measured_accelerators"] == "1 × NVIDIA H200"
    assert p.loc["run-b", "accelerator"] == params.load_instances()["p5en.48xlarge"].accelerator_name
    assert p.loc["run-b", "system"] == "H200 (p5en.48xlarge class), vLLM 0.99.0, torch 2.9, dummy weights"
    assert p.loc["run-a", "measured_accelerators"].startswith("no GPU detected; CPU: Test CPU")
    assert p.loc["run-c", "status"] == "failed" and p.loc["run-c", "error"] == "RuntimeError: engine died"
    assert p.loc["run-a", "git"] == "aaaaaaaaaa (dirty)"
    shown = report.table("provenance_run", outputs).data.set_index("Run ID")
    assert shown.loc["run-c", "Status"] == "⚠ FAILED"
    assert shown.loc["run-b", LABELS["system"]].startswith("H200 (p5en.48xlarge class)")
    machine = report.table("provenance_machine", outputs).data.set_index("Run ID")
    assert machine.loc["run-b", LABELS["measured_accelerators"]] == "1 × NVIDIA H200"


def test_methods_quote_the_definitions_and_each_runs_method(outputs):
    text = report.methods(outputs).data
    assert "TTFT = first_token_s - submit_s" in text and "(E2E - TTFT) / (output_tokens - 1)" in text
    assert "AIPerf" in text and "Measurement interval" in text and "Student-t" in text
    assert "achieved below 90% of offered" in text
    # a run's method text is quoted as it is: its brackets escaped so that Markdown shows them, not a link
    assert "load_format='dummy'" in text and "as vLLM's own benchmarks do \\[h200\\]" in text


def test_charts_are_labelled_pngs(outputs):
    for chart in (plots.latency_vs_concurrency, plots.ttft_distributions, plots.throughput_vs_concurrency,
                  plots.throughput_vs_rate, plots.pareto_frontier, plots.cost_vs_concurrency,
                  plots.energy_vs_concurrency, plots.roofline_vs_concurrency):
        fig = chart(outputs)
        assert fig._repr_png_().startswith(b"\x89PNG")
        for ax in fig.axes:
            assert ax.get_title() and ax.get_xlabel() and re.search(r"\(.+\)|Share", ax.get_ylabel())


def test_every_view_says_no_runs_yet_without_runs(tmp_path):
    tables = ("latency", "slo", "goodput", "engine", "energy", "provenance_run", "runs", "glance", "pareto",
              "cost_at_slo", "cost_level", "roofline_decode", "validation", "recommendations", "sdk",
              "version_changes")
    shown = {name: report.table(name, tmp_path) for name in tables}
    for view in (report.overview, report.validation_notes, plots.latency_vs_concurrency, plots.ttft_distributions,
                 plots.throughput_vs_concurrency, plots.throughput_vs_rate, plots.pareto_frontier,
                 plots.cost_vs_concurrency, plots.energy_vs_concurrency, plots.roofline_vs_concurrency):
        shown[view.__name__] = view(tmp_path)
    for name, view in shown.items():
        assert isinstance(view, Markdown) and "No runs yet" in view.data, name
    assert "TTFT = first_token_s" in report.methods(tmp_path).data


def test_an_unknown_table_is_refused_naming_the_tables(tmp_path):
    with pytest.raises(AccelbenchError, match="no report table 'latncy': the tables are runs, glance"):
        report.table("latncy", tmp_path)


# --- the decision sections ---------------------------------------------------------------------------

def test_a_partial_run_counts_like_a_completed_one_and_is_marked(outputs):
    _save(outputs, "h200", "run-p", [("concurrency", 1, 0, 10, 20, 0)], status="partial", gpus=["NVIDIA H200"],
          extra={"engine_effective": {"max_num_batched_tokens": 8192}})
    assert "run-p" in set(views.costs(outputs)["run_id"]) and "run-c" not in set(views.costs(outputs)["run_id"])
    assert "run-p" in set(views.rooflines(outputs)["run_id"])
    assert runs.runs(outputs).set_index("run_id").loc["run-p", "token_budget"] == 8192
    shown = report.table("provenance_run", outputs).data.set_index("Run ID")
    assert shown.loc["run-p", "Status"] == "⚠ PARTIAL"
    assert "2 completed, 1 partial, 1 failed" in report.overview(outputs).data


def test_cost_at_slo_is_the_cheapest_level_meeting_the_profile(outputs):
    at = views.costs_at_slo(outputs)
    b = at[at["run_id"] == "run-b"].set_index("profile")
    assert b.loc["mlperf-llama3.1-8b-server", "level"] == "concurrency 4"  # TPOT 50 <= 100 ms, more tokens/s
    assert b.loc["mlperf-llama3.1-8b-interactive", "level"] == "concurrency 1"  # 50 > 30 ms at 4
    costs = views.costs(outputs).set_index(["run_id", "level"])
    assert b.loc["mlperf-llama3.1-8b-server", "usd_per_m_output_tokens"] == \
        pytest.approx(costs.loc[("run-b", "concurrency 4"), "usd_per_m_output_tokens"])
    text = report.cost_basis(outputs).data
    assert f'Basis shown: "{labels.COST_BASIS}"' in text and cost.FORMULA in text
    assert "1/8 of p5en.48xlarge" in text and "x 8/1" in text  # both bases explained for the measured config


def test_cost_views_say_why_when_no_run_is_priced(outputs, tmp_path):
    cpu_only = tmp_path / "cpu-only"
    shutil.copytree(outputs / "results" / "cpu", cpu_only / "results" / "cpu")  # local-cpu has no price
    at = report.table("cost_at_slo", cpu_only).data
    assert at[LABELS["usd_per_m_output_tokens"]].isna().all() and at[LABELS["slo_note"]].str.contains("no prices").all()
    levels = report.table("cost_level", cpu_only).data
    assert levels[LABELS["price_note"]].str.contains("no prices").all()
    assert isinstance(plots.cost_vs_concurrency(cpu_only), Markdown)
    rec = views.recommendations(cpu_only).set_index("profile")
    assert rec.loc["general-production", "winner"] != rec.loc["general-production", "winner"]  # NaN: none priced
    assert rec.loc["large-scale-batch", "winner"] == "cpu (cpu-smoke)"  # throughput needs no price
    assert isinstance(plots.energy_vs_concurrency(cpu_only), Markdown)


def test_glance_summarises_each_run(outputs):
    g = views.glance(outputs).set_index("run_id")
    assert g.loc["run-b", "low_level"] == "concurrency 1"
    assert (g.loc["run-b", "low_ttft_p99_ms"], g.loc["run-b", "low_tpot_p50_ms"]) == pytest.approx((10, 20))
    assert g.loc["run-b", "min_j_per_output_token"] == pytest.approx(0.3)  # 300 W / 1000, as saved
    assert g.loc["run-b", "peak_level"] == "concurrency 4"
    assert np.isnan(g.loc["run-a", "min_j_per_output_token"])
    shown = report.table("glance", outputs).data.set_index("Run")
    assert shown.loc["cpu · run-a", LABELS["min_j_per_output_token"]] == labels.NOT_MEASURED


def test_a_fixture_run_is_shown_marked_and_kept_out_of_recommendations(outputs):
    _save(outputs, "trn2", "run-f", [("concurrency", 1, 0, 10, 20, 0)], extra={"fixture": True})
    r = runs.runs(outputs).set_index("run_id")
    assert r.loc["run-f", "run_label"] == "trn2 [fixture]"
    assert report.table("runs", outputs).data.set_index("Run").loc["trn2 [fixture]", LABELS["fixture"]] == "⚠ fixture"
    assert "run-f" in set(views.costs(outputs)["run_id"])  # shown, marked by its label
    assert "trn2" not in set(views.recommendations(outputs)["winner"].dropna())
    u = views.unmeasured(outputs).set_index("scenario")
    assert u.loc["trn2", "projection"].endswith("(a fixture run is shown above)")
    assert "1 fixture run(s)" in report.overview(outputs).data


def test_validation_compares_harness_with_serve_levels(outputs):
    tokenizer = {"synthetic": True, "type": "WordLevel", "vocab_size": 128256, "words": "t0..t128255",
                 "pre_tokenizer": "WhitespaceSplit", "special_tokens_added": 0}
    _save(outputs, "h200", "run-v", [("concurrency", 1, 0, 10, 20, 0), ("concurrency", 4, 0, 10, 50, 0)],
          gpus=["NVIDIA H200"], extra={"serve_validation": {"status": "completed", "levels": [1.0, 4.0],
                                                             "tokenizer": tokenizer,
                                                             "server_tokens_match_workload": True}})
    run_dir = Path(runs.runs(outputs).set_index("run_id").loc["run-v", "run_dir"])
    serve = validation.harness_side(pd.read_parquet(run_dir / "requests.parquet"))[list(validation.COMPARED)]
    serve = (serve * 2).reset_index().assign(level_kind="concurrency")  # bench serve twice the harness everywhere
    serve.to_parquet(run_dir / "serve_levels.parquet")
    v = views.validations(outputs)
    assert set(v["run_id"]) == {"run-v"} and len(v) == 2 * len(validation.COMPARED)
    assert v["ratio"].to_numpy() == pytest.approx(np.full(len(v), 0.5))
    notes = report.validation_notes(outputs).data
    assert "Tokenizer: synthetic, generated" in notes and "128,256 words" in notes
    assert "matches" not in notes and "exactly the workload's" in notes
    assert "harness clients started staggered" in notes and "harness not recorded" in notes
    assert "server the server's default" in notes
    shown = report.table("validation", outputs).data
    assert set(shown[LABELS["level"]]) == {"concurrency 1", "concurrency 4"}
    assert LABELS["ttft_p50_ms"] in set(shown[LABELS["metric"]])


def test_seed_audit_rows_are_marked_as_projections(outputs):
    shown = report.table("audit", outputs).data
    assert shown[LABELS["document"]].str.endswith(f"({labels.PROJECTION})").all()
    assert shown[LABELS["holds"]].map(lambda h: h in ("holds", "does not hold") or h.startswith("n/a (")).all()
    a = views.seed_audit(outputs)
    assert len(shown) == len(a)
    counts = report.table("audit_counts", outputs).data
    assert counts[[LABELS["holds"], LABELS["does_not_hold"], LABELS["not_checked"]]].to_numpy().sum() == len(a)
    projection = report.table("audit_projection", outputs).data
    assert len(projection) == int((a["check"] == "projection vs measurement").sum()) > 0


def test_recommendations_with_and_without_projections(outputs):
    measured = report.table("recommendations", outputs).data
    assert set(measured[LABELS["winner"]]) - {"none qualifies"} <= {"h200 (seed-512-128) (measured)", "cpu (cpu-smoke) (measured)"}
    with_seeds = report.table("recommendations_projected", outputs)
    assert "INCLUDES SEED PROJECTIONS" in with_seeds.caption
    winners = with_seeds.data[LABELS["winner"]]
    assert winners.str.endswith(f"({labels.PROJECTION})").any()
    assert not with_seeds.data[LABELS["sentence"]].str.contains(r"\(projection\)").any()  # always 'projection (seed)'


def test_sdk_versions_say_one_version_so_far_then_compare(outputs):
    assert "vLLM" in report.table("sdk", outputs).data.columns
    assert report.table("version_changes", outputs).data == labels.NO_COMPARISON
    # the same cpu workload under a later vLLM, TTFT doubled; two repetitions a side give ranges, not intervals
    _save(outputs, "cpu", "run-e", [("concurrency", 1, 0, 20, 2, 0), ("concurrency", 1, 1, 22, 2, 0)],
          started_at="2026-12-01T00:00:00+00:00", vllm="1.0.0")
    shown = report.table("version_changes", outputs).data
    ttft = shown[(shown[LABELS["metric"]] == LABELS["ttft_p50_ms"]) & (shown[LABELS["level"]] == "concurrency 1")]
    assert ttft[LABELS["verdict"]].tolist() == ["not testable"]
    assert ttft[LABELS["versions_changed"]].iloc[0] == "vllm: 0.99.0 -> 1.0.0"


def test_roofline_tables_carry_bounds_and_efficiency(outputs):
    r = views.rooflines(outputs)
    b = r[r["run_id"] == "run-b"].set_index("level")
    assert b["itl_efficiency_pct"].to_numpy() == pytest.approx(100 * b["decode_bound_ms"] / b["itl_p50_ms"])
    assert set(report.table("roofline_prefill", outputs).data.columns) >= {LABELS["prefill_bound_ms"],
                                                                           LABELS["ttft_efficiency_pct"]}
    text = report.roofline_formulas().data
    assert roofline.DECODE_BYTES in text and roofline.PREFILL_FLOPS in text


# --- the rendered report ------------------------------------------------------------------------------

def _screenshot(html: Path, tmp_path: Path, height_px: int = 3000, name: str = "report.png") -> Path:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed")
    png = tmp_path / name
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'chromium'}", f"--screenshot={png}",
                    f"--window-size=1400,{height_px}", html.resolve().as_uri()], check=True, capture_output=True,
                   timeout=180)
    return png


def _notebook_problems(executed: Path) -> list[str]:
    """Error outputs and anything written to stderr (warnings included) by the executed summary notebook."""
    problems = []
    for cell in nbformat.read(executed, as_version=4).cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" or (out.get("output_type"), out.get("name")) == ("stream", "stderr"):
                problems.append(f"{cell.source[:60]!r}: {out.get('ename') or out.get('text', '')[:300]}")
    return problems


def _png_outputs(executed: Path) -> int:
    return sum("image/png" in out.get("data", {}) for cell in nbformat.read(executed, as_version=4).cells
               for out in cell.get("outputs", []))


@pytest.mark.slow
def test_report_renders_without_runs(tmp_path):
    html = report.render_report(tmp_path / "outputs").read_text()
    assert "No runs yet" in html and "Traceback" not in html
    assert all(re.search(rf"<h2[^>]*>{re.escape(s)}", html) for s in SECTIONS)


@pytest.mark.slow
def test_report_of_a_real_cpu_run_is_one_readable_html_file(cpu_run_outputs, tmp_path):
    outputs = tmp_path / "outputs"
    shutil.copytree(cpu_run_outputs / "results", outputs / "results")
    index = report.render_report(outputs)
    assert index == outputs / "report" / "index.html"
    assert (outputs / "notebooks" / "summary.ipynb").is_file()
    html = index.read_text()
    # nbconvert adds alt text and sorts attributes, so `src` is not the first attribute of <img>
    executed = outputs / "notebooks" / "summary.ipynb"
    charts = _png_outputs(executed)  # cpu: no price and no power, so no cost or energy chart
    assert charts >= 6 and len(re.findall(r'<img [^>]*src="data:image/png;base64,', html)) == charts  # embedded
    assert _notebook_problems(executed) == []
    for section in SECTIONS:
        assert re.search(rf"<h2[^>]*>{re.escape(section)}", html), section
    assert "Traceback" not in html and "PapermillExecutionError" not in html
    assert "hl-ipython3" not in html and "summary_table" not in html  # no code cell input shown
    assert 'src="http' not in html  # opens offline: nothing fetched
    assert "not measured on this backend" in html and "No runs yet" not in html
    png = _screenshot(index, tmp_path)
    image = Image.open(png)
    assert image.size == (1400, 3000) and len(image.convert("RGB").getcolors(1 << 20) or []) > 100


@pytest.mark.slow
def test_report_of_the_committed_h200_runs_reads_as_a_decision_report(tmp_path):
    outputs = tmp_path / "outputs"
    shutil.copytree(paths.OUTPUTS_DIR / "results", outputs / "results")  # committed data, part of the repo
    h200_runs = runs.runs(outputs).query("scenario == 'h200'")
    if h200_runs.empty:
        pytest.skip("no committed h200 runs under outputs/results/h200")
    assert (h200_runs["system"] == H200_SYSTEM).all()  # from the manifests, not hard-coded
    index = report.render_report(outputs)
    html = index.read_text()
    executed = outputs / "notebooks" / "summary.ipynb"
    for section in SECTIONS:
        assert re.search(rf"<h2[^>]*>{re.escape(section)}", html), section
    charts = _png_outputs(executed)
    assert charts >= 8 and len(re.findall(r'<img [^>]*src="data:image/png;base64,', html)) == charts
    assert _notebook_problems(executed) == []
    assert "Traceback" not in html and not re.search(r"\b\w+Error:", html) and "PapermillExecutionError" not in html
    assert "hl-ipython3" not in html and 'src="http' not in html
    assert index.stat().st_size < 8e6
    # labels: the H200 runs as H200, never H100; projections always marked
    assert H200_SYSTEM in html
    assert not re.search(r"H100[^<]{0,40}p5en", html) and "H100 (p5en" not in html
    assert all(html[max(0, m.start() - 60):m.start()].count("H200") for m in re.finditer(r"p5en\.48xlarge class", html))
    assert html.count(labels.PROJECTION) >= 10 and "INCLUDES SEED PROJECTIONS" in html
    # the decision content
    assert labels.COST_BASIS in html and cost.FORMULA in html and roofline.DECODE_BYTES in html
    assert "Tokenizer: synthetic, generated" in html and "vllm bench serve" in html
    assert labels.NO_COMPARISON.split(":")[0].strip("*") in html  # one vLLM version so far
    for scenario in ("trn2", "inf2", "h100", "a100", "l40s"):
        assert re.search(rf"<td[^>]*>{scenario}</td>", html), scenario
    png = _screenshot(index, tmp_path, height_px=12000, name="report-tall.png")
    image = Image.open(png)
    assert image.size == (1400, 12000) and len(image.convert("RGB").getcolors(1 << 20) or []) > 100
