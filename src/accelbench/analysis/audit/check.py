"""What an audit check is (Check, Finding, Row), the document a check reads (Context), and how figures are
compared and written (close, g, the tolerances)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from accelbench.analysis import roofline
from accelbench.config.params import Instance, ModelConfig
from accelbench.config.reference import Figure, ReferenceDocument

# relative tolerances, percent: stated figures are rounded; latency identities are approximations
TOL_ROUNDING_PCT = 2.0
TOL_PRICE_PCT = 0.1
TOL_LATENCY_PCT = 5.0


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


@dataclass(frozen=True)
class Finding:
    """One claim a check looked at: what it computed and whether the claim holds (None: not checkable,
    `status` says why)."""

    claim: str
    arithmetic: str
    holds: bool | None
    source: str
    status: str | None = None


@dataclass(frozen=True)
class Row:
    """A finding of one check (by id) about one document: one row of audit.audit()."""

    document: str
    check: str
    finding: Finding


@dataclass(frozen=True)
class Check:
    """A named check: a stable id, the title rows show, and what it finds.

    `find` takes the document's Context, or with per_figure the Context and one figure: consecutive
    per-figure checks run figure by figure, so one figure's rows stay together.
    """

    id: str
    title: str
    find: Callable[..., Iterable[Finding]]
    per_figure: bool = False


@dataclass
class Context:
    """One reference document with params/ and this study's measurements, and the lookups checks share."""

    doc: ReferenceDocument
    instances: dict[str, Instance]
    models: dict[str, ModelConfig]
    measured_summary: pd.DataFrame | None = None
    _seen: set[tuple[str, Hashable]] = field(default_factory=set)

    def first_time(self, check_id: str, key: Hashable) -> bool:
        """True the first time a check asks about `key` in this document (one row per configuration)."""
        if (check_id, key) in self._seen:
            return False
        self._seen.add((check_id, key))
        return True

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

    def of(self, metric: str) -> list[Figure]:
        """The document's figures of one metric, in document order."""
        return [f for f in self.doc.figures if f.metric == metric]

    def beside(self, f: Figure, metric: str) -> Figure | None:
        """The document's `metric` figure for the same hardware as f, whatever its model (an instance fact)."""
        return self.one(metric, self.key(f), any_model=True)

    @staticmethod
    def label(f: Figure) -> str:
        return f.hardware_label or f.instance or "?"

    def hw(self, f: Figure) -> roofline.Hardware | None:
        name = f.instance or f.comparable_instance
        if name is None:
            return None
        return roofline.hardware(self.instances[name], f.accelerators)


def not_checkable(claim: str, arithmetic: str, source: str, why: str) -> Finding:
    return Finding(claim, arithmetic, None, source, status=why)


def frame_rows(rows: list[Row], checks: dict[str, Check]) -> list[dict[str, Any]]:
    """Rows as audit.audit() shows them: the check's title, and status "holds" / "does not hold" unless
    the finding gives one."""
    out = []
    for r in rows:
        f = r.finding
        status = f.status if f.status is not None else ("holds" if f.holds else "does not hold")
        out.append(dict(document=r.document, check=checks[r.check].title, claim=f.claim, arithmetic=f.arithmetic,
                        holds=pd.NA if f.holds is None else bool(f.holds), status=status, source=f.source))
    return out
