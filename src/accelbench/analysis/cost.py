"""Cost per token and per request from measured throughput and instance prices; the price refresh.

A scenario measured on N accelerators of an instance with M is priced one of two ways (same USD per
token, different absolute throughput):
- "accelerator share": the share N/M of the instance price, at the measured throughput;
- "full instance (M/N replicas)": the whole instance price, at the measured throughput x M/N, as if
  M/N data-parallel replicas filled the instance (no contention between replicas is assumed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from accelbench.analysis import summary
from accelbench.config import params, paths
from accelbench.config.params import Instance, Prices, SloProfile, Sourced
from accelbench.core import metrics
from accelbench.errors import AccelbenchError

FORMULA = "USD per 1M output tokens = price_usd_per_hour / (output_tok_per_s x 3600) x 1e6"
FORMULAS = {
    "usd_per_m_output_tokens": FORMULA,
    "usd_per_m_total_tokens": "USD per 1M total tokens = price_usd_per_hour / (total_tok_per_s x 3600) x 1e6",
    "usd_per_k_requests": "USD per 1k requests = price_usd_per_hour / (requests_per_s x 3600) x 1e3",
}
BASIS_SHARE = "accelerator share"
BASIS_FULL = "full instance (M/N replicas)"
BASES = (BASIS_SHARE, BASIS_FULL)
PRICE_KINDS = ("on_demand", "spot", "reserved_1y", "reserved_3y")
# (cost column, throughput column it divides by, scale of the unit)
COST_COLUMNS = (("usd_per_m_output_tokens", "output_tok_per_s", 1e6),
                ("usd_per_m_total_tokens", "total_tok_per_s", 1e6),
                ("usd_per_k_requests", "requests_per_s", 1e3))


def usd_per_unit(price_usd_per_hour: float, per_s: float, unit: float = 1e6) -> float:
    """price_usd_per_hour / (per_s x 3600) x unit; NaN when the rate is not positive."""
    if not (per_s > 0) or not np.isfinite(price_usd_per_hour):
        return np.nan
    return price_usd_per_hour / (per_s * 3600.0) * unit


def usd_per_m_output_tokens(price_usd_per_hour: float, output_tok_per_s: float) -> float:
    """FORMULA."""
    return usd_per_unit(price_usd_per_hour, output_tok_per_s, 1e6)


def instance_price(instance: Instance, price_kind: str = "on_demand") -> Sourced | None:
    if price_kind not in PRICE_KINDS:
        raise AccelbenchError(f"unknown price kind '{price_kind}': valid are {', '.join(PRICE_KINDS)}")
    return getattr(instance.prices, f"{price_kind}_usd_per_hour")


@dataclass(frozen=True)
class Pricing:
    """What one measured scenario is charged, and how its throughput is scaled to match."""

    instance: str
    price_kind: str
    instance_price_usd_per_hour: float
    accelerators_used: int
    accelerator_count: int
    basis: str
    price_usd_per_hour: float  # the price charged against the (scaled) throughput
    throughput_scale: float
    source: str
    date: str

    def explain(self) -> str:
        n, m, p = self.accelerators_used, self.accelerator_count, self.instance_price_usd_per_hour
        if self.basis == BASIS_SHARE:
            how = f"{n}/{m} of {self.instance} at ${p:g}/h = ${self.price_usd_per_hour:.4g}/h, measured throughput"
        else:
            how = (f"whole {self.instance} at ${p:g}/h, measured throughput x {m}/{n} "
                   f"= x{self.throughput_scale:g} ({self.throughput_scale:g} data-parallel replicas)")
        return f"{self.basis}: {how} ({self.price_kind}; {self.source}, {self.date})"


def pricing(instance: Instance, accelerators_used: int, basis: str = BASIS_SHARE,
            price_kind: str = "on_demand") -> Pricing:
    """How a scenario on `accelerators_used` of `instance` is priced; raises when there is no price."""
    if basis not in BASES:
        raise AccelbenchError(f"unknown cost basis '{basis}': valid are {', '.join(repr(b) for b in BASES)}")
    if not 1 <= accelerators_used <= instance.accelerator_count:
        raise AccelbenchError(f"accelerators_used={accelerators_used} but {instance.name} has "
                              f"{instance.accelerator_count} accelerators")
    price = instance_price(instance, price_kind)
    if price is None:
        have = [k for k in PRICE_KINDS if instance_price(instance, k) is not None]
        raise AccelbenchError(f"params/instances.yaml: {instance.name} has no prices.{price_kind}_usd_per_hour; "
                              f"prices it has: {', '.join(have) or 'none'}")
    n, m = accelerators_used, instance.accelerator_count
    share = basis == BASIS_SHARE
    return Pricing(instance=instance.name, price_kind=price_kind, instance_price_usd_per_hour=price.value,
                   accelerators_used=n, accelerator_count=m, basis=basis,
                   price_usd_per_hour=price.value * n / m if share else price.value,
                   throughput_scale=1.0 if share else m / n, source=price.source, date=price.date)


def cost_per_level(summary: pd.DataFrame, price: Pricing) -> pd.DataFrame:
    """Each summary row (as from metrics.summarize_levels) with its costs under `price`.

    Adds basis, price columns, the priced throughputs (x throughput_scale) and usd_per_m_output_tokens,
    usd_per_m_total_tokens, usd_per_k_requests, plus _ci_low/_ci_high from the throughput CIs (the low
    cost comes from the high throughput).
    """
    out = summary.copy()
    out["basis"] = price.basis
    out["price_kind"] = price.price_kind
    out["instance_price_usd_per_hour"] = price.instance_price_usd_per_hour
    out["price_usd_per_hour"] = price.price_usd_per_hour
    out["throughput_scale"] = price.throughput_scale
    out["price_source"] = f"{price.source} ({price.date})"
    for cost_col, rate_col, unit in COST_COLUMNS:
        if rate_col not in out:
            continue
        rate = out[rate_col].astype(float) * price.throughput_scale
        out[f"{rate_col}_priced"] = rate
        out[cost_col] = [usd_per_unit(price.price_usd_per_hour, r, unit) for r in rate]
        if f"{rate_col}_ci_high" in out:
            hi = out[f"{rate_col}_ci_high"].astype(float) * price.throughput_scale
            lo = out[f"{rate_col}_ci_low"].astype(float) * price.throughput_scale
            out[f"{cost_col}_ci_low"] = [usd_per_unit(price.price_usd_per_hour, r, unit) for r in hi]
            out[f"{cost_col}_ci_high"] = [usd_per_unit(price.price_usd_per_hour, r, unit) for r in lo]
    return out


def run_costs(output_dir: Path | str = paths.OUTPUTS_DIR, basis: str = BASIS_SHARE,
              price_kind: str = "on_demand") -> pd.DataFrame:
    """The report's cost table: every level of every completed run, priced (cost_table)."""
    return cost_table(summary.measured(output_dir), basis, price_kind)


def cost_table(summary: pd.DataFrame, basis: str = BASIS_SHARE, price_kind: str = "on_demand",
               instances: dict[str, Instance] | None = None) -> pd.DataFrame:
    """cost_per_level for summary rows of many runs (columns `instance` and `accelerators_used` needed).

    Rows whose instance has no price of `price_kind` keep NaN costs and say why in `price_note`.
    """
    if summary.empty:
        return summary.copy()
    missing = [c for c in ("instance", "accelerators_used") if c not in summary]
    if missing:
        raise AccelbenchError(f"cost_table needs summary columns {missing}: summarize with "
                              f"summary.measured(output_dir)")
    instances = instances if instances is not None else params.load_instances()
    parts = []
    for (inst_name, n), group in summary.groupby(["instance", "accelerators_used"], sort=False):
        inst = instances.get(inst_name)
        if inst is None:
            parts.append(group.assign(basis=basis, price_kind=price_kind,
                                      price_note=f"instance {inst_name} is not in params/instances.yaml"))
            continue
        try:
            price = pricing(inst, int(n), basis, price_kind)
        except AccelbenchError as e:
            parts.append(group.assign(basis=basis, price_kind=price_kind, price_note=str(e)))
            continue
        parts.append(cost_per_level(group, price).assign(price_note=price.explain()))
    table = pd.concat(parts, ignore_index=True)
    for col, _, _ in COST_COLUMNS:  # present (NaN) even when no row has a price
        for suffix in ("", "_ci_low", "_ci_high"):
            if f"{col}{suffix}" not in table:
                table[f"{col}{suffix}"] = np.nan
    return table


def _applies(profile: SloProfile, model: Any) -> bool:
    return not profile.models or model in profile.models


def cost_at_slo(costed: pd.DataFrame, profiles: list[SloProfile] | None = None) -> pd.DataFrame:
    """Per run and per SLO profile that applies to its model: the cheapest level meeting the profile.

    A level qualifies when metrics.meets_slo holds (p99 TTFT and p99 TPOT within the limits, no errors)
    and it is not saturated. Runs with no qualifying level get a row with NaN cost and a note.
    """
    profiles = profiles if profiles is not None else params.load_slo_profiles()
    if costed.empty or "usd_per_m_output_tokens" not in costed:
        return pd.DataFrame()
    run_key = "run_id" if "run_id" in costed else "scenario"
    rows = []
    for _, run in costed.groupby(run_key, sort=False):
        first = run.iloc[0]
        for p in profiles:
            if "model" in run and not _applies(p, first["model"]):
                continue
            ok = run[metrics.meets_slo(run, p.ttft_p99_ms, p.tpot_p99_ms) & ~run["saturated"].astype(bool)
                     & run["usd_per_m_output_tokens"].notna()]
            base = {k: first[k] for k in ("run_id", "scenario", "model", "instance", "accelerators_used",
                                          "basis", "price_kind") if k in run}
            base |= dict(profile=p.name, ttft_p99_limit_ms=p.ttft_p99_ms, tpot_p99_limit_ms=p.tpot_p99_ms)
            if ok.empty:
                why = first.get("price_note", "") if run["usd_per_m_output_tokens"].isna().all() else \
                    "no level meets the SLO"
                rows.append(base | dict(level_kind=None, level_value=np.nan, output_tok_per_s=np.nan,
                                        usd_per_m_output_tokens=np.nan, note=why))
                continue
            best = ok.loc[ok["usd_per_m_output_tokens"].idxmin()]
            rows.append(base | dict(
                level_kind=best["level_kind"], level_value=best["level_value"],
                ttft_p99_ms=best["ttft_p99_ms"], tpot_p99_ms=best["tpot_p99_ms"],
                output_tok_per_s=best["output_tok_per_s"],
                output_tok_per_s_priced=best.get("output_tok_per_s_priced", np.nan),
                usd_per_m_output_tokens=best["usd_per_m_output_tokens"],
                usd_per_m_total_tokens=best.get("usd_per_m_total_tokens", np.nan),
                usd_per_k_requests=best.get("usd_per_k_requests", np.nan),
                note=f"cheapest level meeting TTFT p99 <= {p.ttft_p99_ms:g} ms and TPOT p99 <= "
                     f"{p.tpot_p99_ms:g} ms"))
    return pd.DataFrame(rows)


# --- prices ----------------------------------------------------------------------------------------

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

