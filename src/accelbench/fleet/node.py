"""On a fleet node: the Ray task that executes notebooks/run_scenario.ipynb with papermill as a user there
would, the guard that takes every process under it down with it, the environment the notebook sees, and
the level events the run appends to a file, followed to report which level is being measured."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench.config import paths
from accelbench.core.levels import LevelEvent, level_name
from accelbench.errors import AccelbenchError
from accelbench.fleet.plan import Job
from accelbench.measure import environment
from accelbench.measure.study import EVENTS_FILE_VAR
from accelbench.store import runs as results

# Ray sets these in a task's environment; a user's shell on the node has none of them. The notebook must
# see the node as that user would: every accelerator, OpenMP free to use every core.
RAY_TASK_VARS = ("OMP_NUM_THREADS",)
RAY_EMPTIED_VARS = ("CUDA_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES")  # emptied for a task asking no GPUs
JOB_ENV_VAR = "ACCELBENCH_FLEET_JOB"  # set in every process of a fleet run: which job started it
EVENTS_POLL_S = 0.5
LEFTOVER_WAIT_S = 30.0


def check_checkout(commit: str | None) -> None:
    """The node's checkout (where its accelbench is installed) must be at the driver's commit."""
    if not commit:
        return
    head = environment.git_state()["commit"]
    if head != commit:
        raise AccelbenchError(
            f"node {socket.gethostname()}: the accelbench checkout {paths.ROOT} is at "
            f"{(head or 'no git commit')[:12]} but the driver is at {commit[:12]}; put every node on the "
            f"driver's commit: `ray up` again from that checkout (it copies it to the nodes), or set "
            f"ACCELBENCH_REF in cluster/kuberay-raycluster.yaml to it (docs/fleet.md)")


def _kill_tree(wait_s: float = 0.0) -> None:
    """Kill every process under this one, after `wait_s` for them to end on their own."""
    import psutil  # an ipykernel dependency
    procs = psutil.Process().children(recursive=True)
    _, procs = psutil.wait_procs(procs, timeout=wait_s) if wait_s and procs else ([], procs)
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)  # reaps them: orphans below were re-parented to us


def guard(argv: list[str]) -> None:
    """`guard WORKER_PID EXIT_FILE CMD...`: run CMD (papermill) and take every process started under it
    down with it, also when the Ray worker that asked for it is killed.

    Without this, a cancelled task or a killed worker leaves the kernel's vLLM engine running on the node,
    holding its accelerators: the kernel exits when papermill goes, but the engine process it started is
    re-parented and lives on. Ray SIGKILLs a dead worker's direct children, so the guard forks away from
    the worker, makes itself the subreaper of everything under CMD, and watches the worker's pid.
    """
    import ctypes

    import psutil
    watch_pid, exit_file, cmd = int(argv[0]), Path(argv[1]), argv[2:]
    if os.fork():
        os._exit(0)
    os.setsid()
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans below stay ours
    try:
        worker = psutil.Process(watch_pid)
    except psutil.NoSuchProcess:
        os._exit(1)
    child = subprocess.Popen(cmd)
    while child.poll() is None:
        try:
            gone = not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            gone = True
        if gone:
            _kill_tree()
            shutil.rmtree(exit_file.parent, ignore_errors=True)  # nobody will collect the run now
            os._exit(1)
        time.sleep(1)
    # anything the notebook left behind; a run whose kernel died has its watchdog (measure.watchdog) stopping
    # vLLM and putting the run folder in place: it is given the time to
    _kill_tree(wait_s=LEFTOVER_WAIT_S)
    exit_file.write_text(str(child.returncode))
    os._exit(0)


def notebook_env(job_name: str = "", events_file: Path | None = None) -> dict[str, str]:
    """The environment the notebook runs in: the node's, less what Ray set for the task, plus a marker
    naming the fleet job (every process of the run inherits it) and where the run appends its level
    events (study.EVENTS_FILE_VAR)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k not in RAY_TASK_VARS}
    for k in RAY_EMPTIED_VARS:
        if env.get(k) == "":
            del env[k]
    env[JOB_ENV_VAR] = job_name
    if events_file is not None:
        env[EVENTS_FILE_VAR] = str(events_file)
    return env


class LevelFollower:
    """Hands each level event a run appends to its events file (one LevelEvent JSON a line) to `on_event`,
    from a thread polling the file while the run goes on; a last read when it stops catches the final ones.
    """

    def __init__(self, path: Path, on_event: Callable[[LevelEvent], None], poll_s: float = EVENTS_POLL_S) -> None:
        self.path, self.on_event, self.poll_s = Path(path), on_event, poll_s
        self.offset = 0
        self.partial = b""  # a line still being written: it waits for its newline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="accelbench-level-events", daemon=True)

    def read(self) -> list[LevelEvent]:
        """The events appended since the last read (none while the file does not exist yet)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        events = []
        for line in lines:
            try:
                events.append(LevelEvent.from_json(line.decode()))
            except (ValueError, TypeError):  # progress is best-effort: a line that is no event is skipped
                continue
        return events

    def _follow(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._deliver()
        self._deliver()

    def _deliver(self) -> None:
        for event in self.read():
            self.on_event(event)

    def __enter__(self) -> LevelFollower:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _notebook_error(notebook: Path) -> tuple[str, str] | None:
    """The executed notebook's error: (exception name, message), or None."""
    import nbformat
    try:
        nb = nbformat.read(notebook, as_version=4)
    except (OSError, ValueError):
        return None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return str(out.get("ename")), str(out.get("evalue"))
    return None


def failure_kind(run_made: bool, notebook_error: tuple[str, str] | None) -> str:
    """Why an attempt failed, for the driver to decide on a retry: 'final' when the notebook stopped with the
    project's error before any run folder was made (the scenario's params, or a host without what it needs:
    the same on every attempt), else 'failed' (the run failed or was cut off: the engine died, the kernel
    was killed, papermill failed), which another attempt may not repeat."""
    if not run_made and notebook_error is not None and notebook_error[0] == AccelbenchError.__name__:
        return "final"
    return "failed"


def staging_snapshot(out_dir: Path, scenario: str) -> dict[str, Any] | None:
    """The run folder being written under out_dir as it stands, once it holds a measured level: its run id
    and files' bytes (each file whole: the run replaces them whole; read again if the manifest changed
    while they were read), or None."""
    for staging in sorted((paths.results_dir(out_dir) / scenario).glob(f".*{results.STAGING_SUFFIX}")):
        for _ in range(3):
            try:
                before = (staging / "manifest.json").read_bytes()
                files = {str(p.relative_to(staging)): p.read_bytes() for p in sorted(staging.rglob("*"))
                         if p.is_file() and not p.name.startswith(".")}
                if (staging / "manifest.json").read_bytes() != before:
                    continue
                manifest = json.loads(before)
            except (OSError, ValueError):  # being put in place, or not written yet
                break
            if manifest.get("levels_measured"):
                return dict(run_id=manifest["run_id"], run_files=files)
            break
    return None


def execute_on_node(job: Job, commit: str | None, board: Any = None, attempt: int = 1) -> dict[str, Any]:
    """The Ray task: papermill run_scenario.ipynb here, as a user would, into a temporary folder; return
    the executed notebook and the run folder's files as bytes, the node it ran on, and why it failed
    (failure_kind). At each level's end the run folder as it stands goes to the status board, so what the
    attempt measured outlives a lost node or a cancelled task."""
    import ray

    ctx = ray.get_runtime_context()
    node = dict(node_id=ctx.get_node_id(), hostname=socket.gethostname(),
                ip=ray.util.get_node_ip_address(), assigned_resources=ctx.get_assigned_resources())

    def report(**fields: Any) -> None:
        if board is not None:
            board.update.remote(job.name, **fields)

    levels_ended = 0
    out_dir = Path()
    lost = dict(node=node, command=None, started_at=None)  # what a lost attempt's kept run records

    def on_event(event: LevelEvent) -> None:
        nonlocal levels_ended
        if event.phase == "start":
            report(level=f"measuring {level_name(event.kind, event.value)} rep {event.repetition}",
                   levels_done=levels_ended)
        else:  # the level's rows are saved in the run folder (study.EventsFile): keep it on the driver's side
            levels_ended += 1
            snapshot = staging_snapshot(out_dir, job.scenario)
            if board is not None and snapshot is not None:
                board.keep.remote(job.name, attempt, {**lost, **snapshot,
                                                      "finished_at": datetime.now(timezone.utc).isoformat()})

    report(state="running", level="starting the notebook", node=node)
    check_checkout(commit)
    started = datetime.now(timezone.utc).isoformat()
    with tempfile.TemporaryDirectory(prefix="accelbench-fleet-") as tmp:
        out_dir, executed = Path(tmp) / "outputs", Path(tmp) / "run_scenario.ipynb"
        cmd = [sys.executable, "-m", "papermill", str(paths.RUN_NOTEBOOK), str(executed),
               "-p", "scenario", job.scenario, "-p", "output_dir", str(out_dir),
               "--log-output", "--no-progress-bar"]
        for name in ("model", "workload"):
            if getattr(job, name):
                cmd += ["-p", name, getattr(job, name)]
        lost.update(command=cmd, started_at=started)
        tail: deque[str] = deque(maxlen=60)
        exit_file, events_file = Path(tmp) / "papermill.exit", Path(tmp) / "level-events.jsonl"
        guarded = [sys.executable, "-c",
                   "import sys; from accelbench.fleet.node import guard; guard(sys.argv[1:])",
                   str(os.getpid()), str(exit_file), *cmd]
        with LevelFollower(events_file, on_event), \
                subprocess.Popen(guarded, cwd=paths.ROOT, env=notebook_env(job.name, events_file),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 errors="replace") as proc:
            assert proc.stdout is not None
            tail.extend(proc.stdout)  # until papermill and everything under it have exited
        returncode = int(exit_file.read_text()) if exit_file.exists() else -1
        run_dirs = [d for d in results.run_dirs(out_dir) if d.parent.name == job.scenario]
        run_dir = run_dirs[-1] if run_dirs else None
        manifest = results.load_manifest(run_dir) if run_dir else None
        kept = staging_snapshot(out_dir, job.scenario) if run_dir is None else None  # its watchdog cut off too
        ran = returncode == 0 and manifest is not None and manifest.status == "completed"
        status = "completed" if ran else "failed"
        error = failure = None
        if status == "failed":
            notebook_error = _notebook_error(executed) if executed.exists() else None
            failure = failure_kind(run_dir is not None or kept is not None, notebook_error)
            error = ((manifest.error if manifest is not None else None)
                     or (notebook_error and ": ".join(notebook_error))
                     or f"papermill exited {returncode}: {''.join(tail)[-2000:]}")
        files = ({str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}
                 if run_dir else kept["run_files"] if kept else {})
        return dict(
            status=status, error=error, failure=failure,
            run_id=run_dir.name if run_dir else kept["run_id"] if kept else None, run_files=files,
            notebook=executed.read_bytes() if executed.exists() else None,
            node=node, command=cmd, papermill_returncode=returncode, output_tail="".join(tail),
            started_at=started, finished_at=datetime.now(timezone.utc).isoformat())
