"""The report's numbers (accelbench.analysis views, runs, pareto) on hand-made run folders: exact,
hand-computed values; the run folders these tests make are used by test_report.py too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis import pareto, runs, views
from accelbench.config import params
from accelbench.core import metrics, uncertainty
from accelbench.store import runs as results
from accelbench.store import runset
from accelbench.store.manifest import RunManifest

# A summary row's identity (one run, one level), for recomputing the summary independently.
GROUP_BY = ("run_id", "scenario", "level_kind", "level_value")
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


def three_runs(tmp_path: Path) -> Path:
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


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    return three_runs(tmp_path)


def _row(df: pd.DataFrame, run_id: str, level: str) -> pd.Series:
    (i,) = df.index[(df["run_id"] == run_id) & (df["level"] == level)]
    return df.loc[i]


def test_summary_has_a_row_per_run_and_level_equal_to_summarize_levels(outputs):
    s = views.summary(outputs)
    expected = uncertainty.summarize_levels(runset.load_levels(outputs), GROUP_BY)
    assert len(s) == 6  # run-a: 3 levels, run-b: 2, run-c: 1
    merged = s.merge(expected, on=list(GROUP_BY), suffixes=("", "_expected"))
    assert len(merged) == 6
    for m in metrics.SUMMARY_METRICS:
        for col in (m, f"{m}_ci_low", f"{m}_ci_high"):
            np.testing.assert_allclose(merged[col], merged[f"{col}_expected"], equal_nan=True)


def test_summary_medians_cis_and_flags_are_the_hand_computed_ones(outputs):
    s = views.summary(outputs)
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


def test_slo_best_levels_use_only_profiles_naming_the_model(outputs):
    b = views.slo_best(outputs).set_index(["run_label", "profile"])
    # tiny-llama (cpu) has only cpu-smoke; llama-3.1-8b (h200) only the two MLPerf 8B profiles
    assert set(b.loc["cpu · run-a"].index) == {"cpu-smoke"}
    assert set(b.loc["h200"].index) == {"mlperf-llama3.1-8b-server", "mlperf-llama3.1-8b-interactive"}
    assert b.loc[("h200", "mlperf-llama3.1-8b-server"), "best_concurrency"] == 4  # TPOT 50 <= 100 ms
    assert b.loc[("h200", "mlperf-llama3.1-8b-interactive"), "best_concurrency"] == 1  # 50 > 30 ms at 4
    assert np.isnan(b.loc[("h200", "mlperf-llama3.1-8b-server"), "best_rate_per_s"])  # no rate levels
    assert b.loc[("cpu · run-a", "cpu-smoke"), "best_rate_per_s"] == 2


def test_goodput_counts_requests_meeting_both_limits(outputs):
    g = views.goodput(outputs)
    g = g[g["profile"] == "mlperf-llama3.1-8b-interactive"].set_index("level")
    assert g.loc["concurrency 1", "good_share_pct"] == 100 and g.loc["concurrency 1", "goodput_req_per_s"] > 0
    assert g.loc["concurrency 4", "good_share_pct"] == 0 and g.loc["concurrency 4", "goodput_req_per_s"] == 0


def test_engine_checks_diff_preemptions_and_jit(outputs):
    e = views.engine_checks(outputs)
    assert e["ttft_engine_diff_p50_ms"].to_numpy() == pytest.approx(np.ones(len(e)))  # vLLM's TTFT is 1 ms less
    assert _row(e, "run-a", "concurrency 4")["num_preemptions"] == 1  # summed over repetitions
    assert _row(e, "run-a", "concurrency 1")["num_preemptions"] == 0
    assert _row(e, "run-b", "concurrency 4")["jit_repetitions"] == 1
    assert _row(e, "run-b", "concurrency 1")["jit_repetitions"] == 0


def test_summary_survives_a_run_that_failed_before_measuring(outputs):
    results.save_run(outputs, "cpu", "run-d", dict(status="failed", error="engine did not start",
                                                   resolved=params.resolve("cpu").model_dump(mode="json")),
                     {"requests": pd.DataFrame(), "levels": pd.DataFrame()})
    assert len(views.summary(outputs)) == 6


def test_pareto_front_on_hand_made_points():
    # (1, 5) and (2, 4) trade off; (2, 3) is beaten by (2, 4); (3, 1) twice: equal points both stay;
    # (1, 1) is beaten by everything; the NaN point is never on the frontier
    x = [1, 2, 2, 3, 1, np.nan, 3]
    y = [5, 4, 3, 1, 1, 9, 1]
    assert pareto.pareto_front(x, y).tolist() == [True, True, False, True, False, False, True]
    assert pareto.pareto_front([], []).tolist() == []
    assert pareto.pareto_front([1.0], [1.0]).tolist() == [True]


def test_pareto_per_user_and_per_accelerator_rates(outputs):
    pf = pareto.pareto(outputs)
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
    assert runs.system_label(_manifest(["NVIDIA H200"] * 2, checked=["NVIDIA H200"])) == H200_SYSTEM
    assert runs.system_label(_manifest(["NVIDIA H200"] * 2, used=2)).startswith("2× H200 (p5en.48xlarge class)")
    # a GPU other than the instance class declares is named as seen, and flagged
    assert runs.system_label(_manifest(["NVIDIA H100 80GB HBM3"])) == (
        "H100 80GB HBM3 (⚠ params declare NVIDIA H200 SXM 141GB) (p5en.48xlarge class), vLLM 0.24.0, torch 2.11, "
        "dummy weights")
    a100 = runs.system_label(_manifest(["NVIDIA A100-SXM4-40GB"] * 8, instance="p4d.24xlarge", used=8))
    assert a100.startswith("8× A100-SXM4-40GB (p4d.24xlarge class)") and "⚠" not in a100
    assert runs.system_label(_manifest([], instance="local-cpu", method="real")) == (
        "CPU (Test CPU) (local-cpu class), vLLM 0.24.0, torch 2.11, weights as loaded (not dummy)")


def test_costs_price_each_level_from_the_instance_price(outputs):
    c = views.costs(outputs)
    b = c[c["run_id"] == "run-b"].set_index("level")
    share = params.load_instances()["p5en.48xlarge"].prices.on_demand_usd_per_hour.value / 8  # 1 of 8 H200s
    for level in ("concurrency 1", "concurrency 4"):
        tok_s = b.loc[level, "output_tok_per_s"]
        assert b.loc[level, "usd_per_m_output_tokens"] == pytest.approx(share / (tok_s * 3600) * 1e6)
    assert (b["basis"] == views.COST_BASIS).all()
    a = c[c["run_id"] == "run-a"]
    assert a["usd_per_m_output_tokens"].isna().all() and "no prices" in a["price_note"].iloc[0]  # local-cpu
    assert "run-c" not in set(c["run_id"])  # failed


def test_unmeasured_scenarios_carry_seed_projections(outputs):
    u = views.unmeasured(outputs).set_index("scenario")
    assert {"cpu", "h200"}.isdisjoint(u.index)  # both have a completed run
    assert {"trn2", "inf2", "h100", "a100", "l40s"} <= set(u.index)
    assert u.loc["h100", "projection"] == f"{views.PROJECTION}: seed-llama4"
    assert u.loc["h100", "proj_output_tok_per_s"] == 4200  # the seed's headline for Scout on p5 (H100)
    price = params.load_instances()["p5.48xlarge"].prices.on_demand_usd_per_hour.value
    assert u.loc["h100", "proj_usd_per_m_output_tokens"] == pytest.approx(price / (4200 * 3600) * 1e6)
    assert u.loc["h100", "proj_peak"] == "42,000 at 32"
    assert u.loc["h200x2-scout", "projection"].startswith("not measured; no seed projection")


@pytest.mark.slow
def test_summary_of_a_real_cpu_run_equals_summarize_levels(cpu_run_outputs):
    s = views.summary(cpu_run_outputs)
    levels = runset.load_levels(cpu_run_outputs)
    expected = uncertainty.summarize_levels(levels, GROUP_BY)
    assert len(s) == levels.groupby(["level_kind", "level_value"]).ngroups == len(expected)
    merged = s.merge(expected, on=list(GROUP_BY), suffixes=("", "_expected"))
    for m in metrics.SUMMARY_METRICS:
        np.testing.assert_allclose(merged[m], merged[f"{m}_expected"], equal_nan=True)
