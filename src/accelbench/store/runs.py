"""Write-once run folders: outputs/results/<scenario>/<run_id>/ with manifest.json, requests.parquet (one
row per request, raw timestamps), levels.parquet (aggregates, recomputable from requests),
telemetry.parquet and scheduler.parquet (raw samples) and engine.log (what vLLM printed)."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from accelbench.config import paths
from accelbench.errors import AccelbenchError
from accelbench.store.manifest import (  # noqa: F401 (re-exported)
    SCHEMA_VERSION,
    STATUSES,
    WHOLE_LEVELS,
    RunManifest,
)


def new_run_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{socket.gethostname().split('.')[0][:16]}-{secrets.token_hex(2)}"


def save_run(outputs_dir: Path, scenario: str, run_id: str, manifest: dict[str, Any],
             tables: dict[str, pd.DataFrame], files: dict[str, Path] | None = None) -> Path:
    """Write a run folder once: staged in a hidden folder, then renamed into place; never overwritten.

    The manifest is validated as a RunManifest before anything is written, so what is saved loads back.
    """
    if manifest.get("status") not in STATUSES:
        raise ValueError(f"manifest status must be one of {STATUSES}, got {manifest.get('status')!r}")
    body = RunManifest.model_validate({"schema_version": SCHEMA_VERSION, "run_id": run_id, **manifest})
    staging, final = _staging(outputs_dir, scenario, run_id)
    for name, df in tables.items():
        if len(df.columns):  # a run that failed before measuring has no rows to write
            df.to_parquet(staging / f"{name}.parquet", index=False)
    for name, src in (files or {}).items():
        if Path(src).exists():
            os.replace(src, staging / name)
    (staging / "manifest.json").write_text(body.dump())
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


def load_manifest(run_dir: Path | str) -> RunManifest:
    return RunManifest.load(run_dir)
