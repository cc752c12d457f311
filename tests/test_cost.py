"""Cost per token from throughput and price: hand-computed values, both pricing bases, the price refresh."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from accelbench.analysis import cost, summary
from accelbench.config import params
from accelbench.config.params import Prices
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
                             **{m: 100 + rng.random() for m in cost.metrics.SUMMARY_METRICS}))
    s = summary.summarize_runs(pd.DataFrame(rows))
    assert list(s["run_id"]) == ["r1"]
    assert (s["instance"].iloc[0], s["accelerators_used"].iloc[0], s["repetitions"].iloc[0]) == ("p5en.48xlarge", 1, 3)
    assert len(summary.summarize_runs(pd.DataFrame(rows), include_fixtures=True)) == 2


def test_cost_prices_committed_have_sources():
    t = cost.price_table()
    p5en = t[(t["instance"] == "p5en.48xlarge") & (t["price_kind"] == "on_demand")].iloc[0]
    assert p5en["usd_per_hour"] == 84.80 and p5en["usd_per_accelerator_hour"] == pytest.approx(10.6)
    assert (t["source"].str.len() > 20).all() and t["date"].str.match(r"^\d{4}-\d{2}").all()


# --- the refresh --------------------------------------------------------------------------------------

def test_cost_refresh_without_boto3_falls_back(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 -> ImportError
    out = tmp_path / "prices-refreshed.yaml"
    r = cost.refresh_prices(out_path=out)
    assert r.path is None and not out.exists()
    assert "boto3 is not installed" in r.message and "committed prices in params/instances.yaml" in r.message
    assert "p5en.48xlarge" in set(r.prices["instance"])


class _Offline:
    def get_products(self, **kw):
        raise OSError("Could not connect to the endpoint URL")

    def describe_spot_price_history(self, **kw):
        raise OSError("Could not connect to the endpoint URL")


def test_cost_refresh_without_network_falls_back(tmp_path):
    out = tmp_path / "p.yaml"
    r = cost.refresh_prices(["p5en.48xlarge"], out_path=out, pricing_client=_Offline(), ec2_client=_Offline())
    assert r.path is None and not out.exists()
    assert "failed (OSError: Could not connect" in r.message and "params/instances.yaml" in r.message


def _price_item(on_demand: float) -> str:
    return json.dumps({"product": {"attributes": {"instanceType": "p5en.48xlarge"}}, "terms": {
        "OnDemand": {"X.JRTCKXETXF": {"priceDimensions": {"X.JRTCKXETXF.6YS6EN2CT7": {
            "unit": "Hrs", "pricePerUnit": {"USD": f"{on_demand:.10f}"}}}}},
        "Reserved": {
            "X.4NA7Y494T4": {"termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "standard",
                                                "PurchaseOption": "No Upfront"},
                             "priceDimensions": {"a": {"unit": "Hrs", "pricePerUnit": {"USD": "55.0000000000"}}}},
            "X.NQ3QZPMQV9": {"termAttributes": {"LeaseContractLength": "3yr", "OfferingClass": "standard",
                                                "PurchaseOption": "All Upfront"},
                             "priceDimensions": {"b": {"unit": "Quantity", "pricePerUnit": {"USD": "876000"}},
                                                 "c": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0000000000"}}}},
            "X.CONVERT": {"termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "convertible",
                                             "PurchaseOption": "No Upfront"},
                          "priceDimensions": {"d": {"unit": "Hrs", "pricePerUnit": {"USD": "1.0"}}}}}}})


class _Online:
    def __init__(self):
        self.filters = None

    def get_products(self, ServiceCode, Filters, MaxResults):  # noqa: N803 (boto3's argument names)
        self.filters = {f["Field"]: f["Value"] for f in Filters}
        return {"PriceList": [_price_item(84.8)]}

    def describe_spot_price_history(self, **kw):
        return {"SpotPriceHistory": [
            {"AvailabilityZone": "us-east-1a", "SpotPrice": "99.0", "Timestamp": "2026-11-29T00:00:00Z"},
            {"AvailabilityZone": "us-east-1a", "SpotPrice": "20.0", "Timestamp": "2026-11-30T00:00:00Z"},
            {"AvailabilityZone": "us-east-1b", "SpotPrice": "30.0", "Timestamp": "2026-11-30T00:00:00Z"},
            {"AvailabilityZone": "us-east-1c", "SpotPrice": "25.0", "Timestamp": "2026-11-30T00:00:00Z"}]}


def test_cost_refresh_writes_dated_file(tmp_path):
    out = tmp_path / "prices-refreshed.yaml"
    client = _Online()
    r = cost.refresh_prices(["p5en.48xlarge"], out_path=out, today="2026-11-30", pricing_client=client,
                            ec2_client=client)
    assert r.path == out and out.exists()
    assert client.filters["instanceType"] == "p5en.48xlarge" and client.filters["regionCode"] == "us-east-1"
    data = yaml.safe_load(out.read_text())
    assert data["refreshed_at"] == "2026-11-30"
    prices = Prices(**data["prices"]["p5en.48xlarge"])
    assert prices.on_demand_usd_per_hour.value == 84.8 and prices.on_demand_usd_per_hour.date == "2026-11-30"
    assert prices.reserved_1y_usd_per_hour.value == 55.0  # No Upfront: the hourly fee
    assert prices.reserved_3y_usd_per_hour.value == pytest.approx(33.333333, rel=1e-6)  # 876000 / (3 x 8760)
    assert prices.spot_usd_per_hour.value == 25.0  # median of the latest per zone: 20, 30, 25
    assert "standard 3yr All Upfront" in prices.reserved_3y_usd_per_hour.source


def test_cli_prices_refresh_offline_says_so_without_traceback(monkeypatch):
    from accelbench.cli import app
    monkeypatch.setitem(sys.modules, "boto3", None)
    result = CliRunner().invoke(app, ["prices", "refresh"])
    assert result.exit_code == 0, result.output
    assert "prices not refreshed: boto3 is not installed" in result.output
    assert "Traceback" not in result.output
