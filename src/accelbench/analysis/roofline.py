"""Roofline lower bounds: decode ITL from memory bandwidth, prefill TTFT from peak FLOP/s, and how close
measured runs come to them (efficiency % = bound / measured).

Definitions (the report's methods section quotes DECODE_BYTES and PREFILL_FLOPS):
- A decode step reads every active weight once plus the KV cache of every sequence in the batch, so
  ITL >= (active weight bytes + batch x context x KV bytes per token) / aggregate memory bandwidth.
  MoE models count active parameters only (params active_params_b): at batch > 1 different tokens
  route to different experts and a step reads more, so the bound stays a lower bound, a looser one.
  active_params_b includes the input embedding table, of which a step gathers only a few rows: for
  Llama 3.1 8B that overstates the bytes by about 6.5% (1.05 GB of 16.06 GB).
- Prefill of one prompt needs PREFILL_FLOPS at the aggregate peak dense FLOP/s, and reads every active
  weight once; TTFT >= the larger of the two. It ignores queueing behind other prompts, so at high
  concurrency measured TTFT sits far above it by design.
- The throughput ceiling at batch b is b tokens per decode-step bound (no speculative decoding).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.analysis import summary
from accelbench.config import paths
from accelbench.config.params import Instance, ModelConfig, Resolved
from accelbench.core.memory import bytes_per_param, precision_of
from accelbench.store import runs as results
from accelbench.store import runset
from accelbench.store.manifest import WHOLE_LEVELS

# FP8 dense peak on Hopper (H100, H200) is twice the BF16 dense peak in NVIDIA's datasheets. Other
# accelerators get no FP8 speed-up here (A100 has no FP8 tensor cores; for the rest params/ gives no FP8
# peak): for an fp8 run on them the compute term may overstate the bound.
FP8_PEAK_FACTOR = {"H100": 2.0, "H200": 2.0}
DECODE_BYTES = ("active_params_b x 1e9 x bytes per param + batch x context_tokens x 2 (K,V) x num_layers "
                "x num_kv_heads x head_dim x KV bytes")
ATTENTION_FLOPS = ("2 x num_layers x input_tokens^2 x num_attention_heads x head_dim (QK^T and AV, "
                   "2 FLOPs per multiply-add, halved by the causal mask)")
PREFILL_FLOPS = f"2 x active_params x input_tokens + {ATTENTION_FLOPS}"


def text_config(model: ModelConfig) -> dict[str, Any]:
    """The language-model part of a config (Llama 4 nests it under text_config)."""
    return model.hf_config.get("text_config", model.hf_config)


def head_dim(model: ModelConfig) -> int:
    cfg = text_config(model)
    return int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"])


def kv_bytes_per_token(model: ModelConfig, kv_bytes: float = 2.0) -> float:
    """K and V of one token over all layers: 2 x num_layers x num_kv_heads x head_dim x kv_bytes."""
    cfg = text_config(model)
    kv_heads = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    return 2.0 * cfg["num_hidden_layers"] * kv_heads * head_dim(model) * kv_bytes


def kv_bytes_of(precision: str) -> float:
    """KV-cache bytes per element: vLLM keeps the KV cache in the activation dtype unless told otherwise."""
    return 4.0 if precision == "float32" else 2.0


def weight_bytes(model: ModelConfig, precision: str, params_b: float | None = None) -> float:
    """Active weight bytes (or of `params_b` billion parameters, e.g. total_params_b for memory fit)."""
    return (model.active_params_b if params_b is None else params_b) * 1e9 * bytes_per_param(precision)


@dataclass(frozen=True)
class Hardware:
    """The accelerators a run uses, as aggregate figures from params/instances.yaml."""

    instance: str
    accelerator_name: str
    accelerators: int
    bandwidth_gb_s: float
    peak_bf16_tflop_s: float
    memory_gb: float

    def peak_tflop_s(self, precision: str) -> float:
        factor = 1.0
        if precision == "fp8":
            factor = next((f for name, f in FP8_PEAK_FACTOR.items() if name in self.accelerator_name), 1.0)
        return self.peak_bf16_tflop_s * factor


def hardware(instance: Instance, accelerators: int | None = None) -> Hardware:
    """Aggregate bandwidth, peak and memory of `accelerators` of an instance (all of them by default)."""
    n = accelerators or instance.accelerator_count
    return Hardware(instance=instance.name, accelerator_name=instance.accelerator_name, accelerators=n,
                    bandwidth_gb_s=n * instance.memory_bandwidth_per_accelerator_gb_s.value,
                    peak_bf16_tflop_s=n * instance.peak_dense_bf16_tflop_s.value,
                    memory_gb=n * instance.memory_per_accelerator_gb.value)


def decode_step_bytes(model: ModelConfig, precision: str, batch: int = 1, context_tokens: float = 0,
                      kv_bytes: float | None = None) -> float:
    kv = kv_bytes_of(precision) if kv_bytes is None else kv_bytes
    return weight_bytes(model, precision) + batch * context_tokens * kv_bytes_per_token(model, kv)


def decode_bound_ms(model: ModelConfig, hw: Hardware, precision: str, batch: int = 1,
                    context_tokens: float = 0, kv_bytes: float | None = None) -> float:
    """Lower bound on one decode step (= ITL), ms: DECODE_BYTES / aggregate bandwidth."""
    return decode_step_bytes(model, precision, batch, context_tokens, kv_bytes) / (hw.bandwidth_gb_s * 1e9) * 1e3


def max_output_tok_per_s(model: ModelConfig, hw: Hardware, precision: str, batch: int,
                         context_tokens: float = 0) -> float:
    """Bandwidth ceiling on output tokens/s at a batch: batch tokens per decode-step bound."""
    return batch / (decode_bound_ms(model, hw, precision, batch, context_tokens) / 1e3)


def prefill_flops(model: ModelConfig, input_tokens: int, include_attention: bool = True) -> float:
    """PREFILL_FLOPS for one prompt (attention term optional)."""
    linear = 2.0 * model.active_params_b * 1e9 * input_tokens
    if not include_attention:
        return linear
    cfg = text_config(model)
    attention = 2.0 * cfg["num_hidden_layers"] * input_tokens ** 2 * cfg["num_attention_heads"] * head_dim(model)
    return linear + attention


def prefill_compute_ms(model: ModelConfig, hw: Hardware, input_tokens: int, precision: str = "bfloat16",
                       include_attention: bool = True) -> float:
    return prefill_flops(model, input_tokens, include_attention) / (hw.peak_tflop_s(precision) * 1e12) * 1e3


def prefill_bound_ms(model: ModelConfig, hw: Hardware, input_tokens: int, precision: str = "bfloat16",
                     include_attention: bool = True) -> float:
    """Lower bound on TTFT of one prompt, ms: max(FLOPs / peak, active weight bytes / bandwidth)."""
    weights_ms = weight_bytes(model, precision) / (hw.bandwidth_gb_s * 1e9) * 1e3
    return max(prefill_compute_ms(model, hw, input_tokens, precision, include_attention), weights_ms)


def decode_context_tokens(input_tokens: int, output_tokens: int) -> float:
    """Mean context length over a request's decode steps: input + output / 2."""
    return input_tokens + output_tokens / 2


def level_batch(row: pd.Series) -> tuple[int, str]:
    """Sequences decoding together at a level: the concurrency, or for a rate level Little's law."""
    if row["level_kind"] == "concurrency":
        return int(row["level_value"]), "concurrency"
    in_flight = row.get("requests_per_s", np.nan) * row.get("e2e_p50_ms", np.nan) / 1e3
    if not np.isfinite(in_flight):
        return 1, "rate level, in-flight unknown: batch 1"
    return max(1, int(round(in_flight))), "rate level: requests_per_s x e2e_p50 (Little's law)"


def roofline_table(summary: pd.DataFrame, resolved: Resolved) -> pd.DataFrame:
    """Per level of one scenario: bounds next to the measured medians, and efficiency in percent.

    itl_efficiency_pct = decode_bound_ms / itl_p50_ms x 100; ttft_efficiency_pct = prefill_bound_ms /
    ttft_p50_ms x 100; throughput_efficiency_pct = output_tok_per_s / max_output_tok_per_s x 100.
    """
    model, w = resolved.model, resolved.workload
    hw = hardware(resolved.instance, resolved.scenario.accelerators_used)
    precision = precision_of(resolved)
    context = decode_context_tokens(w.input_tokens, w.output_tokens)
    prefill_ms = prefill_bound_ms(model, hw, w.input_tokens, precision)
    rows = []
    for _, r in summary.iterrows():
        batch, basis = level_batch(r)
        step_ms = decode_bound_ms(model, hw, precision, batch, context)
        ceiling = batch / (step_ms / 1e3)
        rows.append(dict(
            scenario=resolved.scenario.name, model=model.name, instance=hw.instance,
            accelerators_used=hw.accelerators, precision=precision,
            level_kind=r["level_kind"], level_value=r["level_value"], batch=batch, batch_basis=basis,
            context_tokens=context, decode_bound_ms=step_ms, itl_p50_ms=r.get("itl_p50_ms", np.nan),
            itl_efficiency_pct=100 * step_ms / r.get("itl_p50_ms", np.nan),
            prefill_bound_ms=prefill_ms, ttft_p50_ms=r.get("ttft_p50_ms", np.nan),
            ttft_efficiency_pct=100 * prefill_ms / r.get("ttft_p50_ms", np.nan),
            max_output_tok_per_s=ceiling, output_tok_per_s=r.get("output_tok_per_s", np.nan),
            throughput_efficiency_pct=100 * r.get("output_tok_per_s", np.nan) / ceiling))
    return pd.DataFrame(rows)


def roofline_for_run(run_dir: Path | str) -> pd.DataFrame:
    """roofline_table of one saved run, from the params stored in its manifest (not today's params/)."""
    s = summary.of_run(run_dir)
    if s.empty:
        return pd.DataFrame()
    manifest = results.load_manifest(run_dir)
    return roofline_table(s, manifest.resolved).assign(run_id=manifest.run_id)


@runset.per_run_set
def run_rooflines(output_dir: Path | str = paths.OUTPUTS_DIR, include_failed: bool = False) -> pd.DataFrame:
    """roofline_for_run of every completed or partial run (WHOLE_LEVELS) under output_dir, one table."""
    runs = runset.run_set(output_dir)
    parts = [roofline_for_run(runs.run_dir[run_id]) for run_id, m in runs.manifests.items()
             if include_failed or m.status in WHOLE_LEVELS]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
