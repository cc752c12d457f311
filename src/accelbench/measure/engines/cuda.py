"""CUDA backend: vLLM on NVIDIA GPUs, tensor parallel over the GPUs of one host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from accelbench.config.params import Resolved
from accelbench.core.memory import require_fit
from accelbench.errors import AccelbenchError
from accelbench.measure.engines.common import base_engine_kwargs


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def select_visible(gpus: list[dict[str, Any]], cuda_visible_devices: str | None) -> list[dict[str, Any]]:
    """The GPUs CUDA will use, in CUDA's order: NVML ignores CUDA_VISIBLE_DEVICES, so apply it here."""
    if cuda_visible_devices is None:
        return gpus
    chosen = []
    for token in filter(None, (t.strip() for t in cuda_visible_devices.split(","))):
        match = [g for g in gpus if (token.isdigit() and g["index"] == int(token)) or g["uuid"].startswith(token)]
        if not match:
            break  # CUDA stops at the first invalid entry too
        chosen.append(match[0])
    return chosen


def visible_gpus() -> list[dict[str, Any]]:
    """GPUs this process may use (NVML indices), or [] with no NVIDIA driver (nvidia-ml-py imported lazily)."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # no library, no driver: both mean no usable GPU here
        return []
    gpus = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        gpus.append({"index": i, "name": _text(pynvml.nvmlDeviceGetName(h)), "uuid": _text(pynvml.nvmlDeviceGetUUID(h)),
                     "memory_total_gb": pynvml.nvmlDeviceGetMemoryInfo(h).total / 1e9})
    return select_visible(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))


def check_host(resolved: Resolved) -> dict[str, Any]:
    gpus = visible_gpus()
    tp = resolved.scenario.engine.tensor_parallel_size
    if not gpus:
        mask = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise AccelbenchError(
            f"scenario '{resolved.scenario.name}' needs the cuda backend, but this host has no NVIDIA GPU: "
            "looked for an NVIDIA driver through NVML (nvidia-ml-py) and found none"
            + (f" that CUDA_VISIBLE_DEVICES={mask!r} leaves visible" if mask is not None else "")
            + ". Run it on a GPU instance, or choose the 'cpu' scenario here.")
    if len(gpus) < tp:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' needs tensor_parallel_size={tp} GPUs, "
                              f"this host has {len(gpus)}: {[g['name'] for g in gpus]}")
    require_fit(resolved, min(g["memory_total_gb"] for g in gpus[:tp]))
    return {"backend": "cuda", "gpus": gpus[:tp]}


def engine_env(resolved: Resolved) -> dict[str, str]:
    # spawn, not fork: the notebook process may already hold a CUDA context (NVML, torch), and a
    # forked engine core cannot initialize CUDA after that
    return {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}


def engine_kwargs(resolved: Resolved, model_dir: Path) -> dict[str, Any]:
    return base_engine_kwargs(resolved, model_dir)
