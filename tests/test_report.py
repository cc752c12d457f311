"""The report's tables on hand-made run folders (exact values), and the rendered HTML of a real cpu run."""

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

from accelbench import report
from accelbench.analysis import cost, roofline
from accelbench.config import params, paths
from accelbench.core import metrics
from accelbench.measure import validation
from accelbench.report import LABELS, plots
from accelbench.store import runs as results
from accelbench.store import runset
from accelbench.store.manifest import RunManifest

SECTIONS = ("Summary", "Latency", "Throughput", "Pareto frontier", "Cost efficiency", "Energy", "Roofline efficiency",
            "SLO goodput", "Validation", "Seed audit", "Recommendations", "SDK versions", "Engine cross-check",
            "Methods", "Provenance")
H200_SYSTEM = "H200 (p5en.48xlarge class), vLLM 0.24.0, torch 2.11, dummy weights"


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
          gpus: list[str] | None = None, power_w: float | None = None, jit: list[str] = (),
          started_at: str = "2026-11-30T00:00:00+00:00", vllm: str = "0.99.0", extra: dict | None = None,
          tables: dict[str, pd.DataFrame] | None = None) -> None:
    """levels: (kind, value, rep, ttft_ms, itl_ms, preemptions) per measured (level, repetition); `extra` is merged
    into the manifest, `tables` saved next to requests and levels."""
    reqs, rows = [], []
    for i, (kind, value, rep, ttft_ms, itl_ms, preempted) in enumerate(levels):
        req = metrics.request_table(_level_records(kind, value, rep, 10.0 * i, ttft_ms / 1e3, itl_ms / 1e3,
                                                   preempted=preempted))
        rows.append({"level_kind": kind, "level_value": float(value), "repetition": rep, **metrics.level_row(req),
                     "power_mean_w": power_w, "j_per_output_token": power_w and power_w / 1000})
        reqs.append(req)
    manifest = dict(
        status=status, error="RuntimeError: engine died" if status == "failed" else None, scenario=scenario,
        started_at=started_at, resolved=params.resolve(scenario).model_dump(mode="json"),
        environment={"gpus": {"names": gpus, "count": len(gpus)} if gpus else None,
                     "cpu": {"model": "Test CPU", "logical_cpus": 2},
                     "libraries": {"vllm": vllm, "torch": "2.9.0"}, "git": {"commit": "a" * 40, "dirty": True}},
        method=f"dummy weights (load_format='dummy'), as vLLM's own benchmarks do [{scenario}]",
        jit_compilation_levels=list(jit), telemetry="nvml" if power_w else "absent", **(extra or {}))
    results.save_run(outputs, scenario, run_id, manifest, {"requests": pd.concat(reqs, ignore_index=True),
                                                           "levels": pd.DataFrame(rows), **(tables or {})})


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
    expected = metrics.summarize_levels(runset.load_levels(outputs), report.GROUP_BY)
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
    assert p.loc["run-b", "system"] == "H200 (p5en.48xlarge class), vLLM 0.99.0, torch 2.9, dummy weights"
    assert p.loc["run-a", "measured_accelerators"].startswith("no GPU detected; CPU: Test CPU")
    assert p.loc["run-c", "status"] == "failed" and p.loc["run-c", "error"] == "RuntimeError: engine died"
    assert p.loc["run-a", "git"] == "aaaaaaaaaa (dirty)"
    shown = report.provenance_table(outputs, "run").data.set_index("Run ID")
    assert shown.loc["run-c", "Status"] == "⚠ FAILED"
    assert shown.loc["run-b", LABELS["system"]].startswith("H200 (p5en.48xlarge class)")
    machine = report.provenance_table(outputs, "machine").data.set_index("Run ID")
    assert machine.loc["run-b", LABELS["measured_accelerators"]] == "1 × NVIDIA H200"


def test_methods_quote_the_definitions_and_each_runs_method(outputs):
    text = report.methods(outputs).data
    assert "TTFT = first_token_s - submit_s" in text and "(E2E - TTFT) / (output_tokens - 1)" in text
    assert "AIPerf" in text and "Steady-state window" in text and "percentile bootstrap" in text
    assert "achieved below 90% of offered" in text
    assert "load_format='dummy'" in text and "as vLLM's own benchmarks do [h200]" in text


def test_charts_are_labelled_pngs(outputs):
    for chart in (plots.latency_vs_concurrency, plots.ttft_distributions, plots.throughput_vs_concurrency,
                  plots.throughput_vs_rate, plots.pareto_frontier, plots.cost_vs_concurrency,
                  plots.energy_vs_concurrency, plots.roofline_vs_concurrency):
        fig = chart(outputs)
        assert fig._repr_png_().startswith(b"\x89PNG")
        for ax in fig.axes:
            assert ax.get_title() and ax.get_xlabel() and re.search(r"\(.+\)|Share", ax.get_ylabel())


def test_every_view_says_no_runs_yet_without_runs(tmp_path):
    views = (report.overview, report.summary_table, report.slo_table, report.goodput_table, report.engine_table,
             report.energy_table, report.provenance_table, report.runs_table, report.glance_table,
             report.pareto_table, report.cost_at_slo_table, report.cost_level_table, report.roofline_table,
             report.validation_notes, report.validation_table, report.recommendation_table, report.sdk_table,
             report.version_changes_table, plots.latency_vs_concurrency, plots.ttft_distributions,
             plots.throughput_vs_concurrency, plots.throughput_vs_rate, plots.pareto_frontier,
             plots.cost_vs_concurrency, plots.energy_vs_concurrency, plots.roofline_vs_concurrency)
    for view in views:
        shown = view(tmp_path)
        assert isinstance(shown, Markdown) and "No runs yet" in shown.data, view.__name__
    assert "TTFT = first_token_s" in report.methods(tmp_path).data


def test_summary_survives_a_run_that_failed_before_measuring(outputs):
    results.save_run(outputs, "cpu", "run-d", dict(status="failed", error="engine did not start",
                                                   resolved=params.resolve("cpu").model_dump(mode="json")),
                     {"requests": pd.DataFrame(), "levels": pd.DataFrame()})
    assert len(report.summary(outputs)) == 6


# --- the decision sections ---------------------------------------------------------------------------

def test_pareto_front_on_hand_made_points():
    # (1, 5) and (2, 4) trade off; (2, 3) is beaten by (2, 4); (3, 1) twice: equal points both stay;
    # (1, 1) is beaten by everything; the NaN point is never on the frontier
    x = [1, 2, 2, 3, 1, np.nan, 3]
    y = [5, 4, 3, 1, 1, 9, 1]
    assert report.pareto_front(x, y).tolist() == [True, True, False, True, False, False, True]
    assert report.pareto_front([], []).tolist() == []
    assert report.pareto_front([1.0], [1.0]).tolist() == [True]


def test_pareto_per_user_and_per_accelerator_rates(outputs):
    pf = report.pareto(outputs)
    assert "cpu · run-c" not in set(pf["run_label"])  # failed runs are left out
    b = pf[pf["run_id"] == "run-b"].set_index("level")
    assert b.loc["concurrency 1", "tok_per_s_per_user"] == pytest.approx(1000 / 20)  # TPOT 20 ms
    assert b.loc["concurrency 4", "tok_per_s_per_user"] == pytest.approx(1000 / 50)
    assert (b["tok_per_s_per_accelerator"] == b["output_tok_per_s"] / 1).all()  # one accelerator used
    assert b["on_frontier"].all()  # concurrency 4: more per accelerator; concurrency 1: faster per user
    a = pf[pf["run_id"] == "run-a"]
    assert a["tok_per_s_per_user"].to_numpy() == pytest.approx([500.0] * 3)  # TPOT 2 ms everywhere
    # equal per-user speed: only the level with the most output per accelerator is on the frontier
    assert a.loc[a["on_frontier"], "tok_per_s_per_accelerator"].tolist() == [a["tok_per_s_per_accelerator"].max()]


def _manifest(gpus: list[str], instance: str = "p5en.48xlarge", used: int = 1, checked: list[str] | None = None,
              method: str = "vLLM in-process, dummy weights (load_format='dummy')") -> RunManifest:
    resolved = params.resolve("cpu" if instance == "local-cpu" else "h200").model_dump(mode="json")
    resolved["instance"] = params.load_instances()[instance].model_dump(mode="json")
    resolved["scenario"]["accelerators_used"] = used
    resolved["scenario"]["instance"] = instance
    return RunManifest.model_validate(dict(
        run_id="r", status="completed", resolved=resolved,
        environment={"gpus": {"names": gpus} if gpus else None, "cpu": {"model": "Test CPU"},
                     "libraries": {"vllm": "0.24.0", "torch": "2.11.0+cu130"}},
        host_check={"gpus": [{"name": n} for n in checked]} if checked else {}, method=method))


def test_system_label_names_the_accelerator_the_run_saw():
    # the host had two H200s, the run was given one (host_check)
    assert report.system_label(_manifest(["NVIDIA H200"] * 2, checked=["NVIDIA H200"])) == H200_SYSTEM
    assert report.system_label(_manifest(["NVIDIA H200"] * 2, used=2)).startswith("2× H200 (p5en.48xlarge class)")
    # a GPU other than the instance class declares is named as seen, and flagged
    assert report.system_label(_manifest(["NVIDIA H100 80GB HBM3"])) == (
        "H100 80GB HBM3 (⚠ params declare NVIDIA H200 SXM 141GB) (p5en.48xlarge class), vLLM 0.24.0, torch 2.11, "
        "dummy weights")
    a100 = report.system_label(_manifest(["NVIDIA A100-SXM4-40GB"] * 8, instance="p4d.24xlarge", used=8))
    assert a100.startswith("8× A100-SXM4-40GB (p4d.24xlarge class)") and "⚠" not in a100
    assert report.system_label(_manifest([], instance="local-cpu", method="real")) == (
        "CPU (Test CPU) (local-cpu class), vLLM 0.24.0, torch 2.11, weights as loaded (not dummy)")


def test_costs_price_each_level_from_the_instance_price(outputs):
    c = report.costs(outputs)
    b = c[c["run_id"] == "run-b"].set_index("level")
    share = params.load_instances()["p5en.48xlarge"].prices.on_demand_usd_per_hour.value / 8  # 1 of 8 H200s
    for level in ("concurrency 1", "concurrency 4"):
        tok_s = b.loc[level, "output_tok_per_s"]
        assert b.loc[level, "usd_per_m_output_tokens"] == pytest.approx(share / (tok_s * 3600) * 1e6)
    assert (b["basis"] == report.COST_BASIS).all()
    a = c[c["run_id"] == "run-a"]
    assert a["usd_per_m_output_tokens"].isna().all() and "no prices" in a["price_note"].iloc[0]  # local-cpu
    assert "run-c" not in set(c["run_id"])  # failed


def test_a_partial_run_counts_like_a_completed_one_and_is_marked(outputs):
    _save(outputs, "h200", "run-p", [("concurrency", 1, 0, 10, 20, 0)], status="partial", gpus=["NVIDIA H200"],
          extra={"engine_effective": {"max_num_batched_tokens": 8192}})
    assert "run-p" in set(report.costs(outputs)["run_id"]) and "run-c" not in set(report.costs(outputs)["run_id"])
    assert "run-p" in set(report.rooflines(outputs)["run_id"])
    assert report.runs(outputs).set_index("run_id").loc["run-p", "token_budget"] == 8192
    shown = report.provenance_table(outputs, "run").data.set_index("Run ID")
    assert shown.loc["run-p", "Status"] == "⚠ PARTIAL"
    assert "2 completed, 1 partial, 1 failed" in report.overview(outputs).data


def test_cost_at_slo_is_the_cheapest_level_meeting_the_profile(outputs):
    at = report.costs_at_slo(outputs)
    b = at[at["run_id"] == "run-b"].set_index("profile")
    assert b.loc["mlperf-llama3.1-8b-server", "level"] == "concurrency 4"  # TPOT 50 <= 100 ms, more tokens/s
    assert b.loc["mlperf-llama3.1-8b-interactive", "level"] == "concurrency 1"  # 50 > 30 ms at 4
    costs = report.costs(outputs).set_index(["run_id", "level"])
    assert b.loc["mlperf-llama3.1-8b-server", "usd_per_m_output_tokens"] == \
        pytest.approx(costs.loc[("run-b", "concurrency 4"), "usd_per_m_output_tokens"])
    text = report.cost_basis(outputs).data
    assert f'Basis shown: "{report.COST_BASIS}"' in text and cost.FORMULA in text
    assert "1/8 of p5en.48xlarge" in text and "x 8/1" in text  # both bases explained for the measured config


def test_cost_views_say_why_when_no_run_is_priced(outputs, tmp_path):
    cpu_only = tmp_path / "cpu-only"
    shutil.copytree(outputs / "results" / "cpu", cpu_only / "results" / "cpu")  # local-cpu has no price
    at = report.cost_at_slo_table(cpu_only).data
    assert at[LABELS["usd_per_m_output_tokens"]].isna().all() and at[LABELS["slo_note"]].str.contains("no prices").all()
    levels = report.cost_level_table(cpu_only).data
    assert levels[LABELS["price_note"]].str.contains("no prices").all()
    assert isinstance(plots.cost_vs_concurrency(cpu_only), Markdown)
    rec = report.recommendations(cpu_only).set_index("profile")
    assert rec.loc["general-production", "winner"] != rec.loc["general-production", "winner"]  # NaN: none priced
    assert rec.loc["large-scale-batch", "winner"] == "cpu (cpu-smoke)"  # throughput needs no price
    assert isinstance(plots.energy_vs_concurrency(cpu_only), Markdown)


def test_glance_summarises_each_run(outputs):
    g = report.glance(outputs).set_index("run_id")
    assert g.loc["run-b", "low_level"] == "concurrency 1"
    assert (g.loc["run-b", "low_ttft_p99_ms"], g.loc["run-b", "low_tpot_p50_ms"]) == pytest.approx((10, 20))
    assert g.loc["run-b", "min_j_per_output_token"] == pytest.approx(0.3)  # 300 W / 1000, as saved
    assert g.loc["run-b", "peak_level"] == "concurrency 4"
    assert np.isnan(g.loc["run-a", "min_j_per_output_token"])
    shown = report.glance_table(outputs).data.set_index("Run")
    assert shown.loc["cpu · run-a", LABELS["min_j_per_output_token"]] == report.NOT_MEASURED


def test_unmeasured_scenarios_carry_seed_projections(outputs):
    u = report.unmeasured(outputs).set_index("scenario")
    assert {"cpu", "h200"}.isdisjoint(u.index)  # both have a completed run
    assert {"trn2", "inf2", "h100", "a100", "l40s"} <= set(u.index)
    assert u.loc["h100", "projection"] == f"{report.PROJECTION}: seed-llama4"
    assert u.loc["h100", "proj_output_tok_per_s"] == 4200  # the seed's headline for Scout on p5 (H100)
    price = params.load_instances()["p5.48xlarge"].prices.on_demand_usd_per_hour.value
    assert u.loc["h100", "proj_usd_per_m_output_tokens"] == pytest.approx(price / (4200 * 3600) * 1e6)
    assert u.loc["h100", "proj_peak"] == "42,000 at 32"
    assert u.loc["h200x2-scout", "projection"].startswith("not measured; no seed projection")


def test_a_fixture_run_is_shown_marked_and_kept_out_of_recommendations(outputs):
    _save(outputs, "trn2", "run-f", [("concurrency", 1, 0, 10, 20, 0)], extra={"fixture": True})
    r = report.runs(outputs).set_index("run_id")
    assert r.loc["run-f", "run_label"] == "trn2 [fixture]"
    assert report.runs_table(outputs).data.set_index("Run").loc["trn2 [fixture]", LABELS["fixture"]] == "⚠ fixture"
    assert "run-f" in set(report.costs(outputs)["run_id"])  # shown, marked by its label
    assert "trn2" not in set(report.recommendations(outputs)["winner"].dropna())
    u = report.unmeasured(outputs).set_index("scenario")
    assert u.loc["trn2", "projection"].endswith("(a fixture run is shown above)")
    assert "1 fixture run(s)" in report.overview(outputs).data


def test_validation_compares_harness_with_serve_levels(outputs):
    tokenizer = {"synthetic": True, "type": "WordLevel", "vocab_size": 128256, "words": "t0..t128255",
                 "pre_tokenizer": "WhitespaceSplit", "special_tokens_added": 0}
    _save(outputs, "h200", "run-v", [("concurrency", 1, 0, 10, 20, 0), ("concurrency", 4, 0, 10, 50, 0)],
          gpus=["NVIDIA H200"], extra={"serve_validation": {"status": "completed", "levels": [1.0, 4.0],
                                                             "tokenizer": tokenizer,
                                                             "server_tokens_match_workload": True}})
    run_dir = Path(report.runs(outputs).set_index("run_id").loc["run-v", "run_dir"])
    serve = validation.harness_side(pd.read_parquet(run_dir / "requests.parquet"))[list(validation.COMPARED)]
    serve = (serve * 2).reset_index().assign(level_kind="concurrency")  # bench serve twice the harness everywhere
    serve.to_parquet(run_dir / "serve_levels.parquet")
    v = report.validations(outputs)
    assert set(v["run_id"]) == {"run-v"} and len(v) == 2 * len(validation.COMPARED)
    assert v["ratio"].to_numpy() == pytest.approx(np.full(len(v), 0.5))
    notes = report.validation_notes(outputs).data
    assert "Tokenizer: synthetic, generated" in notes and "128,256 words" in notes
    assert "matches" not in notes and "exactly the workload's" in notes
    assert "harness clients started staggered" in notes and "harness not recorded" in notes
    assert "server the server's default" in notes
    shown = report.validation_table(outputs).data
    assert set(shown[LABELS["level"]]) == {"concurrency 1", "concurrency 4"}
    assert LABELS["ttft_p50_ms"] in set(shown[LABELS["metric"]])


def test_seed_audit_rows_are_marked_as_projections(outputs):
    shown = report.audit_table(outputs).data
    assert shown[LABELS["document"]].str.endswith(f"({report.PROJECTION})").all()
    assert shown[LABELS["holds"]].map(lambda h: h in ("holds", "does not hold") or h.startswith("n/a (")).all()
    a = report.seed_audit(outputs)
    assert len(shown) == len(a)
    counts = report.audit_counts_table(outputs).data
    assert counts[[LABELS["holds"], LABELS["does_not_hold"], LABELS["not_checked"]]].to_numpy().sum() == len(a)
    projection = report.audit_table(outputs, "projection vs measurement").data
    assert len(projection) == int((a["check"] == "projection vs measurement").sum()) > 0


def test_recommendations_with_and_without_projections(outputs):
    measured = report.recommendation_table(outputs).data
    assert set(measured[LABELS["winner"]]) - {"none qualifies"} <= {"h200 (seed-512-128) (measured)", "cpu (cpu-smoke) (measured)"}
    with_seeds = report.recommendation_table(outputs, include_projections=True)
    assert "INCLUDES SEED PROJECTIONS" in with_seeds.caption
    winners = with_seeds.data[LABELS["winner"]]
    assert winners.str.endswith(f"({report.PROJECTION})").any()
    assert not with_seeds.data[LABELS["sentence"]].str.contains(r"\(projection\)").any()  # always 'projection (seed)'


def test_sdk_versions_say_one_version_so_far_then_compare(outputs):
    assert "vLLM" in report.sdk_table(outputs).data.columns
    assert report.version_changes_table(outputs).data == report.NO_COMPARISON
    # the same cpu workload under a later vLLM, TTFT doubled: CIs [10, 12] and [20, 22] separate
    _save(outputs, "cpu", "run-e", [("concurrency", 1, 0, 20, 2, 0), ("concurrency", 1, 1, 22, 2, 0)],
          started_at="2026-12-01T00:00:00+00:00", vllm="1.0.0")
    shown = report.version_changes_table(outputs).data
    ttft = shown[(shown[LABELS["metric"]] == LABELS["ttft_p50_ms"]) & (shown[LABELS["level"]] == "concurrency 1")]
    assert ttft[LABELS["verdict"]].tolist() == ["regression"]
    assert ttft[LABELS["versions_changed"]].iloc[0] == "vllm: 0.99.0 -> 1.0.0"


def test_roofline_tables_carry_bounds_and_efficiency(outputs):
    r = report.rooflines(outputs)
    b = r[r["run_id"] == "run-b"].set_index("level")
    assert b["itl_efficiency_pct"].to_numpy() == pytest.approx(100 * b["decode_bound_ms"] / b["itl_p50_ms"])
    assert set(report.roofline_table(outputs, "prefill").data.columns) >= {LABELS["prefill_bound_ms"],
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
def test_summary_of_a_real_cpu_run_equals_summarize_levels(cpu_run_outputs):
    s = report.summary(cpu_run_outputs)
    levels = runset.load_levels(cpu_run_outputs)
    expected = metrics.summarize_levels(levels, report.GROUP_BY)
    assert len(s) == levels.groupby(["level_kind", "level_value"]).ngroups == len(expected)
    merged = s.merge(expected, on=list(report.GROUP_BY), suffixes=("", "_expected"))
    for m in metrics.SUMMARY_METRICS:
        np.testing.assert_allclose(merged[m], merged[f"{m}_expected"], equal_nan=True)


@pytest.mark.slow
def test_report_of_the_committed_h200_runs_reads_as_a_decision_report(tmp_path):
    outputs = tmp_path / "outputs"
    shutil.copytree(paths.OUTPUTS_DIR / "results", outputs / "results")  # committed data, part of the repo
    h200_runs = report.runs(outputs).query("scenario == 'h200'")
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
    assert html.count(report.PROJECTION) >= 10 and "INCLUDES SEED PROJECTIONS" in html
    # the decision content
    assert report.COST_BASIS in html and cost.FORMULA in html and roofline.DECODE_BYTES in html
    assert "Tokenizer: synthetic, generated" in html and "vllm bench serve" in html
    assert report.NO_COMPARISON.split(":")[0].strip("*") in html  # one vLLM version so far
    for scenario in ("trn2", "inf2", "h100", "a100", "l40s"):
        assert re.search(rf"<td[^>]*>{scenario}</td>", html), scenario
    png = _screenshot(index, tmp_path, height_px=12000, name="report-tall.png")
    image = Image.open(png)
    assert image.size == (1400, 12000) and len(image.convert("RGB").getcolors(1 << 20) or []) > 100
