"""Background accelerator telemetry per level: NVML on NVIDIA GPUs; absent (None) where none exists.

Samples land in one schema whatever the source (the neuron-monitor parser fills the same fields):
t (perf_counter s), power_w (summed over the accelerators the engine uses), util_pct (mean),
memory_used_gb (summed).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

from accelbench.core import metrics

Sample = dict[str, float | None]


class Sampler:
    """Calls `read()` every `interval_s` in a thread between start() and stop()."""

    def __init__(self, read: Callable[[], Sample], interval_s: float = 0.1) -> None:
        self.read, self.interval_s = read, interval_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="accelbench-telemetry")
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.samples.append({"t": time.perf_counter(), **self.read()})
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


def nvml_reader(gpu_indices: list[int]) -> Callable[[], Sample] | None:
    """A reader over the given GPUs, or None when NVML is not available."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in gpu_indices]
    except Exception:  # no NVML library or driver: telemetry is absent, not zero
        return None

    def read() -> Sample:
        power = sum(pynvml.nvmlDeviceGetPowerUsage(h) for h in handles) / 1e3
        util = float(np.mean([pynvml.nvmlDeviceGetUtilizationRates(h).gpu for h in handles]))
        mem = sum(pynvml.nvmlDeviceGetMemoryInfo(h).used for h in handles) / 1e9
        return {"power_w": power, "util_pct": util, "memory_used_gb": mem}

    return read


def summarize(samples: list[Sample], start_t: float, end_t: float, output_tokens: int) -> dict[str, Any]:
    """Per-level telemetry over [start_t, end_t]: energy (core.metrics.energy_between: power integrated over
    exactly the interval), mean power (energy / its length), J per output token, mean utilization and peak
    memory of the samples inside.

    Each figure uses the samples that carry it, so a source without power (neuron-monitor) still
    reports utilization and memory; a figure no sample carries is None, never zero.
    """
    window = [s for s in samples if start_t <= s["t"] <= end_t]
    powered = [s for s in samples if s.get("power_w") is not None]
    util = [s["util_pct"] for s in window if s.get("util_pct") is not None]
    mem = [s["memory_used_gb"] for s in window if s.get("memory_used_gb") is not None]
    row: dict[str, Any] = {"power_mean_w": None, "energy_j": None, "j_per_output_token": None,
                           "gpu_util_mean_pct": float(np.mean(util)) if util else None,
                           "memory_used_max_gb": float(max(mem)) if mem else None, "telemetry_samples": len(window)}
    energy = metrics.energy_between(np.array([s["t"] for s in powered]), np.array([s["power_w"] for s in powered]),
                                    start_t, end_t) if powered else None
    if energy is not None:
        row |= {"power_mean_w": energy / max(end_t - start_t, 1e-9), "energy_j": energy,
                "j_per_output_token": energy / output_tokens if output_tokens else None}
    return row
