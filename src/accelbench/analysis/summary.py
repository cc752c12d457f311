"""The one summary across repetitions: core.metrics.summarize_levels per run and level, computed once per
set of run folders, with each run's facts. Cost, roofline, compare, audit, recommend and the report read
it here instead of summarizing again."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from accelbench.config import paths
from accelbench.core import metrics
from accelbench.store import runset
from accelbench.store.manifest import WHOLE_LEVELS

# The run facts a summary row keeps beside its level (as runset.RunSet.runs has them).
RUN_FACTS = ("run_id", "scenario", "model", "workload", "backend", "instance", "accelerator",
             "accelerators_used", "tensor_parallel_size", "input_tokens", "output_tokens", "started_at", "status",
             "fixture")
LEVEL = ("level_kind", "level_value")


def summarize_runs(levels: pd.DataFrame, include_failed: bool = False,
                   include_fixtures: bool = False) -> pd.DataFrame:
    """summarize_levels per run and level of `levels` (as from runset.load_levels()), keeping the run facts.

    Completed and partial (WHOLE_LEVELS), non-fixture runs only unless asked; an empty frame when there
    is nothing to summarize.
    """
    if levels.empty:
        return pd.DataFrame()
    df = levels
    if not include_failed and "status" in df:
        df = df[df["status"].isin(WHOLE_LEVELS)]
    if not include_fixtures and "fixture" in df:
        df = df[~df["fixture"].fillna(False).astype(bool)]
    if df.empty:
        return pd.DataFrame()
    keys = tuple(k for k in RUN_FACTS if k in df and df[k].notna().all()) + LEVEL
    return metrics.summarize_levels(df, group_by=keys)


@runset.per_run_set
def all_levels(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every run's summary rows, failed runs and fixtures included (filter on `status` and `fixture`)."""
    return summarize_runs(runset.load_levels(output_dir), include_failed=True, include_fixtures=True)


def measured(output_dir: Path | str = paths.OUTPUTS_DIR, include_failed: bool = False,
             include_fixtures: bool = False) -> pd.DataFrame:
    """all_levels of the runs whose levels count: completed and partial, measurements (not fixtures)."""
    s = all_levels(output_dir)
    if s.empty:
        return s
    keep = pd.Series(True, index=s.index)
    if not include_failed:
        keep &= s["status"].isin(WHOLE_LEVELS)
    if not include_fixtures:
        keep &= ~s["fixture"].fillna(False).astype(bool)
    return s[keep].reset_index(drop=True)


def of_run(run_dir: Path | str) -> pd.DataFrame:
    """The summary rows of one run folder (its outputs folder is two levels above the results folder)."""
    run_dir = Path(run_dir)
    outputs_dir = run_dir.parents[2]
    s = all_levels(outputs_dir)
    return s[s["run_id"] == run_dir.name].reset_index(drop=True) if not s.empty else s
