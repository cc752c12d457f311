"""Cost per token from throughput and price: hand-computed values, both pricing bases, cost at an SLO."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis import cost, summary
from accelbench.config import params
from accelbench.core import metrics
from accelbench.errors import AccelbenchError

INSTANCES = params.load_instances()
P5EN = INSTANCES["p5en.48xlarge"]  # 8 x H200, on demand 84.80/h in params/instances.yaml


def row(**kw) -> dict:
    base = dict(level_kind="concurrency", level_value=1.0, n_errors=0, saturated=False, ttft_p99_ms=100.0,
                tpot_p99_ms=20.0, output_tok_per_s=2000.0, total_tok_per_s=10000.0, requests_per_s=15.625)
    return base | kw


def test_cost_formula_hand_computed():
    # 84.8 / (1000 x 3600) x 1e6 = 23.5556
    assert cost.usd_per_m_output_tokens(84.8, 1000) == pytest.approx(23.555556, rel=1e-6)
    assert np.isnan(cost.usd_per_m_output_tokens(84.8, 0))
    assert cost.FORMULA == "USD per 1M output tokens = price_usd_per_hour / (output_tok_per_s x 3600) x 1e6"


def test_cost_bases_same_per_token_different_throughput():
    summary = pd.DataFrame([row()])
    share = cost.cost_per_level(summary, cost.pricing(P5EN, 1, cost.BASIS_SHARE))
    full = cost.cost_per_level(summary, cost.pricing(P5EN, 1, cost.BASIS_FULL))
    # share: 84.8 x 1/8 = 10.6/h at 2000 tok/s -> 10.6 / (2000 x 3600) x 1e6 = 1.472222
    assert share["price_usd_per_hour"].iloc[0] == pytest.approx(10.6)
    assert share["usd_per_m_output_tokens"].iloc[0] == pytest.approx(1.472222, rel=1e-6)
    assert share["output_tok_per_s_priced"].iloc[0] == pytest.approx(2000)
    assert share["basis"].iloc[0] == "accelerator share"
    # full instance: 84.8/h at 2000 x 8/1 = 16000 tok/s -> same per token
    assert full["price_usd_per_hour"].iloc[0] == pytest.approx(84.8)
    assert full["output_tok_per_s_priced"].iloc[0] == pytest.approx(16000)
    assert full["usd_per_m_output_tokens"].iloc[0] == pytest.approx(1.472222, rel=1e-6)
    assert full["basis"].iloc[0] == "full instance (M/N replicas)"
    # total tokens: 10.6 / (10000 x 3600) x 1e6 = 0.294444; requests: 10.6 / (15.625 x 3600) x 1e3 = 0.188444
    assert share["usd_per_m_total_tokens"].iloc[0] == pytest.approx(0.294444, rel=1e-5)
    assert share["usd_per_k_requests"].iloc[0] == pytest.approx(0.188444, rel=1e-5)


def test_cost_two_accelerators_of_eight_share_is_a_quarter():
    p = cost.pricing(P5EN, 2, cost.BASIS_SHARE)
    assert (p.price_usd_per_hour, p.throughput_scale) == (pytest.approx(21.2), 1.0)
    p = cost.pricing(P5EN, 2, cost.BASIS_FULL)
    assert (p.price_usd_per_hour, p.throughput_scale) == (pytest.approx(84.8), 4.0)
    assert "4 data-parallel replicas" in p.explain()


def test_cost_ci_follows_throughput_ci_inverted():
    summary = pd.DataFrame([row(output_tok_per_s_ci_low=1600.0, output_tok_per_s_ci_high=2500.0)])
    out = cost.cost_per_level(summary, cost.pricing(P5EN, 1))
    # low cost from high throughput: 10.6 / (2500 x 3600) x 1e6 = 1.177778; high from 1600: 1.840278
    assert out["usd_per_m_output_tokens_ci_low"].iloc[0] == pytest.approx(1.177778, rel=1e-6)
    assert out["usd_per_m_output_tokens_ci_high"].iloc[0] == pytest.approx(1.840278, rel=1e-6)


def test_cost_pricing_without_price_names_instance_and_kind():
    with pytest.raises(AccelbenchError, match="local-cpu has no prices.on_demand_usd_per_hour"):
        cost.pricing(INSTANCES["local-cpu"], 1)
    with pytest.raises(AccelbenchError, match="g6e.48xlarge has no prices.spot_usd_per_hour; prices it has: on_demand"):
        cost.pricing(INSTANCES["g6e.48xlarge"], 1, price_kind="spot")
    with pytest.raises(AccelbenchError, match="unknown cost basis"):
        cost.pricing(P5EN, 1, basis="per chip")


def test_cost_table_prices_each_run_and_marks_unpriced():
    summary = pd.DataFrame([row(run_id="r1", scenario="h200", instance="p5en.48xlarge", accelerators_used=1),
                            row(run_id="r2", scenario="cpu", instance="local-cpu", accelerators_used=1)])
    t = cost.cost_table(summary).set_index("run_id")
    assert t.loc["r1", "usd_per_m_output_tokens"] == pytest.approx(1.472222, rel=1e-6)
    assert np.isnan(t.loc["r2", "usd_per_m_output_tokens"])
    assert "local-cpu has no prices.on_demand_usd_per_hour" in t.loc["r2", "price_note"]
    spot = cost.cost_table(summary.iloc[:1], price_kind="spot")
    # spot 24.2902 x 1/8 = 3.036275/h at 2000 tok/s -> 0.421705
    assert spot["usd_per_m_output_tokens"].iloc[0] == pytest.approx(0.421705, rel=1e-5)


def test_cost_at_slo_picks_cheapest_level_meeting_each_profile():
    levels = [row(level_value=1.0, ttft_p99_ms=100.0, tpot_p99_ms=20.0, output_tok_per_s=100.0),
              row(level_value=8.0, ttft_p99_ms=400.0, tpot_p99_ms=40.0, output_tok_per_s=600.0),
              row(level_value=32.0, ttft_p99_ms=3000.0, tpot_p99_ms=120.0, output_tok_per_s=1500.0),
              row(level_value=64.0, ttft_p99_ms=100.0, tpot_p99_ms=10.0, output_tok_per_s=9000.0, saturated=True),
              row(level_value=128.0, ttft_p99_ms=100.0, tpot_p99_ms=10.0, output_tok_per_s=9000.0, n_errors=3)]
    summary = pd.DataFrame([lv | dict(run_id="r1", scenario="h200", model="llama-3.1-8b",
                                      instance="p5en.48xlarge", accelerators_used=1) for lv in levels])
    profiles = [params.SloProfile(name="server", ttft_p99_ms=2000, tpot_p99_ms=100, source="test"),
                params.SloProfile(name="interactive", ttft_p99_ms=500, tpot_p99_ms=30, source="test"),
                params.SloProfile(name="loose", ttft_p99_ms=5000, tpot_p99_ms=200, source="test"),
                params.SloProfile(name="tight", ttft_p99_ms=50, tpot_p99_ms=5, source="test"),
                params.SloProfile(name="other-model", ttft_p99_ms=5000, tpot_p99_ms=200, models=["tiny-llama"],
                                  source="test")]
    best = cost.cost_at_slo(cost.cost_table(summary), profiles).set_index("profile")
    assert "other-model" not in best.index
    assert best.loc["server", "level_value"] == 8.0
    assert best.loc["server", "usd_per_m_output_tokens"] == pytest.approx(10.6 / (600 * 3600) * 1e6)  # 4.907407
    assert best.loc["interactive", "level_value"] == 1.0
    assert best.loc["interactive", "usd_per_m_output_tokens"] == pytest.approx(29.444444, rel=1e-6)
    assert best.loc["loose", "level_value"] == 32.0
    assert best.loc["loose", "usd_per_m_output_tokens"] == pytest.approx(1.962963, rel=1e-6)
    assert np.isnan(best.loc["tight", "usd_per_m_output_tokens"])
    assert best.loc["tight", "note"] == "no level meets the SLO"


def test_cost_summarize_runs_keeps_run_facts_and_skips_fixtures():
    rng = np.random.default_rng(0)
    rows = []
    for run, fixture in (("r1", False), ("r2", True)):
        for rep in range(3):
            rows.append(dict(run_id=run, scenario="h200", model="llama-3.1-8b", instance="p5en.48xlarge",
                             accelerators_used=1, status="completed", fixture=fixture, level_kind="concurrency",
                             level_value=1.0, repetition=rep, n_errors=0, saturated=False,
                             **{m: 100 + rng.random() for m in metrics.SUMMARY_METRICS}))
    s = summary.summarize_runs(pd.DataFrame(rows))
    assert list(s["run_id"]) == ["r1"]
    assert (s["instance"].iloc[0], s["accelerators_used"].iloc[0], s["repetitions"].iloc[0]) == ("p5en.48xlarge", 1, 3)
    assert len(summary.summarize_runs(pd.DataFrame(rows), include_fixtures=True)) == 2
