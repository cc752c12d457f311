"""bench serve's result JSON (--save-result --save-detailed) under the project's names: one serve_levels
row per concurrency level (its own aggregates, plus the harness's steady-window figures recomputed from its
per-request timings), and its requests as harness records."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from accelbench.core import metrics
from accelbench.measure.serve import PERCENTILES, SOURCE

LATENCY_NAMES = {"ttft": "ttft", "itl": "itl", "tpot": "tpot", "e2el": "e2e"}  # bench name -> ours


def bench_requests(result: dict[str, Any], concurrency: float) -> pd.DataFrame:
    """bench serve's per-request timings (--save-detailed) as harness records (streamed_record).

    Times are seconds on the client's perf_counter; chunk times are start + TTFT + cumulative ITLs. Empty if
    the JSON lacks them.
    """
    need = ("start_times", "ttfts", "itls", "output_lens", "input_lens")
    if not all(isinstance(result.get(k), list) for k in need):
        return pd.DataFrame()
    errors = result.get("errors") or [""] * len(result["ttfts"])
    rows = []
    for i, (start, ttft, itl, out, inp, err) in enumerate(zip(result["start_times"], result["ttfts"],
                                                               result["itls"], result["output_lens"],
                                                               result["input_lens"], errors)):
        ok = not err and ttft is not None and ttft > 0
        times = (start + ttft + np.concatenate([[0.0], np.cumsum(itl)])).tolist() if ok else []
        rows.append(dict(streamed_record(f"serve-c{concurrency:g}-{i}", start, times, inp, out or 0,
                                         None if ok else (err or "failed")),
                         level_kind="concurrency", level_value=float(concurrency), repetition=0))
    return pd.DataFrame(rows)


def streamed_record(request_id: str, submit_s: float, chunk_times: list[float], input_tokens: int,
                    output_tokens: int, error: str | None) -> dict[str, Any]:
    """A request an HTTP client timed, with runner.one_request's fields. The client sees no per-chunk token
    counts: each chunk counts one token and the last one any remainder (the server streams one token per
    chunk unless the client falls behind)."""
    tokens = [1] * len(chunk_times)
    if tokens and output_tokens > len(tokens):
        tokens[-1] += output_tokens - len(tokens)
    return dict(request_id=request_id, scheduled_s=submit_s, submit_s=submit_s,
                first_token_s=chunk_times[0] if chunk_times else None,
                end_s=chunk_times[-1] if chunk_times else None, chunk_times_s=chunk_times, chunk_tokens=tokens,
                input_tokens=input_tokens, output_tokens=output_tokens, error=error)


def level_from_result(result: dict[str, Any], concurrency: float) -> dict[str, Any]:
    """One serve_levels row: bench serve's own aggregates under the project's metric names, plus the
    harness's steady-window figures recomputed from bench serve's per-request timings (steady_*)."""
    def ms(key: str) -> float:
        v = result.get(key)
        return float(v) if v is not None else np.nan

    row: dict[str, Any] = dict(
        level_kind="concurrency", level_value=float(concurrency), source=SOURCE,
        max_concurrency=result.get("max_concurrency"), n_requests=result.get("num_prompts"),
        n_measured=result.get("completed"), n_errors=result.get("failed"), duration_s=ms("duration"))
    for bench_name, ours in LATENCY_NAMES.items():
        row[f"{ours}_mean_ms"] = ms(f"mean_{bench_name}_ms")
        for p in PERCENTILES:
            fallback = f"median_{bench_name}_ms" if p == 50 else None
            v = result.get(f"p{p}_{bench_name}_ms", result.get(fallback) if fallback else None)
            row[f"{ours}_p{p}_ms"] = float(v) if v is not None else np.nan
    row |= dict(output_tok_per_s=ms("output_throughput"), total_tok_per_s=ms("total_token_throughput"),
                requests_per_s=ms("request_throughput"), total_input_tokens=result.get("total_input_tokens"),
                total_output_tokens=result.get("total_output_tokens"))
    req = bench_requests(result, concurrency)
    if not req.empty:
        steady = metrics.level_row(metrics.request_table(req))
        row["steady_window"] = steady["steady"]
        row["steady_n_measured"] = steady["n_measured"]
        for m in ("output_tok_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms",
                  "tpot_p50_ms", "tpot_p99_ms"):
            row[f"steady_{m}"] = steady[m]
    return row


def levels_from_results(results: dict[float, dict[str, Any]]) -> pd.DataFrame:
    """serve_levels from bench serve JSON results keyed by concurrency."""
    return pd.DataFrame([level_from_result(r, c) for c, r in sorted(results.items())])
