"""Cost per token and per request from measured throughput and instance prices (analysis.prices).

A scenario measured on N accelerators of an instance with M is priced one of two ways (same USD per
token, different absolute throughput):
- "accelerator share": the share N/M of the instance price, at the measured throughput;
- "full instance (M/N replicas)": the whole instance price, at the measured throughput x M/N, as if
  M/N data-parallel replicas filled the instance (no contention between replicas is assumed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.analysis import summary
from accelbench.analysis.prices import (
    PRICE_KINDS,
    instance_price,
    price_table,  # noqa: F401 (the report still calls cost.price_table)
)
from accelbench.config import params, paths
from accelbench.config.params import Instance, SloProfile
from accelbench.core import uncertainty
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
    """Each summary row (as from analysis.summary) with its costs under `price`.

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

    A level qualifies when uncertainty.meets_slo holds (p99 TTFT and p99 TPOT of every request of the
    level within the limits, no errors) and it is not saturated. Runs with no qualifying level get a row with NaN cost and a note.
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
            ok = run[uncertainty.meets_slo(run, p.ttft_p99_ms, p.tpot_p99_ms) & ~run["saturated"].astype(bool)
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
