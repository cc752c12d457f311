"""Checks of a document against physics (analysis.roofline): weights and context fit in memory, ITL and TTFT
no lower than the bandwidth and compute bounds, throughput no higher than the bandwidth ceiling.

Each check looks at one figure at a time; a figure whose hardware is not in params/instances.yaml gets a
"not checkable" row from the check its metric belongs to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from accelbench.analysis import roofline
from accelbench.analysis.audit.check import Check, Context, Finding, g, not_checkable
from accelbench.config.params import Instance, ModelConfig
from accelbench.config.reference import Figure
from accelbench.core.memory import bytes_per_param

SERVING_METRICS = ("ttft_ms", "itl_ms", "output_tok_per_s", "decode_tok_per_s_per_request", "requests_per_min",
                   "e2e_s")
DEPLOYMENT_METRICS = ("min_accelerators_bf16", "vllm_context_tokens")  # stated in BF16 whatever the document says
DECODE_METRICS = ("itl_ms", "decode_tok_per_s_per_request")
THROUGHPUT_METRICS = ("output_tok_per_s", "requests_per_min")


@dataclass(frozen=True)
class _Placed:
    """A figure on the hardware it runs on, with what its bounds need."""

    model: ModelConfig
    hw: roofline.Hardware
    inst: Instance
    precision: str
    label: str
    source: str


BoundCheck = Callable[[Context, Figure, _Placed], Iterator[Finding]]


def _precision(ctx: Context, f: Figure) -> str:
    return "bfloat16" if f.metric in DEPLOYMENT_METRICS else ctx.doc.precision or "bfloat16"


def _in_scope(f: Figure, metrics: tuple[str, ...]) -> bool:
    return f.model is not None and f.metric in metrics


def _place(ctx: Context, f: Figure) -> _Placed | None:
    """The figure's model on its hardware; None when the hardware is not in params/instances.yaml."""
    hw = ctx.hw(f)
    if hw is None:
        return None
    m, inst = ctx.models[f.model], ctx.instances[hw.instance]
    placed_as = "" if f.instance else f" as the document names it; {f.comparable_instance} stands in"
    label = f"{ctx.label(f)} [{hw.accelerators} x {inst.accelerator_name}, {g(hw.memory_gb)} GB{placed_as}]"
    source = (f"params/instances.yaml {inst.name}: {inst.memory_bandwidth_per_accelerator_gb_s.source}; "
              f"{inst.peak_dense_bf16_tflop_s.source}; params/models/{m.name}.yaml")
    return _Placed(m, hw, inst, _precision(ctx, f), label, source)


def _unplaced(ctx: Context, f: Figure) -> Finding:
    return not_checkable(f"{ctx.label(f)} {f.model}: {f.metric} {g(f.value)}",
                         "the hardware is not in params/instances.yaml", ctx.src(f),
                         "not checkable: hardware not in params/instances.yaml")


def _bound(metrics: tuple[str, ...]) -> Callable[[BoundCheck], Callable[[Context, Figure], Iterator[Finding]]]:
    """A bound check of figures of `metrics`, given them placed on their hardware; a figure whose hardware is
    not in params/instances.yaml gets a "not checkable" row instead."""
    def wrap(check: BoundCheck) -> Callable[[Context, Figure], Iterator[Finding]]:
        @functools.wraps(check)
        def find(ctx: Context, f: Figure) -> Iterator[Finding]:
            if not _in_scope(f, metrics):
                return
            p = _place(ctx, f)
            if p is None:
                yield _unplaced(ctx, f)
                return
            yield from check(ctx, f, p)
        return find
    return wrap


def _context_tokens(ctx: Context) -> float:
    return roofline.decode_context_tokens(ctx.doc.input_tokens or 0, ctx.doc.output_tokens or 0)


def weights_fit(ctx: Context, f: Figure) -> Iterator[Finding]:
    """Total weights against the memory of the accelerators: once per configuration the serving figures
    use, and once per stated minimum deployment."""
    if not _in_scope(f, (*SERVING_METRICS, "min_accelerators_bf16")):
        return
    p = _place(ctx, f)
    if p is None:
        return
    m, hw = p.model, p.hw
    key = (f.model, hw.instance, hw.accelerators, p.precision, f.id if f.metric == "min_accelerators_bf16" else "")
    if not ctx.first_time("weights_fit", key):
        return
    weights = roofline.weight_bytes(m, p.precision, m.total_params_b) / 1e9
    what = f"minimum hardware '{f.hardware_label}' ({f.quote})" if f.metric == "min_accelerators_bf16" \
        else f"{m.display_name} in {p.precision} on {p.label}"
    yield Finding(what,
                  f"{g(m.total_params_b)}B params x {g(bytes_per_param(p.precision))} bytes = "
                  f"{g(weights)} GB of weights vs {hw.accelerators} x "
                  f"{g(p.inst.memory_per_accelerator_gb.value)} GB = {g(hw.memory_gb)} GB",
                  weights <= hw.memory_gb, ctx.src(f, extra=p.source))


def context_fits(ctx: Context, f: Figure) -> Iterator[Finding]:
    """A stated servable context: weights + its KV cache in BF16 against memory (and with FP8 weights)."""
    if not _in_scope(f, ("vllm_context_tokens",)) or (p := _place(ctx, f)) is None:
        return
    m, hw = p.model, p.hw
    weights = roofline.weight_bytes(m, p.precision, m.total_params_b) / 1e9
    kv = f.value * roofline.kv_bytes_per_token(m, 2.0) / 1e9
    ok = weights + kv <= hw.memory_gb
    alt = ""
    if not ok:
        fp8 = roofline.weight_bytes(m, "fp8", m.total_params_b) / 1e9
        alt = f"; with FP8 weights {g(fp8)} + {g(kv)} = {g(fp8 + kv)} GB" + \
              (" would fit" if fp8 + kv <= hw.memory_gb else " would not fit either")
    yield Finding(f"{m.display_name}: {g(f.value)} tokens of context on {p.label} in BF16",
                  f"weights {g(weights)} GB + KV {g(f.value)} tokens x "
                  f"{g(roofline.kv_bytes_per_token(m, 2.0) / 1e3)} kB = {g(kv)} GB -> {g(weights + kv)} GB "
                  f"vs {g(hw.memory_gb)} GB{alt}", ok, ctx.src(f, extra=p.source))


@_bound(DECODE_METRICS)
def itl_vs_decode_bound(ctx: Context, f: Figure, p: _Placed) -> Iterator[Finding]:
    """A stated ITL (or per-request decode rate) no lower than the decode step's bandwidth bound."""
    m, hw, precision, context = p.model, p.hw, p.precision, _context_tokens(ctx)
    itl = f.value if f.metric == "itl_ms" else 1000 / f.value
    batch = f.concurrency or 1
    bound = roofline.decode_bound_ms(m, hw, precision, batch, context)
    stated = f"ITL {g(itl)} ms" + ("" if f.metric == "itl_ms" else f" (1000 / {g(f.value)} tokens/s)")
    kv_gb = batch * context * roofline.kv_bytes_per_token(m, roofline.kv_bytes_of(precision)) / 1e9
    yield Finding(f"{p.label} {f.model}: {stated}",
                  f"decode bound at batch {batch}, context {g(context)}: "
                  f"({g(roofline.weight_bytes(m, precision) / 1e9)} GB active weights + {g(kv_gb)} "
                  f"GB KV) / {g(hw.bandwidth_gb_s)} GB/s = {bound:.3f} ms; stated {g(itl)} ms "
                  f"({'at or above' if itl >= bound else 'below'} the bound)",
                  itl >= bound, ctx.src(f, extra=p.source))


@_bound(("ttft_ms",))
def ttft_vs_prefill_bound(ctx: Context, f: Figure, p: _Placed) -> Iterator[Finding]:
    """A stated TTFT no lower than the prefill bound for the document's input length."""
    w_in = ctx.doc.input_tokens
    if not w_in:
        return
    bound = roofline.prefill_bound_ms(p.model, p.hw, w_in, p.precision)
    flops = roofline.prefill_flops(p.model, w_in)
    yield Finding(f"{p.label} {f.model}: TTFT {g(f.value)} ms for {w_in} input tokens",
                  f"prefill bound: {g(flops / 1e12)} TFLOP ({roofline.PREFILL_FLOPS}) / "
                  f"{g(p.hw.peak_tflop_s(p.precision))} TFLOP/s, at least the weight read = {bound:.3f} ms; "
                  f"stated {g(f.value)} ms", f.value >= bound, ctx.src(f, extra=p.source))


@_bound(THROUGHPUT_METRICS)
def throughput_vs_bandwidth(ctx: Context, f: Figure, p: _Placed) -> Iterator[Finding]:
    """Stated throughput at a concurrency no higher than concurrency tokens per decode-step bound."""
    if f.concurrency is None:
        yield not_checkable(f"{p.label} {f.model}: {g(f.value)} {f.metric}",
                            "no concurrency stated, so no batch size to bound it with", ctx.src(f),
                            "not checkable: no concurrency stated")
        return
    w_out = ctx.doc.output_tokens
    if f.metric == "requests_per_min" and not w_out:
        return
    m, hw, precision, context = p.model, p.hw, p.precision, _context_tokens(ctx)
    tok_s = f.value if f.metric == "output_tok_per_s" else f.value / 60 * w_out
    ceiling = roofline.max_output_tok_per_s(m, hw, precision, f.concurrency, context)
    stated = f"{g(tok_s)} output tokens/s" if f.metric == "output_tok_per_s" else \
        f"{g(f.value)} requests/min x {w_out} output tokens / 60 = {g(tok_s)} output tokens/s"
    yield Finding(f"{p.label} {f.model}: {g(f.value)} {f.metric} at {f.concurrency} concurrent",
                  f"{stated}; ceiling = {f.concurrency} tokens per decode step / "
                  f"{roofline.decode_bound_ms(m, hw, precision, f.concurrency, context):.3f} ms bound = "
                  f"{g(ceiling)} tokens/s ({'within' if tok_s <= ceiling else f'{tok_s / ceiling:.1f}x over'}; "
                  f"no speculative decoding stated)", tok_s <= ceiling, ctx.src(f, extra=p.source))


CHECKS = (
    Check("weights_fit", "physical possibility: weights fit in memory", weights_fit, per_figure=True),
    Check("context_fits", "physical possibility: context fits in memory", context_fits, per_figure=True),
    Check("itl_vs_decode_bound", "physical possibility: ITL vs decode bound", itl_vs_decode_bound, per_figure=True),
    Check("ttft_vs_prefill_bound", "physical possibility: TTFT vs prefill bound", ttft_vs_prefill_bound,
          per_figure=True),
    Check("throughput_vs_bandwidth", "physical possibility: throughput vs bandwidth ceiling",
          throughput_vs_bandwidth, per_figure=True),
)
