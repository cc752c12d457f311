"""Estimates across repetitions and engine starts: intervals checked against their stated coverage."""

import numpy as np
import pandas as pd
import pytest

from accelbench.core import uncertainty


def test_t_quantiles_match_the_table_and_the_expansion_beyond_it():
    assert uncertainty.t_quantile(2) == 4.303 and uncertainty.t_quantile(30) == 2.042
    assert uncertainty.t_quantile(40) == pytest.approx(2.021, abs=5e-4)  # table value at 40 df
    assert uncertainty.t_quantile(120) == pytest.approx(1.980, abs=5e-4)


def test_t_interval_of_three_values_is_mean_plus_minus_t_sd_over_root_n():
    lo, hi = uncertainty.t_interval(np.array([1.0, 2.0, 3.0]))
    assert (lo, hi) == (pytest.approx(2 - 4.303 / np.sqrt(3)), pytest.approx(2 + 4.303 / np.sqrt(3)))
    assert np.isnan(uncertainty.t_interval(np.array([5.0]))[0])


def test_nominal_95_percent_t_interval_covers_95_percent_at_n_3():
    rng = np.random.default_rng(7)
    trials = 4000
    draws = rng.normal(10.0, 2.0, size=(trials, 3))
    covered = sum(lo <= 10.0 <= hi for lo, hi in map(uncertainty.t_interval, draws))
    assert covered / trials >= 0.93
    # the percentile bootstrap of the median the study used before covers far less at n = 3
    lo, hi = draws.min(axis=1), draws.max(axis=1)
    assert np.mean((lo <= 10.0) & (10.0 <= hi)) < 0.80  # [min, max] of 3: 1 - 2 / 2**3 = 75%


def _values(by_replicate: dict[int, list[float]]) -> tuple[list[int], list[float]]:
    pairs = [(r, v) for r, vs in by_replicate.items() for v in vs]
    return [r for r, _ in pairs], [v for _, v in pairs]


def test_engine_starts_give_the_interval_and_the_variance_components():
    # replicate means 10, 12, 14 (each of two repetitions +-1): t over the means
    e = uncertainty.estimate(*_values({0: [9, 11], 1: [11, 13], 2: [13, 15]}))
    assert e["value"] == 12 and e["interval"] == "t, engine starts" and e["n"] == 3
    assert (e["ci_low"], e["ci_high"]) == (pytest.approx(12 - 4.303 * 2 / np.sqrt(3)),
                                           pytest.approx(12 + 4.303 * 2 / np.sqrt(3)))
    # within: each replicate's variance is 2; between: var of means 4 - 2 / 2 repetitions = 3
    assert e["within_cv"] == pytest.approx(np.sqrt(2) / 12) and e["between_cv"] == pytest.approx(np.sqrt(3) / 12)


def test_one_engine_start_is_labelled_within_and_fewer_than_three_values_a_range():
    e = uncertainty.estimate(*_values({0: [9, 10, 11]}))
    assert e["interval"] == "t, within one engine start" and e["n"] == 3 and np.isnan(e["between_cv"])
    two = uncertainty.estimate(*_values({0: [9, 11], 1: [13, 15]}))
    assert two["interval"] == "range" and (two["ci_low"], two["ci_high"]) == (10, 14)
    one = uncertainty.estimate(*_values({0: [7.0]}))
    assert one["interval"] == "range" and one["ci_low"] == one["ci_high"] == 7.0


def test_summarize_levels_flags_unstable_low_n_and_failed_checks():
    rows = [{"replicate": 0, "level_kind": "concurrency", "level_value": 4.0, "repetition": r, "n_errors": 0,
             "saturated": False, "steady": True, "low_n": r == 2, "output_tok_per_s": v,
             "checks_failed": "littles off by -4.0% (tolerance 3%)" if r == 1 else ""}
            for r, v in enumerate([100.0, 110.0, 120.0])]
    s = uncertainty.summarize_levels(pd.DataFrame(rows)).iloc[0]
    assert s["output_tok_per_s"] == 110 and s["output_tok_per_s_interval"] == "t, within one engine start"
    assert s["output_tok_per_s_cv"] == pytest.approx(10 / 110) and s["unstable"] and s["low_n"]
    assert s["checks_failed"] == "rep 1: littles off by -4.0% (tolerance 3%)"
    assert s["replicates"] == 1 and s["repetitions"] == 3


def test_half_width_for_the_adaptive_mode():
    assert uncertainty.half_width_pct(np.array([100.0, 100.0, 100.0])) == 0
    assert uncertainty.half_width_pct(np.array([100.0])) == np.inf
    # sd 14.14, / root 2 = 10 tok/s, x t(1) 12.706 = 127 tok/s on a mean of 100
    assert uncertainty.half_width_pct(np.array([90.0, 110.0])) == pytest.approx(127.06)


def test_best_levels_meeting_slo_use_every_request_of_the_level():
    summary = pd.DataFrame([
        dict(level_kind="concurrency", level_value=1.0, ttft_p99_level_ms=100, tpot_p99_level_ms=10, n_errors=0,
             saturated=False),
        dict(level_kind="concurrency", level_value=8.0, ttft_p99_level_ms=900, tpot_p99_level_ms=20, n_errors=0,
             saturated=False, ttft_p99_ms=200),  # its interval alone would meet 500 ms: the start-up wave does not
    ])
    assert uncertainty.best_levels_meeting_slo(summary, 500, 30)["concurrency"] == 1.0
