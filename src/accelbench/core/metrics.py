"""Pure functions from raw per-request records to per-level metrics, summaries, CIs and goodput.

Definitions (the report's methods section quotes these):
- TTFT = first_token_s - submit_s; E2E = end_s - submit_s.
- ITL (vLLM's convention) = every gap between consecutive output chunks, pooled over requests.
- TPOT (per request, AIPerf's "ITL") = (E2E - TTFT) / (output_tokens - 1).
- Steady-state window of a level: from the first completion to the last submission. Requests submitted
  before it (ramp-up) or finished after it (drain) are kept in the raw data but not aggregated;
  throughput counts the output tokens that arrived inside the window over its length.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

LATENCIES = ("ttft", "itl", "tpot", "e2e")
STATS = ("mean", "p50", "p90", "p99")
SUMMARY_METRICS = (
    "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
    "e2e_p50_ms", "e2e_p99_ms", "output_tok_per_s", "total_tok_per_s", "requests_per_s",
)
CV_LIMIT = 0.05
LEVEL_KEYS = ["level_kind", "level_value", "repetition"]
# vLLM's RequestStateStats per request (runner records) -> the mean a level reports: arrival to first token,
# waiting for the scheduler, scheduled to first token
ENGINE_MEANS = {"engine_ttft_mean_ms": "engine_first_token_latency_s", "engine_queue_mean_ms": "engine_queued_s",
                "engine_prefill_mean_ms": "engine_prefill_s"}


def request_table(records: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """Raw records plus per-request ttft_ms, e2e_ms, tpot_ms (NaN where the request failed)."""
    df = pd.DataFrame(records).copy()
    ok = df["error"].isna()
    df["ttft_ms"] = np.where(ok, (df["first_token_s"] - df["submit_s"]) * 1e3, np.nan)
    df["e2e_ms"] = np.where(ok, (df["end_s"] - df["submit_s"]) * 1e3, np.nan)
    decode_ms = (df["end_s"] - df["first_token_s"]) * 1e3
    df["tpot_ms"] = np.where(ok & (df["output_tokens"] > 1), decode_ms / (df["output_tokens"] - 1), np.nan)
    return df


def steady_window(level: pd.DataFrame) -> tuple[float, float, bool]:
    """(start_s, end_s, steady): first completion to last submission, or the whole level if that is empty."""
    ok = level[level["error"].isna()]
    if ok.empty:
        return float(level["submit_s"].min()), float(level["submit_s"].max()), False
    start, end = float(ok["end_s"].min()), float(ok["submit_s"].max())
    inside = (ok["submit_s"] >= start) & (ok["end_s"] <= end)
    if end <= start or not inside.any():
        return float(ok["submit_s"].min()), float(ok["end_s"].max()), False
    return start, end, True


def in_window(level: pd.DataFrame, start: float, end: float, steady: bool) -> pd.Series:
    ok = level["error"].isna()
    if not steady:
        return ok
    return ok & (level["submit_s"] >= start) & (level["end_s"] <= end)


def chunk_gaps_ms(level: pd.DataFrame) -> np.ndarray:
    gaps = [np.diff(np.asarray(t, dtype=float)) * 1e3 for t in level["chunk_times_s"] if len(t) > 1]
    return np.concatenate(gaps) if gaps else np.array([])


def tokens_between(level: pd.DataFrame, start: float, end: float) -> int:
    total = 0
    for times, tokens in zip(level["chunk_times_s"], level["chunk_tokens"]):
        t = np.asarray(times, dtype=float)
        total += int(np.asarray(tokens)[(t >= start) & (t <= end)].sum())
    return total


def describe(values: np.ndarray, name: str) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {f"{name}_{s}_ms": np.nan for s in STATS}
    return {f"{name}_mean_ms": float(v.mean()), f"{name}_p50_ms": float(np.percentile(v, 50)),
            f"{name}_p90_ms": float(np.percentile(v, 90)), f"{name}_p99_ms": float(np.percentile(v, 99))}


def saturation(level: pd.DataFrame) -> tuple[float, float, bool]:
    """Open loop: (realized offered rate, achieved completion rate, saturated).

    Offered is the realized arrival rate of this draw; achieved is the completion rate between the
    first and last completion. Saturated: achieved below 90% of offered, or TTFT of the last third of
    arrivals more than twice that of the first third (the queue is growing).
    """
    ok = level[level["error"].isna()].sort_values("scheduled_s")
    if len(ok) < 3:
        return np.nan, np.nan, False
    offered = (len(ok) - 1) / max(ok["scheduled_s"].max() - ok["scheduled_s"].min(), 1e-9)
    ends = ok["end_s"]
    achieved = (len(ok) - 1) / max(ends.max() - ends.min(), 1e-9)
    # TTFT from the scheduled arrival, so time spent waiting for a concurrency cap counts as queueing
    ttft = (ok["first_token_s"] - ok["scheduled_s"]).to_numpy()
    third = max(len(ttft) // 3, 1)
    growing = np.median(ttft[-third:]) > 2 * np.median(ttft[:third])
    return float(offered), float(achieved), bool(achieved < 0.9 * offered or growing)


def level_row(level: pd.DataFrame) -> dict[str, Any]:
    """Aggregates of one (level, repetition) from its raw requests (as given by request_table)."""
    start, end, steady = steady_window(level)
    sel = level[in_window(level, start, end, steady)]
    span = max(end - start, 1e-9)
    out_tokens = tokens_between(sel if not steady else level, start, end)
    row: dict[str, Any] = dict(
        n_requests=len(level), n_errors=int(level["error"].notna().sum()), n_measured=len(sel),
        steady_window=steady, window_start_s=start, window_end_s=end, window_s=span)
    row |= describe(sel["ttft_ms"], "ttft") | describe(chunk_gaps_ms(sel), "itl")
    row |= describe(sel["tpot_ms"], "tpot") | describe(sel["e2e_ms"], "e2e")
    inputs_in_window = int(level.loc[(level["submit_s"] >= start) & (level["submit_s"] <= end),
                                     "input_tokens"].sum()) if steady else int(sel["input_tokens"].sum())
    row |= dict(output_tok_per_s=out_tokens / span, total_tok_per_s=(out_tokens + inputs_in_window) / span,
                requests_per_s=len(sel) / span)
    if "engine_first_token_latency_s" in sel and sel["engine_first_token_latency_s"].notna().any():
        diff = sel["ttft_ms"] - sel["engine_first_token_latency_s"] * 1e3
        row |= dict(ttft_engine_diff_p50_ms=float(diff.median()), ttft_engine_diff_p99_ms=float(diff.quantile(0.99)),
                    ttft_engine_absdiff_p50_ms=float(diff.abs().median()))
    row |= engine_means(sel)
    if "engine_num_preemptions" in level:
        row["num_preemptions"] = int(level["engine_num_preemptions"].fillna(0).sum())
    kind = level["level_kind"].iloc[0]
    offered, achieved, saturated = saturation(level) if kind == "rate" else (np.nan, np.nan, False)
    row |= dict(offered_rate_per_s=offered, achieved_rate_per_s=achieved, saturated=saturated)
    return row


def engine_means(requests: pd.DataFrame) -> dict[str, float]:
    """Means (ms) of vLLM's own per-request timings (ENGINE_MEANS), where the engine reported them."""
    return {column: float(requests[raw].mean() * 1e3) for column, raw in ENGINE_MEANS.items()
            if raw in requests and requests[raw].notna().any()}


def level_table(requests: pd.DataFrame) -> pd.DataFrame:
    """One row per (level_kind, level_value, repetition), recomputable from the raw rows at any time."""
    rows = [{**dict(zip(LEVEL_KEYS, key)), **level_row(group)}
            for key, group in requests.groupby(LEVEL_KEYS, sort=False)]
    return pd.DataFrame(rows)


def bootstrap_ci(values: np.ndarray, n_resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median of `values` (NaN with fewer than two values)."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size < 2:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    medians = np.median(v[rng.integers(0, v.size, size=(n_resamples, v.size))], axis=1)
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(medians, tail)), float(np.percentile(medians, 100 - tail))


def coefficient_of_variation(values: np.ndarray) -> float:
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size < 2 or v.mean() == 0:
        return np.nan
    return float(v.std(ddof=1) / abs(v.mean()))


def summarize_levels(levels: pd.DataFrame, group_by: tuple[str, ...] = ("level_kind", "level_value")) -> pd.DataFrame:
    """Across repetitions: median, 95% bootstrap CI and CV of each metric; `unstable` if any CV > 5%."""
    rows = []
    for key, g in levels.groupby(list(group_by), sort=False):
        row: dict[str, Any] = dict(zip(group_by, key if isinstance(key, tuple) else (key,)))
        row["repetitions"] = len(g)
        row["n_errors"] = int(g["n_errors"].sum())
        row["saturated"] = bool(g["saturated"].any()) if "saturated" in g else False
        cvs = []
        for m in SUMMARY_METRICS:
            v = g[m].to_numpy(dtype=float)
            lo, hi = bootstrap_ci(v)
            cv = coefficient_of_variation(v)
            row |= {m: float(np.nanmedian(v)) if np.isfinite(v).any() else np.nan,
                    f"{m}_ci_low": lo, f"{m}_ci_high": hi, f"{m}_cv": cv}
            cvs.append(cv)
        row["max_cv"] = float(np.nanmax(cvs)) if np.isfinite(cvs).any() else np.nan
        row["unstable"] = bool(np.nan_to_num(row["max_cv"]) > CV_LIMIT)
        for extra in ("ttft_engine_diff_p50_ms", "ttft_engine_diff_p99_ms", "ttft_engine_absdiff_p50_ms",
                      *ENGINE_MEANS,
                      "num_preemptions", "preempted_requests", "offered_rate_per_s", "achieved_rate_per_s",
                      "power_mean_w", "j_per_output_token", "gpu_util_mean_pct", "memory_used_max_gb",
                      "kv_cache_usage_max_pct"):
            if extra in g:
                row[extra] = float(np.nanmedian(g[extra].to_numpy(dtype=float))) if g[extra].notna().any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def goodput(requests: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> pd.DataFrame:
    """Per (level, repetition): requests meeting both SLO limits per second of the steady window."""
    rows = []
    for key, level in requests.groupby(LEVEL_KEYS, sort=False):
        start, end, steady = steady_window(level)
        sel = level[in_window(level, start, end, steady)]
        good = int(((sel["ttft_ms"] <= ttft_limit_ms) & (sel["tpot_ms"] <= tpot_limit_ms)).sum())
        rows.append({**dict(zip(LEVEL_KEYS, key)), "good_requests": good, "n_measured": len(sel),
                     "goodput_req_per_s": good / max(end - start, 1e-9)})
    return pd.DataFrame(rows)


def meets_slo(summary: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> pd.Series:
    """Levels whose p99 TTFT and p99 TPOT (medians over repetitions) are within the limits, with no errors."""
    return (summary["ttft_p99_ms"] <= ttft_limit_ms) & (summary["tpot_p99_ms"] <= tpot_limit_ms) & \
        (summary["n_errors"] == 0)


def best_levels_meeting_slo(summary: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> dict[str, float]:
    """The highest concurrency and the highest rate (not saturated) that meet the SLO at p99."""
    ok = summary[meets_slo(summary, ttft_limit_ms, tpot_limit_ms) & ~summary["saturated"]]
    best = {}
    for kind in ("concurrency", "rate"):
        values = ok.loc[ok["level_kind"] == kind, "level_value"]
        best[kind] = float(values.max()) if not values.empty else np.nan
    return best
