"""Every run folder under an outputs folder, read once: typed manifests, a run table, and DuckDB views
`runs`, `levels` and `requests`. Run folders are write-once, so one set of folders gives one RunSet."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from accelbench.config import paths
from accelbench.store.manifest import RunManifest
from accelbench.store.runs import run_dirs


class RunSet:
    def __init__(self, outputs_dir: Path | str, dirs: tuple[Path, ...]) -> None:
        self.outputs_dir = Path(outputs_dir)
        self.dirs = dirs
        self.manifests: dict[str, RunManifest] = {}
        self.run_dir: dict[str, Path] = {}
        for d in dirs:
            m = RunManifest.load(d)
            self.manifests[m.run_id] = m
            self.run_dir[m.run_id] = d
        self.runs = pd.DataFrame([_run_row(m, self.run_dir[m.run_id]) for m in self.manifests.values()])
        self._levels: pd.DataFrame | None = None

    def connect(self):
        """A DuckDB connection with views `runs`, `levels` and `requests` over these run folders."""
        import duckdb
        con = duckdb.connect()
        runs = self.runs if not self.runs.empty else pd.DataFrame({"run_id": pd.Series(dtype=str),
                                                                   "scenario": pd.Series(dtype=str)})
        con.register("runs", runs)
        root = paths.results_dir(self.outputs_dir)
        for table in ("levels", "requests"):
            if list(root.glob(f"*/*/{table}.parquet")):
                con.execute(f"""CREATE VIEW {table} AS
                    SELECT * EXCLUDE (filename, file_row_number), split_part(filename, '/', -2) AS run_id,
                           file_row_number AS row_in_run
                    FROM read_parquet('{root}/*/*/{table}.parquet', filename=true, file_row_number=true,
                                      union_by_name=true)""")
        return con

    def table(self, run_id: str, name: str) -> pd.DataFrame:
        """One run's raw table (requests, telemetry, scheduler, levels); empty when the run has none."""
        path = self.run_dir[run_id] / f"{name}.parquet"
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    def levels(self) -> pd.DataFrame:
        """Every run's levels joined with its run facts (empty frame when there are none)."""
        if self._levels is None:
            self._levels = pd.DataFrame()
            if self.dirs:
                con = self.connect()
                if con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name='levels'").fetchone()[0]:
                    self._levels = con.execute(
                        "SELECT r.*, l.* EXCLUDE (run_id, row_in_run) FROM levels l JOIN runs r USING (run_id) "
                        "ORDER BY r.run_dir, l.row_in_run").df()
        return self._levels.copy()


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


@functools.lru_cache(maxsize=8)
def _cached(outputs_dir: Path, dirs: tuple[Path, ...]) -> RunSet:
    return RunSet(outputs_dir, dirs)


def run_set(outputs_dir: Path | str = paths.OUTPUTS_DIR) -> RunSet:
    """The RunSet of the run folders under `outputs_dir` now (read once per set of folders)."""
    outputs_dir = Path(outputs_dir).resolve()
    return _cached(outputs_dir, tuple(d.resolve() for d in run_dirs(outputs_dir)))


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
        key = (run_set(outputs_dir).dirs, args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = fn(outputs_dir, *args, **kwargs)
        return cache[key].copy()

    return wrapper
