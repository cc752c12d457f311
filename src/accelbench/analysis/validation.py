"""The harness against vLLM's `vllm bench serve`, one definition per row: the harness's raw requests under
bench serve's definitions (every request, throughput over the whole level), set against a run's
serve_levels; what the report's validation table shows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from accelbench.core import metrics
from accelbench.core.serve_method import ENGINE_SIDE, METHODS_TEXT

__all__ = ["COMPARED", "ENGINE_SIDE", "METHODS_TEXT", "bench_definitions", "compare", "harness_side"]

COMPARED = ("output_tok_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms")


def bench_definitions(level: pd.DataFrame) -> dict[str, float]:
    """One (level, repetition) of harness requests (metrics.request_table) under bench serve's definitions:
    every successful request, throughput over the whole level (first request sent to last token), plus the
    harness's own steady-window throughput and the engine-side means over every request."""
    ok = level[level["error"].isna()]
    if ok.empty:
        return {}
    span = float(ok["end_s"].max() - level["submit_s"].min())
    row: dict[str, float] = dict(output_tok_per_s=float(ok["output_tokens"].sum()) / max(span, 1e-9),
                                 steady_output_tok_per_s=metrics.level_row(level)["output_tok_per_s"])
    row |= metrics.describe(ok["ttft_ms"], "ttft") | metrics.describe(metrics.chunk_gaps_ms(ok), "itl")
    return row | metrics.describe(ok["tpot_ms"], "tpot") | metrics.engine_means(ok)


def harness_side(requests: pd.DataFrame) -> pd.DataFrame:
    """bench_definitions per closed-loop level of a run's raw requests, median over its repetitions (and
    engine starts, each repetition measured on its own)."""
    req = metrics.request_table(requests[requests["level_kind"] == "concurrency"])
    keys = [k for k in ("level_value", "replicate", "repetition") if k in req]
    rows = [{"level_value": key[0], **bench_definitions(g)} for key, g in req.groupby(keys, sort=True, dropna=False)]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).groupby("level_value").median()


def serve_interval(serve_requests: pd.DataFrame) -> pd.Series:
    """bench serve's output tok/s per level over the measurement interval of core.metrics, recomputed from
    its per-request timings (serve_requests.parquet), so the steady row holds both sides to the current
    estimators whatever wrote the stored serve_levels."""
    req = metrics.request_table(serve_requests[serve_requests["level_kind"] == "concurrency"])
    return pd.Series({value: metrics.level_row(g)["output_tok_per_s"]
                      for value, g in req.groupby("level_value", sort=True)}, dtype=float)


def compare(harness_requests: pd.DataFrame, serve_levels: pd.DataFrame,
            serve_requests: pd.DataFrame | None = None) -> pd.DataFrame:
    """Harness vs `vllm bench serve`, one row per (concurrency level, metric), for levels both measured.

    Each row holds both sides to one definition. The COMPARED metrics use bench serve's: every request of
    the level, throughput over the whole level; the harness side is computed from its raw requests
    (bench_definitions, median over repetitions). steady_output_tok_per_s uses the harness's own
    measurement interval (core.metrics.interval) on both sides, serve's recomputed from `serve_requests`
    (its per-request timings) where given, else as stored when the run was made. The ENGINE_SIDE rows (engine_ttft_mean_ms, engine_queue_mean_ms, engine_prefill_mean_ms) are
    what each side's vLLM engine measures: RequestStateStats against the server's /metrics histograms.

    Columns: concurrency, metric, harness, serve, ratio (harness / serve; NaN where serve is 0 or missing).
    """
    columns = ["concurrency", "metric", "harness", "serve", "ratio"]
    if harness_requests.empty or serve_levels.empty:
        return pd.DataFrame(columns=columns)
    h = harness_side(harness_requests)
    s = serve_levels[serve_levels["level_kind"] == "concurrency"].set_index("level_value")
    if serve_requests is not None and not serve_requests.empty:
        s = s.assign(steady_output_tok_per_s=serve_interval(serve_requests))
    pairs = [(m, m) for m in COMPARED]
    if "steady_output_tok_per_s" in s:
        pairs.append(("steady_output_tok_per_s", "steady_output_tok_per_s"))
    pairs += [(h_col, s_col) for h_col, (s_col, _, _) in ENGINE_SIDE.items() if s_col in s]
    rows = []
    for level in sorted(set(h.index) & set(s.index)):
        for h_col, s_col in pairs:
            hv = float(h.at[level, h_col]) if h_col in h else np.nan
            sv = float(s.at[level, s_col])
            ratio = hv / sv if np.isfinite(sv) and sv != 0 else np.nan
            rows.append(dict(concurrency=level, metric=h_col, harness=hv, serve=sv, ratio=ratio))
    return pd.DataFrame(rows, columns=columns)
