"""The one summary across repetitions and engine starts: core.uncertainty.summarize_levels per run and
level, computed once per set of run folders, with each run's facts. Cost, roofline, compare, audit,
recommend and the report read it here instead of summarizing again.

Level rows come from the current estimators: stored as they are for runs whose schema version says the
current estimators wrote them (store.manifest.ESTIMATORS_SINCE), recomputed from the raw requests for
older runs (the raw rows are the record), energy from their raw telemetry samples. A recomputed run's rows
are kept in outputs/.cache/derived/, keyed by its raw files and the estimators' source, so a render
recomputes only what changed."""

from __future__ import annotations

import hashlib
import inspect
import os
from pathlib import Path

import pandas as pd

from accelbench.config import paths
from accelbench.core import metrics, uncertainty
from accelbench.store import runset
from accelbench.store.manifest import ESTIMATORS_SINCE, WHOLE_LEVELS

# The run facts a summary row keeps beside its level (as runset.RunSet.runs has them).
RUN_FACTS = ("run_id", "scenario", "model", "workload", "backend", "instance", "accelerator",
             "accelerators_used", "tensor_parallel_size", "input_tokens", "output_tokens", "started_at", "status",
             "fixture")
LEVEL = ("level_kind", "level_value")
# what a stored level row holds beyond the estimators: whole-level engine and telemetry figures, kept as stored
KEPT = ("level_start_s", "level_end_s", "kv_cache_usage_max_pct", "preempted_requests", "gpu_util_mean_pct",
        "memory_used_max_gb", "telemetry_samples")


def recompute(runs: runset.RunSet, run_id: str) -> pd.DataFrame:
    """One run's level rows under the current estimators, from its raw requests and telemetry samples."""
    requests = runs.table(run_id, "requests")
    if requests.empty:
        return pd.DataFrame()
    rows = metrics.level_table(metrics.request_table(requests))
    stored = runs.table(run_id, "levels")
    keys = [k for k in metrics.level_keys(rows) if k in stored]
    rows = rows.merge(stored[keys + [c for c in KEPT if c in stored]], on=keys, how="left")
    power = runs.table(run_id, "telemetry")
    power = power[power["power_w"].notna()] if "power_w" in power else pd.DataFrame()
    energy = [metrics.energy_between(power["t"], power["power_w"], a, b) if not power.empty else None
              for a, b in zip(rows["interval_start_s"], rows["interval_end_s"])]
    rows["energy_j"] = pd.Series(energy, dtype=float)
    rows["power_mean_w"] = rows["energy_j"] / rows["interval_s"]
    rows["j_per_output_token"] = rows["energy_j"] / (rows["output_tok_per_s"] * rows["interval_s"])
    return rows


def _cached(runs: runset.RunSet, run_id: str) -> pd.DataFrame:
    """recompute(runs, run_id), from the derived cache when its key matches."""
    run_dir = runs.run_dir[run_id]
    raw = sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in run_dir.glob("*.parquet"))
    key = hashlib.sha256(repr((raw, inspect.getsource(metrics))).encode()).hexdigest()[:16]
    path = paths.derived_cache_dir(runs.outputs_dir) / f"levels-{run_id}-{key}.parquet"
    if path.exists():
        try:
            return pd.read_parquet(path)
        except (OSError, ValueError):  # a cut or stale cache file: recompute and write it again
            pass
    rows = recompute(runs, run_id)
    try:  # a cache that cannot be written (a read-only outputs folder) only costs time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        rows.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError:
        pass
    return rows


@runset.per_run_set
def level_rows(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every run's level rows under the current estimators, with the run's facts (module docstring)."""
    runs = runset.run_set(output_dir)
    stored = runs.levels()
    if stored.empty:
        return stored
    parts = []
    for run_id, m in runs.manifests.items():
        if m.schema_version >= ESTIMATORS_SINCE:
            parts.append(stored[stored["run_id"] == run_id])
            continue
        rows = _cached(runs, run_id)
        if not rows.empty:
            facts = runs.runs[runs.runs["run_id"] == run_id]
            parts.append(facts.merge(rows, how="cross"))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


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
    return uncertainty.summarize_levels(df, group_by=keys)


@runset.per_run_set
def all_levels(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every run's summary rows, failed runs and fixtures included (filter on `status` and `fixture`)."""
    return summarize_runs(level_rows(output_dir), include_failed=True, include_fixtures=True)


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
