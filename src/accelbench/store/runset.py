"""Every run folder under an outputs folder, read once: typed manifests, a run table, and DuckDB views
`runs`, `levels` and `requests`. A folder that is not a readable run (its manifest or a Parquet file
unreadable, an unknown status or schema version, a hidden staging folder) is skipped with a warning naming
it and why (`RunSet.skipped`); every other run stays readable. Run folders are write-once."""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from accelbench.config import paths
from accelbench.core.metrics import LEVEL_KEYS
from accelbench.errors import AccelbenchError
from accelbench.store.manifest import (
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    STATUSES,
    RunManifest,
)

log = logging.getLogger(__name__)

# The columns a reader needs in each table, and which of them must be numbers (checked from the Parquet
# footer alone, so a wrong file is named here instead of failing a query over every run).
REQUIRED_COLUMNS = {"levels": (*LEVEL_KEYS,),
                    "requests": (*LEVEL_KEYS, "submit_s", "first_token_s", "end_s", "output_tokens", "error")}
NUMERIC_COLUMNS = {"level_value", "repetition", "submit_s", "first_token_s", "end_s", "output_tokens"}
VIEWS = ("levels", "requests")  # the run tables served as DuckDB views


class RunSet:
    def __init__(self, outputs_dir: Path | str, folders: tuple[Path, ...], key: tuple | None = None) -> None:
        """Read each of `folders` (results/<scenario>/<run_id>/ candidates) once, keeping the readable runs."""
        self.outputs_dir = Path(outputs_dir)
        self.key = key or (self.outputs_dir, _stamps(folders))  # what caches of tables of this set are keyed on
        self.manifests: dict[str, RunManifest] = {}
        self.run_dir: dict[str, Path] = {}
        self.skipped: list[tuple[Path, str]] = []  # (folder, why), in folder order
        self._files: dict[str, list[str]] = {t: [] for t in VIEWS}
        rows = []
        for d in folders:
            try:
                m, files, row = self._read(d)
            except AccelbenchError as e:
                self.skipped.append((d, str(e)))
                log.warning("skipped run folder %s: %s", d, e)
                continue
            self.manifests[m.run_id] = m
            self.run_dir[m.run_id] = d
            rows.append(row)
            for t in VIEWS:
                self._files[t] += [str(f) for f in files if f.name == f"{t}.parquet"]
        self.dirs = tuple(self.run_dir.values())
        self.runs = pd.DataFrame(rows)
        self._levels: pd.DataFrame | None = None

    def _read(self, d: Path) -> tuple[RunManifest, list[Path], dict[str, Any]]:
        """One folder's manifest, Parquet files and run row; AccelbenchError saying why it is not a run."""
        if _hidden(d):
            raise AccelbenchError("a hidden folder (a staging .<run_id>.partial folder is a run still being "
                                  "written, or one cut off before it was moved into place), not a run")
        if not (d / "manifest.json").is_file():
            raise AccelbenchError("no manifest.json")
        try:
            m = RunManifest.load(d)
        except AccelbenchError as e:
            raise AccelbenchError(_manifest_problem(d / "manifest.json") or
                                  "manifest.json: " + str(e).removeprefix(f"{d / 'manifest.json'}: ")) from e
        if m.schema_version not in SCHEMA_VERSIONS:
            raise AccelbenchError(f"manifest.json: schema version {m.schema_version} is not one this accelbench "
                                  f"reads ({', '.join(map(str, SCHEMA_VERSIONS))})")
        if m.status not in STATUSES:
            raise AccelbenchError(f"manifest.json: unknown status {m.status!r} (known: {', '.join(STATUSES)})")
        if m.run_id != d.name:
            raise AccelbenchError(f"manifest.json: run_id {m.run_id!r} is not its folder's name {d.name!r}")
        if m.run_id in self.run_dir:
            raise AccelbenchError(f"run id {m.run_id!r} already read from {self.run_dir[m.run_id]}")
        files = sorted(d.glob("*.parquet"))
        for f in files:
            _check_parquet(f)
        try:
            row = _run_row(m, d)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise AccelbenchError(f"manifest.json: unexpected content ({type(e).__name__}: {e})") from e
        return m, files, row

    def connect(self):
        """A DuckDB connection with views `runs`, `levels` and `requests` over these run folders."""
        import duckdb
        con = duckdb.connect()
        runs = self.runs if not self.runs.empty else pd.DataFrame({"run_id": pd.Series(dtype=str),
                                                                   "scenario": pd.Series(dtype=str)})
        con.register("runs", runs)
        for table in VIEWS:
            if self._files[table]:
                files = ", ".join("'" + f.replace("'", "''") + "'" for f in sorted(self._files[table]))
                con.execute(f"""CREATE VIEW {table} AS
                    SELECT * EXCLUDE (filename, file_row_number), split_part(filename, '/', -2) AS run_id,
                           file_row_number AS row_in_run
                    FROM read_parquet([{files}], filename=true, file_row_number=true, union_by_name=true)""")
        return con

    def table(self, run_id: str, name: str) -> pd.DataFrame:
        """One run's raw table (requests, telemetry, scheduler, levels); empty when the run has none."""
        path = self.run_dir[run_id] / f"{name}.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    def levels(self) -> pd.DataFrame:
        """Every run's levels joined with its run facts (empty frame when there are none)."""
        if self._levels is None:
            self._levels = pd.DataFrame()
            if self._files["levels"]:
                self._levels = self.connect().execute(
                    "SELECT r.*, l.* EXCLUDE (run_id, row_in_run) FROM levels l JOIN runs r USING (run_id) "
                    "ORDER BY r.run_dir, l.row_in_run").df()
        return self._levels.copy()


def _manifest_problem(path: Path) -> str | None:
    """Why a manifest that failed to load is not readable, where a reader can say it more plainly than the
    validation error: not a JSON object, a newer schema version, an unknown status."""
    try:
        text = path.read_text()
    except (OSError, ValueError) as e:  # ValueError: not UTF-8
        return f"manifest.json: not readable ({e})"
    if not text.strip():
        return "manifest.json: empty"
    try:
        data = json.loads(text)
    except ValueError as e:
        return f"manifest.json: not valid JSON ({e})"
    if not isinstance(data, dict):
        return f"manifest.json: a JSON {type(data).__name__}, not an object"
    version, status = data.get("schema_version"), data.get("status")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return (f"manifest.json: schema version {version} is newer than this accelbench reads (up to "
                f"{SCHEMA_VERSION}); read it with the accelbench version that wrote it")
    if status not in STATUSES:
        return f"manifest.json: unknown status {status!r} (known: {', '.join(STATUSES)})"
    return None


def _check_parquet(path: Path) -> None:
    """A Parquet file's footer is readable and, for the tables readers query, holds the columns they need."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException) as e:
        raise AccelbenchError(f"{path.name}: not a readable Parquet file ({e})") from e
    required = REQUIRED_COLUMNS.get(path.stem, ())
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise AccelbenchError(f"{path.name}: missing column(s) {', '.join(missing)}")
    for c in required:
        kind = schema.field(c).type
        if c in NUMERIC_COLUMNS and not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise AccelbenchError(f"{path.name}: column {c} holds {kind}, not numbers")


def _run_row(m: RunManifest, run_dir: Path) -> dict[str, Any]:
    """One row per run: identity, status, and the facts the report labels runs with."""
    r, env = m.resolved, m.environment
    return dict(
        run_id=m.run_id, scenario=r.scenario.name, status=m.status, error=m.error, fixture=m.fixture,
        backend=r.scenario.backend, instance=r.instance.name, accelerator=r.instance.accelerator_name,
        accelerators_used=r.scenario.accelerators_used, tensor_parallel_size=r.scenario.engine.tensor_parallel_size,
        model=r.model.name, workload=r.workload.name, input_tokens=r.workload.input_tokens,
        output_tokens=r.workload.output_tokens, vllm=env.vllm, torch=env.libraries.get("torch"),
        started_at=m.started_at, git_commit=env.git.commit, git_dirty=env.git.dirty,
        measured_gpus=m.measured_gpus, jit_levels=len(m.jit_compilation_levels), run_dir=str(run_dir))


def run_folders(outputs_dir: Path | str = paths.OUTPUTS_DIR) -> tuple[Path, ...]:
    """Every folder at results/<scenario>/<run_id>/: the run folders, and those that look like one but are
    not (RunSet says why it skips them); a hidden folder only when it holds a manifest (a staging folder
    that does not is a run still being written)."""
    root = paths.results_dir(Path(outputs_dir))
    if not root.is_dir():
        return ()
    folders = [Path(run.path) for scenario in os.scandir(root) if scenario.is_dir()
               for run in os.scandir(scenario.path) if run.is_dir()]
    return tuple(sorted(d for d in folders if not _hidden(d) or (d / "manifest.json").is_file()))


def _hidden(d: Path) -> bool:
    return d.name.startswith(".") or d.parent.name.startswith(".")


def _stamps(folders: tuple[Path, ...]) -> tuple:
    """Each folder with its manifest's modification time: a folder finished in place reads anew."""
    def stamp(d: Path) -> int | None:
        try:
            return (d / "manifest.json").stat().st_mtime_ns
        except OSError:
            return None
    return tuple((d, stamp(d)) for d in folders)


@functools.lru_cache(maxsize=8)
def _cached(outputs_dir: Path, stamps: tuple) -> RunSet:
    return RunSet(outputs_dir, tuple(d for d, _ in stamps), key=(outputs_dir, stamps))


def run_set(outputs_dir: Path | str = paths.OUTPUTS_DIR) -> RunSet:
    """The RunSet of the run folders under `outputs_dir` now (read once per set of folders)."""
    outputs_dir = Path(outputs_dir).resolve()
    return _cached(outputs_dir, _stamps(run_folders(outputs_dir)))


def manifests(outputs_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    return run_set(outputs_dir).runs.copy()


def load_levels(outputs_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    return run_set(outputs_dir).levels()


def connect(outputs_dir: Path | str = paths.OUTPUTS_DIR):
    return run_set(outputs_dir).connect()


def per_run_set(fn: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """Memoize a table built from the run folders under an outputs folder (fn's first argument).

    The same set of write-once folders gives the same table; each caller gets its own copy."""
    cache: dict[tuple, pd.DataFrame] = {}

    @functools.wraps(fn)
    def wrapper(outputs_dir: Path | str = paths.OUTPUTS_DIR, *args: Any, **kwargs: Any) -> pd.DataFrame:
        key = (run_set(outputs_dir).key, args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = fn(outputs_dir, *args, **kwargs)
        return cache[key].copy()

    return wrapper
