"""A run's watchdog: a small process, started with the run, that outlives the process measuring it. If that
process dies before the run ends (SIGKILL of a notebook's kernel, the OOM killer, a crash), the watchdog
kills every process the run started (vLLM's engine core and workers, a bench serve server) and puts the
run's staging folder in place as it stands, marked interrupted (store.runs.finalize_staging).

It runs as a script in its own session (a Ctrl-C or a kill of the run's process group misses it) and
imports only the standard library and psutil until it has to act.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RUN_VAR = "ACCELBENCH_RUN"  # in the environment of every process a run starts: that run's token
POLL_S = 0.5
GRACE_S = 5.0  # SIGTERM, then SIGKILL for what is still alive this long after
LOG_NAME = "watchdog.log"  # written into the run folder when the watchdog had to act
RESOURCE_TRACKER = "multiprocessing.resource_tracker"  # the interpreter's, shared by later runs: kept


def _run_processes(token: str, known: dict[int, float] | None = None, skip: set[int] | None = None) -> list[Any]:
    """Live processes of the run: those whose environment carries its token (every process exec'd during
    the run), and those in `known` (pid: create time) still alive (forked ones carry no environment copy)."""
    import psutil
    skip = (skip or set()) | {os.getpid()}
    found: dict[int, Any] = {}
    for pid, created in (known or {}).items():
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created and pid not in skip:
                found[pid] = proc
        except psutil.Error:
            pass
    for proc in psutil.process_iter():
        if proc.pid in skip or proc.pid in found:
            continue
        try:
            if proc.environ().get(RUN_VAR) == token:
                found[proc.pid] = proc
        except psutil.Error:
            pass
    return list(found.values())


def stop_processes(procs: list[Any], grace_s: float = GRACE_S) -> list[int]:
    """SIGTERM (vLLM's engine core shuts its workers down on it), then SIGKILL what is left; reaps them."""
    import psutil
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return [p.pid for p in procs]


class Watchdog:
    """Around a run (a context manager): sets the run's token in this process's environment, so every
    process the run starts carries it, and starts the watchdog process; at the end, stops whatever the
    run left running and tells the watchdog the run ended here."""

    def __init__(self, staging: Path, run_id: str) -> None:
        self.staging = Path(staging)
        self.token = f"{run_id}:{secrets.token_hex(8)}"
        self.proc: subprocess.Popen | None = None
        self._saved: str | None = None

    def __enter__(self) -> Watchdog:
        env = {k: v for k, v in os.environ.items() if k != RUN_VAR}
        self.proc = subprocess.Popen(
            [sys.executable, "-P", str(Path(__file__).resolve()), str(os.getpid()), self.token, str(self.staging)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True)
        self._saved = os.environ.get(RUN_VAR)
        os.environ[RUN_VAR] = self.token
        return self

    def leftovers(self) -> list[Any]:
        """Processes the run started that are still running (the interpreter's resource tracker aside)."""
        import psutil
        skip = {self.proc.pid} if self.proc else set()
        procs = []
        for proc in _run_processes(self.token, skip=skip):
            try:
                if not any(RESOURCE_TRACKER in part for part in proc.cmdline()):
                    procs.append(proc)
            except psutil.Error:
                pass
        return procs

    def __exit__(self, *exc: Any) -> None:
        if self._saved is None:
            os.environ.pop(RUN_VAR, None)
        else:
            os.environ[RUN_VAR] = self._saved
        stop_processes(self.leftovers())
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"done\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _descendants(parent: int) -> dict[int, float]:
    import psutil
    try:
        return {p.pid: p.create_time() for p in psutil.Process(parent).children(recursive=True)}
    except psutil.Error:
        return {}


def watch(parent: int, token: str, staging: Path, poll_s: float = POLL_S) -> int:
    """Follow the run's process until it says the run ended (exit 0) or it dies (then act, exit 1)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    known: dict[int, float] = {}
    stdin: Any = sys.stdin.buffer
    while os.getppid() == parent:
        known.update(_descendants(parent))
        known.pop(os.getpid(), None)
        if stdin is None:
            time.sleep(poll_s)
            continue
        ready, _, _ = select.select([stdin], [], [], poll_s)
        if ready:
            line = stdin.readline()
            if line.strip() == b"done":
                return 0
            if not line:  # the pipe closed without a word: the process is going; its pid tells
                stdin = None
    lines = [f"{_now()} the process running this run (pid {parent}) ended before the run did"]
    try:
        stopped = stop_processes(_run_processes(token, known))
        lines.append(f"{_now()} stopped {len(stopped)} process(es) it had started: {stopped}")
        if staging.exists():
            (staging / LOG_NAME).write_text("\n".join(lines) + "\n")
            from accelbench.store.runs import finalize_staging
            final = finalize_staging(staging)
            with open(final / LOG_NAME, "a") as f:
                f.write(f"{_now()} put the run in place as it stood, marked interrupted: {final}\n")
    except Exception:  # the run's folder stays in staging: the next run on this host puts it in place
        if staging.exists():
            (staging / LOG_NAME).write_text("\n".join(lines) + "\n" + traceback.format_exc())
    return 1


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(watch(int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])))
