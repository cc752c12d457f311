"""Checks of a document against itself: its stated arithmetic, cost formula, throughput against its own ITL,
its tables against its headline, per-accelerator price, total memory, and end-to-end latency."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from accelbench.analysis import cost
from accelbench.analysis.audit.check import (
    TOL_LATENCY_PCT,
    TOL_ROUNDING_PCT,
    Check,
    Context,
    Finding,
    close,
    g,
)
from accelbench.config.reference import Figure, Relation


def _relation_arithmetic(r: Relation, v: list[float]) -> tuple[float, str]:
    """The value a relation's terms give, and the computation written out."""
    if r.kind == "ratio_pct":
        x = 100 * v[0] / v[1]
        return x, f"100 x {g(v[0])} / {g(v[1])} = {g(x)}%"
    if r.kind == "reduction_pct":
        x = 100 * (1 - v[0] / v[1])
        return x, f"100 x (1 - {g(v[0])} / {g(v[1])}) = {g(x)}%"
    if r.kind == "increase_pct":
        x = 100 * (v[0] / v[1] - 1)
        return x, f"100 x ({g(v[0])} / {g(v[1])} - 1) = {g(x)}%"
    if r.kind == "ratio_x":
        x = v[0] / v[1]
        return x, f"{g(v[0])} / {g(v[1])} = {g(x)}x"
    if r.kind == "scaling_advantage_x":
        x = (v[0] / v[1]) / (v[2] / v[3])
        return x, f"({g(v[0])} / {g(v[1])}) / ({g(v[2])} / {g(v[3])}) = {g(v[0] / v[1])} / {g(v[2] / v[3])} = {g(x)}x"
    if r.kind == "product":
        x = r.factor * float(np.prod(v))
        return x, " x ".join([g(t) for t in v] + ([f"{r.factor:.6g}"] if r.factor != 1 else [])) + f" = {g(x)}"
    if r.kind == "quotient":
        x = r.factor * v[0] / v[1]
        return x, f"{r.factor:.6g} x {g(v[0])} / {g(v[1])} = {g(x)}"
    x = r.factor * (v[0] - v[1])  # difference
    return x, f"{r.factor:.6g} x ({g(v[0])} - {g(v[1])}) = {g(x)}"


def stated_arithmetic(ctx: Context) -> Iterator[Finding]:
    """Each stated relation (a ratio, a percentage, a product) recomputed from its terms."""
    for r in ctx.doc.relations:
        terms = [ctx.doc.figure(t) for t in r.terms]
        x, text = _relation_arithmetic(r, [t.value for t in terms])
        note = f"; {r.note}" if r.note else ""
        yield Finding(f"{r.claim} (stated {g(r.value)})",
                      f"{text}; stated {g(r.value)}, tolerance {r.tolerance_pct:g}%{note}",
                      close(r.value, x, r.tolerance_pct),
                      ctx.src(*terms, extra=f"section {r.section}") if r.section not in {t.section for t in terms}
                      else ctx.src(*terms))


def cost_formula(ctx: Context) -> Iterator[Finding]:
    """Each stated USD per 1M tokens against cost.FORMULA with the document's own price and throughput."""
    for c in ctx.of("usd_per_m_tokens"):
        if c.concurrency is not None:
            continue
        price, tput = ctx.beside(c, "price_usd_per_hour"), ctx.one("output_tok_per_s", ctx.key(c), c.model)
        if price is None or tput is None:
            continue
        x = cost.usd_per_m_output_tokens(price.value, tput.value)
        text = f"{g(price.value)} / ({g(tput.value)} x 3600) x 1e6 = {x:.3f} USD per 1M output tokens"
        w = ctx.doc
        if w.input_tokens and w.output_tokens:
            scale = (w.input_tokens + w.output_tokens) / w.output_tokens
            text += (f"; counting input tokens too ({w.input_tokens}+{w.output_tokens} per request, "
                     f"x{g(scale)} the rate): {x / scale:.3f}")
        yield Finding(f"{ctx.label(c)} {c.model}: ${g(c.value)} per 1M tokens at ${g(price.value)}/h "
                      f"and {g(tput.value)} tokens/s",
                      f"{cost.FORMULA}: {text}; stated {g(c.value)}", close(c.value, x, TOL_ROUNDING_PCT),
                      ctx.src(c, price, tput, extra=f"stated formula: {ctx.doc.stated_formula}"
                              if ctx.doc.stated_formula else ""))


def _at_one_request(ctx: Context, metric: str) -> Iterator[tuple[Figure, Figure]]:
    """Each throughput stated at one concurrent request, with the same configuration's `metric` figure
    (stated without a concurrency)."""
    for t in ctx.doc.figures:
        if t.metric == "output_tok_per_s" and t.concurrency == 1:
            other = ctx.one(metric, ctx.key(t), t.model)
            if other is not None:
                yield t, other


def throughput_vs_itl(ctx: Context) -> Iterator[Finding]:
    """Throughput at one concurrent request cannot exceed 1000 / the stated ITL."""
    for t, itl in _at_one_request(ctx, "itl_ms"):
        per_request = 1000 / itl.value
        yield Finding(f"{ctx.label(t)} {t.model}: {g(t.value)} output tokens/s at 1 concurrent request, "
                      f"with ITL {g(itl.value)} ms",
                      f"one request streams at most 1000 / ITL = 1000 / {g(itl.value)} = {g(per_request)} tokens/s; "
                      f"{g(t.value)} tokens/s would need an ITL of 1000 / {g(t.value)} = {1000 / t.value:.3g} ms",
                      t.value <= per_request * (1 + TOL_ROUNDING_PCT / 100), ctx.src(t, itl))


def scaling_vs_headline(ctx: Context) -> Iterator[Finding]:
    """The scaling table's concurrency-1 row against the headline throughput of the same configuration."""
    for row, head in _at_one_request(ctx, "output_tok_per_s"):
        ok = close(row.value, head.value, TOL_ROUNDING_PCT)
        yield Finding(f"{ctx.label(row)} {row.model}: scaling-table row at 1 concurrent request "
                      f"({g(row.value)}) vs headline throughput ({g(head.value)})",
                      f"{g(row.value)} vs {g(head.value)}: the headline is the concurrency-1 figure"
                      if ok else f"{g(row.value)} != {g(head.value)}", ok, ctx.src(row, head))


def price_per_accelerator_hour(ctx: Context) -> Iterator[Finding]:
    """A stated per-accelerator price against the instance price / its accelerator count."""
    for a in ctx.of("usd_per_accelerator_hour"):
        price, count = ctx.beside(a, "price_usd_per_hour"), ctx.beside(a, "accelerator_count")
        n = count.value if count else (ctx.instances[a.instance].accelerator_count if a.instance else None)
        if price is None or n is None:
            continue
        x = price.value / n
        yield Finding(f"{ctx.label(a)}: ${g(a.value)} per accelerator-hour",
                      f"{g(price.value)} / {g(n)} accelerators = {x:.4f}; stated {g(a.value)}",
                      close(a.value, x, 1.0), ctx.src(*(f for f in (a, price, count) if f)))


def total_memory(ctx: Context) -> Iterator[Finding]:
    """A stated total memory against memory per accelerator x accelerators, both as stated."""
    for t in ctx.of("total_accelerator_memory_gb"):
        mem, count = ctx.beside(t, "memory_per_accelerator_gb"), ctx.beside(t, "accelerator_count")
        if mem is None or count is None:
            continue
        x = mem.value * count.value
        yield Finding(f"{ctx.label(t)}: {g(t.value)} GB of accelerator memory",
                      f"{g(mem.value)} GB x {g(count.value)} = {g(x)} GB; stated {g(t.value)}",
                      close(t.value, x, 1.0), ctx.src(t, mem, count))


def e2e_vs_ttft_and_decode(ctx: Context) -> Iterator[Finding]:
    """Stated end-to-end latency against TTFT + (output tokens - 1) x the stated per-token time."""
    n = ctx.doc.output_tokens
    for e in ctx.doc.figures:
        if e.metric != "e2e_s" or not n:
            continue
        key = ctx.key(e)
        ttft = ctx.one("ttft_ms", key, e.model)
        rate = ctx.one("decode_tok_per_s_per_request", key, e.model)
        itl = ctx.one("itl_ms", key, e.model)
        if ttft is None or (rate is None and itl is None):
            continue
        step_s = 1 / rate.value if rate else itl.value / 1000
        x = ttft.value / 1000 + (n - 1) * step_s
        step_text = f"{n - 1} / {g(rate.value)} tokens/s" if rate else f"{n - 1} x {g(itl.value)} ms"
        yield Finding(f"{ctx.label(e)} {e.model}: end-to-end {g(e.value)} s for {n} output tokens",
                      f"TTFT + (output tokens - 1) x ITL = {g(ttft.value / 1000)} s + {step_text} = {x:.3f} s; "
                      f"stated {g(e.value)} s, tolerance {TOL_LATENCY_PCT:g}%",
                      close(e.value, x, TOL_LATENCY_PCT), ctx.src(*(f for f in (e, ttft, rate, itl) if f)))


CHECKS = (
    Check("stated_arithmetic", "internal consistency: stated arithmetic", stated_arithmetic),
    Check("cost_formula", "internal consistency: cost formula", cost_formula),
    Check("throughput_vs_itl", "internal consistency: throughput vs ITL", throughput_vs_itl),
    Check("scaling_vs_headline", "internal consistency: scaling table vs headline", scaling_vs_headline),
    Check("price_per_accelerator_hour", "internal consistency: price per accelerator-hour",
          price_per_accelerator_hour),
    Check("total_memory", "internal consistency: total memory", total_memory),
    Check("e2e_vs_ttft_and_decode", "internal consistency: E2E vs TTFT + decode", e2e_vs_ttft_and_decode),
)
