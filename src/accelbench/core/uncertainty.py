"""Across repetitions and engine starts: point estimates, intervals whose coverage is what their label
says, variance components, and the SLO tests on those summaries.

A level is measured K times (repetitions) inside each of R engine starts (replicates) of one run.
- Point estimate: the mean of the replicate means (each replicate's mean over its repetitions).
- 95% interval: Student-t over the replicate means when R >= 3 (between-start variance included); with
  one engine start, Student-t over its K >= 3 repetitions, labelled "within one engine start" (it cannot
  include between-start variance); with fewer than 3 values only the range [min, max], called a range.
- Variance components (one-way random effects): within-start variance = mean over replicates of their
  repetitions' variance; between-start variance = variance of the replicate means - within / K (floored
  at 0). Both are reported as CVs of the point estimate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from accelbench.core.metrics import ENGINE_MEANS, SUMMARY_METRICS

CONFIDENCE = 0.95
# Student-t 97.5% quantiles (two-sided 95%) for 1-30 degrees of freedom, from the standard table; beyond
# 30 the Cornish-Fisher expansion around the normal quantile is exact to the table's 3 decimals.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
Z_975 = 1.959964
CV_LIMIT = 0.05
MIN_T_VALUES = 3
INTERVAL_KINDS = ("t, engine starts", "t, within one engine start", "range", "none")
MEDIAN_EXTRAS = ("ttft_engine_diff_p50_ms", "ttft_engine_diff_p99_ms", "ttft_engine_absdiff_p50_ms", *ENGINE_MEANS,
                 "num_preemptions", "preempted_requests", "offered_rate_per_s", "achieved_rate_per_s",
                 "power_mean_w", "j_per_output_token", "gpu_util_mean_pct", "memory_used_max_gb",
                 "kv_cache_usage_max_pct", "check_littles_pct", "check_requests_pct", "check_total_pct",
                 "n_completed", "n_measured", "interval_s")


def t_quantile(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom."""
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def t_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% Student-t interval of the mean of `values` (NaN with fewer than two values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return np.nan, np.nan
    half = t_quantile(v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean() - half), float(v.mean() + half)


def coefficient_of_variation(values: np.ndarray) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2 or v.mean() == 0:
        return np.nan
    return float(v.std(ddof=1) / abs(v.mean()))


def estimate(replicates: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """Point estimate, interval and variance components of one metric measured at `values`, each value
    from the engine start in `replicates` (module docstring)."""
    values = np.asarray(values, dtype=float)
    keep = np.isfinite(values)
    v = values[keep]
    if v.size == 0:
        return dict(value=np.nan, ci_low=np.nan, ci_high=np.nan, interval="none", n=0, cv=np.nan,
                    between_cv=np.nan, within_cv=np.nan)
    _, group = np.unique(np.asarray(replicates)[keep], return_inverse=True)
    counts = np.bincount(group)
    means = np.bincount(group, weights=v) / counts
    point = float(means.mean())
    if means.size >= MIN_T_VALUES:
        (lo, hi), kind, n = t_interval(means), INTERVAL_KINDS[0], means.size
    elif means.size == 1 and v.size >= MIN_T_VALUES:
        (lo, hi), kind, n = t_interval(v), INTERVAL_KINDS[1], v.size
    else:
        pool = means if means.size > 1 else v
        (lo, hi), kind, n = (float(pool.min()), float(pool.max())), INTERVAL_KINDS[2], pool.size
    squares = np.bincount(group, weights=(v - means[group]) ** 2)
    repeated = counts > 1
    within = float(np.mean(squares[repeated] / (counts[repeated] - 1))) if repeated.any() else np.nan
    between = max(float(np.var(means, ddof=1)) - (within if np.isfinite(within) else 0) / counts.mean(), 0.0) \
        if means.size > 1 else np.nan
    scale = abs(point) if point else np.nan
    return dict(value=point, ci_low=lo, ci_high=hi, interval=kind, n=n, cv=coefficient_of_variation(v),
                between_cv=np.sqrt(between) / scale, within_cv=np.sqrt(within) / scale)


def summarize_levels(levels: pd.DataFrame, group_by: tuple[str, ...] = ("level_kind", "level_value")) -> pd.DataFrame:
    """Per group: each SUMMARY_METRICS estimate (columns m, m_ci_low, m_ci_high, m_interval, m_n, m_cv,
    m_between_cv, m_within_cv), counts, and flags: `unstable` (a CV over 5%), `saturated`, `low_n` and
    `not_steady` (any repetition), `checks_failed` (the identities that failed, with the repetition)."""
    # runs from before engine starts were recorded (schema < 4) measured on one engine start: replicate 0
    levels = levels.assign(replicate=levels["replicate"].fillna(0) if "replicate" in levels else 0)
    rows = []
    for key, g in levels.groupby(list(group_by), sort=False):
        row: dict[str, Any] = dict(zip(group_by, key if isinstance(key, tuple) else (key,)))
        row |= dict(repetitions=len(g), replicates=g["replicate"].nunique(), n_errors=int(g["n_errors"].sum()),
                    saturated=_any(g, "saturated"), low_n=_any(g, "low_n"),
                    not_steady=not bool(g["steady"].all()) if "steady" in g else False)
        if "n_requests" in g:  # successful requests per repetition: what a whole-level percentile rests on
            row["n_ok"] = float(np.median(g["n_requests"] - g["n_errors"]))
        failed = g["checks_failed"].fillna("") if "checks_failed" in g else pd.Series(dtype=str)
        starts = g["replicate"].nunique() > 1
        row["checks_failed"] = "; ".join(
            f"{f'start {int(s) + 1} ' if starts else ''}rep {r}: {f}"
            for s, r, f in zip(g["replicate"], g["repetition"], failed) if f)
        cvs = []
        for m in SUMMARY_METRICS:
            if m not in g:
                continue
            e = estimate(g["replicate"].to_numpy(), g[m].to_numpy(dtype=float))
            row |= {m: e["value"], **{f"{m}_{k}": e[k] for k in e if k != "value"}}
            cvs.append(e["cv"])
        row["max_cv"] = float(np.nanmax(cvs)) if np.isfinite(cvs).any() else np.nan
        row["unstable"] = bool(np.nan_to_num(row["max_cv"]) > CV_LIMIT)
        for extra in MEDIAN_EXTRAS:
            if extra in g:
                row[extra] = float(np.nanmedian(g[extra].to_numpy(dtype=float))) if g[extra].notna().any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _any(g: pd.DataFrame, column: str) -> bool:
    return bool(g[column].fillna(False).astype(bool).any()) if column in g else False


def meets_slo(summary: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> pd.Series:
    """Levels whose p99 TTFT and p99 TPOT over every request of the level (the level view) are within the
    limits, with no errors. Old summaries without the level view fall back to the interval's p99."""
    ttft = summary["ttft_p99_level_ms"] if "ttft_p99_level_ms" in summary else summary["ttft_p99_ms"]
    tpot = summary["tpot_p99_level_ms"] if "tpot_p99_level_ms" in summary else summary["tpot_p99_ms"]
    return (ttft <= ttft_limit_ms) & (tpot <= tpot_limit_ms) & (summary["n_errors"] == 0)


def best_levels_meeting_slo(summary: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> dict[str, float]:
    """The highest concurrency and the highest rate (not saturated) that meet the SLO at p99."""
    ok = summary[meets_slo(summary, ttft_limit_ms, tpot_limit_ms) & ~summary["saturated"]]
    best = {}
    for kind in ("concurrency", "rate"):
        values = ok.loc[ok["level_kind"] == kind, "level_value"]
        best[kind] = float(values.max()) if not values.empty else np.nan
    return best


def half_width_pct(values: np.ndarray) -> float:
    """Half the t-interval's width as a percentage of the mean (inf with fewer than two values)."""
    lo, hi = t_interval(values)
    mean = float(np.nanmean(values)) if len(values) else np.nan
    return 100 * (hi - lo) / 2 / abs(mean) if np.isfinite(lo) and mean else np.inf
