"""CPU backend: vLLM's CPU build on the machine at hand (the embedded default scenario)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from accelbench.config.params import Resolved
from accelbench.measure.engines.common import base_engine_kwargs


def check_host(resolved: Resolved) -> dict[str, Any]:
    return {"backend": "cpu", "logical_cpus": os.cpu_count()}


def engine_env(resolved: Resolved) -> dict[str, str]:
    space = resolved.scenario.engine.cpu_kvcache_space_gb
    return {"VLLM_CPU_KVCACHE_SPACE": str(space)} if space else {}


def engine_kwargs(resolved: Resolved, model_dir: Path) -> dict[str, Any]:
    return base_engine_kwargs(resolved, model_dir)
