"""The recommender on constructed measurements whose right answers are known by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis import recommend
from accelbench.errors import AccelbenchError

# (scenario, instance, accelerators_used, [(concurrency, ttft_p99_ms, tpot_p99_ms, output_tok_per_s)])
# Prices (params/instances.yaml, accelerator share): p5en 84.8/8 = 10.6/h; p4d 32.77/h whole; g6e 30.131/8.
RUNS = [
    ("h200", "p5en.48xlarge", 1, [(1, 80, 8, 120), (16, 300, 25, 1500), (64, 1500, 60, 4000)]),
    ("a100", "p4d.24xlarge", 8, [(1, 200, 20, 50), (64, 1800, 90, 3000)]),
    ("l40s", "g6e.48xlarge", 1, [(1, 150, 25, 40), (32, 1900, 95, 1000), (64, 1950, 180, 1500)]),
]
# USD per 1M output tokens = price / (tok/s x 3600) x 1e6
H200_C64 = 10.6 / (4000 * 3600) * 1e6  # 0.736111
L40S_C32 = 30.131 / 8 / (1000 * 3600) * 1e6  # 1.046215
L40S_C64 = 30.131 / 8 / (1500 * 3600) * 1e6  # 0.697477


def measured() -> pd.DataFrame:
    rows = []
    for scenario, instance, n, levels in RUNS:
        for c, ttft, tpot, tput in levels:
            rows.append(dict(run_id=f"20261130T000000Z-{scenario}", scenario=scenario, model="llama-3.1-8b",
                             instance=instance, accelerators_used=n, input_tokens=512, output_tokens=128,
                             level_kind="concurrency", level_value=float(c), n_errors=0, saturated=False,
                             ttft_p99_ms=float(ttft), tpot_p99_ms=float(tpot), output_tok_per_s=float(tput),
                             total_tok_per_s=float(tput) * 5, requests_per_s=tput / 128))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def recs() -> pd.DataFrame:
    return recommend.recommend(measured()).set_index("profile")


def test_recommend_profiles_load_with_sources():
    profiles = {p.name: p for p in recommend.load_profiles()}
    assert set(profiles) == {"latency-sensitive", "general-production", "large-scale-batch", "budget-constrained",
                             "long-context", "multi-model"}
    assert (profiles["latency-sensitive"].ttft_p99_ms, profiles["latency-sensitive"].tpot_p99_ms) == (500, 30)
    assert profiles["large-scale-batch"].ttft_p99_ms is None and profiles["large-scale-batch"].objective == "highest_throughput"
    assert all("mlperf.conf" in p.source for p in profiles.values())


def test_recommend_latency_sensitive_lowest_ttft(recs):
    r = recs.loc["latency-sensitive"]
    # TTFT p99 at the best qualifying level: h200 80 ms, l40s 150 ms, a100 200 ms
    assert (r["winner"], r["runner_up"], r["winner_level"]) == ("h200", "l40s", "concurrency 1")
    assert r["winner_value"] == 80
    assert "h200 (measured) has the lowest p99 TTFT meeting TTFT p99 <= 500 ms and TPOT p99 <= 30 ms" in r["sentence"]


def test_recommend_general_production_cheapest_under_server_limits(recs):
    r = recs.loc["general-production"]
    # l40s at 64 fails TPOT 180 > 100, so its best is 32: 1.046 vs h200 at 64: 0.736; a100 3.034
    assert (r["winner"], r["runner_up"]) == ("h200", "l40s")
    assert r["winner_value"] == pytest.approx(H200_C64)
    assert r["runner_up_value"] == pytest.approx(L40S_C32)
    assert "$0.736 per 1M output tokens at concurrency 64" in r["sentence"]
    assert r["n_candidates"] == 3 and r["n_qualifying"] == 3


def test_recommend_budget_allows_slower_tokens(recs):
    r = recs.loc["budget-constrained"]  # TPOT <= 200: l40s at 64 qualifies at 0.697 < 0.736
    assert (r["winner"], r["runner_up"]) == ("l40s", "h200")
    assert r["winner_value"] == pytest.approx(L40S_C64)


def test_recommend_batch_highest_throughput_per_instance(recs):
    r = recs.loc["large-scale-batch"]
    # per full instance: h200 4000 x 8 = 32000; l40s 1500 x 8 = 12000; a100 3000 x 1
    assert (r["winner"], r["runner_up"]) == ("h200", "l40s")
    assert (r["winner_value"], r["runner_up_value"]) == (32000, 12000)


def test_recommend_multi_model_one_accelerator_only(recs):
    r = recs.loc["multi-model"]
    assert r["n_candidates"] == 2  # a100 uses 8 accelerators
    assert (r["winner"], r["runner_up"]) == ("h200", "l40s")


def test_recommend_long_context_has_no_candidate(recs):
    r = recs.loc["long-context"]
    assert pd.isna(r["winner"]) and r["n_candidates"] == 0
    assert r["sentence"] == "No configuration of llama-3.1-8b (512 in / 128 out) has inputs of at least 8192 tokens."


def test_recommend_nothing_meets_the_limits():
    strict = recommend.WorkloadProfile(name="strict", ttft_p99_ms=10, tpot_p99_ms=1, objective="lowest_cost",
                                       source="test only")
    r = recommend.recommend(measured(), [strict]).iloc[0]
    assert pd.isna(r["winner"]) and r["n_qualifying"] == 0
    assert "None of the 3 configuration(s)" in r["sentence"] and "TTFT p99 <= 10 ms and TPOT p99 <= 1 ms" in r["sentence"]


def test_recommend_latest_run_of_a_scenario_stands_for_it():
    old = measured()
    old = old[old["scenario"] == "h200"].assign(run_id="20261101T000000Z-old", output_tok_per_s=99999.0)
    r = recommend.recommend(pd.concat([measured(), old]), [p for p in recommend.load_profiles()
                                                           if p.name == "general-production"]).iloc[0]
    assert r["winner_value"] == pytest.approx(H200_C64)


def test_recommend_projections_only_when_asked_and_marked():
    scout = measured().assign(model="llama-4-scout", scenario="h200x2-scout", accelerators_used=2)
    scout = scout[scout["instance"] == "p5en.48xlarge"]
    batch = [p for p in recommend.load_profiles() if p.name == "large-scale-batch"]
    only = recommend.recommend(scout, batch)
    assert list(only["winner"]) == ["h200x2-scout"] and list(only["winner_source"]) == ["measured"]
    both = recommend.recommend(scout, batch, include_projections=True).set_index("model")
    assert set(both.index) == {"llama-4-scout", "llama-4-maverick"}  # the seed also projects Maverick
    assert both.loc["llama-4-maverick", "winner_source"] == "projection"
    both = both.loc["llama-4-scout"]
    # seed-llama4 A at 32 concurrent: 42,000 tokens/s for the whole p5 beats 4000 x 8/2 = 16,000 measured
    assert both["winner"] == "seed-llama4: A: p5/H100 (p5.48xlarge)" and both["winner_source"] == "projection"
    assert both["winner_value"] == 42000 and both["best_measured"] == "h200x2-scout"
    assert "(projection)" in both["sentence"] and "not a measurement" in both["sentence"]


def test_recommend_projection_costs_use_this_projects_prices():
    p = recommend.projection_candidates()
    a = p[(p["candidate"] == "seed-llama4: A: p5/H100 (p5.48xlarge)") & p["level_value"].isna()]
    a = a[a["model"] == "llama-4-scout"].iloc[0]
    # 98.32 / (4200 x 3600) x 1e6 = 6.5026, not the seed's 0.85
    assert a["usd_per_m_output_tokens"] == pytest.approx(6.502646, rel=1e-6)
    assert (a["ttft_p99_ms"], a["tpot_p99_ms"]) == (120, 8)
    trn2 = p[(p["instance"] == "trn2.48xlarge") & (p["model"] == "llama-4-scout") & p["level_value"].isna()].iloc[0]
    assert trn2["price_usd_per_hour"] == 85.964 and "params/instances.yaml" in trn2["price_source"]
    assert set(p["source"]) == {"projection"}


def test_recommend_empty_and_bad_input():
    assert recommend.recommend(pd.DataFrame()).empty
    with pytest.raises(AccelbenchError, match="needs summary columns"):
        recommend.recommend(pd.DataFrame([{"model": "x", "level_kind": "concurrency", "level_value": 1.0}]))
    assert np.isnan(recommend.recommend(measured()).set_index("profile").loc["long-context", "winner_value"])
