"""The spread between engine starts and the start-policy view, on the committed H200 runs with replicates."""

import pytest

from accelbench.analysis import spread
from accelbench.config import paths


def test_engine_starts_lists_runs_with_several_starts_and_their_variance_split():
    e = spread.engine_starts(paths.OUTPUTS_DIR)
    long = e[(e["run_label"] == "h200 · cv-512-128-long") & (e["level_value"] == 128.0)].iloc[0]
    assert long["replicates"] == 3 and long["output_tok_per_s_interval"] == "t, engine starts"
    assert long["output_tok_per_s_ci_low"] < long["output_tok_per_s"] < long["output_tok_per_s_ci_high"]
    assert 0 <= long["output_tok_per_s_between_cv"] < 0.03  # the spread between starts at 128, under 3%
    scout = e[e["run_label"].str.startswith("h200x2-scout")].iloc[0]
    assert scout["replicates"] == 2 and scout["output_tok_per_s_interval"] == "range"  # 2 values: a range


def test_start_policy_puts_both_policies_beside_their_step_mix():
    p = spread.start_policy(paths.OUTPUTS_DIR).set_index(["closed_loop_start", "run_label", "level_value"])
    stag = p.loc[("staggered", "h200 · cv-512-128", 128.0)]
    simul = p.loc[("simultaneous", "h200 · cv-512-128-simultaneous", 128.0)]
    # every request's p99 carries the start-up wave when all clients start at once; the interval's does not
    assert simul["ttft_p99_level_ms"] > 5 * stag["ttft_p99_level_ms"]
    assert simul["ttft_p99_ms"] == pytest.approx(stag["ttft_p99_ms"], rel=0.2)
    # fewer, longer steps finish prefills under simultaneous starts
    assert simul["prefill_steps_pct"] < stag["prefill_steps_pct"]
    assert simul["prefill_step_mean_ms"] > stag["prefill_step_mean_ms"]
