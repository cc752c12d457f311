"""vLLM's AsyncLLM in this process, streaming token-id outputs; the one engine every backend drives."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TextIO

from accelbench.config.params import Resolved
from accelbench.core.levels import LevelEvent
from accelbench.measure.engines import backend_module
from accelbench.measure.engines.common import write_model_dir

JIT_MARKER = "JIT compilation during inference"


def request_stats(m: Any) -> dict[str, Any] | None:
    """vLLM's RequestStateStats as plain fields (engine-core timestamps are monotonic seconds)."""
    if m is None:
        return None
    return dict(first_token_latency_s=m.first_token_latency or None,
                queued_s=(m.scheduled_ts - m.queued_ts) if m.scheduled_ts else None,
                prefill_s=(m.first_token_ts - m.scheduled_ts) if m.first_token_ts else None,
                decode_s=(m.last_token_ts - m.first_token_ts) if m.last_token_ts else None,
                num_preemptions=getattr(m, "num_preemptions", None))  # per request from vLLM 0.25 on


@contextlib.contextmanager
def captured_output(log_path: Path) -> Iterator[TextIO]:
    """Send this process's and its children's output to `log_path`, then restore.

    Yields a stream that still reaches the user (the notebook, or the terminal) for progress lines.

    vLLM's engine core and workers are child processes: their log lines, such as the JIT-compilation
    warning, reach us only through what they inherit. Spawned children inherit file descriptors 1
    and 2; forked ones also inherit sys.stdout/sys.stderr, which in Jupyter are objects that forward
    to the notebook, so both levels are redirected.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved_fds = [os.dup(1), os.dup(2)]
    saved_streams = sys.stdout, sys.stderr
    os.dup2(log, 1)
    os.dup2(log, 2)
    stream = open(log_path, "a", buffering=1)
    sys.stdout = sys.stderr = stream
    # a notebook's stdout is an object that forwards to the notebook; a terminal's is fd 1, now the log
    on_fd = hasattr(saved_streams[0], "fileno") and _fileno(saved_streams[0]) == 1
    user = os.fdopen(saved_fds[0], "w", buffering=1, closefd=False) if on_fd else saved_streams[0]
    try:
        yield user
    finally:
        user.flush()
        stream.flush()
        sys.stdout, sys.stderr = saved_streams
        stream.close()
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in (*saved_fds, log):
            os.close(fd)


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is an OSError: no descriptor behind it
        return None


def mark(log_path: Path, text: str) -> None:
    with open(log_path, "a") as f:
        f.write(f"[accelbench] {text}\n")


def jit_levels(log_path: Path) -> list[dict[str, Any]]:
    """Levels ({kind, value, repetition}) during whose measurement vLLM logged JIT compilation: lines
    between a level's start and end events (core.levels.LevelEvent) in the engine log."""
    current, hits = None, []
    for line in Path(log_path).read_text(errors="replace").splitlines():
        event = LevelEvent.parse_line(line)
        if event is not None:
            current = event.level if event.phase == "start" else None
        elif JIT_MARKER in line and current and current not in hits:
            hits.append(current)
    return hits


def step_tokens(iteration_stats: Any) -> dict[str, int | None]:
    """Prompt tokens whose prefill finished in this engine step and tokens generated in it (None where the
    vLLM release reports neither): a step with both mixed a prefill with decodes."""
    if iteration_stats is None:
        return {"prompt_tokens": None, "generation_tokens": None}
    prompt = getattr(iteration_stats, "num_prompt_tokens", None)
    if prompt is None and hasattr(iteration_stats, "prompt_token_stats"):
        prompt = iteration_stats.prompt_token_stats.total
    return {"prompt_tokens": prompt, "generation_tokens": getattr(iteration_stats, "num_generation_tokens", None)}


class SchedulerSampler:
    """Collects vLLM's per-step scheduler stats (KV-cache use, queue lengths) with a timestamp."""

    def __init__(self) -> None:
        self.samples: list[dict[str, float]] = []

    def factory(self) -> Any:
        from vllm.v1.metrics.loggers import StatLoggerBase
        samples = self.samples

        class Logger(StatLoggerBase):
            def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
                pass

            def record(self, scheduler_stats: Any, iteration_stats: Any, *args: Any, **kwargs: Any) -> None:
                if scheduler_stats is not None:
                    preempted = getattr(iteration_stats, "num_preempted_reqs", 0) if iteration_stats else 0
                    samples.append(dict(t=time.perf_counter(), kv_cache_usage=scheduler_stats.kv_cache_usage,
                                        running=scheduler_stats.num_running_reqs,
                                        waiting=scheduler_stats.num_waiting_reqs, preempted=preempted,
                                        **step_tokens(iteration_stats)))

            def log_engine_initialized(self) -> None:
                pass

        return Logger


@functools.cache
def sampling_params(max_tokens: int, stream: bool) -> Any:
    """Every request's sampling settings, as bench serve's requests have them: ignore_eos fixes the length
    (min_tokens would add a logits processor), no detokenization; `stream` yields deltas. One object per
    length is shared by all requests: vLLM clones it for each request it adds."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind
    kind = RequestOutputKind.DELTA if stream else RequestOutputKind.FINAL_ONLY
    return SamplingParams(max_tokens=max_tokens, ignore_eos=True, temperature=1.0, detokenize=False,
                          output_kind=kind)


class VllmEngine:
    """One AsyncLLM per run, built from a resolved scenario; shut down with `close()`."""

    def __init__(self, resolved: Resolved, cache_dir: Path) -> None:
        self.resolved = resolved
        self.backend = backend_module(resolved.scenario.backend)
        self.model_dir = write_model_dir(resolved, cache_dir)
        self.kwargs = self.backend.engine_kwargs(resolved, self.model_dir)
        self.scheduler = SchedulerSampler()
        self.llm: Any = None
        self.start_s: float | None = None
        self.effective: dict[str, Any] = {}  # settings vLLM chose itself, read back once it has started

    async def start(self) -> None:
        os.environ.update(self.backend.engine_env(self.resolved))
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM
        t = time.perf_counter()
        self.llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**self.kwargs),
                                             stat_loggers=[self.scheduler.factory()])
        self.start_s = time.perf_counter() - t
        sched = getattr(getattr(self.llm, "vllm_config", None), "scheduler_config", None)
        self.effective = {k: getattr(sched, k, None)
                          for k in ("max_num_batched_tokens", "max_num_seqs", "async_scheduling",
                                    "enable_chunked_prefill")}

    def serve_kwargs(self) -> dict[str, Any]:
        """Engine kwargs for `vllm serve` of the same config: vLLM picks a different default token budget
        per entry point (the OpenAI server's is larger than AsyncLLM's), so the budget this engine ran
        with is passed explicitly."""
        budget = self.effective.get("max_num_batched_tokens")
        return {**self.kwargs, **({"max_num_batched_tokens": budget} if budget else {})}

    async def generate(self, request_id: str, prompt_token_ids: list[int],
                       max_tokens: int) -> AsyncIterator[tuple[int, dict[str, Any] | None]]:
        params = sampling_params(max_tokens, stream=True)  # inside the timed window: built once, not per request
        async for out in self.llm.generate({"prompt_token_ids": prompt_token_ids}, params, request_id):
            yield len(out.outputs[0].token_ids), (request_stats(out.metrics) if out.finished else None)

    def close(self) -> None:
        if self.llm is not None:
            self.llm.shutdown()
            self.llm = None
