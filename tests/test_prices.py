"""Instance prices: the committed table with sources, and the refresh with and without AWS."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from typer.testing import CliRunner

from accelbench.analysis import prices
from accelbench.config.params import Prices


def test_prices_committed_have_sources():
    t = prices.price_table()
    p5en = t[(t["instance"] == "p5en.48xlarge") & (t["price_kind"] == "on_demand")].iloc[0]
    assert p5en["usd_per_hour"] == 84.80 and p5en["usd_per_accelerator_hour"] == pytest.approx(10.6)
    assert (t["source"].str.len() > 20).all() and t["date"].str.match(r"^\d{4}-\d{2}").all()


# --- the refresh --------------------------------------------------------------------------------------

def test_prices_refresh_without_boto3_falls_back(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 -> ImportError
    out = tmp_path / "prices-refreshed.yaml"
    r = prices.refresh_prices(out_path=out)
    assert r.path is None and not out.exists()
    assert "boto3 is not installed" in r.message and "committed prices in params/instances.yaml" in r.message
    assert "p5en.48xlarge" in set(r.prices["instance"])


class _Offline:
    def get_products(self, **kw):
        raise OSError("Could not connect to the endpoint URL")

    def describe_spot_price_history(self, **kw):
        raise OSError("Could not connect to the endpoint URL")


def test_prices_refresh_without_network_falls_back(tmp_path):
    out = tmp_path / "p.yaml"
    r = prices.refresh_prices(["p5en.48xlarge"], out_path=out, pricing_client=_Offline(), ec2_client=_Offline())
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


def test_prices_refresh_writes_dated_file(tmp_path):
    out = tmp_path / "prices-refreshed.yaml"
    client = _Online()
    r = prices.refresh_prices(["p5en.48xlarge"], out_path=out, today="2026-11-30", pricing_client=client,
                            ec2_client=client)
    assert r.path == out and out.exists()
    assert client.filters["instanceType"] == "p5en.48xlarge" and client.filters["regionCode"] == "us-east-1"
    data = yaml.safe_load(out.read_text())
    assert data["refreshed_at"] == "2026-11-30"
    got = Prices(**data["prices"]["p5en.48xlarge"])
    assert got.on_demand_usd_per_hour.value == 84.8 and got.on_demand_usd_per_hour.date == "2026-11-30"
    assert got.reserved_1y_usd_per_hour.value == 55.0  # No Upfront: the hourly fee
    assert got.reserved_3y_usd_per_hour.value == pytest.approx(33.333333, rel=1e-6)  # 876000 / (3 x 8760)
    assert got.spot_usd_per_hour.value == 25.0  # median of the latest per zone: 20, 30, 25
    assert "standard 3yr All Upfront" in got.reserved_3y_usd_per_hour.source


def test_cli_prices_refresh_offline_says_so_without_traceback(monkeypatch):
    from accelbench.cli import app
    monkeypatch.setitem(sys.modules, "boto3", None)
    result = CliRunner().invoke(app, ["prices", "refresh"])
    assert result.exit_code == 0, result.output
    assert "prices not refreshed: boto3 is not installed" in result.output
    assert "Traceback" not in result.output
