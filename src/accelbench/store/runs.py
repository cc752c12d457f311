"""Write-once run folders: outputs/results/<scenario>/<run_id>/ with manifest.json, requests.parquet (one
row per request, raw timestamps), levels.parquet (aggregates, recomputable from requests),
telemetry.parquet and scheduler.parquet (raw samples) and engine.log (what vLLM printed).

A run is written into a hidden staging folder, `.<run_id>.partial` beside its final place, reserved
exclusively under a fresh run id when the run starts. Each file in it is replaced whole (written aside,
then renamed), so at any instant it holds a readable run; one rename puts it in place, so a reader never
sees a run folder change. A staging folder whose run's process died is put in place as it stands, marked
interrupted (`finalize_staging`: by the run's watchdog, or by the next run on the host).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
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

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a run id or scenario: one plain path component
STAGING_SUFFIX = ".partial"
OWNER_FILE = ".owner.json"  # in a staging folder: the host and process writing it (removed when put in place)
TMP_SUFFIX = ".tmp"
RESERVE_TRIES = 20


def new_run_id() -> str:
    """'<UTC time>-<host>-<16 hex digits>': 64 random bits, so two runs never draw the same id in practice;
    reserve() still creates its folder exclusively and draws again if one did."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0])[:16].strip("-") or "host"
    return f"{stamp}-{host}-{secrets.token_hex(8)}"


def check_name(kind: str, name: Any) -> str:
    """A run id or scenario name that is one plain folder name (never a path), else AccelbenchError."""
    if not isinstance(name, str) or not NAME.match(name):
        raise AccelbenchError(f"{kind} {name!r} is not a plain name (letters, digits, '.', '_', '-'; at most "
                              f"128 characters, not starting with '.' or '-')")
    return name


def check_relative(rel: Any) -> PurePosixPath:
    """A file path inside a run folder: relative, no '..' or '.' parts, no backslash."""
    if not isinstance(rel, str) or not rel or "\\" in rel or "\0" in rel:
        raise AccelbenchError(f"file name {rel!r} is not a relative path inside a run folder")
    p = PurePosixPath(rel)
    if p.is_absolute() or any(part in ("", ".", "..") for part in rel.split("/")):
        raise AccelbenchError(f"file name {rel!r} is not a relative path inside a run folder")
    return p


class RunFolder:
    """One run's folder while it is written: a staging folder reserved exclusively, every file replaced
    whole, put in place by `finalize()`."""

    def __init__(self, outputs_dir: Path, scenario: str, run_id: str, explicit: bool) -> None:
        self.outputs_dir, self.scenario, self.run_id, self.explicit = Path(outputs_dir), scenario, run_id, explicit

    @property
    def staging(self) -> Path:
        return _staging_path(self.outputs_dir, self.scenario, self.run_id)

    @property
    def final(self) -> Path:
        return paths.results_dir(self.outputs_dir) / self.scenario / self.run_id

    @classmethod
    def reserve(cls, outputs_dir: Path | str, scenario: str, run_id: str | None = None) -> RunFolder:
        """Create the staging folder of a new run, exclusively. With no `run_id` a fresh one is drawn (and
        drawn again should it be taken); a given `run_id` that is taken is refused: results are written once."""
        check_name("scenario", scenario)
        for _ in range(RESERVE_TRIES):
            folder = cls(Path(outputs_dir), scenario, check_name("run id", run_id or new_run_id()), bool(run_id))
            folder.staging.parent.mkdir(parents=True, exist_ok=True)
            if not folder.final.exists():
                try:
                    folder.staging.mkdir()  # exclusive: another process holding this id gets FileExistsError
                except FileExistsError:
                    pass
                else:
                    _write_json(folder.staging / OWNER_FILE, dict(host=socket.gethostname(), pid=os.getpid(),
                                                                  process_started=_process_start(os.getpid())))
                    return folder
            if run_id:
                raise AccelbenchError(f"{folder.final} already exists (or is being written): results are "
                                      f"written once, never overwritten")
        raise AccelbenchError(f"could not reserve a new run folder under {folder.staging.parent} "
                              f"after {RESERVE_TRIES} tries")

    def write_table(self, name: str, df: pd.DataFrame) -> None:
        if len(df.columns):  # a run that failed before measuring has no rows to write
            tmp = self.staging / f".{name}.parquet{TMP_SUFFIX}"
            df.to_parquet(tmp, index=False)
            os.replace(tmp, self.staging / f"{name}.parquet")

    def write_bytes(self, rel: str, data: bytes) -> None:
        target = self.staging / check_relative(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}{TMP_SUFFIX}")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def move_in(self, name: str, src: Path) -> None:
        """A file made elsewhere (on this filesystem or not) becomes part of the run."""
        src = Path(src)
        if src.exists() and src.resolve() != (self.staging / name).resolve():
            try:
                os.replace(src, self.staging / check_relative(name))
            except OSError:  # another filesystem: copied whole, then the original removed
                self.write_bytes(name, src.read_bytes())
                src.unlink()

    def write_manifest(self, manifest: dict[str, Any]) -> RunManifest:
        """Validate and write manifest.json (a run written as it goes rewrites it after each level)."""
        if manifest.get("status") not in STATUSES:
            raise ValueError(f"manifest status must be one of {STATUSES}, got {manifest.get('status')!r}")
        body = RunManifest.model_validate({"schema_version": SCHEMA_VERSION, **manifest, "run_id": self.run_id})
        self.write_bytes("manifest.json", body.dump().encode())
        return body

    def finalize(self) -> Path:
        """Put the staging folder in place under its run id (a drawn id that got taken meanwhile is drawn
        again, and the manifest follows); returns the run folder."""
        final = finalize_staging(self.staging, redraw=not self.explicit)
        self.run_id = final.name
        return final


def _staging_path(outputs_dir: Path, scenario: str, run_id: str) -> Path:
    return paths.results_dir(outputs_dir) / scenario / f".{run_id}{STAGING_SUFFIX}"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + TMP_SUFFIX)
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22): with the pid, it
    names one process (a pid alone may have been reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(pid: int, started: str | None) -> bool:
    if pid <= 0:
        return False
    if started is not None:
        return _process_start(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finalize_staging(staging: Path, redraw: bool = True) -> Path:
    """Put a staging folder in place as it stands: leftover temporary files removed, the owner file
    dropped, renamed to its run id. Its manifest says how the run ended (the running one says interrupted;
    the final one is written before this). A run id taken meanwhile is drawn again when `redraw` (the
    manifest is rewritten to match); otherwise AccelbenchError, the staging folder left as it is.

    Renaming a folder onto an existing non-empty folder fails (ENOTEMPTY) rather than replacing it, and a
    run folder always holds its manifest, so no run is ever overwritten, even by a race."""
    staging = Path(staging)
    run_id = staging.name.removeprefix(".").removesuffix(STAGING_SUFFIX)
    for p in staging.rglob(f"*{TMP_SUFFIX}"):
        p.unlink(missing_ok=True)
    (staging / OWNER_FILE).unlink(missing_ok=True)
    err: OSError | None = None
    for _ in range(RESERVE_TRIES):
        final = staging.parent / run_id
        if not final.exists():
            try:
                os.rename(staging, final)
                return final
            except FileNotFoundError:  # put in place meanwhile by someone else (the watchdog, a next run)
                raise
            except OSError as e:  # ENOTEMPTY or EEXIST: the name was taken between the check and the rename
                err = e
        if not redraw:
            raise AccelbenchError(f"{final} already exists: results are written once, never overwritten; "
                                  f"this run stays in {staging}")
        run_id = new_run_id()
        manifest = staging / "manifest.json"
        if manifest.exists():
            data = json.loads(manifest.read_text())
            data["run_id"] = run_id
            _write_json(manifest, data)
    raise AccelbenchError(f"could not put {staging} in place ({err or 'every run id drawn was taken'})")


def orphaned_staging(outputs_dir: Path | str) -> list[Path]:
    """Staging folders under outputs_dir written by a process of this host that is gone (killed with its
    watchdog, or the host restarted): runs cut off, never to be finished."""
    found = []
    host = socket.gethostname()
    for staging in sorted(paths.results_dir(Path(outputs_dir)).glob(f"*/.*{STAGING_SUFFIX}")):
        try:
            owner = json.loads((staging / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours to judge: a fleet write-back, or an older accelbench's staging folder
        if owner.get("host") == host and not _alive(int(owner["pid"]), owner.get("process_started")):
            found.append(staging)
    return found


def recover_orphans(outputs_dir: Path | str) -> list[Path]:
    """Put every orphaned staging folder in place, marked interrupted as its manifest says; returns them."""
    recovered = []
    for staging in orphaned_staging(outputs_dir):
        if (staging / "manifest.json").exists():
            try:
                recovered.append(finalize_staging(staging))
            except (OSError, AccelbenchError):  # put in place meanwhile by its watchdog, or not movable
                continue
    return recovered


def save_run(outputs_dir: Path, scenario: str, run_id: str, manifest: dict[str, Any],
             tables: dict[str, pd.DataFrame], files: dict[str, Path] | None = None) -> Path:
    """Write a run folder once: staged in a hidden folder, then renamed into place; never overwritten.

    The manifest is validated as a RunManifest before anything is written, so what is saved loads back.
    """
    if manifest.get("status") not in STATUSES:
        raise ValueError(f"manifest status must be one of {STATUSES}, got {manifest.get('status')!r}")
    RunManifest.model_validate({"schema_version": SCHEMA_VERSION, **manifest, "run_id": run_id})
    folder = RunFolder.reserve(outputs_dir, scenario, run_id)
    try:
        for name, df in tables.items():
            folder.write_table(name, df)
        for name, src in (files or {}).items():
            folder.move_in(name, src)
        folder.write_manifest(manifest)
    except BaseException:
        shutil.rmtree(folder.staging, ignore_errors=True)  # nothing was published; the caller has the data
        raise
    return folder.finalize()


def write_run_files(outputs_dir: Path, scenario: str, run_id: str, files: dict[str, bytes]) -> Path:
    """Write a run folder made elsewhere (a fleet node's) from its files' bytes, once, as save_run does.
    Every name must be a relative path inside the folder; the run id and scenario plain names."""
    for rel in files:
        check_relative(rel)
    folder = RunFolder.reserve(outputs_dir, scenario, run_id)
    try:
        for rel, data in files.items():
            folder.write_bytes(rel, data)
    except BaseException:
        shutil.rmtree(folder.staging, ignore_errors=True)
        raise
    return folder.finalize()


def run_dirs(outputs_dir: Path = paths.OUTPUTS_DIR) -> list[Path]:
    """Every run folder in place (staging folders, hidden, are runs still being written)."""
    return sorted(p.parent for p in paths.results_dir(outputs_dir).glob("*/*/manifest.json")
                  if not p.parent.name.startswith("."))


def load_manifest(run_dir: Path | str) -> RunManifest:
    return RunManifest.load(run_dir)
