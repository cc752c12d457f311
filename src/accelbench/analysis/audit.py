"""Checks of published figures (params/reference/): their own arithmetic, params/, physics, our runs.

Each check is one row: check, claim, arithmetic (the computation, written out), holds, status and
source. `holds` is True or False, or missing (<NA>) when the check cannot be made; `status` then says
why ("not checkable: ...", "no measurement yet").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from accelbench.analysis import cost, roofline
from accelbench.config import params
from accelbench.config.params import Instance, ModelConfig
from accelbench.config.reference import (
    Figure,
    ReferenceDocument,
    load_reference,
    load_references,
)

CHECKS = (
    "internal consistency: stated arithmetic",
    "internal consistency: cost formula",
    "internal consistency: throughput vs ITL",
    "internal consistency: scaling table vs headline",
    "internal consistency: price per accelerator-hour",
    "internal consistency: total memory",
    "internal consistency: E2E vs TTFT + decode",
    "architecture vs public config",
    "instance facts vs params/instances.yaml",
    "physical possibility: weights fit in memory",
    "physical possibility: context fits in memory",
    "physical possibility: ITL vs decode bound",
    "physical possibility: TTFT vs prefill bound",
    "physical possibility: throughput vs bandwidth ceiling",
    "projection vs measurement",
)
# relative tolerances, percent: stated figures are rounded; latency identities are approximations
TOL_ROUNDING_PCT = 2.0
TOL_PRICE_PCT = 0.1
TOL_LATENCY_PCT = 5.0
ACCELERATOR_TOKENS = ("H200", "H100", "A100", "A10G", "L40S", "Trainium2", "Inferentia2")
ARCH_KEYS = {"hidden_size": "hidden_size", "num_hidden_layers": "num_hidden_layers",
             "num_attention_heads": "num_attention_heads", "num_key_value_heads": "num_key_value_heads",
             "num_routed_experts": "num_local_experts", "num_experts_per_tok": "num_experts_per_tok",
             "context_window_tokens": "max_position_embeddings"}
LATENCY_METRICS = ("ttft_ms", "itl_ms", "e2e_s")  # lower is better
PER_REQUEST_METRICS = ("ttft_ms", "itl_ms", "decode_tok_per_s_per_request")  # best at the lowest concurrency
PHYSICAL_CHECK = {"itl_ms": CHECKS[11], "decode_tok_per_s_per_request": CHECKS[11], "ttft_ms": CHECKS[12],
                  "output_tok_per_s": CHECKS[13], "requests_per_min": CHECKS[13]}
SERVING_METRICS = ("ttft_ms", "itl_ms", "output_tok_per_s", "decode_tok_per_s_per_request", "requests_per_min",
                   "e2e_s")


def decimals(x: float) -> int:
    """Digits after the decimal point as the figure is written (17.0 -> 0, 0.85 -> 2)."""
    text = repr(float(x))
    if "e" in text:
        return 0
    return len(text.split(".")[1].rstrip("0"))


def close(stated: float, computed: float, tol_pct: float) -> bool:
    """Stated equals computed within tol_pct percent of the computed value, or within the rounding of the
    stated figure (half a unit of its last written digit: 17 covers 16.5 to 17.5)."""
    if not (math.isfinite(stated) and math.isfinite(computed)):
        return False
    rounding = 0.5 * 10 ** -decimals(stated)
    return abs(stated - computed) <= max(abs(computed) * tol_pct / 100, rounding + 1e-9)


def g(x: float) -> str:
    """A number as a person writes it: up to 4 significant digits, no exponent for everyday sizes."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1e4:
        return f"{x:,.0f}"
    return f"{x:.4g}"


class _Audit:
    """Accumulates rows for one document."""

    def __init__(self, doc: ReferenceDocument, instances: dict[str, Instance], models: dict[str, ModelConfig]):
        self.doc, self.instances, self.models = doc, instances, models
        self.rows: list[dict[str, Any]] = []

    def add(self, check: str, claim: str, arithmetic: str, holds: bool | None, source: str,
            status: str | None = None) -> None:
        assert check in CHECKS, check
        if status is None:
            status = "holds" if holds else "does not hold"
        self.rows.append(dict(document=self.doc.name, check=check, claim=claim, arithmetic=arithmetic,
                              holds=pd.NA if holds is None else bool(holds), status=status, source=source))

    def src(self, *figures: Figure, extra: str = "") -> str:
        sections = "; ".join(dict.fromkeys(f.section for f in figures))
        text = f"{self.doc.citation}, {sections}"
        return f"{text}; {extra}" if extra else text

    @staticmethod
    def key(f: Figure) -> str:
        return f.instance or f.hardware_label

    def one(self, metric: str, key: str, model: str | None = None, concurrency: int | None = None,
            any_model: bool = False) -> Figure | None:
        for f in self.doc.figures:
            if f.metric == metric and self.key(f) == key and f.concurrency == concurrency \
                    and (any_model or f.model == model):
                return f
        return None

    def label(self, f: Figure) -> str:
        return f.hardware_label or f.instance or "?"

    def hw(self, f: Figure) -> roofline.Hardware | None:
        name = f.instance or f.comparable_instance
        if name is None:
            return None
        return roofline.hardware(self.instances[name], f.accelerators)

    # --- internal consistency -------------------------------------------------------------------

    def relations(self) -> None:
        for r in self.doc.relations:
            terms = [self.doc.figure(t) for t in r.terms]
            v = [t.value for t in terms]
            if r.kind == "ratio_pct":
                x, text = 100 * v[0] / v[1], f"100 x {g(v[0])} / {g(v[1])} = {g(100 * v[0] / v[1])}%"
            elif r.kind == "reduction_pct":
                x = 100 * (1 - v[0] / v[1])
                text = f"100 x (1 - {g(v[0])} / {g(v[1])}) = {g(x)}%"
            elif r.kind == "increase_pct":
                x = 100 * (v[0] / v[1] - 1)
                text = f"100 x ({g(v[0])} / {g(v[1])} - 1) = {g(x)}%"
            elif r.kind == "ratio_x":
                x, text = v[0] / v[1], f"{g(v[0])} / {g(v[1])} = {g(v[0] / v[1])}x"
            elif r.kind == "scaling_advantage_x":
                x = (v[0] / v[1]) / (v[2] / v[3])
                text = f"({g(v[0])} / {g(v[1])}) / ({g(v[2])} / {g(v[3])}) = {g(v[0] / v[1])} / {g(v[2] / v[3])} = {g(x)}x"
            elif r.kind == "product":
                x = r.factor * float(np.prod(v))
                text = " x ".join([g(t) for t in v] + ([f"{r.factor:.6g}"] if r.factor != 1 else [])) + f" = {g(x)}"
            elif r.kind == "quotient":
                x = r.factor * v[0] / v[1]
                text = f"{r.factor:.6g} x {g(v[0])} / {g(v[1])} = {g(x)}"
            else:  # difference
                x = r.factor * (v[0] - v[1])
                text = f"{r.factor:.6g} x ({g(v[0])} - {g(v[1])}) = {g(x)}"
            ok = close(r.value, x, r.tolerance_pct)
            note = f"; {r.note}" if r.note else ""
            self.add(CHECKS[0], f"{r.claim} (stated {g(r.value)})",
                     f"{text}; stated {g(r.value)}, tolerance {r.tolerance_pct:g}%{note}", ok,
                     self.src(*terms, extra=f"section {r.section}") if r.section not in {t.section for t in terms}
                     else self.src(*terms))

    def cost_formula(self) -> None:
        for c in self.doc.figures:
            if c.metric != "usd_per_m_tokens" or c.concurrency is not None:
                continue
            key = self.key(c)
            price = self.one("price_usd_per_hour", key, any_model=True)
            tput = self.one("output_tok_per_s", key, c.model)
            if price is None or tput is None:
                continue
            x = cost.usd_per_m_output_tokens(price.value, tput.value)
            text = f"{g(price.value)} / ({g(tput.value)} x 3600) x 1e6 = {x:.3f} USD per 1M output tokens"
            w = self.doc
            if w.input_tokens and w.output_tokens:
                scale = (w.input_tokens + w.output_tokens) / w.output_tokens
                text += (f"; counting input tokens too ({w.input_tokens}+{w.output_tokens} per request, "
                         f"x{g(scale)} the rate): {x / scale:.3f}")
            self.add(CHECKS[1], f"{self.label(c)} {c.model}: ${g(c.value)} per 1M tokens at ${g(price.value)}/h "
                                f"and {g(tput.value)} tokens/s",
                     f"{cost.FORMULA}: {text}; stated {g(c.value)}", close(c.value, x, TOL_ROUNDING_PCT),
                     self.src(c, price, tput, extra=f"stated formula: {self.doc.stated_formula}"
                              if self.doc.stated_formula else ""))

    def throughput_vs_itl(self) -> None:
        for t in self.doc.figures:
            if t.metric != "output_tok_per_s" or t.concurrency != 1:
                continue
            itl = self.one("itl_ms", self.key(t), t.model)
            if itl is None:
                continue
            per_request = 1000 / itl.value
            self.add(CHECKS[2], f"{self.label(t)} {t.model}: {g(t.value)} output tokens/s at 1 concurrent request, "
                                f"with ITL {g(itl.value)} ms",
                     f"one request streams at most 1000 / ITL = 1000 / {g(itl.value)} = {g(per_request)} tokens/s; "
                     f"{g(t.value)} tokens/s would need an ITL of 1000 / {g(t.value)} = {1000 / t.value:.3g} ms",
                     t.value <= per_request * (1 + TOL_ROUNDING_PCT / 100), self.src(t, itl))

    def scaling_vs_headline(self) -> None:
        for row in self.doc.figures:
            if row.metric != "output_tok_per_s" or row.concurrency != 1:
                continue
            head = self.one("output_tok_per_s", self.key(row), row.model)
            if head is None:
                continue
            self.add(CHECKS[3], f"{self.label(row)} {row.model}: scaling-table row at 1 concurrent request "
                                f"({g(row.value)}) vs headline throughput ({g(head.value)})",
                     f"{g(row.value)} vs {g(head.value)}: the headline is the concurrency-1 figure"
                     if close(row.value, head.value, TOL_ROUNDING_PCT) else f"{g(row.value)} != {g(head.value)}",
                     close(row.value, head.value, TOL_ROUNDING_PCT), self.src(row, head))

    def accelerator_hour(self) -> None:
        for a in self.doc.figures:
            if a.metric != "usd_per_accelerator_hour":
                continue
            key = self.key(a)
            price = self.one("price_usd_per_hour", key, any_model=True)
            count = self.one("accelerator_count", key, any_model=True)
            if price is None:
                continue
            n = count.value if count else (self.instances[a.instance].accelerator_count if a.instance else None)
            if n is None:
                continue
            x = price.value / n
            self.add(CHECKS[4], f"{self.label(a)}: ${g(a.value)} per accelerator-hour",
                     f"{g(price.value)} / {g(n)} accelerators = {x:.4f}; stated {g(a.value)}",
                     close(a.value, x, 1.0), self.src(*(f for f in (a, price, count) if f)))

    def total_memory(self) -> None:
        for t in self.doc.figures:
            if t.metric != "total_accelerator_memory_gb":
                continue
            key = self.key(t)
            mem, count = self.one("memory_per_accelerator_gb", key, any_model=True), \
                self.one("accelerator_count", key, any_model=True)
            if mem is None or count is None:
                continue
            x = mem.value * count.value
            self.add(CHECKS[5], f"{self.label(t)}: {g(t.value)} GB of accelerator memory",
                     f"{g(mem.value)} GB x {g(count.value)} = {g(x)} GB; stated {g(t.value)}",
                     close(t.value, x, 1.0), self.src(t, mem, count))

    def e2e(self) -> None:
        n = self.doc.output_tokens
        for e in self.doc.figures:
            if e.metric != "e2e_s" or not n:
                continue
            key = self.key(e)
            ttft = self.one("ttft_ms", key, e.model)
            rate = self.one("decode_tok_per_s_per_request", key, e.model)
            itl = self.one("itl_ms", key, e.model)
            if ttft is None or (rate is None and itl is None):
                continue
            step_s = 1 / rate.value if rate else itl.value / 1000
            x = ttft.value / 1000 + (n - 1) * step_s
            step_text = f"{n - 1} / {g(rate.value)} tokens/s" if rate else f"{n - 1} x {g(itl.value)} ms"
            self.add(CHECKS[6], f"{self.label(e)} {e.model}: end-to-end {g(e.value)} s for {n} output tokens",
                     f"TTFT + (output tokens - 1) x ITL = {g(ttft.value / 1000)} s + {step_text} = {x:.3f} s; "
                     f"stated {g(e.value)} s, tolerance {TOL_LATENCY_PCT:g}%",
                     close(e.value, x, TOL_LATENCY_PCT), self.src(*(f for f in (e, ttft, rate, itl) if f)))

    # --- against params/ ------------------------------------------------------------------------

    def architecture(self) -> None:
        for f in self.doc.figures:
            if f.model is None or f.metric not in (*ARCH_KEYS, "total_params_b", "active_params_b"):
                continue
            m = self.models[f.model]
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
                self.add(CHECKS[7], f"{f.model}: {f.metric} = {g(f.value)}", f"{where} has no {field}", None,
                         self.src(f), status=f"not checkable: {where} has no {field}")
                continue
            extra = ""
            if f.metric == "num_experts_per_tok" and cfg.get("model_type") == "llama4_text":
                extra = " routed (Llama 4 adds one shared expert to every token)"
            self.add(CHECKS[7], f"{m.display_name}: {f.metric} = {g(f.value)} ({f.quote})",
                     f"{where} {field} = {g(float(x))}{extra}; stated {g(f.value)}"
                     + (f", tolerance {tol:g}%" if tol else ""),
                     close(f.value, float(x), tol) if tol else float(x) == f.value,
                     self.src(f, extra=f"{m.source} (read {m.source_date}) via {where}"))

    def instance_facts(self) -> None:
        seen_labels = set()
        for f in self.doc.figures:
            if f.instance is None:
                continue
            inst = self.instances[f.instance]
            mem, bw, peak = inst.memory_per_accelerator_gb, inst.memory_bandwidth_per_accelerator_gb_s, \
                inst.peak_dense_bf16_tflop_s
            n = inst.accelerator_count
            where = f"params/instances.yaml {inst.name}"
            if (f.hardware_label, f.instance) not in seen_labels:
                seen_labels.add((f.hardware_label, f.instance))
                named = [t for t in ACCELERATOR_TOKENS if t.lower() in f.hardware_label.lower()]
                if named:
                    ok = named[0].lower() in inst.accelerator_name.lower()
                    self.add(CHECKS[8], f"'{f.hardware_label}' names an {named[0]}",
                             f"{where}.accelerator_name = {inst.accelerator_name}", ok, self.src(f))
            if f.metric == "accelerator_count":
                self.add(CHECKS[8], f"{inst.name}: {g(f.value)} accelerators ({f.quote})",
                         f"{where}.accelerator_count = {n}; stated {g(f.value)}", f.value == n, self.src(f))
            elif f.metric == "memory_per_accelerator_gb":
                self.add(CHECKS[8], f"{inst.name}: {g(f.value)} GB per accelerator",
                         f"{where}.memory_per_accelerator_gb = {g(mem.value)}; stated {g(f.value)}",
                         close(f.value, mem.value, TOL_ROUNDING_PCT),
                         self.src(f, extra=f"{mem.source} ({mem.date})"))
            elif f.metric == "total_accelerator_memory_gb":
                x = n * mem.value
                self.add(CHECKS[8], f"{inst.name}: {g(f.value)} GB of accelerator memory ({f.quote})",
                         f"{n} x {g(mem.value)} GB = {g(x)} GB ({where}); stated {g(f.value)}",
                         close(f.value, x, TOL_ROUNDING_PCT), self.src(f, extra=f"{mem.source} ({mem.date})"))
            elif f.metric == "memory_bandwidth_gb_s":
                x = n * bw.value
                ok = close(f.value, bw.value, TOL_ROUNDING_PCT) or close(f.value, x, TOL_ROUNDING_PCT)
                self.add(CHECKS[8], f"{f.hardware_label}: memory bandwidth {g(f.value)} GB/s ({f.quote})",
                         f"{where}: {g(bw.value)} GB/s per accelerator, {n} x {g(bw.value)} = {g(x)} GB/s per "
                         f"instance; stated {g(f.value)} (holds if it matches either)", ok,
                         self.src(f, extra=f"{bw.source} ({bw.date})"))
            elif f.metric == "peak_fp16_tflop_s":
                x = n * peak.value
                self.add(CHECKS[8], f"{f.hardware_label}: {g(f.value)} TFLOP/s FP16 ({f.quote})",
                         f"{n} x {g(peak.value)} dense BF16/FP16 TFLOP/s = {g(x)} ({where}); stated {g(f.value)}",
                         close(f.value, x, TOL_ROUNDING_PCT), self.src(f, extra=f"{peak.source} ({peak.date})"))
            elif f.metric == "price_usd_per_hour":
                p = inst.prices.on_demand_usd_per_hour
                if p is None:
                    self.add(CHECKS[8], f"{inst.name}: ${g(f.value)}/h", f"{where} has no on-demand price", None,
                             self.src(f), status="not checkable: no on-demand price in params/instances.yaml")
                    continue
                self.add(CHECKS[8], f"{inst.name}: ${g(f.value)}/h on demand ({f.quote})",
                         f"{where}.prices.on_demand_usd_per_hour = {g(p.value)}; stated {g(f.value)} "
                         f"({100 * (f.value / p.value - 1):+.1f}%)", close(f.value, p.value, TOL_PRICE_PCT),
                         self.src(f, extra=f"{p.source} ({p.date})"))

    # --- physics --------------------------------------------------------------------------------

    def precision(self, f: Figure) -> str:
        if f.metric in ("min_accelerators_bf16", "vllm_context_tokens"):
            return "bfloat16"
        return self.doc.precision or "bfloat16"

    def physical(self) -> None:
        placed: set[tuple[Any, ...]] = set()
        w_in, w_out = self.doc.input_tokens, self.doc.output_tokens
        context = roofline.decode_context_tokens(w_in or 0, w_out or 0)
        for f in self.doc.figures:
            if f.model is None or f.metric not in (*SERVING_METRICS, "min_accelerators_bf16", "vllm_context_tokens"):
                continue
            m, hw, precision = self.models[f.model], self.hw(f), self.precision(f)
            if hw is None:
                if f.metric in PHYSICAL_CHECK:
                    self.add(PHYSICAL_CHECK[f.metric], f"{self.label(f)} {f.model}: {f.metric} {g(f.value)}",
                             "the hardware is not in params/instances.yaml", None, self.src(f),
                             status="not checkable: hardware not in params/instances.yaml")
                continue
            inst = self.instances[hw.instance]
            placed_as = "" if f.instance else f" as the document names it; {f.comparable_instance} stands in"
            label = f"{self.label(f)} [{hw.accelerators} x {inst.accelerator_name}, {g(hw.memory_gb)} GB{placed_as}]"
            hw_src = (f"params/instances.yaml {inst.name}: {inst.memory_bandwidth_per_accelerator_gb_s.source}; "
                      f"{inst.peak_dense_bf16_tflop_s.source}; params/models/{m.name}.yaml")
            # one memory-fit row per configuration the serving figures use, and one per deployment claim
            fit_key = (f.model, hw.instance, hw.accelerators, precision,
                       f.id if f.metric == "min_accelerators_bf16" else "")
            if fit_key not in placed and f.metric != "vllm_context_tokens":
                placed.add(fit_key)
                weights = roofline.weight_bytes(m, precision, m.total_params_b) / 1e9
                what = f"minimum hardware '{f.hardware_label}' ({f.quote})" if f.metric == "min_accelerators_bf16" \
                    else f"{m.display_name} in {precision} on {label}"
                self.add(CHECKS[9], what,
                         f"{g(m.total_params_b)}B params x {g(roofline.bytes_per_param(precision))} bytes = "
                         f"{g(weights)} GB of weights vs {hw.accelerators} x "
                         f"{g(inst.memory_per_accelerator_gb.value)} GB = {g(hw.memory_gb)} GB",
                         weights <= hw.memory_gb, self.src(f, extra=hw_src))
            if f.metric == "vllm_context_tokens":
                weights = roofline.weight_bytes(m, precision, m.total_params_b) / 1e9
                kv = f.value * roofline.kv_bytes_per_token(m, 2.0) / 1e9
                ok = weights + kv <= hw.memory_gb
                alt = ""
                if not ok:
                    fp8 = roofline.weight_bytes(m, "fp8", m.total_params_b) / 1e9
                    alt = f"; with FP8 weights {g(fp8)} + {g(kv)} = {g(fp8 + kv)} GB" + \
                          (" would fit" if fp8 + kv <= hw.memory_gb else " would not fit either")
                self.add(CHECKS[10], f"{m.display_name}: {g(f.value)} tokens of context on {label} in BF16",
                         f"weights {g(weights)} GB + KV {g(f.value)} tokens x "
                         f"{g(roofline.kv_bytes_per_token(m, 2.0) / 1e3)} kB = {g(kv)} GB -> {g(weights + kv)} GB "
                         f"vs {g(hw.memory_gb)} GB{alt}", ok, self.src(f, extra=hw_src))
            elif f.metric in ("itl_ms", "decode_tok_per_s_per_request"):
                itl = f.value if f.metric == "itl_ms" else 1000 / f.value
                batch = f.concurrency or 1
                bound = roofline.decode_bound_ms(m, hw, precision, batch, context)
                stated = f"ITL {g(itl)} ms" + ("" if f.metric == "itl_ms" else f" (1000 / {g(f.value)} tokens/s)")
                self.add(CHECKS[11], f"{label} {f.model}: {stated}",
                         f"decode bound at batch {batch}, context {g(context)}: ({g(roofline.weight_bytes(m, precision) / 1e9)} "
                         f"GB active weights + {g(batch * context * roofline.kv_bytes_per_token(m, roofline.kv_bytes_of(precision)) / 1e9)} "
                         f"GB KV) / {g(hw.bandwidth_gb_s)} GB/s = {bound:.3f} ms; stated {g(itl)} ms "
                         f"({'at or above' if itl >= bound else 'below'} the bound)",
                         itl >= bound, self.src(f, extra=hw_src))
            elif f.metric == "ttft_ms" and w_in:
                bound = roofline.prefill_bound_ms(m, hw, w_in, precision)
                flops = roofline.prefill_flops(m, w_in)
                self.add(CHECKS[12], f"{label} {f.model}: TTFT {g(f.value)} ms for {w_in} input tokens",
                         f"prefill bound: {g(flops / 1e12)} TFLOP ({roofline.PREFILL_FLOPS}) / "
                         f"{g(hw.peak_tflop_s(precision))} TFLOP/s, at least the weight read = {bound:.3f} ms; "
                         f"stated {g(f.value)} ms", f.value >= bound, self.src(f, extra=hw_src))
            elif f.metric in ("output_tok_per_s", "requests_per_min"):
                if f.concurrency is None:
                    self.add(CHECKS[13], f"{label} {f.model}: {g(f.value)} {f.metric}",
                             "no concurrency stated, so no batch size to bound it with", None, self.src(f),
                             status="not checkable: no concurrency stated")
                    continue
                if f.metric == "requests_per_min" and not w_out:
                    continue
                tok_s = f.value if f.metric == "output_tok_per_s" else f.value / 60 * w_out
                ceiling = roofline.max_output_tok_per_s(m, hw, precision, f.concurrency, context)
                stated = f"{g(tok_s)} output tokens/s" if f.metric == "output_tok_per_s" else \
                    f"{g(f.value)} requests/min x {w_out} output tokens / 60 = {g(tok_s)} output tokens/s"
                self.add(CHECKS[13], f"{label} {f.model}: {g(f.value)} {f.metric} at {f.concurrency} concurrent",
                         f"{stated}; ceiling = {f.concurrency} tokens per decode step / "
                         f"{roofline.decode_bound_ms(m, hw, precision, f.concurrency, context):.3f} ms bound = "
                         f"{g(ceiling)} tokens/s ({'within' if tok_s <= ceiling else f'{tok_s / ceiling:.1f}x over'}; "
                         f"no speculative decoding stated)", tok_s <= ceiling, self.src(f, extra=hw_src))

    # --- against our runs -----------------------------------------------------------------------

    def measured(self, summary: pd.DataFrame | None) -> None:
        figs = [f for f in self.doc.figures if f.model and (f.instance or f.comparable_instance)
                and f.metric in ("ttft_ms", "itl_ms", "output_tok_per_s", "decode_tok_per_s_per_request",
                                 "requests_per_min")]
        for model in dict.fromkeys(f.model for f in figs):
            have = summary is not None and not summary.empty and "model" in summary \
                and (summary["model"] == model).any()
            if not have:
                self.add(CHECKS[14], f"{self.doc.name} projections for {model}",
                         "this study has no measured run of this model yet", None,
                         self.src(*[f for f in figs if f.model == model]), status="no measurement yet")
                continue
            rows = summary[summary["model"] == model]
            for col, want in (("input_tokens", self.doc.input_tokens), ("output_tokens", self.doc.output_tokens)):
                if want and col in rows:
                    rows = rows[rows[col] == want]
            if rows.empty:
                self.add(CHECKS[14], f"{self.doc.name} projections for {model}",
                         f"this study has runs of {model}, but none with the document's {self.doc.input_tokens} "
                         f"input / {self.doc.output_tokens} output tokens", None,
                         self.src(*[f for f in figs if f.model == model]),
                         status="not checkable: no measurement of the same workload shape")
                continue
            for f in (f for f in figs if f.model == model):
                self._compare(f, rows)

    def _compare(self, f: Figure, rows: pd.DataFrame) -> None:
        proj_hw = self.hw(f)
        resource = "peak_bf16_tflop_s" if f.metric == "ttft_ms" else "bandwidth_gb_s"
        unit = "TFLOP/s" if f.metric == "ttft_ms" else "GB/s"
        lower_better = f.metric in LATENCY_METRICS
        claim = f"{self.label(f)} {f.model}: {f.metric} {g(f.value)}" + \
            (f" at {f.concurrency} concurrent" if f.concurrency else "")
        if f.concurrency is None and f.metric not in PER_REQUEST_METRICS:
            self.add(CHECKS[14], claim, "no concurrency stated, so no measured level to compare with", None,
                     self.src(f), status="not checkable: no concurrency stated")
            return
        cands = []
        for _, r in rows.iterrows():
            inst = self.instances.get(r.get("instance"))
            if inst is None or r.get("level_kind") != "concurrency":
                continue
            mhw = roofline.hardware(inst, int(r.get("accelerators_used", inst.accelerator_count)))
            if getattr(mhw, resource) < getattr(proj_hw, resource):
                continue
            if f.concurrency is not None and r["level_value"] != f.concurrency:
                continue
            value = {"ttft_ms": r.get("ttft_p50_ms"), "itl_ms": r.get("itl_p50_ms"),
                     "output_tok_per_s": r.get("output_tok_per_s"),
                     "decode_tok_per_s_per_request": 1000 / r.get("tpot_p50_ms", np.nan),
                     "requests_per_min": 60 * r.get("requests_per_s", np.nan)}[f.metric]
            if value is None or not np.isfinite(value):
                continue
            cands.append((value, r, mhw))
        if f.concurrency is None and cands:  # per-request figure, no stated concurrency: the lowest measured level
            lowest = min(c[1]["level_value"] for c in cands)
            cands = [c for c in cands if c[1]["level_value"] == lowest]
        if not cands:
            self.add(CHECKS[14], claim,
                     f"no measured run of {f.model} on hardware with at least the projected {unit} "
                     f"({g(getattr(proj_hw, resource))}){' at that concurrency' if f.concurrency else ''}",
                     None, self.src(f), status="not checkable: no measurement on equal or faster hardware")
            return
        value, r, mhw = min(cands, key=lambda c: c[0]) if lower_better else max(cands, key=lambda c: c[0])
        ok = value <= f.value if lower_better else value >= f.value
        where = f"{r.get('scenario', '?')} run {r.get('run_id', '?')}, concurrency {g(r['level_value'])}"
        note = "" if f.concurrency else " (no concurrency stated: compared at the lowest measured level)"
        self.add(CHECKS[14], claim,
                 f"measured {g(value)} ({where}) on {mhw.accelerators} x {mhw.instance}, {g(getattr(mhw, resource))} "
                 f"{unit} vs projected hardware {g(getattr(proj_hw, resource))} {unit}; projected {g(f.value)}; "
                 f"{'reached' if ok else 'not reached'} on equal or faster hardware{note}", ok,
                 self.src(f, extra=f"this study's run {r.get('run_id', '?')}"))

    def run(self, measured_summary: pd.DataFrame | None) -> list[dict[str, Any]]:
        self.relations()
        self.cost_formula()
        self.throughput_vs_itl()
        self.scaling_vs_headline()
        self.accelerator_hour()
        self.total_memory()
        self.e2e()
        self.architecture()
        self.instance_facts()
        self.physical()
        self.measured(measured_summary)
        return self.rows


def _documents(reference: ReferenceDocument | str | Iterable[ReferenceDocument | str] | None) -> list[ReferenceDocument]:
    if reference is None:
        return load_references()
    if isinstance(reference, (ReferenceDocument, str)):
        reference = [reference]
    return [load_reference(r) if isinstance(r, str) else r for r in reference]


def audit(reference: ReferenceDocument | str | Iterable[ReferenceDocument | str] | None = None,
          measured_summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every check of one or more reference documents (all of params/reference/ by default).

    measured_summary: this study's per-level summaries with run facts (cost.summarize_runs of
    runset.load_levels()); without it the projection-vs-measurement check reads "no measurement yet".
    """
    instances = params.load_instances()
    models = {n: params.load_model(n) for n in params.model_names()}
    rows = []
    for doc in _documents(reference):
        rows += _Audit(doc, instances, models).run(measured_summary)
    df = pd.DataFrame(rows, columns=["document", "check", "claim", "arithmetic", "holds", "status", "source"])
    df["holds"] = df["holds"].astype("boolean")
    return df


def audit_summary(audited: pd.DataFrame) -> pd.DataFrame:
    """Per document and check: how many claims hold, do not hold, or could not be checked."""
    if audited.empty:
        return pd.DataFrame(columns=["document", "check", "holds", "does_not_hold", "not_checked"])
    g_ = audited.groupby(["document", "check"], sort=False)
    return pd.DataFrame({
        "holds": g_["holds"].apply(lambda s: int((s == True).sum())),  # noqa: E712 (nullable boolean)
        "does_not_hold": g_["holds"].apply(lambda s: int((s == False).sum())),  # noqa: E712
        "not_checked": g_["holds"].apply(lambda s: int(s.isna().sum())),
    }).reset_index()
