"""The sweep: warm-up, closed-loop concurrency levels and open-loop rate levels, raw per-request records.

No file I/O and no plotting here: records go back to the caller (accelbench.measure.study), level by level.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from accelbench.config.params import Resolved, Workload
from accelbench.core import metrics, uncertainty
from accelbench.core.levels import Level, LevelEvent, plan_levels
from accelbench.measure.workload import (
    arrival_offsets_s,
    make_prompts,
    output_lengths,
    rng_for,
)


class Engine(Protocol):
    def generate(self, request_id: str, prompt_token_ids: list[int],
                 max_tokens: int) -> AsyncIterator[tuple[int, dict[str, Any] | None]]:
        """Yield (new output tokens, engine stats or None) as each chunk arrives."""
        ...


def warmup_concurrency(level: Level, workload: Workload) -> int:
    """Warm-up batch for a level: its own concurrency, so every batch shape it measures is compiled first."""
    if level.kind == "concurrency":
        return int(level.value)
    return (workload.rate_warmup_concurrency or workload.max_concurrency
            or max(workload.concurrency_levels, default=1))


class Clock:
    """Seconds since the run started (perf_counter), plus the wall time of that start."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.wall_t0 = time.time()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0


async def one_request(engine: Engine, request_id: str, prompt: list[int], max_tokens: int,
                      clock: Clock, scheduled_s: float | None = None) -> dict[str, Any]:
    chunk_times: list[float] = []
    chunk_tokens: list[int] = []
    stats: dict[str, Any] | None = None
    error = None
    submit = clock()
    try:
        async for n_new, s in engine.generate(request_id, prompt, max_tokens):
            chunk_times.append(clock())
            chunk_tokens.append(n_new)
            stats = s or stats
    except Exception as e:  # recorded per request; the level decides what an error means
        error = f"{type(e).__name__}: {e}"
    out = sum(chunk_tokens)
    if error is None and out != max_tokens:
        error = f"short output: {out} of {max_tokens} tokens"
    return dict(
        request_id=request_id, scheduled_s=submit if scheduled_s is None else scheduled_s, submit_s=submit,
        first_token_s=chunk_times[0] if chunk_times else None, end_s=chunk_times[-1] if chunk_times else None,
        chunk_times_s=chunk_times, chunk_tokens=chunk_tokens, input_tokens=len(prompt), output_tokens=out,
        error=error, **{f"engine_{k}": v for k, v in (stats or {}).items()})


async def closed_loop(engine: Engine, prompts: list[list[int]], concurrency: int, max_tokens: int | list[int],
                      clock: Clock, prefix: str, ramp_s: float = 0.0, think_s: float = 0.0,
                      phases: list[float] | None = None) -> list[dict[str, Any]]:
    """`concurrency` clients, each sending its next request when the previous one finishes (`think_s` later).

    Client k starts phases[k] x `ramp_s` late (phases default to k / concurrency). With fixed output
    lengths, clients that start together stay in lock-step: every request of a wave prefills at once and
    stalls the others' decode. Spreading the starts over one request's latency gives the steady mix a
    real closed-loop system has; output lengths that vary (`max_tokens` per prompt) keep it mixed.
    """
    lengths = max_tokens if isinstance(max_tokens, list) else [max_tokens] * len(prompts)
    pending = iter(enumerate(zip(prompts, lengths)))
    phases = phases if phases is not None else [k / concurrency for k in range(concurrency)]
    records: list[dict[str, Any]] = []

    async def client(k: int) -> None:
        await asyncio.sleep(phases[k] * ramp_s)
        for i, (prompt, n) in pending:
            records.append(await one_request(engine, f"{prefix}-{i}", prompt, n, clock) | {"client": k})
            if think_s:
                await asyncio.sleep(think_s)

    await asyncio.gather(*(client(k) for k in range(concurrency)))
    return records


async def open_loop(engine: Engine, prompts: list[list[int]], offsets_s: list[float], max_tokens: int | list[int],
                    clock: Clock, prefix: str, max_concurrency: int | None) -> list[dict[str, Any]]:
    """Requests sent at fixed arrival times whatever the engine's state, optionally capped in flight."""
    max_tokens = max_tokens if isinstance(max_tokens, list) else [max_tokens] * len(prompts)
    cap = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    start = clock()

    async def send(i: int, prompt: list[int], n: int, at: float) -> dict[str, Any]:
        if cap is None:
            return await one_request(engine, f"{prefix}-{i}", prompt, n, clock, at)
        async with cap:
            return await one_request(engine, f"{prefix}-{i}", prompt, n, clock, at)

    tasks = []
    for i, (prompt, n, offset) in enumerate(zip(prompts, max_tokens, offsets_s)):
        delay = start + offset - clock()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(send(i, prompt, n, start + offset)))
    return list(await asyncio.gather(*tasks))


def level_load(resolved: Resolved, level: Level, n: int, stream: int) -> tuple[list[list[int]], list[int]]:
    """Prompts and output lengths of `n` requests, seeded by (seed, level, stream): stream 0 measures,
    stream 1 warms up; every engine start of a run gets the same."""
    w = resolved.workload
    prompts = make_prompts(n, w.input_tokens, resolved.model.vocab_size, rng_for(w.seed, level.index, stream))
    return prompts, output_lengths(w, n, rng_for(w.seed, level.index, stream, 1))


async def measure_level(engine: Engine, resolved: Resolved, level: Level, clock: Clock,
                        ramp_s: float = 0.0) -> list[dict[str, Any]]:
    """One level's requests, raw. Closed-loop clients start at phases drawn for this level (seeded), over
    `ramp_s`; open-loop arrivals are drawn for it too."""
    w = resolved.workload
    prompts, lengths = level_load(resolved, level, level.num_requests, 0)
    prefix = f"R{level.replicate}L{level.index}"
    if level.kind == "concurrency":
        phases = sorted(rng_for(w.seed, level.index, 0, 2).uniform(size=int(level.value)).tolist())
        records = await closed_loop(engine, prompts, int(level.value), lengths, clock, prefix, ramp_s, phases=phases)
    else:
        offsets = arrival_offsets_s(level.num_requests, level.value, w.burstiness,
                                    rng_for(w.seed, level.index, 0, 3), arrival=w.arrival)
        records = await open_loop(engine, prompts, offsets.tolist(), lengths, clock, prefix, w.max_concurrency)
    for r in records:
        r.update(level_kind=level.kind, level_value=level.value, repetition=level.repetition,
                 replicate=level.replicate)
    return records


async def warm_up(engine: Engine, resolved: Resolved, level: Level, clock: Clock, ramp_s: float = 0.0) -> float:
    """Run the level's shapes once, unmeasured; return the median end-to-end latency seen (s).

    With `ramp_s` the clients start staggered, as the measured level's do: a prefill then shares steps
    with other requests' decodes, and the kernels for those mixed batch sizes are compiled here too.
    """
    w = resolved.workload
    n = max(w.warmup_requests, warmup_concurrency(level, w))
    prompts, lengths = level_load(resolved, level, n, 1)
    records = await closed_loop(engine, prompts, warmup_concurrency(level, w), lengths, clock,
                                f"R{level.replicate}W{level.index}", ramp_s)
    errors = [r["error"] for r in records if r["error"]]
    if errors:
        raise RuntimeError(f"warm-up for {level.label} failed: {errors[0]}")
    return statistics.median(r["end_s"] - r["submit_s"] for r in records)


async def sweep(engine: Engine, resolved: Resolved, clock: Clock,
                on_level: Callable[[Level, list[dict[str, Any]], float, float], None],
                on_progress: Callable[[str], None] = print, stop_after_s: float | None = None,
                on_event: Callable[[LevelEvent], None] = lambda event: None, replicate: int = 0) -> list[Level]:
    """Measure every level of one engine start; hand each level's records to `on_level(level, records,
    start_s, end_s)`.

    Each level's first repetition is preceded by a warm-up at its own concurrency; with staggered
    closed-loop starts, clients start spread over the warm-up's median latency, and the warm-up's own
    clients over the previous level's (the first level has none to go by). With `max_repetitions` in the
    workload, a level is repeated beyond `repetitions` until the 95% interval of its output tok/s is
    within `target_half_width_pct` of the mean, or the maximum is reached. A level in which every request
    failed stops the sweep (the engine is most likely dead); what was measured is kept. With
    `stop_after_s`, no level starts once the clock has passed it; the levels left out are returned.
    `on_event` gets each level's start and end (core.levels.LevelEvent); `on_progress` only text for people.
    """
    w = resolved.workload
    ramp_s = 0.0
    planned = plan_levels(w, replicate)
    extra_index = len(planned)
    throughputs: list[float] = []
    queue = list(planned)
    while queue:
        level = queue.pop(0)
        if stop_after_s is not None and clock() > stop_after_s:
            left = [level] + [q for q in queue if q in planned]
            on_progress(f"stopping: {clock():.0f} s into the run is past stop_after_s={stop_after_s:g}; "
                        f"{len(left)} level(s) not measured")
            return left
        if level.repetition == 0:
            throughputs = []
            on_progress(f"warm-up for {level.kind} {level.value:g}")
            latency_s = await warm_up(engine, resolved, level, clock, ramp_s)
            ramp_s = latency_s if w.closed_loop_start == "staggered" else 0.0
        on_progress(f"measuring {level.label}: {level.num_requests} requests")
        start = clock()
        on_event(level.event("start", start))
        records = await measure_level(engine, resolved, level, clock, ramp_s)
        end = clock()
        on_event(level.event("end", end))
        for r in records:
            r["ramp_s"] = ramp_s if level.kind == "concurrency" else 0.0
        on_level(level, records, start, end)
        if records and all(r["error"] for r in records):
            raise RuntimeError(f"every request of {level.label} failed, first error: {records[0]['error']}")
        if w.max_repetitions:  # the adaptive mode alone needs the level's throughput between levels
            throughputs.append(metrics.level_row(metrics.request_table(records))["output_tok_per_s"])
        last_planned = not queue or queue[0].repetition == 0
        if last_planned and w.max_repetitions and len(throughputs) < w.max_repetitions \
                and uncertainty.half_width_pct(np.array(throughputs)) > w.target_half_width_pct:
            queue.insert(0, replace(level, repetition=level.repetition + 1, index=extra_index))
            extra_index += 1
    return []
