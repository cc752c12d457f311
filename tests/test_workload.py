import asyncio

import numpy as np
import pytest

from accelbench.config.params import load_workload
from accelbench.measure import runner
from accelbench.measure.workload import (
    FIRST_ORDINARY_TOKEN_ID,
    arrival_offsets_s,
    make_prompts,
    rng_for,
)


@pytest.mark.parametrize("burstiness", [1.0, 0.5, 4.0])
def test_arrivals_mean_gap_within_two_percent_over_10000_draws(burstiness):
    offsets = arrival_offsets_s(10_001, 8.0, burstiness, rng_for(0, 1))
    assert offsets[0] == 0.0
    assert np.diff(offsets).mean() == pytest.approx(1 / 8.0, rel=0.02)


def test_burstier_arrivals_have_larger_gap_spread():
    cv = {b: (lambda g: g.std() / g.mean())(np.diff(arrival_offsets_s(10_001, 8.0, b, rng_for(0, 2))))
          for b in (0.5, 1.0, 4.0)}
    # gamma CV is 1/sqrt(shape): 1.41, 1.0, 0.5
    assert cv[0.5] == pytest.approx(2 ** 0.5, rel=0.05) and cv[1.0] == pytest.approx(1, rel=0.05)
    assert cv[4.0] == pytest.approx(0.5, rel=0.05)


def test_poisson_arrivals_are_the_exponential_draw():
    # Poisson arrivals = exponential gaps = the gamma of shape 1: the same numbers from the same stream
    offsets = arrival_offsets_s(5, 4.0, 1.0, rng_for(3, 0), arrival="poisson")
    gaps = rng_for(3, 0).exponential(scale=1 / 4.0, size=5)
    assert offsets == pytest.approx(np.cumsum(gaps) - gaps[0], rel=1e-12)
    assert offsets == pytest.approx(arrival_offsets_s(5, 4.0, 1.0, rng_for(3, 0), arrival="gamma"), rel=1e-12)
    cv = (lambda g: g.std() / g.mean())(np.diff(arrival_offsets_s(10_001, 8.0, 1.0, rng_for(0, 3), "poisson")))
    assert cv == pytest.approx(1, rel=0.05)  # the exponential's coefficient of variation is 1


def test_gamma_arrivals_draw_gaps_of_shape_burstiness():
    offsets = arrival_offsets_s(5, 4.0, 0.5, rng_for(3, 0), arrival="gamma")
    gaps = rng_for(3, 0).gamma(shape=0.5, scale=1 / (4.0 * 0.5), size=5)
    assert offsets == pytest.approx(np.cumsum(gaps) - gaps[0], rel=1e-12)


def test_poisson_arrivals_with_burstiness_are_refused():
    with pytest.raises(ValueError, match="Poisson arrivals have burstiness 1, got 2.0"):
        arrival_offsets_s(5, 4.0, 2.0, rng_for(0, 0), arrival="poisson")
    with pytest.raises(ValueError, match="unknown arrival 'uniform'; valid: poisson, gamma"):
        arrival_offsets_s(5, 4.0, 1.0, rng_for(0, 0), arrival="uniform")


@pytest.mark.parametrize("name", ["cpu-smoke", "idle-512-128"])
def test_workload_arrival_drives_the_draws(name):
    w = load_workload(name)
    drawn = arrival_offsets_s(10_001, 8.0, w.burstiness, rng_for(w.seed, 0), arrival=w.arrival)
    cv = np.diff(drawn).std() / np.diff(drawn).mean()
    # cpu-smoke is Poisson (CV 1); idle-512-128 is gamma of shape 50, near-regular (CV 1/sqrt(50) = 0.14)
    assert cv == pytest.approx({"poisson": 1.0, "gamma": 50 ** -0.5}[w.arrival], rel=0.05)
    # the draw without `arrival` (gamma of shape burstiness) is the same numbers: a valid workload's
    # burstiness already says its arrival's shape
    assert drawn == pytest.approx(arrival_offsets_s(10_001, 8.0, w.burstiness, rng_for(w.seed, 0)), rel=1e-12)


def test_prompts_are_seeded_and_avoid_special_ids():
    a = make_prompts(3, 50, 4096, rng_for(7, 0))
    assert a == make_prompts(3, 50, 4096, rng_for(7, 0))
    assert a != make_prompts(3, 50, 4096, rng_for(7, 1))
    assert all(len(p) == 50 and min(p) >= FIRST_ORDINARY_TOKEN_ID and max(p) < 4096 for p in a)


def test_plan_levels_repeats_each_level_and_sizes_it():
    w = load_workload("cpu-smoke")
    levels = runner.plan_levels(w)
    assert [(lv.kind, lv.value, lv.repetition) for lv in levels] == [
        ("concurrency", 1.0, 0), ("concurrency", 1.0, 1), ("concurrency", 4.0, 0), ("concurrency", 4.0, 1),
        ("rate", 4.0, 0), ("rate", 4.0, 1)]
    assert [lv.num_requests for lv in levels] == [6, 6, 12, 12, 8, 8]  # max(6, 3*c); max(6, 4 req/s * 2 s)


class CountingEngine:
    """Stands in for vLLM only to observe how many requests the load generator keeps in flight."""

    def __init__(self, token_s=0.001):
        self.in_flight = self.peak = 0
        self.token_s = token_s

    async def generate(self, request_id, prompt, max_tokens):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        for _ in range(max_tokens):
            await asyncio.sleep(self.token_s)
            yield 1, None
        self.in_flight -= 1


def test_closed_loop_keeps_exactly_concurrency_requests_in_flight():
    eng = CountingEngine()
    records = asyncio.run(runner.closed_loop(eng, [[11] * 4] * 12, 3, 5, runner.Clock(), "t"))
    assert len(records) == 12 and eng.peak == 3
    assert all(r["output_tokens"] == 5 and r["error"] is None for r in records)


def test_open_loop_cap_limits_in_flight_and_records_lateness():
    eng = CountingEngine()
    offsets = [0.0] * 6  # all arrive at once; a cap of 2 makes four of them wait
    records = asyncio.run(runner.open_loop(eng, [[11] * 4] * 6, offsets, 5, runner.Clock(), "t", 2))
    assert eng.peak == 2
    assert sum(r["submit_s"] - r["scheduled_s"] > 0.004 for r in records) >= 4


def test_short_output_is_an_error():
    class Short(CountingEngine):
        async def generate(self, request_id, prompt, max_tokens):
            yield 1, None

    rec = asyncio.run(runner.one_request(Short(), "x", [11], 3, runner.Clock()))
    assert rec["error"] == "short output: 1 of 3 tokens"


def test_staggered_clients_start_spread_over_the_ramp():
    eng = CountingEngine(token_s=0.1)  # a request takes 0.5 s, longer than the ramp
    records = asyncio.run(runner.closed_loop(eng, [[11] * 4] * 4, 4, 5, runner.Clock(), "t", ramp_s=0.4))
    first = sorted(r["submit_s"] for r in records)
    # client k starts k/4 of 0.4 s late: 0, 0.1, 0.2, 0.3
    assert [round(t - first[0], 1) for t in first] == [0.0, 0.1, 0.2, 0.3]
    assert eng.peak == 4
