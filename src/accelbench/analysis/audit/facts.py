"""Checks of a document against params/: model architecture against the public config (params/models/),
instance facts and prices against params/instances.yaml."""

from __future__ import annotations

from collections.abc import Iterator

from accelbench.analysis import roofline
from accelbench.analysis.audit.check import (
    TOL_PRICE_PCT,
    TOL_ROUNDING_PCT,
    Check,
    Context,
    Finding,
    close,
    g,
    not_checkable,
)
from accelbench.config.params import Instance, Sourced
from accelbench.config.reference import Figure

ACCELERATOR_TOKENS = ("H200", "H100", "A100", "A10G", "L40S", "Trainium2", "Inferentia2")
# document metric -> the Hugging Face config field it states
ARCH_KEYS = {"hidden_size": "hidden_size", "num_hidden_layers": "num_hidden_layers",
             "num_attention_heads": "num_attention_heads", "num_key_value_heads": "num_key_value_heads",
             "num_routed_experts": "num_local_experts", "num_experts_per_tok": "num_experts_per_tok",
             "context_window_tokens": "max_position_embeddings"}


def architecture(ctx: Context) -> Iterator[Finding]:
    """Stated parameter counts and config fields against params/models/<model>.yaml."""
    for f in ctx.doc.figures:
        if f.model is None or f.metric not in (*ARCH_KEYS, "total_params_b", "active_params_b"):
            continue
        m = ctx.models[f.model]
        cfg = roofline.text_config(m)
        where = f"params/models/{m.name}.yaml"
        if f.metric in ("total_params_b", "active_params_b"):
            x, field, tol = getattr(m, f.metric), f.metric, TOL_ROUNDING_PCT
        else:
            field = ARCH_KEYS[f.metric]
            x = cfg.get(field)
            field = ("text_config." if "text_config" in m.hf_config else "hf_config.") + field
            tol = 5.0 if f.metric == "context_window_tokens" else 0.0
        if x is None:
            yield not_checkable(f"{f.model}: {f.metric} = {g(f.value)}", f"{where} has no {field}", ctx.src(f),
                                f"not checkable: {where} has no {field}")
            continue
        extra = ""
        if f.metric == "num_experts_per_tok" and cfg.get("model_type") == "llama4_text":
            extra = " routed (Llama 4 adds one shared expert to every token)"
        yield Finding(f"{m.display_name}: {f.metric} = {g(f.value)} ({f.quote})",
                      f"{where} {field} = {g(float(x))}{extra}; stated {g(f.value)}"
                      + (f", tolerance {tol:g}%" if tol else ""),
                      close(f.value, float(x), tol) if tol else float(x) == f.value,
                      ctx.src(f, extra=f"{m.source} (read {m.source_date}) via {where}"))


def _named_accelerator(ctx: Context, f: Figure, inst: Instance, where: str) -> Iterator[Finding]:
    """Once per hardware label: the accelerator the label names against the instance's."""
    if not ctx.first_time("instance_facts", (f.hardware_label, f.instance)):
        return
    named = [t for t in ACCELERATOR_TOKENS if t.lower() in f.hardware_label.lower()]
    if named:
        yield Finding(f"'{f.hardware_label}' names an {named[0]}", f"{where}.accelerator_name = {inst.accelerator_name}",
                      named[0].lower() in inst.accelerator_name.lower(), ctx.src(f))


def _stated_fact(ctx: Context, f: Figure, inst: Instance, where: str) -> Finding | None:
    """The figure's own fact (count, memory, bandwidth, peak, price) against the instance's, if it is one."""
    n = inst.accelerator_count
    if f.metric == "accelerator_count":
        return Finding(f"{inst.name}: {g(f.value)} accelerators ({f.quote})",
                       f"{where}.accelerator_count = {n}; stated {g(f.value)}", f.value == n, ctx.src(f))
    if f.metric == "price_usd_per_hour":
        p = inst.prices.on_demand_usd_per_hour
        if p is None:
            return not_checkable(f"{inst.name}: ${g(f.value)}/h", f"{where} has no on-demand price", ctx.src(f),
                                 "not checkable: no on-demand price in params/instances.yaml")
        claim = f"{inst.name}: ${g(f.value)}/h on demand ({f.quote})"
        text = f"{where}.prices.on_demand_usd_per_hour = {g(p.value)}; stated {g(f.value)} " \
               f"({100 * (f.value / p.value - 1):+.1f}%)"
        return _against(ctx, f, claim, text, close(f.value, p.value, TOL_PRICE_PCT), p)
    mem, bw, peak = inst.memory_per_accelerator_gb, inst.memory_bandwidth_per_accelerator_gb_s, \
        inst.peak_dense_bf16_tflop_s
    if f.metric == "memory_per_accelerator_gb":
        claim = f"{inst.name}: {g(f.value)} GB per accelerator"
        text = f"{where}.memory_per_accelerator_gb = {g(mem.value)}; stated {g(f.value)}"
        return _against(ctx, f, claim, text, close(f.value, mem.value, TOL_ROUNDING_PCT), mem)
    if f.metric == "total_accelerator_memory_gb":
        claim = f"{inst.name}: {g(f.value)} GB of accelerator memory ({f.quote})"
        text = f"{n} x {g(mem.value)} GB = {g(n * mem.value)} GB ({where}); stated {g(f.value)}"
        return _against(ctx, f, claim, text, close(f.value, n * mem.value, TOL_ROUNDING_PCT), mem)
    if f.metric == "memory_bandwidth_gb_s":
        claim = f"{f.hardware_label}: memory bandwidth {g(f.value)} GB/s ({f.quote})"
        text = f"{where}: {g(bw.value)} GB/s per accelerator, {n} x {g(bw.value)} = {g(n * bw.value)} GB/s per " \
               f"instance; stated {g(f.value)} (holds if it matches either)"
        ok = close(f.value, bw.value, TOL_ROUNDING_PCT) or close(f.value, n * bw.value, TOL_ROUNDING_PCT)
        return _against(ctx, f, claim, text, ok, bw)
    if f.metric == "peak_fp16_tflop_s":
        claim = f"{f.hardware_label}: {g(f.value)} TFLOP/s FP16 ({f.quote})"
        text = f"{n} x {g(peak.value)} dense BF16/FP16 TFLOP/s = {g(n * peak.value)} ({where}); stated {g(f.value)}"
        return _against(ctx, f, claim, text, close(f.value, n * peak.value, TOL_ROUNDING_PCT), peak)
    return None


def _against(ctx: Context, f: Figure, claim: str, arithmetic: str, holds: bool, fact: Sourced) -> Finding:
    """A finding whose source cites the figure and the params/ fact it was held against."""
    return Finding(claim, arithmetic, holds, ctx.src(f, extra=f"{fact.source} ({fact.date})"))


def instance_facts(ctx: Context) -> Iterator[Finding]:
    """Per figure about an instance: the accelerator its label names, then the fact it states."""
    for f in ctx.doc.figures:
        if f.instance is None:
            continue
        inst = ctx.instances[f.instance]
        where = f"params/instances.yaml {inst.name}"
        yield from _named_accelerator(ctx, f, inst, where)
        fact = _stated_fact(ctx, f, inst, where)
        if fact is not None:
            yield fact


CHECKS = (
    Check("architecture", "architecture vs public config", architecture),
    Check("instance_facts", "instance facts vs params/instances.yaml", instance_facts),
)
