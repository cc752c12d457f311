"""The report's tables on hand-made run folders (exact values), and the rendered HTML of a real cpu run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from IPython.display import Markdown
from PIL import Image

from accelbench import metrics, params, plots, report, results
from accelbench.report import LABELS

SECTIONS = ("Summary table", "Latency", "Throughput", "SLO goodput", "Engine cross-check", "Telemetry and energy",
            "Methods", "Provenance")


def _level_records(kind: str, value: float, rep: int, t0: float, ttft_s: float, itl_s: float,
                   n_out: int = 5, preempted: int = 0) -> list[dict]:
    """Requests whose TTFT and chunk gaps are exactly ttft_s and itl_s; vLLM's own TTFT is 1 ms less.
    Closed loop: `value` workers, 4 back-to-back requests each. Open loop: 8 arrivals 0.25 s apart."""
    if kind == "concurrency":
        starts = [(t0 + w * 1e-3, w) for w in range(int(value))]
        per_start = 4
    else:
        starts, per_start = [(t0 + i * 0.25, i) for i in range(8)], 1
    records = []
    for start, w in starts:
        t = start
        for k in range(per_start):
            chunks = [t + ttft_s + i * itl_s for i in range(n_out)]
            records.append(dict(
                request_id=f"{kind}{value}-{rep}-{w}-{k}", scheduled_s=t, submit_s=t, first_token_s=chunks[0],
                end_s=chunks[-1], chunk_times_s=chunks, chunk_tokens=[1] * n_out, input_tokens=16,
                output_tokens=n_out, error=None, engine_first_token_latency_s=ttft_s - 1e-3,
                engine_num_preemptions=preempted if (w, k) == (0, 0) else 0,
                level_kind=kind, level_value=float(value), repetition=rep))
            t = chunks[-1]
    return records


def _save(outputs: Path, scenario: str, run_id: str, levels: list[tuple], status: str = "completed",
          gpus: list[str] | None = None, power_w: float | None = None, jit: list[str] = ()) -> None:
    """levels: (kind, value, rep, ttft_ms, itl_ms, preemptions) per measured (level, repetition)."""
    reqs, rows = [], []
    for i, (kind, value, rep, ttft_ms, itl_ms, preempted) in enumerate(levels):
        req = metrics.request_table(_level_records(kind, value, rep, 10.0 * i, ttft_ms / 1e3, itl_ms / 1e3,
                                                   preempted=preempted))
        rows.append({"level_kind": kind, "level_value": float(value), "repetition": rep, **metrics.level_row(req),
                     "power_mean_w": power_w, "j_per_output_token": power_w and power_w / 1000})
        reqs.append(req)
    manifest = dict(
        status=status, error="RuntimeError: engine died" if status == "failed" else None, scenario=scenario,
        started_at="2026-11-30T00:00:00+00:00", resolved=params.resolve(scenario).model_dump(mode="json"),
        environment={"gpus": {"names": gpus, "count": len(gpus)} if gpus else None,
                     "cpu": {"model": "Test CPU", "logical_cpus": 2},
                     "libraries": {"vllm": "0.99.0", "torch": "2.9.0"}, "git": {"commit": "a" * 40, "dirty": True}},
        method=f"dummy weights (load_format='dummy'), as vLLM's own benchmarks do [{scenario}]",
        jit_compilation_levels=list(jit), telemetry="nvml" if power_w else "absent")
    results.save_run(outputs, scenario, run_id, manifest, {"requests": pd.concat(reqs, ignore_index=True),
                                                           "levels": pd.DataFrame(rows)})


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """Three runs: cpu (3 levels, 2 repetitions, TTFT 10 then 12 ms), h200 (one measured 'NVIDIA H200', 300 W,
    TPOT 20 ms at concurrency 1 and 50 ms at 4), and a cpu run that failed after one level."""
    out = tmp_path / "outputs"
    _save(out, "cpu", "run-a", [("concurrency", 1, 0, 10, 2, 0), ("concurrency", 1, 1, 12, 2, 0),
                                ("concurrency", 4, 0, 10, 2, 1), ("concurrency", 4, 1, 12, 2, 0),
                                ("rate", 2, 0, 10, 2, 0), ("rate", 2, 1, 12, 2, 0)])
    _save(out, "h200", "run-b", [("concurrency", 1, 0, 10, 20, 0), ("concurrency", 1, 1, 10, 20, 0),
                                 ("concurrency", 4, 0, 10, 50, 0), ("concurrency", 4, 1, 10, 50, 0)],
          gpus=["NVIDIA H200"], power_w=300.0, jit=["concurrency 4 rep 1"])
    _save(out, "cpu", "run-c", [("concurrency", 1, 0, 10, 2, 0)], status="failed")
    return out


def _row(df: pd.DataFrame, run_id: str, level: str) -> pd.Series:
    (i,) = df.index[(df["run_id"] == run_id) & (df["level"] == level)]
    return df.loc[i]


def test_summary_has_a_row_per_run_and_level_equal_to_summarize_levels(outputs):
    s = report.summary(outputs)
    expected = metrics.summarize_levels(results.load_levels(outputs), report.GROUP_BY)
    assert len(s) == 6  # run-a: 3 levels, run-b: 2, run-c: 1
    merged = s.merge(expected, on=list(report.GROUP_BY), suffixes=("", "_expected"))
    assert len(merged) == 6
    for m in metrics.SUMMARY_METRICS:
        for col in (m, f"{m}_ci_low", f"{m}_ci_high"):
            np.testing.assert_allclose(merged[col], merged[f"{col}_expected"], equal_nan=True)


def test_summary_medians_cis_and_flags_are_the_hand_computed_ones(outputs):
    s = report.summary(outputs)
    a1 = _row(s, "run-a", "concurrency 1")
    assert a1["repetitions"] == 2 and a1["n_errors"] == 0
    assert a1["ttft_p50_ms"] == pytest.approx(11.0)  # median of 10 and 12
    assert (a1["ttft_p50_ms_ci_low"], a1["ttft_p50_ms_ci_high"]) == pytest.approx((10.0, 12.0))
    assert a1["unstable"]  # CV of (10, 12) = 1.41 / 11 = 13% > 5%
    assert a1["itl_p99_ms"] == pytest.approx(2.0) and a1["tpot_p50_ms"] == pytest.approx(2.0)
    assert _row(s, "run-b", "concurrency 4")["tpot_p99_ms"] == pytest.approx(50.0)
    assert not _row(s, "run-a", "rate 2 req/s")["saturated"]
    # two runs of cpu: their labels carry the run id; the only h200 run is labelled by its scenario
    assert set(s["run_label"]) == {"cpu · run-a", "cpu · run-c", "h200"}


def test_summary_table_shows_labels_and_ci_columns(outputs):
    latency = report.summary_table(outputs, "latency").data
    assert list(latency.columns[:5]) == ["Run", "Level", "Repetitions", LABELS["ttft_p50_ms"], "TTFT p50 95% CI (ms)"]
    assert len(latency) == 6
    first = latency.iloc[0]
    assert first["Level"] == "concurrency 1" and first["TTFT p50 (ms)"] == pytest.approx(11.0)
    assert first["TTFT p50 95% CI (ms)"] == "10–12"
    flags = report.summary_table(outputs, "throughput").data
    assert {LABELS["output_tok_per_s"], "Unstable (CV > 5%)", "Saturated", "Errors (requests)", "Status"} \
        <= set(flags.columns)
    by_level = flags.set_index(["Run", "Level"])
    assert by_level.loc[("cpu · run-a", "concurrency 4"), "Saturated"] == "n/a (closed loop)"
    assert by_level.loc[("cpu · run-a", "rate 2 req/s"), "Saturated"] == "no"
    assert by_level.loc[("cpu · run-c", "concurrency 1"), "Unstable (CV > 5%)"] == "n/a (1 repetition)"


def test_slo_best_levels_use_only_profiles_naming_the_model(outputs):
    b = report.slo_best(outputs).set_index(["run_label", "profile"])
    # tiny-llama (cpu) has only cpu-smoke; llama-3.1-8b (h200) only the two MLPerf 8B profiles
    assert set(b.loc["cpu · run-a"].index) == {"cpu-smoke"}
    assert set(b.loc["h200"].index) == {"mlperf-llama3.1-8b-server", "mlperf-llama3.1-8b-interactive"}
    assert b.loc[("h200", "mlperf-llama3.1-8b-server"), "best_concurrency"] == 4  # TPOT 50 <= 100 ms
    assert b.loc[("h200", "mlperf-llama3.1-8b-interactive"), "best_concurrency"] == 1  # 50 > 30 ms at 4
    assert np.isnan(b.loc[("h200", "mlperf-llama3.1-8b-server"), "best_rate_per_s"])  # no rate levels
    assert b.loc[("cpu · run-a", "cpu-smoke"), "best_rate_per_s"] == 2


def test_goodput_counts_requests_meeting_both_limits(outputs):
    g = report.goodput(outputs)
    g = g[g["profile"] == "mlperf-llama3.1-8b-interactive"].set_index("level")
    assert g.loc["concurrency 1", "good_share_pct"] == 100 and g.loc["concurrency 1", "goodput_req_per_s"] > 0
    assert g.loc["concurrency 4", "good_share_pct"] == 0 and g.loc["concurrency 4", "goodput_req_per_s"] == 0


def test_engine_checks_diff_preemptions_and_jit(outputs):
    e = report.engine_checks(outputs)
    assert e["ttft_engine_diff_p50_ms"].to_numpy() == pytest.approx(np.ones(len(e)))  # vLLM's TTFT is 1 ms less
    assert _row(e, "run-a", "concurrency 4")["num_preemptions"] == 1  # summed over repetitions
    assert _row(e, "run-a", "concurrency 1")["num_preemptions"] == 0
    assert _row(e, "run-b", "concurrency 4")["jit_repetitions"] == 1
    assert _row(e, "run-b", "concurrency 1")["jit_repetitions"] == 0


def test_energy_is_absent_not_zero_where_not_measured(outputs, tmp_path):
    e = report.energy(outputs)
    assert e.loc[e["run_id"] == "run-b", "power_mean_w"].eq(300.0).all()
    assert e.loc[e["run_id"] == "run-a", "power_mean_w"].isna().all()
    html = report.energy_table(outputs).to_html()
    assert "not measured" in html
    cpu_only = tmp_path / "cpu-only"
    shutil.copytree(outputs / "results" / "cpu", cpu_only / "results" / "cpu")
    text = report.energy_table(cpu_only).data
    assert "not measured on this backend" in text and "(cpu)" in text


def test_provenance_shows_accelerators_as_measured_and_failed_runs(outputs):
    p = report.provenance(outputs).set_index("run_id")
    assert p.loc["run-b", "measured_accelerators"] == "1 × NVIDIA H200"
    assert p.loc["run-b", "accelerator"] == params.load_instances()["p5en.48xlarge"].accelerator_name
    assert p.loc["run-a", "measured_accelerators"].startswith("no GPU detected; CPU: Test CPU")
    assert p.loc["run-c", "status"] == "failed" and p.loc["run-c", "error"] == "RuntimeError: engine died"
    assert p.loc["run-a", "git"] == "aaaaaaaaaa (dirty)"
    shown = report.provenance_table(outputs).data.set_index("Run ID")
    assert shown.loc["run-c", "Status"] == "⚠ FAILED"
    assert shown.loc["run-b", LABELS["measured_accelerators"]] == "1 × NVIDIA H200"


def test_methods_quote_the_definitions_and_each_runs_method(outputs):
    text = report.methods(outputs).data
    assert "TTFT = first_token_s - submit_s" in text and "(E2E - TTFT) / (output_tokens - 1)" in text
    assert "AIPerf" in text and "Steady-state window" in text and "percentile bootstrap" in text
    assert "achieved below 90% of offered" in text
    assert "load_format='dummy'" in text and "as vLLM's own benchmarks do [h200]" in text


def test_charts_are_labelled_pngs(outputs):
    for chart in (plots.latency_vs_concurrency, plots.ttft_distributions, plots.throughput_vs_concurrency,
                  plots.throughput_vs_rate):
        fig = chart(outputs)
        assert fig._repr_png_().startswith(b"\x89PNG")
        for ax in fig.axes:
            assert ax.get_title() and ax.get_xlabel() and re.search(r"\(.+\)|Share", ax.get_ylabel())


def test_every_view_says_no_runs_yet_without_runs(tmp_path):
    views = (report.overview, report.summary_table, report.slo_table, report.goodput_table, report.engine_table,
             report.energy_table, report.provenance_table, plots.latency_vs_concurrency, plots.ttft_distributions,
             plots.throughput_vs_concurrency, plots.throughput_vs_rate)
    for view in views:
        shown = view(tmp_path)
        assert isinstance(shown, Markdown) and "No runs yet" in shown.data, view.__name__
    assert "TTFT = first_token_s" in report.methods(tmp_path).data


def test_summary_survives_a_run_that_failed_before_measuring(outputs):
    results.save_run(outputs, "cpu", "run-d", dict(status="failed", error="engine did not start",
                                                   resolved=params.resolve("cpu").model_dump(mode="json")),
                     {"requests": pd.DataFrame(), "levels": pd.DataFrame()})
    assert len(report.summary(outputs)) == 6


# --- the rendered report ------------------------------------------------------------------------------

def _screenshot(html: Path, tmp_path: Path) -> Path:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed")
    png = tmp_path / "report.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'chromium'}", f"--screenshot={png}", "--window-size=1400,3000",
                    html.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    return png


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
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', html)) == 4  # every chart, embedded
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
def test_summary_of_a_real_cpu_run_equals_summarize_levels(cpu_run_outputs):
    s = report.summary(cpu_run_outputs)
    levels = results.load_levels(cpu_run_outputs)
    expected = metrics.summarize_levels(levels, report.GROUP_BY)
    assert len(s) == levels.groupby(["level_kind", "level_value"]).ngroups == len(expected)
    merged = s.merge(expected, on=list(report.GROUP_BY), suffixes=("", "_expected"))
    for m in metrics.SUMMARY_METRICS:
        np.testing.assert_allclose(merged[m], merged[f"{m}_expected"], equal_nan=True)
