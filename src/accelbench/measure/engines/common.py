"""Engine arguments every vLLM backend shares: dummy weights from a params config, token-id prompts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from accelbench.config.params import Resolved


def write_model_dir(resolved: Resolved, cache_dir: Path) -> Path:
    """Write the model's config.json where vLLM's dummy loader reads it; no weights, no tokenizer."""
    model_dir = Path(cache_dir) / resolved.model.name
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(resolved.model.hf_config, indent=2))
    return model_dir


def base_engine_kwargs(resolved: Resolved, model_dir: Path, jit_monitor: bool = True) -> dict[str, Any]:
    e = resolved.scenario.engine
    kwargs: dict[str, Any] = dict(
        model=str(model_dir),
        load_format="dummy",
        skip_tokenizer_init=True,
        tensor_parallel_size=e.tensor_parallel_size,
        dtype=e.dtype,
        max_model_len=e.max_model_len,
        gpu_memory_utilization=e.gpu_memory_utilization,
        max_num_seqs=e.max_num_seqs,
        enforce_eager=e.enforce_eager,
        seed=resolved.workload.seed,
        disable_log_stats=False,  # RequestStateStats (the engine's own timings) need stats on
    )
    if jit_monitor:  # log every JIT compile after vLLM's warm-up, not just the first: the run flags levels that had one
        kwargs["jit_monitor_verbose"] = True
    if e.quantization:
        kwargs["quantization"] = e.quantization
    if e.max_num_batched_tokens:
        kwargs["max_num_batched_tokens"] = e.max_num_batched_tokens
    if "vision_config" in resolved.model.hf_config:
        kwargs["limit_mm_per_prompt"] = {"image": 0}  # text-only benchmark: no vision encoder budget
    return kwargs
