"""Instance prices: the table of every committed price (params/instances.yaml) and its refresh from the
AWS Price List API and EC2 spot price history into a dated params/prices-refreshed.yaml."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from accelbench.config import params, paths
from accelbench.config.params import Instance, Prices, Sourced
from accelbench.errors import AccelbenchError

PRICE_KINDS = ("on_demand", "spot", "reserved_1y", "reserved_3y")


def instance_price(instance: Instance, price_kind: str = "on_demand") -> Sourced | None:
    """The price of one kind an instance has in params/instances.yaml, or None."""
    if price_kind not in PRICE_KINDS:
        raise AccelbenchError(f"unknown price kind '{price_kind}': valid are {', '.join(PRICE_KINDS)}")
    return getattr(instance.prices, f"{price_kind}_usd_per_hour")


def refreshed_file() -> Path:
    return paths.PARAMS_DIR / "prices-refreshed.yaml"


def price_table(instances: dict[str, Instance] | None = None, include_refreshed: bool = False) -> pd.DataFrame:
    """Every price in params/instances.yaml (and prices-refreshed.yaml if asked), one row each, with source."""
    instances = instances if instances is not None else params.load_instances()
    rows = []
    for inst in instances.values():
        for kind in PRICE_KINDS:
            p = instance_price(inst, kind)
            if p is not None:
                rows.append(dict(instance=inst.name, price_kind=kind, usd_per_hour=p.value,
                                 usd_per_accelerator_hour=p.value / inst.accelerator_count,
                                 source=p.source, date=p.date, file="params/instances.yaml"))
    if include_refreshed and refreshed_file().exists():
        data = yaml.safe_load(refreshed_file().read_text()) or {}
        for name, block in (data.get("prices") or {}).items():
            prices = Prices(**block)
            count = instances[name].accelerator_count if name in instances else np.nan
            for kind in PRICE_KINDS:
                p = getattr(prices, f"{kind}_usd_per_hour")
                if p is not None:
                    rows.append(dict(instance=name, price_kind=kind, usd_per_hour=p.value,
                                     usd_per_accelerator_hour=p.value / count, source=p.source,
                                     date=p.date, file=refreshed_file().name))
    return pd.DataFrame(rows)


@dataclass
class RefreshResult:
    path: Path | None  # the file written, None when nothing was refreshed
    message: str
    prices: pd.DataFrame  # what was written, or the committed prices used instead


REGION_CODES = ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
HOURS_PER_YEAR = 8760


def parse_price_list(items: list[str | dict[str, Any]]) -> dict[str, tuple[float, str]]:
    """On-demand and reserved (standard, 1y/3y) USD per hour from AWS Price List `PriceList` entries.

    Returns {price kind: (usd_per_hour, how)}. Reserved prices are effective hourly: hourly fee + upfront
    fee / hours in the term; No Upfront is preferred, then Partial, then All Upfront.
    """
    found: dict[str, tuple[float, str]] = {}
    reserved: dict[str, dict[str, float]] = {"1yr": {}, "3yr": {}}
    for raw in items:
        item = json.loads(raw) if isinstance(raw, str) else raw
        terms = item.get("terms", {})
        for term in terms.get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                usd = float(dim.get("pricePerUnit", {}).get("USD", "nan"))
                if dim.get("unit") == "Hrs" and usd > 0:
                    found["on_demand"] = (usd, "on-demand")
        for term in terms.get("Reserved", {}).values():
            attrs = term.get("termAttributes", {})
            length, option = attrs.get("LeaseContractLength"), attrs.get("PurchaseOption")
            if attrs.get("OfferingClass") != "standard" or length not in reserved:
                continue
            hourly = upfront = 0.0
            for dim in term.get("priceDimensions", {}).values():
                usd = float(dim.get("pricePerUnit", {}).get("USD", "0"))
                if dim.get("unit") == "Hrs":
                    hourly = usd
                elif dim.get("unit") == "Quantity":
                    upfront = usd
            years = 1 if length == "1yr" else 3
            reserved[length][option] = hourly + upfront / (HOURS_PER_YEAR * years)
    for length, kind in (("1yr", "reserved_1y"), ("3yr", "reserved_3y")):
        for option in ("No Upfront", "Partial Upfront", "All Upfront"):
            if option in reserved[length]:
                found[kind] = (reserved[length][option], f"standard {length} {option}")
                break
    return found


def _aws_errors() -> tuple[type[BaseException], ...]:
    """What an AWS call raises when there is no network or no credentials (botocore's types if present)."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return (OSError,)
    return (BotoCoreError, ClientError, OSError)


def _fallback(reason: str, instances: dict[str, Instance]) -> RefreshResult:
    table = price_table(instances)
    dates = ", ".join(sorted(set(table["date"]))) if not table.empty else "none"
    return RefreshResult(None, f"prices not refreshed: {reason}. Using the committed prices in "
                               f"params/instances.yaml instead (dated {dates}).", table)


def refresh_prices(instance_names: list[str] | None = None, region: str = "us-east-1",
                   out_path: Path | None = None, today: str | None = None,
                   pricing_client: Any = None, ec2_client: Any = None) -> RefreshResult:
    """Read current prices from AWS and write a new dated params/prices-refreshed.yaml.

    On-demand and reserved from the AWS Price List API (boto3 'pricing' client in us-east-1, filtered by
    instanceType and regionCode, Linux, shared tenancy); spot as the median over availability zones of the
    latest price from EC2 DescribeSpotPriceHistory. Without boto3, network or credentials it writes
    nothing and returns the committed prices with a message saying so.
    """
    instances = params.load_instances()
    names = instance_names or [n for n, i in instances.items() if i.family != "cpu"]
    unknown = [n for n in names if n not in instances]
    if unknown:
        raise AccelbenchError(f"unknown instance(s) {unknown}: valid are {', '.join(instances)}")
    if region not in REGION_CODES:
        raise AccelbenchError(f"unknown region '{region}': valid are {', '.join(REGION_CODES)}")
    today = today or date.today().isoformat()
    if pricing_client is None or ec2_client is None:
        try:
            import boto3
        except ImportError:
            return _fallback("boto3 is not installed (pip install boto3 to refresh)", instances)
        try:
            pricing_client = pricing_client or boto3.client("pricing", region_name="us-east-1")
            ec2_client = ec2_client or boto3.client("ec2", region_name=region)
        except _aws_errors() as e:
            return _fallback(f"could not create AWS clients ({type(e).__name__}: {e})", instances)
    written: dict[str, dict[str, Any]] = {}
    rows = []
    endpoint = "AWS Price List API (pricing.get_products, us-east-1 endpoint)"
    for name in names:
        filters = [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in (
            ("instanceType", name), ("regionCode", region), ("operatingSystem", "Linux"),
            ("tenancy", "Shared"), ("preInstalledSw", "NA"), ("capacitystatus", "Used"))]
        try:
            items = pricing_client.get_products(ServiceCode="AmazonEC2", Filters=filters,
                                                MaxResults=100).get("PriceList", [])
            spot = ec2_client.describe_spot_price_history(
                InstanceTypes=[name], ProductDescriptions=["Linux/UNIX"], MaxResults=100).get("SpotPriceHistory", [])
        except _aws_errors() as e:  # no credentials, no network, access denied
            return _fallback(f"the AWS API call for {name} failed ({type(e).__name__}: {e})", instances)
        found = parse_price_list(items)
        latest: dict[str, float] = {}
        for s in sorted(spot, key=lambda s: s.get("Timestamp", "")):
            latest[s["AvailabilityZone"]] = float(s["SpotPrice"])
        block: dict[str, Any] = {}
        for kind, (value, how) in found.items():
            extra = "" if kind == "on_demand" else ", effective hourly (hourly fee + upfront / hours in term)"
            block[f"{kind}_usd_per_hour"] = dict(
                value=round(value, 6), date=today,
                source=f"{endpoint}: {name}, {region}, Linux, shared tenancy, {how}{extra}")
        if latest:
            block["spot_usd_per_hour"] = dict(
                value=float(np.median(list(latest.values()))), date=today,
                source=f"EC2 DescribeSpotPriceHistory: {name}, {region}, Linux/UNIX, median of the latest price "
                       f"in {len(latest)} availability zone(s) ({', '.join(sorted(latest))})")
        if block:
            Prices(**block)  # validates
            written[name] = block
            rows += [dict(instance=name, price_kind=k.removesuffix("_usd_per_hour"), usd_per_hour=v["value"],
                          source=v["source"], date=today) for k, v in block.items()]
    if not written:
        return _fallback(f"the AWS APIs returned no prices for {', '.join(names)} in {region}", instances)
    out_path = out_path or refreshed_file()
    header = (f"# Written by `accelbench prices refresh` on {today}: AWS Price List API and EC2 spot price history,\n"
              f"# region {region}. Instances the APIs returned nothing for are absent. params/instances.yaml is\n"
              f"# not changed; copy a figure there (with its source and date) to use it in cost figures.\n")
    body = yaml.safe_dump({"refreshed_at": today, "region": region, "prices": written}, sort_keys=False,
                          allow_unicode=True)
    out_path.write_text(header + body)
    missing = [n for n in names if n not in written]
    msg = f"wrote {out_path} ({len(rows)} prices for {len(written)} instance(s), {today})"
    if missing:
        msg += f"; no prices returned for {', '.join(missing)}"
    return RefreshResult(out_path, msg, pd.DataFrame(rows))
