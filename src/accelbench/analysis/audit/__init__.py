"""Checks of published figures (params/reference/): their own arithmetic, params/, physics, our runs.

Every check is a named Check (a stable id and the title rows show) in REGISTRY, in the order rows come:
document (the document against itself), facts (against params/), physics (roofline bounds), measurement
(against this study's runs). Each row is one claim: check, claim, arithmetic (the computation, written
out), holds, status and source. `holds` is True or False, or missing (<NA>) when the check cannot be
made; `status` then says why ("not checkable: ...", "no measurement yet").
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from accelbench.analysis.audit import document, facts, measurement, physics
from accelbench.analysis.audit.check import Check, Context, Row, frame_rows
from accelbench.config import params
from accelbench.config.reference import (
    ReferenceDocument,
    load_reference,
    load_references,
)

REGISTRY: tuple[Check, ...] = (*document.CHECKS, *facts.CHECKS, *physics.CHECKS, *measurement.CHECKS)
BY_ID = {c.id: c for c in REGISTRY}
CHECKS = tuple(c.title for c in REGISTRY)  # the titles, in order
COLUMNS = ["document", "check", "claim", "arithmetic", "holds", "status", "source"]

References = ReferenceDocument | str | Iterable[ReferenceDocument | str] | None


def title(check_id: str) -> str:
    """The title rows show for a check id."""
    return BY_ID[check_id].title


def document_rows(ctx: Context) -> list[Row]:
    """Every check's findings about one document, in REGISTRY order; consecutive per-figure checks run
    figure by figure, so a figure's memory-fit row sits next to its bound rows."""
    out: list[Row] = []
    i = 0
    while i < len(REGISTRY):
        if not REGISTRY[i].per_figure:
            out += [Row(ctx.doc.name, REGISTRY[i].id, f) for f in REGISTRY[i].find(ctx)]
            i += 1
            continue
        j = i
        while j < len(REGISTRY) and REGISTRY[j].per_figure:
            j += 1
        for fig in ctx.doc.figures:
            out += [Row(ctx.doc.name, c.id, f) for c in REGISTRY[i:j] for f in c.find(ctx, fig)]
        i = j
    return out


def _documents(reference: References) -> list[ReferenceDocument]:
    if reference is None:
        return load_references()
    if isinstance(reference, (ReferenceDocument, str)):
        reference = [reference]
    return [load_reference(r) if isinstance(r, str) else r for r in reference]


def rows(reference: References = None, measured_summary: pd.DataFrame | None = None) -> list[Row]:
    """audit() as Row objects, each naming its check by id."""
    instances = params.load_instances()
    models = {n: params.load_model(n) for n in params.model_names()}
    out: list[Row] = []
    for doc in _documents(reference):
        out += document_rows(Context(doc, instances, models, measured_summary))
    return out


def audit(reference: References = None, measured_summary: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every check of one or more reference documents (all of params/reference/ by default).

    measured_summary: this study's per-level summaries with run facts (summary.measured(output_dir));
    without it the projection-vs-measurement check reads "no measurement yet".
    """
    df = pd.DataFrame(frame_rows(rows(reference, measured_summary), BY_ID), columns=COLUMNS)
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
