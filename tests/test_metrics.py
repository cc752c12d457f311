"""Metrics on hand-made records whose every figure is worked out by hand in the comments."""

import numpy as np
import pandas as pd
import pytest

from accelbench.core import metrics, uncertainty


def rec(submit, chunks, *, kind="concurrency", value=1.0, rep=0, inp=10, error=None, scheduled=None, eng=None):
    return dict(request_id=f"r{submit}", scheduled_s=submit if scheduled is None else scheduled, submit_s=submit,
                first_token_s=chunks[0] if chunks else None, end_s=chunks[-1] if chunks else None,
                chunk_times_s=chunks, chunk_tokens=[1] * len(chunks), input_tokens=inp,
                output_tokens=len(chunks), error=error, level_kind=kind, level_value=value, repetition=rep,
                engine_first_token_latency_s=eng)


# Two clients (c = 2), two tokens per request, 10 input tokens each:
#   client A: r0 0.00 -> [0.15, 0.20]; r2 0.20 -> [0.30, 0.40]; r4 0.40 -> [0.50, 0.60]
#   client B: r1 0.05 -> [0.15, 0.30]; r3 0.30 -> [0.40, 0.50]; r5 0.50 -> [0.60, 0.70]
# Two requests are in flight from 0.05; the 2nd completion is at 0.30; the last submission at 0.50:
# the interval is (0.30, 0.50], 0.2 s.
CLOSED = [rec(0.0, [0.15, 0.2], value=2.0, eng=0.148), rec(0.05, [0.15, 0.3], value=2.0, eng=0.099),
          rec(0.2, [0.3, 0.4], value=2.0, eng=0.099), rec(0.3, [0.4, 0.5], value=2.0, eng=0.098),
          rec(0.4, [0.5, 0.6], value=2.0, eng=0.099), rec(0.5, [0.6, 0.7], value=2.0, eng=0.099)]


def test_request_table_ttft_e2e_tpot():
    df = metrics.request_table(CLOSED[:3])
    assert df["ttft_ms"].tolist() == pytest.approx([150, 100, 100])
    assert df["e2e_ms"].tolist() == pytest.approx([200, 250, 200])
    assert df["tpot_ms"].tolist() == pytest.approx([50, 150, 100])


def test_closed_loop_interval_opens_at_the_c_th_completion_and_closes_at_the_last_submission():
    start, end, steady = metrics.interval(metrics.request_table(CLOSED))
    assert (start, end, steady) == (pytest.approx(0.3), pytest.approx(0.5), True)
    assert metrics.full_concurrency_start(metrics.request_table(CLOSED), 2) == pytest.approx(0.05)


def test_throughput_counts_events_inside_the_interval_by_conservation():
    row = metrics.level_row(metrics.request_table(CLOSED))
    # tokens arriving in (0.3, 0.5]: r2 at 0.4, r3 at 0.4 and 0.5, r4 at 0.5 -> 4 tokens / 0.2 s
    assert row["output_tok_per_s"] == pytest.approx(20)
    # completions in (0.3, 0.5]: r2 and r3 (r1's at 0.3 opens the interval and is not counted)
    assert row["requests_per_s"] == pytest.approx(10) and row["n_completed"] == 2
    # prefills completed (first token) inside: r3 at 0.4, r4 at 0.5 -> 20 input tokens; (4 + 20) / 0.2
    assert row["total_tok_per_s"] == pytest.approx(120)
    # the three identities hold exactly: 2 x 2 tokens / 0.2 s mean E2E of r2, r3 = 20
    assert row["littles_output_tok_per_s"] == pytest.approx(20)
    assert [row[f"check_{k}_pct"] for k in ("littles", "requests", "total")] == pytest.approx([0, 0, 0], abs=1e-9)
    assert row["checks_failed"] == ""


def test_latency_views_interval_and_whole_level():
    row = metrics.level_row(metrics.request_table(CLOSED))
    # interval view: requests submitted in [0.3, 0.5]: r3, r4, r5, each TTFT 100 ms
    assert row["n_measured"] == 3 and row["ttft_mean_ms"] == pytest.approx(100)
    # level view: every request, r0's 150 ms TTFT included; bench serve's throughput over 0.0 -> 0.7 s
    assert row["ttft_mean_level_ms"] == pytest.approx((150 + 5 * 100) / 6)
    assert row["output_tok_per_s_level"] == pytest.approx(12 / 0.7)
    # harness vs engine TTFT over the interval's requests: 100 - 98, 100 - 99, 100 - 99 ms
    assert row["ttft_engine_diff_p50_ms"] == pytest.approx(1)


def test_a_failing_identity_is_flagged_with_its_reason():
    # one client that idles 0.3 s between requests: (0.2, 1.0] holds r1's 2 tokens, 2.5 tok/s, while
    # Little's law for a client always in flight gives 1 x 2 tokens / 0.2 s E2E = 10 tok/s
    idle = [rec(0.0, [0.1, 0.2]), rec(0.5, [0.6, 0.7]), rec(1.0, [1.1, 1.2])]
    row = metrics.level_row(metrics.request_table(idle))
    assert row["output_tok_per_s"] == pytest.approx(2.5) and row["check_littles_pct"] == pytest.approx(-75)
    assert row["checks_failed"] == "littles off by -75.0% (tolerance 3%)"


def test_level_with_no_completion_inside_falls_back_to_whole_level():
    both = metrics.request_table([rec(0.0, [0.1, 0.2], value=2.0), rec(0.0, [0.1, 0.3], value=2.0)])
    start, end, steady = metrics.interval(both)
    assert steady is False and (start, end) == (0.0, 0.3)
    row = metrics.level_row(both)
    assert row["n_measured"] == 2 and row["low_n"] and "check_littles_pct" not in row


def test_open_loop_interval_is_the_span_of_scheduled_arrivals():
    reqs = [rec(a, [a + 0.125, a + 0.25], kind="rate", value=4.0, scheduled=a) for a in (0.0, 0.25, 0.5, 0.75)]
    start, end, steady = metrics.interval(metrics.request_table(reqs))
    assert (start, end, steady) == (0.0, 0.75, True)
    # tokens in (0, 0.75]: 0.125, 0.25, ..., 0.75 -> 6 / 0.75 s; completions at 0.25, 0.5 and 0.75
    row = metrics.level_row(metrics.request_table(reqs))
    assert row["output_tok_per_s"] == pytest.approx(8) and row["requests_per_s"] == pytest.approx(4)


def test_failed_requests_are_counted_not_averaged():
    records = CLOSED + [rec(0.31, [], value=2.0, error="EngineDeadError: boom")]
    row = metrics.level_row(metrics.request_table(records))
    assert row["n_errors"] == 1 and row["n_requests"] == 7
    assert row["ttft_mean_ms"] == pytest.approx(100)


def test_energy_is_power_integrated_over_exactly_the_interval():
    t, p = np.array([0.0, 1.0, 2.0, 3.0]), np.array([100.0, 200.0, 200.0, 100.0])
    # 150 W interpolated at 0.5 and 2.5: 0.5 x 175 + 1 x 200 + 0.5 x 175 = 375 J
    assert metrics.energy_between(t, p, 0.5, 2.5) == pytest.approx(375)
    assert metrics.energy_between(t, p, 0.5, 5.0) is None  # samples stop 2 s before the interval does


def test_low_n_flags_levels_on_few_completions_or_a_short_interval():
    row = metrics.level_row(metrics.request_table(CLOSED))
    assert row["low_n"]  # 2 completions over 0.2 s


def test_saturation_detected_when_completions_lag_arrivals():
    arrivals = np.arange(10.0)  # offered 1 req/s
    slow = [rec(a, [2 * i + 1.0, 2 * i + 1.5], kind="rate", scheduled=a) for i, a in enumerate(arrivals)]
    offered, achieved, saturated = metrics.saturation(metrics.request_table(slow))
    assert offered == pytest.approx(1.0) and achieved == pytest.approx(0.5) and saturated
    keeps_up = [rec(a, [a + 0.2, a + 0.5], kind="rate", scheduled=a) for a in arrivals]
    offered, achieved, saturated = metrics.saturation(metrics.request_table(keeps_up))
    assert achieved == pytest.approx(1.0) and not saturated


def test_goodput_counts_completed_requests_meeting_both_limits():
    req = metrics.request_table(CLOSED)
    assert metrics.goodput(req, 90, 200)["good_requests"].iloc[0] == 0  # r2, r3 TTFT 100 > 90
    g = metrics.goodput(req, 120, 120).iloc[0]  # r2 TPOT 100, r3 TPOT 100
    assert g["good_requests"] == 2 and g["goodput_req_per_s"] == pytest.approx(10)


def test_best_levels_meeting_slo_skips_saturated_and_failing_levels():
    summary = pd.DataFrame([
        dict(level_kind="concurrency", level_value=1.0, ttft_p99_ms=100, tpot_p99_ms=10, n_errors=0, saturated=False),
        dict(level_kind="concurrency", level_value=8.0, ttft_p99_ms=400, tpot_p99_ms=20, n_errors=0, saturated=False),
        dict(level_kind="concurrency", level_value=16.0, ttft_p99_ms=900, tpot_p99_ms=40, n_errors=0, saturated=False),
        dict(level_kind="rate", level_value=2.0, ttft_p99_ms=200, tpot_p99_ms=15, n_errors=0, saturated=False),
        dict(level_kind="rate", level_value=4.0, ttft_p99_ms=300, tpot_p99_ms=15, n_errors=0, saturated=True),
    ])
    assert uncertainty.best_levels_meeting_slo(summary, 500, 30) == {"concurrency": 8.0, "rate": 2.0}
