"""CUDA backend: vLLM on NVIDIA GPUs, tensor parallel over the GPUs of one host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accelbench.engines.common import base_engine_kwargs
from accelbench.errors import AccelbenchError
from accelbench.params import Resolved
from accelbench.planner import require_fit


def visible_gpus() -> list[dict[str, Any]]:
    """GPUs NVML reports, or [] when there is no NVIDIA driver (nvidia-ml-py imported lazily)."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # no library, no driver: both mean no usable GPU here
        return []
    gpus = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        name = pynvml.nvmlDeviceGetName(h)
        gpus.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                     "memory_total_gb": pynvml.nvmlDeviceGetMemoryInfo(h).total / 1e9})
    return gpus


def check_host(resolved: Resolved) -> dict[str, Any]:
    gpus = visible_gpus()
    tp = resolved.scenario.engine.tensor_parallel_size
    if not gpus:
        raise AccelbenchError(
            f"scenario '{resolved.scenario.name}' needs the cuda backend, but this host has no NVIDIA GPU: "
            "looked for an NVIDIA driver through NVML (nvidia-ml-py) and found none. Run it on a GPU "
            "instance, or choose the 'cpu' scenario here.")
    if len(gpus) < tp:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' needs tensor_parallel_size={tp} GPUs, "
                              f"this host has {len(gpus)}: {[g['name'] for g in gpus]}")
    require_fit(resolved, min(g["memory_total_gb"] for g in gpus[:tp]))
    return {"backend": "cuda", "gpus": gpus[:tp]}


def engine_env(resolved: Resolved) -> dict[str, str]:
    return {}


def engine_kwargs(resolved: Resolved, model_dir: Path) -> dict[str, Any]:
    return base_engine_kwargs(resolved, model_dir)
