"""Per-level estimators: from raw per-request records to one row per (level, repetition). Each formula
is written here once; the report's methods section quotes this text.

- TTFT = first_token_s - submit_s; E2E = end_s - submit_s.
- ITL (vLLM's convention) = every gap between consecutive output chunks, pooled over requests.
- TPOT (per request, AIPerf's "ITL") = (E2E - TTFT) / (output_tokens - 1).
- Measurement interval of a level. Closed loop: from the c-th completion (or the first instant at which
  c requests are in flight, if later) to the last submission. Over it exactly c requests are in flight,
  and at both edges the clients are inside ordinary requests rather than the start-up wave (at the
  start every client is past its first request; at the end none has begun draining), so tokens and
  requests balance and Little's law gives throughput = c x output tokens / mean E2E whether the clients
  started staggered or all at once. An interval opening when the clients start would count the start-up
  prefill burst without the decode it leads to; one opening at the first completion would start inside
  that burst. Open loop: the first to the last scheduled arrival, the span over which load is offered.
  A level whose interval is empty (no completion inside it) uses the whole level and is not steady.
- Throughput over the interval, by conservation: output tok/s = output tokens emitted inside it (each
  chunk's tokens at its arrival) / its length; requests/s = requests completed inside it / its length;
  total tok/s = (output tokens emitted inside + input tokens of requests whose prefill completed, i.e.
  whose first token arrived, inside) / its length. Energy: power integrated over exactly the interval
  (trapezoids, interpolated at its edges) / the output tokens emitted inside it.
- Two latency views from the same rows: "interval" (requests submitted inside the interval) and "level"
  (every successful request of the level: vLLM bench serve's definitions, columns *_level_*; its
  throughput is every output token over first submission to last token). SLO checks use the level view.
- Checks on every closed-loop level (checks_failed names each failure): output tok/s within 3% of
  c x mean output tokens / mean E2E of the requests completed inside the interval; requests/s x mean
  output tokens within 2% of output tok/s; total tok/s within 3% of output tok/s x (1 + input/output).
- A level rests on few requests when fewer than MIN_COMPLETED requests completed inside its interval or
  the interval is shorter than MIN_INTERVAL_S (flag `low_n`); a p99 needs at least P99_MIN_N values.
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
    "ttft_p99_level_ms", "tpot_p99_level_ms", "itl_p99_level_ms", "output_tok_per_s_level",
)
LEVEL_KEYS = ["level_kind", "level_value", "repetition"]
# vLLM's RequestStateStats per request (runner records) -> the mean a level reports: arrival to first token,
# waiting for the scheduler, scheduled to first token
ENGINE_MEANS = {"engine_ttft_mean_ms": "engine_first_token_latency_s", "engine_queue_mean_ms": "engine_queued_s",
                "engine_prefill_mean_ms": "engine_prefill_s"}
# Tolerances of the closed-loop identities (relative): Little's law, requests x tokens, token conservation.
CHECK_TOLERANCES = {"littles": 0.03, "requests": 0.02, "total": 0.03}
# 30 completions give a mean whose standard error is under a fifth of one request's spread, and 10 s span
# hundreds of decode steps and many telemetry samples; below either, a level's figures rest on too little.
MIN_COMPLETED = 30
MIN_INTERVAL_S = 10.0
P99_MIN_N = 100  # fewer values make the "p99" one of the largest few


def request_table(records: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """Raw records plus per-request ttft_ms, e2e_ms, tpot_ms (NaN where the request failed)."""
    df = pd.DataFrame(records).copy()
    ok = df["error"].isna()
    df["ttft_ms"] = np.where(ok, (df["first_token_s"] - df["submit_s"]) * 1e3, np.nan)
    df["e2e_ms"] = np.where(ok, (df["end_s"] - df["submit_s"]) * 1e3, np.nan)
    decode_ms = (df["end_s"] - df["first_token_s"]) * 1e3
    df["tpot_ms"] = np.where(ok & (df["output_tokens"] > 1), decode_ms / (df["output_tokens"] - 1), np.nan)
    return df


def full_concurrency_start(level: pd.DataFrame, concurrency: int) -> float | None:
    """The first instant at which `concurrency` requests are in flight (None if it never is)."""
    ends = level["end_s"].where(level["end_s"].notna(), level["submit_s"])
    times = np.concatenate([level["submit_s"].to_numpy(float), ends.to_numpy(float)])
    steps = np.concatenate([np.ones(len(level)), -np.ones(len(level))])
    order = np.lexsort((steps, times))  # at equal times an end counts before a start
    in_flight = np.cumsum(steps[order])
    hit = np.flatnonzero(in_flight >= concurrency)
    return float(times[order][hit[0]]) if hit.size else None


def interval(level: pd.DataFrame) -> tuple[float, float, bool]:
    """(start_s, end_s, steady): the level's measurement interval (module docstring), or its whole span."""
    ok = level[level["error"].isna()]
    whole = (float(level["submit_s"].min()),
             float(ok["end_s"].max()) if not ok.empty else float(level["submit_s"].max()))
    if ok.empty:
        return *whole, False
    if level["level_kind"].iloc[0] == "concurrency":
        c = int(level["level_value"].iloc[0])
        full = full_concurrency_start(level, c)
        ends = np.sort(ok["end_s"].to_numpy(float))
        start = max(full, float(ends[c - 1])) if full is not None and len(ends) >= c else None
        end = float(level["submit_s"].max())
    else:
        start, end = float(level["scheduled_s"].min()), float(level["scheduled_s"].max())
    if start is None or end <= start or not inside(ok["end_s"], start, end).any():
        return *whole, False
    return start, end, True


def chunk_gaps_ms(level: pd.DataFrame) -> np.ndarray:
    gaps = [np.diff(np.asarray(t, dtype=float)) * 1e3 for t in level["chunk_times_s"] if len(t) > 1]
    return np.concatenate(gaps) if gaps else np.array([])


def inside(times: pd.Series | np.ndarray, start: float, end: float) -> pd.Series | np.ndarray:
    """Events inside an interval: (start, end], so the event that opens it (the c-th completion) is not
    counted, and back-to-back intervals count each event once."""
    return (times > start) & (times <= end)


def tokens_between(level: pd.DataFrame, start: float, end: float) -> int:
    """Output tokens whose chunk arrived inside (start, end]."""
    total = 0
    for times, tokens in zip(level["chunk_times_s"], level["chunk_tokens"]):
        total += int(np.asarray(tokens)[inside(np.asarray(times, dtype=float), start, end)].sum())
    return total


def energy_between(t: np.ndarray, power_w: np.ndarray, start: float, end: float) -> float | None:
    """Joules over exactly [start, end]: trapezoids over the samples inside, power interpolated at both
    edges (held from the nearest sample when an edge lies within one sampling gap beyond the samples;
    None when the samples do not reach the interval)."""
    t, p = np.asarray(t, dtype=float), np.asarray(power_w, dtype=float)
    if len(t) < 2:
        return None
    gap = float(np.median(np.diff(t)))
    if t[0] > start + gap or t[-1] < end - gap:
        return None
    inside = (t > start) & (t < end)
    ts = np.concatenate([[start], t[inside], [end]])
    ps = np.concatenate([[np.interp(start, t, p)], p[inside], [np.interp(end, t, p)]])
    return float(np.sum((ps[1:] + ps[:-1]) / 2 * np.diff(ts)))


def describe(values: np.ndarray, name: str, suffix: str = "") -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {f"{name}_{s}{suffix}_ms": np.nan for s in STATS}
    return {f"{name}_mean{suffix}_ms": float(v.mean()), f"{name}_p50{suffix}_ms": float(np.percentile(v, 50)),
            f"{name}_p90{suffix}_ms": float(np.percentile(v, 90)), f"{name}_p99{suffix}_ms": float(np.percentile(v, 99))}


def latencies(requests: pd.DataFrame, suffix: str = "") -> dict[str, float]:
    """TTFT, ITL, TPOT and E2E statistics of successful requests (ITL pooled over their chunk gaps)."""
    return (describe(requests["ttft_ms"], "ttft", suffix) | describe(chunk_gaps_ms(requests), "itl", suffix)
            | describe(requests["tpot_ms"], "tpot", suffix) | describe(requests["e2e_ms"], "e2e", suffix))


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


def throughput(level: pd.DataFrame, start: float, end: float) -> dict[str, float]:
    """Output tok/s, total tok/s and requests/s over [start, end] by conservation (module docstring)."""
    ok = level[level["error"].isna()]
    span = max(end - start, 1e-9)
    out_tokens = tokens_between(ok, start, end)
    prefilled = inside(ok["first_token_s"], start, end)
    completed = inside(ok["end_s"], start, end)
    return dict(output_tok_per_s=out_tokens / span,
                total_tok_per_s=(out_tokens + int(ok.loc[prefilled, "input_tokens"].sum())) / span,
                requests_per_s=int(completed.sum()) / span, n_completed=int(completed.sum()))


def closed_loop_checks(level: pd.DataFrame, row: dict[str, Any]) -> dict[str, Any]:
    """The three identities of a closed-loop level (relative deviations) and the names of those that fail."""
    ok = level[level["error"].isna()]
    done = ok[inside(ok["end_s"], row["interval_start_s"], row["interval_end_s"])]
    if done.empty or not row["output_tok_per_s"]:
        return dict(checks_failed="no request completed inside the interval")
    c, out, inp = float(level["level_value"].iloc[0]), done["output_tokens"].mean(), done["input_tokens"].mean()
    littles = c * out / (done["e2e_ms"].mean() / 1e3)
    dev = dict(littles=row["output_tok_per_s"] / littles - 1,
               requests=row["requests_per_s"] * out / row["output_tok_per_s"] - 1,
               total=row["total_tok_per_s"] / (row["output_tok_per_s"] * (1 + inp / out)) - 1)
    failed = [f"{name} off by {100 * d:+.1f}% (tolerance {100 * CHECK_TOLERANCES[name]:g}%)"
              for name, d in dev.items() if abs(d) > CHECK_TOLERANCES[name]]
    return dict(littles_output_tok_per_s=littles, **{f"check_{k}_pct": 100 * d for k, d in dev.items()},
                checks_failed="; ".join(failed))


def level_row(level: pd.DataFrame) -> dict[str, Any]:
    """Aggregates of one (level, repetition) from its raw requests (as given by request_table)."""
    start, end, steady = interval(level)
    ok = level[level["error"].isna()]
    submitted = ok[ok["submit_s"].between(start, end)] if steady else ok
    row: dict[str, Any] = dict(
        n_requests=len(level), n_errors=int(level["error"].notna().sum()), n_measured=len(submitted),
        steady=steady, interval_start_s=start, interval_end_s=end, interval_s=max(end - start, 1e-9))
    row |= latencies(submitted) | latencies(ok, "_level") | throughput(level, start, end)
    first_submit, last_token = float(level["submit_s"].min()), float(ok["end_s"].max()) if not ok.empty else np.nan
    row |= dict(output_tok_per_s_level=float(ok["output_tokens"].sum()) / max(last_token - first_submit, 1e-9),
                requests_per_s_level=len(ok) / max(last_token - first_submit, 1e-9))
    row["low_n"] = row["n_completed"] < MIN_COMPLETED or row["interval_s"] < MIN_INTERVAL_S
    kind = level["level_kind"].iloc[0]
    if kind == "concurrency" and steady:
        row |= closed_loop_checks(level, row)
    if "engine_first_token_latency_s" in submitted and submitted["engine_first_token_latency_s"].notna().any():
        diff = submitted["ttft_ms"] - submitted["engine_first_token_latency_s"] * 1e3
        row |= dict(ttft_engine_diff_p50_ms=float(diff.median()), ttft_engine_diff_p99_ms=float(diff.quantile(0.99)),
                    ttft_engine_absdiff_p50_ms=float(diff.abs().median()))
    row |= engine_means(submitted)
    if "engine_num_preemptions" in level:
        row["num_preemptions"] = int(level["engine_num_preemptions"].fillna(0).sum())
    offered, achieved, saturated = saturation(level) if kind == "rate" else (np.nan, np.nan, False)
    row |= dict(offered_rate_per_s=offered, achieved_rate_per_s=achieved, saturated=saturated)
    return row


def engine_means(requests: pd.DataFrame) -> dict[str, float]:
    """Means (ms) of vLLM's own per-request timings (ENGINE_MEANS), where the engine reported them."""
    return {column: float(requests[raw].mean() * 1e3) for column, raw in ENGINE_MEANS.items()
            if raw in requests and requests[raw].notna().any()}


def level_keys(df: pd.DataFrame) -> list[str]:
    """What identifies one measured level in `df`: its replicate (engine start) where recorded, kind, value, repetition."""
    return (["replicate"] if "replicate" in df else []) + LEVEL_KEYS


def level_table(requests: pd.DataFrame) -> pd.DataFrame:
    """One row per measured (replicate, level_kind, level_value, repetition), recomputable from the raw rows."""
    keys = level_keys(requests)
    rows = [{**dict(zip(keys, key)), **level_row(group)}
            for key, group in requests.groupby(keys, sort=False, dropna=False)]  # a run without engine starts: NaN
    return pd.DataFrame(rows)


def goodput(requests: pd.DataFrame, ttft_limit_ms: float, tpot_limit_ms: float) -> pd.DataFrame:
    """Per measured level: requests completed inside its interval that met both SLO limits, per second of it."""
    rows = []
    keys = level_keys(requests)
    for key, level in requests.groupby(keys, sort=False, dropna=False):
        start, end, _ = interval(level)
        done = level[level["error"].isna() & inside(level["end_s"], start, end)]
        good = int(((done["ttft_ms"] <= ttft_limit_ms) & (done["tpot_ms"] <= tpot_limit_ms)).sum())
        rows.append({**dict(zip(keys, key)), "good_requests": good, "n_completed": len(done),
                     "goodput_req_per_s": good / max(end - start, 1e-9)})
    return pd.DataFrame(rows)
