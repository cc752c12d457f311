"""Runs that survive their own process: levels saved as they end, SIGINT/SIGTERM saving what was measured
marked interrupted, the run's processes and folder taken care of when its process is killed. A stand-in
engine (one child process standing for vLLM's engine core) for the quick tests; real vLLM on the cpu
scenario for the acceptance tests (slow)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from accelbench.config import paths
from accelbench.core.levels import LevelEvent
from accelbench.measure import study
from accelbench.measure.watchdog import RUN_VAR
from accelbench.store.manifest import RunManifest
from accelbench.store.runs import load_manifest, run_dirs

STEP_S = 0.002


class StandInEngine:
    """Streams one token per STEP_S; start() starts a child process standing for vLLM's engine core."""

    def __init__(self, resolved: Any, cache_dir: Any) -> None:
        self.kwargs = {"model": "stand-in"}
        self.effective = {"max_num_batched_tokens": 2048}
        self.scheduler = type("Scheduler", (), {"samples": []})()
        self.start_s = 0.0
        self.core: subprocess.Popen | None = None

    async def start(self) -> None:
        self.core = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])

    async def generate(self, request_id: str, prompt_token_ids: list[int], max_tokens: int):
        for _ in range(max_tokens):
            await asyncio.sleep(STEP_S)
            yield 1, None

    def serve_kwargs(self) -> dict[str, Any]:
        return self.kwargs

    def close(self) -> None:
        if self.core is not None:
            self.core.terminate()
            self.core.wait()
            self.core = None


# a process measuring the cpu scenario with the stand-in engine, by the CLI or by run_scenario
SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_interrupts import StandInEngine
    from accelbench.measure import study
    study.VllmEngine = StandInEngine
    if sys.argv[1] == "cli":
        from accelbench.cli import main
        sys.argv = ["accelbench", "run", "cpu", "--workload", "cpu-smoke", "--output-dir", sys.argv[2]]
        main()
    else:
        study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=sys.argv[2])
""").format(tests=str(Path(__file__).parent))


def _events(path: Path) -> list[LevelEvent]:
    if not path.exists():
        return []
    return [LevelEvent.from_json(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(check: Any, timeout_s: float, what: str) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if value := check():
            return value
        time.sleep(0.1)
    pytest.fail(f"waited {timeout_s} s for {what}")


def _gone(procs: list[psutil.Process]) -> bool:
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def _interrupted_run(outputs: Path) -> tuple[RunManifest, pd.DataFrame]:
    (run_dir,) = run_dirs(outputs)
    manifest = load_manifest(run_dir)
    levels = pd.read_parquet(run_dir / "levels.parquet")
    assert manifest.status == "interrupted" and manifest.levels_measured == len(levels) >= 1
    assert not [p for p in run_dir.parent.iterdir() if p.name.startswith(".")]  # no staging folder left
    return manifest, levels


def _start(mode: str, outputs: Path, events: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, mode, str(outputs)], cwd=paths.ROOT,
                            env={**os.environ, study.EVENTS_FILE_VAR: str(events)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_sigint_mid_sweep_saves_the_levels_measured_marked_interrupted(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    on_level = study.Collector.on_level

    def interrupt_after_the_first_level(self, level, records, start, end):
        on_level(self, level, records, start, end)
        if len(self.levels) == 1:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(study.Collector, "on_level", interrupt_after_the_first_level)
    with pytest.raises(study.RunInterrupted) as caught:
        study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)
    run = caught.value.run
    assert caught.value.exit_code == 130 and run.status == "interrupted" and len(run.levels) == 1
    assert str(run.run_dir) in str(caught.value) and "SIGINT" in str(caught.value)
    manifest, levels = _interrupted_run(tmp_path)
    assert manifest.error == "interrupted by SIGINT after 1 of 6 planned level(s) were measured"
    assert (levels["n_errors"] == 0).all()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler put back


def test_sigterm_on_accelbench_run_saves_the_levels_measured_says_where_and_exits_143(tmp_path):
    events = tmp_path / "events.jsonl"
    proc = _start("cli", tmp_path / "out", events)
    wait_for(lambda: any(e.phase == "end" for e in _events(events)), 120, "the first level's end")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    (run_dir,) = run_dirs(tmp_path / "out")
    assert f"interrupted: {run_dir}" in out
    manifest, _ = _interrupted_run(tmp_path / "out")
    assert manifest.error.startswith("interrupted by SIGTERM after ")


def test_a_killed_run_process_takes_its_engine_down_and_its_run_is_put_in_place_interrupted(tmp_path):
    events = tmp_path / "events.jsonl"
    proc = _start("study", tmp_path / "out", events)
    wait_for(lambda: any(e.phase == "end" for e in _events(events)), 120, "the first level's end")
    engine = [p for p in psutil.Process(proc.pid).children(recursive=True) if "time.sleep(600)" in " ".join(p.cmdline())]
    assert len(engine) == 1 and engine[0].environ().get(RUN_VAR)  # the run's token: the watchdog finds it
    proc.kill()
    proc.wait()
    wait_for(lambda: _gone(engine), 30, "the stand-in engine process to be stopped")
    wait_for(lambda: run_dirs(tmp_path / "out"), 30, "the run folder to be put in place")
    manifest, levels = _interrupted_run(tmp_path / "out")
    assert manifest.error.startswith("the process running the run ended before the run did, after ")
    assert (levels["n_errors"] == 0).all()
    (run_dir,) = run_dirs(tmp_path / "out")
    assert "ended before the run did" in (run_dir / "watchdog.log").read_text()


def test_the_folder_holds_a_readable_run_marked_interrupted_after_every_level(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    on_level = study.Collector.on_level
    seen: list[tuple[str, int, int]] = []

    def check_the_staging_folder(self, level, records, start, end):
        on_level(self, level, records, start, end)
        (staging,) = (tmp_path / "results" / "cpu").glob(".*.partial")
        m = RunManifest.load(staging)
        seen.append((m.status, m.levels_measured, len(pd.read_parquet(staging / "levels.parquet"))))

    monkeypatch.setattr(study.Collector, "on_level", check_the_staging_folder)
    run = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)
    assert seen == [("interrupted", n, n) for n in range(1, 7)]
    assert run.status == load_manifest(run.run_dir).status == "completed"


def test_a_run_leaves_no_temporary_folder_behind_and_keeps_its_engine_log(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    run = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path / "out")
    assert list(tmp.iterdir()) == []
    assert "[accelbench] event " in (run.run_dir / "engine.log").read_text()
    assert {p.name for p in run.run_dir.iterdir()} == {"manifest.json", "levels.parquet", "requests.parquet",
                                                         "engine.log"}


def test_a_drawn_run_id_that_is_taken_is_drawn_again_and_both_runs_are_kept(tmp_path, monkeypatch):
    from accelbench.store import runs
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    ids = iter(["same-id", "same-id", "other-id"])
    monkeypatch.setattr(runs, "new_run_id", lambda: next(ids))
    first = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)
    second = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)
    assert (first.run_dir.name, second.run_dir.name) == ("same-id", "other-id")
    assert [load_manifest(d).run_id for d in run_dirs(tmp_path)] == ["other-id", "same-id"]


def test_the_level_events_file_gets_a_level_end_only_once_its_rows_are_saved(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    events = tmp_path / "events.jsonl"
    monkeypatch.setenv(study.EVENTS_FILE_VAR, str(events))
    on_level = study.Collector.on_level
    ends_seen: list[int] = []

    def count_ends_before_saving(self, level, records, start, end):
        ends_seen.append(sum(e.phase == "end" for e in _events(events)))
        on_level(self, level, records, start, end)

    monkeypatch.setattr(study.Collector, "on_level", count_ends_before_saving)
    study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path / "out")
    assert ends_seen == list(range(6))
    assert [e.phase for e in _events(events)] == ["start", "end"] * 6


def test_a_run_started_with_sigint_ignored_keeps_ignoring_it(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        on_level = study.Collector.on_level

        def interrupt(self, *args):
            on_level(self, *args)
            os.kill(os.getpid(), signal.SIGINT)

        monkeypatch.setattr(study.Collector, "on_level", interrupt)
        run = study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert run.status == "completed" and len(run.levels) == 6


def test_sigint_in_a_notebook_cancels_the_run_in_its_thread_and_saves_it(tmp_path, monkeypatch):
    # inside a running event loop (a Jupyter kernel's), the run goes on in a thread of its own; the signal
    # reaches the thread waiting for it
    monkeypatch.setattr(study, "VllmEngine", StandInEngine)
    on_level = study.Collector.on_level

    def interrupt_after_the_second_level(self, *args):
        on_level(self, *args)
        if len(self.levels) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(study.Collector, "on_level", interrupt_after_the_second_level)

    async def cell() -> None:
        study.run_scenario("cpu", workload="cpu-smoke", outputs_dir=tmp_path)

    with pytest.raises(study.RunInterrupted) as caught:
        asyncio.run(cell())
    assert caught.value.run.status == "interrupted" and len(caught.value.run.levels) == 2
    _interrupted_run(tmp_path)
    assert not [t for t in threading.enumerate() if t.name == "accelbench-run"]


def test_interrupted_runs_levels_count_as_whole_in_analyses():
    from accelbench.store.manifest import STATUSES, WHOLE_LEVELS
    assert "interrupted" in STATUSES and "interrupted" in WHOLE_LEVELS and "failed" not in WHOLE_LEVELS


# --- acceptance: real vLLM on the cpu scenario ----------------------------------------------------------


def _run_processes(root: psutil.Process, events: Path) -> list[psutil.Process]:
    """Every process under `root` now, and any anywhere whose environment names this run's events file
    (every process the run exec'd inherits it)."""
    procs = {p.pid: p for p in root.children(recursive=True)}
    for p in psutil.process_iter():
        try:
            if p.environ().get(study.EVENTS_FILE_VAR) == str(events) and p.pid != root.pid:
                procs.setdefault(p.pid, p)
        except psutil.Error:
            pass
    return list(procs.values())


def _level_keys(events: Path) -> set[tuple]:
    return {(e.replicate, e.kind, e.value, e.repetition) for e in _events(events) if e.phase == "end"}


def _check_interrupted(outputs: Path, ended: set[tuple], procs: list[psutil.Process]) -> None:
    """No process of the run survives; the levels that had ended are saved; the report calls it interrupted."""
    from accelbench.analysis.runs import runs
    wait_for(lambda: _gone(procs), 90, "every process of the run to exit")
    wait_for(lambda: run_dirs(outputs), 60, "the run folder to be put in place")
    manifest, levels = _interrupted_run(outputs)
    saved = set(zip(levels["replicate"], levels["level_kind"], levels["level_value"], levels["repetition"]))
    assert ended and ended <= saved
    shown = runs(outputs)
    assert shown["status"].tolist() == ["interrupted"] and shown["run_id"].tolist() == [manifest.run_id]


@pytest.mark.slow
def test_killing_the_notebook_kernel_mid_sweep_leaves_no_vllm_and_an_interrupted_run(tmp_path):
    events, outputs = tmp_path / "events.jsonl", tmp_path / "outputs"
    papermill = subprocess.Popen(
        [sys.executable, "-m", "papermill", str(paths.RUN_NOTEBOOK), str(tmp_path / "run.ipynb"), "-p", "scenario",
         "cpu", "-p", "workload", "cpu-smoke", "-p", "output_dir", str(outputs), "--no-progress-bar"],
        cwd=paths.ROOT, env={**os.environ, study.EVENTS_FILE_VAR: str(events)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: _level_keys(events), 900, "the first level's end")
        (kernel,) = [p for p in psutil.Process(papermill.pid).children() if "ipykernel_launcher" in p.cmdline()]
        procs = _run_processes(kernel, events)
        assert any("EngineCore" in " ".join(p.cmdline()) for p in procs), [p.cmdline() for p in procs]
        ended = _level_keys(events)
        kernel.kill()
        papermill.communicate(timeout=300)
    finally:
        papermill.kill()
    _check_interrupted(outputs, ended, procs)


@pytest.mark.slow
def test_ctrl_c_on_accelbench_run_mid_sweep_saves_the_levels_measured_and_stops_vllm(tmp_path):
    events, outputs = tmp_path / "events.jsonl", tmp_path / "outputs"
    cli = subprocess.Popen([sys.executable, "-m", "accelbench.cli", "run", "cpu", "--workload", "cpu-smoke",
                            "--output-dir", str(outputs)], cwd=paths.ROOT,
                           env={**os.environ, study.EVENTS_FILE_VAR: str(events)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: _level_keys(events), 900, "the first level's end")
        procs = _run_processes(psutil.Process(cli.pid), events) + [psutil.Process(cli.pid)]
        ended = _level_keys(events)
        cli.send_signal(signal.SIGINT)
        out, _ = cli.communicate(timeout=300)
    finally:
        cli.kill()
    assert cli.returncode == 130, out
    _check_interrupted(outputs, ended, procs)
    (run_dir,) = run_dirs(outputs)
    assert f"interrupted: {run_dir}" in out and "interrupted by SIGINT after " in out
