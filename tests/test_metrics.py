"""Metrics on hand-made records whose every figure is worked out by hand in the comments."""

import numpy as np
import pandas as pd
import pytest

from accelbench.core import metrics


def rec(submit, chunks, *, kind="concurrency", value=1.0, rep=0, inp=10, error=None, scheduled=None, eng=None):
    return dict(request_id=f"r{submit}", scheduled_s=submit if scheduled is None else scheduled, submit_s=submit,
                first_token_s=chunks[0] if chunks else None, end_s=chunks[-1] if chunks else None,
                chunk_times_s=chunks, chunk_tokens=[1] * len(chunks), input_tokens=inp,
                output_tokens=len(chunks), error=error, level_kind=kind, level_value=value, repetition=rep,
                engine_first_token_latency_s=eng)


# r0 ttft 100 ms, e2e 300, tpot (300-100)/2 = 100; r1 ttft 150, e2e 250, tpot 50; r2 ttft 50, e2e 250, tpot 100
CLOSED = [rec(0.0, [0.1, 0.2, 0.3], eng=0.099), rec(0.3, [0.45, 0.5, 0.55], eng=0.148),
          rec(0.55, [0.6, 0.7, 0.8], eng=0.049)]


def test_request_table_ttft_e2e_tpot():
    df = metrics.request_table(CLOSED)
    assert df["ttft_ms"].tolist() == pytest.approx([100, 150, 50])
    assert df["e2e_ms"].tolist() == pytest.approx([300, 250, 250])
    assert df["tpot_ms"].tolist() == pytest.approx([100, 50, 100])


def test_steady_window_is_first_completion_to_last_submission():
    start, end, steady = metrics.steady_window(metrics.request_table(CLOSED))
    assert (start, end, steady) == (pytest.approx(0.3), pytest.approx(0.55), True)


def test_level_row_aggregates_only_the_window():
    row = metrics.level_row(metrics.request_table(CLOSED))
    # only r1 lies inside [0.3, 0.55]: ttft 150, chunk gaps 50 and 50
    assert row["n_measured"] == 1
    assert row["ttft_p50_ms"] == pytest.approx(150)
    assert row["itl_mean_ms"] == pytest.approx(50)
    assert row["tpot_p99_ms"] == pytest.approx(50)
    # tokens arriving in the window: r0 at 0.3, r1 at 0.45/0.5/0.55 -> 4 tokens over 0.25 s
    assert row["output_tok_per_s"] == pytest.approx(16)
    # inputs of requests submitted in the window: r1 and r2 (10 each) -> (4 + 20) / 0.25
    assert row["total_tok_per_s"] == pytest.approx(96)
    assert row["requests_per_s"] == pytest.approx(4)
    # harness ttft 150 ms vs engine 148 ms
    assert row["ttft_engine_diff_p50_ms"] == pytest.approx(2)


def test_level_with_no_interior_request_falls_back_to_whole_level():
    both = metrics.request_table([rec(0.0, [0.1, 0.2]), rec(0.0, [0.1, 0.3])])  # concurrency 2, 2 requests
    start, end, steady = metrics.steady_window(both)
    assert steady is False and (start, end) == (0.0, 0.3)
    row = metrics.level_row(both)
    assert row["n_measured"] == 2 and row["output_tok_per_s"] == pytest.approx(4 / 0.3)


def test_failed_requests_are_counted_not_averaged():
    records = CLOSED + [rec(0.31, [], error="EngineDeadError: boom")]
    row = metrics.level_row(metrics.request_table(records))
    assert row["n_errors"] == 1 and row["n_requests"] == 4
    assert row["ttft_p50_ms"] == pytest.approx(150)


def test_bootstrap_ci_of_three_repetitions_spans_min_to_max():
    # the median of a 3-value resample is the minimum with probability 7/27, so both 2.5% tails sit on the ends
    assert metrics.bootstrap_ci(np.array([1.0, 2.0, 3.0])) == (1.0, 3.0)
    assert np.isnan(metrics.bootstrap_ci(np.array([5.0]))[0])


def test_coefficient_of_variation():
    assert metrics.coefficient_of_variation(np.array([1.0, 2.0, 3.0])) == pytest.approx(0.5)  # sd 1 / mean 2


def test_summarize_levels_median_ci_and_unstable_flag():
    levels = pd.DataFrame([{**{m: v for m in metrics.SUMMARY_METRICS}, "level_kind": "concurrency",
                            "level_value": 1.0, "repetition": r, "n_errors": 0, "saturated": False}
                           for r, v in enumerate([10.0, 11.0, 12.0])])
    s = metrics.summarize_levels(levels).iloc[0]
    assert s["ttft_p50_ms"] == 11.0 and (s["ttft_p50_ms_ci_low"], s["ttft_p50_ms_ci_high"]) == (10.0, 12.0)
    assert s["ttft_p50_ms_cv"] == pytest.approx(1 / 11)
    assert bool(s["unstable"]) is True  # 9% > 5%


def test_saturation_detected_when_completions_lag_arrivals():
    arrivals = np.arange(10.0)  # offered 1 req/s
    slow = [rec(a, [2 * i + 1.0, 2 * i + 1.5], kind="rate", scheduled=a) for i, a in enumerate(arrivals)]
    offered, achieved, saturated = metrics.saturation(metrics.request_table(slow))
    assert offered == pytest.approx(1.0) and achieved == pytest.approx(0.5) and saturated
    keeps_up = [rec(a, [a + 0.2, a + 0.5], kind="rate", scheduled=a) for a in arrivals]
    offered, achieved, saturated = metrics.saturation(metrics.request_table(keeps_up))
    assert achieved == pytest.approx(1.0) and not saturated


def test_goodput_counts_requests_meeting_both_limits():
    req = metrics.request_table(CLOSED)
    assert metrics.goodput(req, 120, 60)["good_requests"].iloc[0] == 0  # r1 ttft 150 > 120
    g = metrics.goodput(req, 200, 60).iloc[0]
    assert g["good_requests"] == 1 and g["goodput_req_per_s"] == pytest.approx(4)


def test_best_levels_meeting_slo_skips_saturated_and_failing_levels():
    summary = pd.DataFrame([
        dict(level_kind="concurrency", level_value=1.0, ttft_p99_ms=100, tpot_p99_ms=10, n_errors=0, saturated=False),
        dict(level_kind="concurrency", level_value=8.0, ttft_p99_ms=400, tpot_p99_ms=20, n_errors=0, saturated=False),
        dict(level_kind="concurrency", level_value=16.0, ttft_p99_ms=900, tpot_p99_ms=40, n_errors=0, saturated=False),
        dict(level_kind="rate", level_value=2.0, ttft_p99_ms=200, tpot_p99_ms=15, n_errors=0, saturated=False),
        dict(level_kind="rate", level_value=4.0, ttft_p99_ms=300, tpot_p99_ms=15, n_errors=0, saturated=True),
    ])
    assert metrics.best_levels_meeting_slo(summary, 500, 30) == {"concurrency": 8.0, "rate": 2.0}
