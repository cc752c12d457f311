"""Figures published elsewhere (the seed posts' projections), typed and checked when params/reference/ loads.

A document holds `figures` (one stated number each, with where it stands in the document) and
`relations` (a stated number that the document derives from its own figures, e.g. "83% of H100's
throughput"), so accelbench.analysis.audit can redo the arithmetic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from accelbench.config import params, paths
from accelbench.config.bounds import (
    DATE_PATTERN,
    MAX_ACCELERATORS,
    MAX_CONCURRENCY,
    MAX_TOKENS,
)
from accelbench.config.names import Name
from accelbench.config.params import Frozen
from accelbench.errors import AccelbenchError

# The closed vocabulary of figure metrics; the unit is in the name.
Metric = Literal[
    # measured-style serving figures
    "ttft_ms", "itl_ms", "e2e_s", "output_tok_per_s", "decode_tok_per_s_per_request", "requests_per_min",
    "max_concurrency", "usd_per_m_tokens", "usd_per_k_tokens",
    # money
    "price_usd_per_hour", "usd_per_accelerator_hour", "usd_per_day", "usd_per_month", "usd_per_6_months",
    "usd_saved_6_months",
    # hardware
    "accelerator_count", "memory_per_accelerator_gb", "total_accelerator_memory_gb", "memory_bandwidth_gb_s",
    "peak_fp16_tflop_s", "network_gbps",
    # model architecture and deployment
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "num_routed_experts",
    "num_experts_per_tok", "total_params_b", "active_params_b", "context_window_tokens",
    "min_accelerators_bf16", "vllm_context_tokens",
]

RelationKind = Literal["ratio_pct", "reduction_pct", "increase_pct", "ratio_x", "product", "quotient",
                       "difference", "scaling_advantage_x"]
ARITY = {"ratio_pct": 2, "reduction_pct": 2, "increase_pct": 2, "ratio_x": 2, "difference": 2,
         "scaling_advantage_x": 4}


class Figure(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="unique within the document")
    metric: Metric = Field(description="what the number is; the unit is in the name")
    value: float = Field(description="the number as the document states it")
    hardware_label: str = Field("", description="the hardware as the document names it, e.g. 'A: p5/H100'")
    instance: Name | None = Field(None, description="key in params/instances.yaml the figure is about, if any")
    accelerators: int | None = Field(None, ge=1, le=MAX_ACCELERATORS,
                                     description="accelerators the figure is for, when not the whole instance")
    comparable_instance: Name | None = Field(
        None, description="when `instance` is unknown: an instance in params/instances.yaml with the accelerator "
                          "the document names, used only to place the figure on hardware (roofline, measurements)")
    model: Name | None = Field(None, description="key in params/models/ the figure is about, if any")
    concurrency: int | None = Field(None, ge=1, le=MAX_CONCURRENCY,
                                    description="concurrent requests the figure is stated at")
    section: str = Field(min_length=2, description="table or section of the document")
    quote: str = Field("", description="the document's own words or table cell")
    note: str = Field("", description="what a reader should know: ambiguity, mislabels")


class Relation(Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="unique within the document")
    claim: str = Field(min_length=3, description="the stated relation, in the document's words")
    kind: RelationKind = Field(description="how the stated value follows from the terms")
    terms: list[str] = Field(min_length=1, max_length=16, description="figure ids the relation is computed from, in order")
    factor: float = Field(1.0, description="constant multiplier (product, quotient, difference)")
    value: float = Field(description="the value the document states")
    tolerance_pct: float = Field(2.0, ge=0, le=100, description="relative tolerance for rounding, percent")
    section: str = Field(min_length=2, description="table or section of the document")
    note: str = Field("", description="assumptions behind the arithmetic")


class ReferenceDocument(Frozen):
    name: Name = Field(description="file stem in params/reference/")
    document: str = Field(description="file the figures come from (seed file name)")
    title: str = Field(description="the document's title")
    published: str = Field(description="publication date as the document gives it")
    read_date: str = Field(pattern=DATE_PATTERN, description="when this project read it")
    kind: Literal["projection"] = Field(description="projections: numbers not measured by this project")
    input_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS, description="prompt length the figures are for")
    output_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS, description="generated tokens the figures are for")
    precision: str = Field("", description="weight precision the document states, e.g. bfloat16")
    stated_formula: str = Field("", description="the cost formula the document states, in its words")
    notes: str = Field("", description="what the figures are, and what they are not")
    figures: list[Figure] = Field(description="stated numbers")
    relations: list[Relation] = Field(default_factory=list, description="stated derived numbers")

    @model_validator(mode="after")
    def _ids(self) -> ReferenceDocument:
        ids = [f.id for f in self.figures] + [r.id for r in self.relations]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"fields 'figures.id' and 'relations.id': ids must be unique, repeated: {', '.join(dup)}")
        known = {f.id for f in self.figures}
        for r in self.relations:
            missing = [t for t in r.terms if t not in known]
            if missing:
                raise ValueError(f"relation '{r.id}': field 'terms' names unknown figure(s) {missing}; valid: "
                                 f"ids of this document's figures")
            need = ARITY.get(r.kind)
            if need and len(r.terms) != need:
                raise ValueError(f"relation '{r.id}': field 'terms': kind {r.kind} needs {need} terms, got "
                                 f"{len(r.terms)}")
        return self

    def figure(self, figure_id: str) -> Figure:
        """The figure with this id (ids are checked unique when the file loads)."""
        return next(f for f in self.figures if f.id == figure_id)

    def find(self, metric: str, instance: str | None = None, model: str | None = None,
             concurrency: int | None = None) -> list[Figure]:
        return [f for f in self.figures if f.metric == metric
                and (instance is None or f.instance == instance) and (model is None or f.model == model)
                and (concurrency is None or f.concurrency == concurrency)]

    @property
    def citation(self) -> str:
        return f"{self.document} '{self.title}' ({self.published})"


def reference_names() -> list[str]:
    return params._names(paths.REFERENCE_DIR)


def load_reference(name: str) -> ReferenceDocument:
    """One file of params/reference/, its instance and model keys checked against params/."""
    doc = params._load_named(ReferenceDocument, paths.REFERENCE_DIR, name, "reference document")
    path = paths.REFERENCE_DIR / f"{name}.yaml"
    instances, models = set(params.load_instances()), set(params.model_names())
    for f in doc.figures:
        for field in ("instance", "comparable_instance"):
            value = getattr(f, field)
            if value is not None and value not in instances:
                raise AccelbenchError(f"{path}: figure '{f.id}': field '{field}': unknown instance '{value}'; "
                                      f"valid: {', '.join(sorted(instances))} (or leave it null)")
        if f.model is not None and f.model not in models:
            raise AccelbenchError(f"{path}: figure '{f.id}': field 'model': unknown model '{f.model}'; "
                                  f"valid: {', '.join(sorted(models))} (or leave it null)")
    return doc


def load_references() -> list[ReferenceDocument]:
    return [load_reference(n) for n in reference_names()]
