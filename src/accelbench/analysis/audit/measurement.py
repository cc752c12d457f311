"""Checks of a document against this study's measurements: a projected figure is reached, or not, by a
measured run of the same model and workload shape on hardware at least as fast."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from accelbench.analysis import roofline
from accelbench.analysis.audit.check import Check, Context, Finding, g, not_checkable
from accelbench.config.reference import Figure

PROJECTED_METRICS = ("ttft_ms", "itl_ms", "output_tok_per_s", "decode_tok_per_s_per_request", "requests_per_min")
LATENCY_METRICS = ("ttft_ms", "itl_ms", "e2e_s")  # lower is better
PER_REQUEST_METRICS = ("ttft_ms", "itl_ms", "decode_tok_per_s_per_request")  # best at the lowest concurrency


def _measured_value(metric: str, r: pd.Series) -> Any:
    """The summary row's value of a projected metric (medians for latencies)."""
    return {"ttft_ms": r.get("ttft_p50_ms"), "itl_ms": r.get("itl_p50_ms"),
            "output_tok_per_s": r.get("output_tok_per_s"),
            "decode_tok_per_s_per_request": 1000 / r.get("tpot_p50_ms", np.nan),
            "requests_per_min": 60 * r.get("requests_per_s", np.nan)}[metric]


def _candidates(ctx: Context, f: Figure, rows: pd.DataFrame, resource: str,
                proj_hw: roofline.Hardware) -> list[tuple[float, pd.Series, roofline.Hardware]]:
    """Measured levels on hardware with at least the projected resource, at the stated concurrency (at the
    lowest measured level for a per-request figure that states none)."""
    cands = []
    for _, r in rows.iterrows():
        inst = ctx.instances.get(r.get("instance"))
        if inst is None or r.get("level_kind") != "concurrency":
            continue
        mhw = roofline.hardware(inst, int(r.get("accelerators_used", inst.accelerator_count)))
        if getattr(mhw, resource) < getattr(proj_hw, resource):
            continue
        if f.concurrency is not None and r["level_value"] != f.concurrency:
            continue
        value = _measured_value(f.metric, r)
        if value is None or not np.isfinite(value):
            continue
        cands.append((value, r, mhw))
    if f.concurrency is None and cands:
        lowest = min(c[1]["level_value"] for c in cands)
        cands = [c for c in cands if c[1]["level_value"] == lowest]
    return cands


def _compare(ctx: Context, f: Figure, rows: pd.DataFrame) -> Finding:
    """One projected figure against the best measured value on equal or faster hardware."""
    proj_hw = ctx.hw(f)
    resource = "peak_bf16_tflop_s" if f.metric == "ttft_ms" else "bandwidth_gb_s"
    unit = "TFLOP/s" if f.metric == "ttft_ms" else "GB/s"
    lower_better = f.metric in LATENCY_METRICS
    claim = f"{ctx.label(f)} {f.model}: {f.metric} {g(f.value)}" + \
        (f" at {f.concurrency} concurrent" if f.concurrency else "")
    if f.concurrency is None and f.metric not in PER_REQUEST_METRICS:
        return not_checkable(claim, "no concurrency stated, so no measured level to compare with", ctx.src(f),
                             "not checkable: no concurrency stated")
    cands = _candidates(ctx, f, rows, resource, proj_hw)
    if not cands:
        return not_checkable(claim, f"no measured run of {f.model} on hardware with at least the projected {unit} "
                                    f"({g(getattr(proj_hw, resource))}){' at that concurrency' if f.concurrency else ''}",
                             ctx.src(f), "not checkable: no measurement on equal or faster hardware")
    value, r, mhw = min(cands, key=lambda c: c[0]) if lower_better else max(cands, key=lambda c: c[0])
    ok = value <= f.value if lower_better else value >= f.value
    where = f"{r.get('scenario', '?')} run {r.get('run_id', '?')}, concurrency {g(r['level_value'])}"
    note = "" if f.concurrency else " (no concurrency stated: compared at the lowest measured level)"
    return Finding(claim,
                   f"measured {g(value)} ({where}) on {mhw.accelerators} x {mhw.instance}, "
                   f"{g(getattr(mhw, resource))} {unit} vs projected hardware {g(getattr(proj_hw, resource))} "
                   f"{unit}; projected {g(f.value)}; {'reached' if ok else 'not reached'} on equal or faster "
                   f"hardware{note}", ok, ctx.src(f, extra=f"this study's run {r.get('run_id', '?')}"))


def projection_vs_measurement(ctx: Context) -> Iterator[Finding]:
    """Per model the document projects: one row saying there is no measurement to compare with, or one
    row per projected figure."""
    doc, summary = ctx.doc, ctx.measured_summary
    figs = [f for f in doc.figures if f.model and (f.instance or f.comparable_instance)
            and f.metric in PROJECTED_METRICS]
    for model in dict.fromkeys(f.model for f in figs):
        of_model = [f for f in figs if f.model == model]
        have = summary is not None and not summary.empty and "model" in summary \
            and (summary["model"] == model).any()
        if not have:
            yield not_checkable(f"{doc.name} projections for {model}",
                                "this study has no measured run of this model yet", ctx.src(*of_model),
                                "no measurement yet")
            continue
        rows = summary[summary["model"] == model]
        for col, want in (("input_tokens", doc.input_tokens), ("output_tokens", doc.output_tokens)):
            if want and col in rows:
                rows = rows[rows[col] == want]
        if rows.empty:
            yield not_checkable(f"{doc.name} projections for {model}",
                                f"this study has runs of {model}, but none with the document's {doc.input_tokens} "
                                f"input / {doc.output_tokens} output tokens", ctx.src(*of_model),
                                "not checkable: no measurement of the same workload shape")
            continue
        for f in of_model:
            yield _compare(ctx, f, rows)


CHECKS = (
    Check("projection_vs_measurement", "projection vs measurement", projection_vs_measurement),
)
