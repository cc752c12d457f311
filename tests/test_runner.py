"""The sweep's time bound (stop_after_s) with a stand-in engine, down to the partial run folder it leaves."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pandas as pd
import pytest

from accelbench.config.params import resolve
from accelbench.errors import AccelbenchError
from accelbench.measure import study
from accelbench.measure.runner import Clock, closed_loop, plan_levels, sweep
from accelbench.store.runs import load_manifest

STEP_S = 0.002  # the stand-in engine's time per output token


class StandInEngine:
    """Streams one token per STEP_S; has what study.run_scenario reads from a VllmEngine."""

    def __init__(self, resolved: Any, cache_dir: Any) -> None:
        self.kwargs = {"model": "stand-in"}
        self.effective = {"max_num_batched_tokens": 2048}
        self.scheduler = type("Scheduler", (), {"samples": []})()
        self.start_s = 0.0
        self.submitted: list[tuple[str, float]] = []

    async def start(self) -> None:
        pass

    async def generate(self, request_id: str, prompt_token_ids: list[int], max_tokens: int):
        self.submitted.append((request_id, time.perf_counter()))
        for _ in range(max_tokens):
            await asyncio.sleep(STEP_S)
            yield 1, None

    def serve_kwargs(self) -> dict[str, Any]:
        return self.kwargs

    def close(self) -> None:
        pass


def run_sweep(stop_after_s: float | None) -> tuple[list[str], list[str]]:
    resolved = resolve("cpu", workload="cpu-smoke")
    measured: list[str] = []
    skipped = asyncio.run(sweep(StandInEngine(resolved, None), resolved, Clock(),
                                lambda level, *_: measured.append(level.label), lambda text: None, stop_after_s))
    return measured, [level.label for level in skipped]


def test_without_a_bound_every_planned_level_is_measured():
    measured, skipped = run_sweep(None)
    assert measured == [level.label for level in plan_levels(resolve("cpu", workload="cpu-smoke").workload)]
    assert skipped == []


def test_no_level_starts_after_the_bound_and_the_rest_are_returned():
    planned = [level.label for level in plan_levels(resolve("cpu", workload="cpu-smoke").workload)]
    # the first level starts at once (its warm-up and requests take at least 0.25 s); none after it
    measured, skipped = run_sweep(0.1)
    assert measured == planned[:1] and skipped == planned[1:]


def test_a_bounded_run_is_saved_marked_partial_naming_what_it_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    run = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path, stop_after_s=0.1)
    manifest = load_manifest(run.run_dir)
    assert run.status == manifest.status == "partial"
    assert manifest.levels_measured == 1 and manifest.levels_planned == 6
    assert manifest.stop_after_s == 0.1 and "5 planned level(s) not measured" in manifest.error
    assert "concurrency 1 rep 1" in manifest.error and "rate 4 req/s rep 1" in manifest.error
    assert len(pd.read_parquet(run.run_dir / "levels.parquet")) == 1
    with pytest.raises(AccelbenchError, match="the run is partial: .* 1 measured level\\(s\\) were saved, marked partial"):
        study.raise_if_failed(run)


def test_rate_levels_warm_up_at_the_batch_the_workload_names():
    from accelbench.measure.runner import warmup_concurrency
    rates = resolve("h200x2-scout", workload="scout-512-128-rates").workload
    both = resolve("h200x2-scout", workload="scout-512-128").workload
    rate_level = [level for level in plan_levels(rates) if level.kind == "rate"][0]
    assert warmup_concurrency(rate_level, rates) == 64 == warmup_concurrency(rate_level, both)
    assert warmup_concurrency(rate_level, rates.model_copy(update={"rate_warmup_concurrency": None})) == 1


def warm_up_spread_s(closed_loop_start: str) -> float:
    """Seconds between the first and last submission of the concurrency-4 level's warm-up."""
    resolved = resolve("cpu", workload="cpu-smoke")
    resolved = resolved.model_copy(update={"workload": resolved.workload.model_copy(
        update={"closed_loop_start": closed_loop_start})})
    engine = StandInEngine(resolved, None)
    asyncio.run(sweep(engine, resolved, Clock(), lambda *_: None, lambda text: None))
    (index,) = [level.index for level in plan_levels(resolved.workload) if level.label == "concurrency 4 rep 0"]
    times = [t for request_id, t in engine.submitted if request_id.startswith(f"R0W{index}-")]
    return max(times) - min(times)


def test_warm_up_clients_start_staggered_like_the_level_they_precede():
    # the previous level's latency is 16 tokens x 2 ms at least: 4 clients start >= 3/4 of it apart
    assert warm_up_spread_s("staggered") >= 0.75 * 16 * STEP_S
    assert warm_up_spread_s("simultaneous") < 0.75 * 16 * STEP_S


def test_a_closed_loop_client_waits_think_s_between_its_requests():
    engine = StandInEngine(None, None)
    records = asyncio.run(closed_loop(engine, [[1]] * 3, 1, 2, Clock(), "t", think_s=0.02))
    gaps = [b["submit_s"] - a["end_s"] for a, b in zip(records, records[1:])]
    assert len(gaps) == 2 and all(g >= 0.02 for g in gaps)
    assert all(r["error"] is None and r["output_tokens"] == 2 for r in records)


@pytest.mark.parametrize("bad", [0, -5, "600", True])
def test_a_bound_that_is_not_a_positive_number_is_refused_before_anything_runs(tmp_path, bad):
    with pytest.raises(AccelbenchError, match=f"stop_after_s must be a positive number of seconds .*got {bad!r}"):
        study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path, stop_after_s=bad)
    assert not any(tmp_path.iterdir())


def _cpu_smoke(**update: Any):
    resolved = resolve("cpu", workload="cpu-smoke")
    return resolved.model_copy(update={"workload": resolved.workload.model_copy(update=update)})


def _records(resolved) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    asyncio.run(sweep(StandInEngine(resolved, None), resolved, Clock(), lambda level, r, *_: records.extend(r),
                      lambda text: None))
    return records


def test_output_lengths_are_drawn_around_the_mean_and_seeded_per_level():
    records = _records(_cpu_smoke())  # 16 tokens, range ratio 0.25: 12 to 20
    lengths = [r["output_tokens"] for r in records]
    assert min(lengths) >= 12 and max(lengths) <= 20 and len(set(lengths)) > 3
    assert all(r["error"] is None for r in records)
    again = {r["request_id"]: r["output_tokens"] for r in _records(_cpu_smoke())}
    assert again == {r["request_id"]: r["output_tokens"] for r in records}  # same seed, same draws
    assert {r["output_tokens"] for r in _records(_cpu_smoke(output_tokens_range_ratio=0.0))} == {16}


def test_closed_loop_clients_start_at_their_phases_of_the_ramp():
    engine = StandInEngine(None, None)
    # each request takes 100 tokens x 2 ms, longer than the ramp: every client gets one prompt
    records = asyncio.run(closed_loop(engine, [[1]] * 3, 3, 100, Clock(), "t", ramp_s=0.2, phases=[0.0, 0.5, 0.25]))
    first = {r["client"]: r["submit_s"] for r in records}
    assert first[1] - first[0] == pytest.approx(0.1, abs=0.02) and first[2] - first[0] == pytest.approx(0.05, abs=0.02)


def test_adaptive_mode_repeats_a_level_until_its_interval_is_tight_or_the_maximum():
    def reps(target: float) -> dict[tuple[str, float], int]:
        records = _records(_cpu_smoke(max_repetitions=4, target_half_width_pct=target))
        return pd.DataFrame(records).groupby(["level_kind", "level_value"])["repetition"].nunique().to_dict()
    assert set(reps(1e-9).values()) == {4}  # never tight enough: up to the maximum
    assert set(reps(1e9).values()) == {2}  # tight at once: the planned repetitions only


def test_replicates_measure_every_level_on_engines_started_one_after_another(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    run = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path, replicates=2)
    manifest = load_manifest(run.run_dir)
    planned = len(plan_levels(resolve("cpu", workload="cpu-smoke").workload))
    assert run.status == "completed" and manifest.replicates == 2 and len(manifest.engine_starts_s) == 2
    assert manifest.levels_planned == manifest.levels_measured == 2 * planned
    levels = pd.read_parquet(run.run_dir / "levels.parquet")
    assert sorted(levels["replicate"].unique()) == [0, 1]
    summary = run.summary()
    assert set(summary["replicates"]) == {2} and set(summary["output_tok_per_s_interval"]) == {"range"}
    with pytest.raises(AccelbenchError, match="replicates must be a whole number of engine starts from 1 to 20"):
        study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path, replicates=0)
