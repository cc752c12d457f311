"""The study across instances: one Ray task per scenario executes notebooks/run_scenario.ipynb with papermill
on a node of the scenario's instance type, and its run folder and executed notebook come back under
outputs/ as if the run had been local. Conventions (node resources, the code on nodes): docs/fleet.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench.config import params, paths
from accelbench.errors import AccelbenchError
from accelbench.measure import environment
from accelbench.measure.runner import plan_levels
from accelbench.store import runs as results

RESOURCE_PREFIX = "instance:"  # a node of EC2 type T advertises {"instance:T": 1}: one benchmark per node
NAMESPACE = "accelbench"
STATUS_ACTOR = "accelbench-fleet-status"  # named, so a second fleet run on the same cluster is refused
POLL_S = 0.5
LEVEL_LINE = re.compile(r"\[accelbench\] measuring (?P<label>.+?): \d+ requests")
# Ray sets these in a task's environment; a user's shell on the node has none of them. The notebook must
# see the node as that user would: every accelerator, OpenMP free to use every core.
RAY_TASK_VARS = ("OMP_NUM_THREADS",)
RAY_EMPTIED_VARS = ("CUDA_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES")  # emptied for a task asking no GPUs
JOB_ENV_VAR = "ACCELBENCH_FLEET_JOB"  # set in every process of a fleet run: which job started it


def resource_label(instance: str) -> str:
    """The custom resource a node of this instance type advertises: 'instance:p5en.48xlarge'."""
    return f"{RESOURCE_PREFIX}{instance}"


@dataclass(frozen=True)
class Job:
    """One scenario to run on one kind of node."""

    name: str  # the key of its outcome: the scenario, or '<scenario>@<label>' under instance_override
    scenario: str
    resource: str
    model: str | None  # the override passed to the notebook (None: the scenario's default)
    workload: str | None
    model_name: str  # what the resolved scenario measures, for the skip check
    workload_name: str
    levels_planned: int


@dataclass
class Outcome:
    """What became of one job: its run folder and notebook under outputs/, or its error."""

    scenario: str
    resource: str
    status: str  # completed | failed | skipped
    run_dir: Path | None = None
    notebook: Path | None = None
    error: str | None = None
    attempts: int = 0
    node: dict[str, Any] = field(default_factory=dict)  # node_id, hostname, ip, resources of the last attempt
    failed_attempts: list[dict[str, Any]] = field(default_factory=list)

    def __repr__(self) -> str:
        where = self.run_dir or self.error
        return f"Outcome({self.status}, {self.scenario} on {self.resource}, attempts={self.attempts}, {where})"


# --- planning, on the driver ------------------------------------------------------------------------


def expand_scenarios(scenarios: str | Sequence[str]) -> list[str]:
    """'h100,trn2' or a list; 'all' is every scenario not on the cpu backend (those run where you are)."""
    names = [s.strip() for s in (scenarios.split(",") if isinstance(scenarios, str) else scenarios)]
    names = [s for s in names if s]
    if names == ["all"]:
        return [s for s in params.scenario_names() if params.load_scenario_file(s).backend != "cpu"]
    if "all" in names:
        raise AccelbenchError(f"'all' stands alone (every non-cpu scenario); got {', '.join(names)}")
    if not names:
        raise AccelbenchError(f"no scenarios given; valid: all, {', '.join(params.scenario_names())}")
    return names


def plan(scenarios: str | Sequence[str], model: str | None = None, workload: str | None = None,
         instance_override: Mapping[str, str | Sequence[str]] | None = None) -> list[Job]:
    """One job per scenario, pinned to its instance type; every name is validated before anything runs.

    instance_override (tests): scenario -> label or labels; the scenario then runs on nodes advertising
    'instance:<label>' instead, once per label, and its outcome is keyed '<scenario>@<label>'.
    """
    jobs = []
    for scenario in dict.fromkeys(expand_scenarios(scenarios)):
        resolved = params.resolve(scenario, model, workload)
        w = resolved.workload
        common = dict(scenario=scenario, model=model, workload=workload, model_name=resolved.model.name,
                      workload_name=w.name,
                      levels_planned=len(plan_levels(w)))
        labels = (instance_override or {}).get(scenario)
        if labels is None and resolved.scenario.backend == "cpu":
            raise AccelbenchError(f"scenario '{scenario}' runs on the cpu backend, on the machine at hand: "
                                  f"`accelbench run {scenario}`; no fleet node offers {resolved.instance.name}")
        if labels is None:
            jobs.append(Job(name=scenario, resource=resource_label(resolved.instance.name), **common))
            continue
        for label in [labels] if isinstance(labels, str) else labels:
            jobs.append(Job(name=f"{scenario}@{label}", resource=resource_label(label), **common))
    return jobs


def _ran_on(run_dir: Path, manifest: dict[str, Any]) -> str:
    fleet = run_dir / "fleet.json"
    if fleet.is_file():
        return json.loads(fleet.read_text())["resource"]
    return resource_label(manifest["resolved"]["instance"]["name"])


def completed_run(outputs_dir: Path, job: Job, commit: str | None) -> Path | None:
    """A completed run of this job made by this code commit from a clean tree (same model, workload and
    node kind), if any. A run made from uncommitted changes never counts as the commit's."""
    if not commit:  # without a commit no run can be shown to come from this code
        return None
    for run_dir in reversed(results.run_dirs(outputs_dir)):
        m = results.load_manifest(run_dir)
        r, git = m.get("resolved", {}), m.get("environment", {}).get("git", {})
        if (r.get("scenario", {}).get("name") == job.scenario and m.get("status") == "completed"
                and git.get("commit") == commit and git.get("dirty") is False
                and r.get("model", {}).get("name") == job.model_name
                and r.get("workload", {}).get("name") == job.workload_name
                and _ran_on(run_dir, m) == job.resource):
            return run_dir
    return None


def node_prices() -> list[dict[str, Any]]:
    """What each fleet node type costs while it is up: on-demand USD per hour from params/instances.yaml
    (None where the project has no checked price), for every instance type a non-cpu scenario names."""
    instances = params.load_instances()
    types = sorted({params.load_scenario_file(s).instance for s in expand_scenarios("all")})
    rows = []
    for name in types:
        price = instances[name].prices.on_demand_usd_per_hour
        rows.append(dict(instance=name, accelerators=f"{instances[name].accelerator_count} x "
                                                     f"{instances[name].accelerator_name}",
                         on_demand_usd_per_hour=price.value if price else None,
                         source=price.source if price else None, date=price.date if price else None))
    return rows


# --- on the node --------------------------------------------------------------------------------------


class StatusBoard:
    """A Ray actor the tasks report their state to and the driver reads (one row per job)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def update(self, name: str, **fields: Any) -> None:
        self.rows.setdefault(name, {}).update(fields, updated_s=time.time())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return self.rows


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


def _kill_tree() -> None:
    import psutil  # an ipykernel dependency
    procs = psutil.Process().children(recursive=True)
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
    _kill_tree()  # anything the notebook left behind
    exit_file.write_text(str(child.returncode))
    os._exit(0)


def notebook_env(job_name: str = "") -> dict[str, str]:
    """The environment the notebook runs in: the node's, less what Ray set for the task, plus a marker
    naming the fleet job (every process of the run inherits it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k not in RAY_TASK_VARS}
    for k in RAY_EMPTIED_VARS:
        if env.get(k) == "":
            del env[k]
    env[JOB_ENV_VAR] = job_name
    return env


def _notebook_error(notebook: Path) -> str | None:
    import nbformat
    try:
        nb = nbformat.read(notebook, as_version=4)
    except (OSError, ValueError):
        return None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return f"{out.get('ename')}: {out.get('evalue')}"
    return None


def execute_on_node(job: Job, commit: str | None, board: Any = None) -> dict[str, Any]:
    """The Ray task: papermill run_scenario.ipynb here, as a user would, into a temporary folder; return
    the executed notebook and the run folder's files as bytes, and the node it ran on."""
    import ray

    ctx = ray.get_runtime_context()
    node = dict(node_id=ctx.get_node_id(), hostname=socket.gethostname(),
                ip=ray.util.get_node_ip_address(), assigned_resources=ctx.get_assigned_resources())

    def report(**fields: Any) -> None:
        if board is not None:
            board.update.remote(job.name, **fields)

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
        tail: deque[str] = deque(maxlen=60)
        measured = 0
        exit_file = Path(tmp) / "papermill.exit"
        guarded = [sys.executable, "-c", "import sys; from accelbench.fleet import guard; guard(sys.argv[1:])",
                   str(os.getpid()), str(exit_file), *cmd]
        with subprocess.Popen(guarded, cwd=paths.ROOT, env=notebook_env(job.name), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:  # until papermill and everything under it have exited
                tail.append(line)
                if m := LEVEL_LINE.search(line):
                    measured += 1
                    report(level=f"measuring {m['label']}", levels_done=measured - 1)
        returncode = int(exit_file.read_text()) if exit_file.exists() else -1
        run_dirs = [d for d in results.run_dirs(out_dir) if d.parent.name == job.scenario]
        run_dir = run_dirs[-1] if run_dirs else None
        manifest = results.load_manifest(run_dir) if run_dir else {}
        status = "completed" if returncode == 0 and manifest.get("status") == "completed" else "failed"
        error = None
        if status == "failed":
            error = (manifest.get("error") or (executed.exists() and _notebook_error(executed))
                     or f"papermill exited {returncode}: {''.join(tail)[-2000:]}")
        return dict(
            status=status, error=error, run_id=run_dir.name if run_dir else None,
            run_files={str(p.relative_to(run_dir)): p.read_bytes()
                       for p in sorted(run_dir.rglob("*")) if p.is_file()} if run_dir else {},
            notebook=executed.read_bytes() if executed.exists() else None,
            node=node, command=cmd, papermill_returncode=returncode, output_tail="".join(tail),
            started_at=started, finished_at=datetime.now(timezone.utc).isoformat())


# --- back on the driver ---------------------------------------------------------------------------------


def _write_once(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:  # 'x': an existing file is an error, never overwritten
        f.write(data)


def write_back(outputs_dir: Path, job: Job, payload: dict[str, Any], attempt: int,
               commit: str | None) -> tuple[Path | None, Path | None]:
    """Put a task's run folder and executed notebook under outputs_dir as a local run would have."""
    import ray

    run_dir = notebook = None
    run_id = payload["run_id"]
    if run_id:
        fleet = dict(job=job.name, resource=job.resource, attempt=attempt, node=payload["node"],
                     driver_commit=commit, ray_version=ray.__version__, command=payload["command"],
                     started_at=payload["started_at"], finished_at=payload["finished_at"])
        run_dir = results.write_run_files(outputs_dir, job.scenario, run_id, {
            **payload["run_files"], "fleet.json": json.dumps(fleet, indent=2, default=str).encode()})
    if payload["notebook"] is not None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        name = (f"{job.scenario}-{run_id}.ipynb" if run_id else
                f"{job.scenario}-{stamp}-{payload['node']['hostname'][:16]}-attempt{attempt}-failed.ipynb")
        notebook = Path(outputs_dir) / "notebooks" / name
        _write_once(notebook, payload["notebook"])
    return run_dir, notebook


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:600]}"


class ProgressView:
    """One line per job with a bar over its levels: queued, running (current level), done, failed.

    A terminal gets rich's live display; a notebook gets the same table as one output updated in place
    (rich's live display in Jupyter needs ipywidgets, which the project does not install).
    """

    def __init__(self, jobs: list[Job], enabled: bool) -> None:
        self.progress = None
        self.notebook_output: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.table import Column
        console = Console()
        self.in_notebook = console.is_jupyter
        if not console.is_terminal and not self.in_notebook:  # a log file: not squeezed into 80 columns
            console = Console(width=160)
        width = max(len(j.name) for j in jobs)
        self.progress = Progress(
            TextColumn("{task.description}", table_column=Column(min_width=width, no_wrap=True)),
            BarColumn(bar_width=20), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[state]}", table_column=Column(no_wrap=True, overflow="ellipsis")),
            console=console)
        self.ids = {j.name: self.progress.add_task(j.name, total=j.levels_planned, state="queued")
                    for j in jobs}

    def set(self, name: str, state: str, completed: int | None = None) -> None:
        if self.progress is not None:
            extra = {} if completed is None else {"completed": completed}
            self.progress.update(self.ids[name], state=state, **extra)
            self._show_in_notebook()

    def _show_in_notebook(self) -> None:
        if self.progress is None or not self.in_notebook:
            return
        import io

        from IPython.display import Pretty, display
        from rich.console import Console
        text = Console(file=io.StringIO(), width=160, color_system=None, force_jupyter=False)
        text.print(self.progress.make_tasks_table(self.progress.tasks))
        if self.notebook_output is None:
            self.notebook_output = display(Pretty(text.file.getvalue()), display_id=True)
        else:
            self.notebook_output.update(Pretty(text.file.getvalue()))

    def __enter__(self) -> ProgressView:
        if self.progress is not None and not self.in_notebook:
            self.progress.start()
        self._show_in_notebook()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None and not self.in_notebook:
            self.progress.stop()
        self._show_in_notebook()


def _connect(address: str | None) -> bool:
    """Connect to the cluster unless already connected (a notebook may have); True if we connected."""
    import ray
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address or "auto", namespace=NAMESPACE, log_to_driver=False)
    except ConnectionError as e:
        raise AccelbenchError(f"no Ray cluster at {address or 'RAY_ADDRESS / this machine'} ({e}); start one "
                              f"with `ray up cluster/aws-ray-cluster.yaml` (docs/fleet.md)") from None
    return True


def _status_board() -> Any:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # on the driver's node, so losing a worker node never loses the progress rows
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True)
    try:
        return ray.remote(StatusBoard).options(name=STATUS_ACTOR, namespace=NAMESPACE, num_cpus=0,
                                               scheduling_strategy=here).remote()
    except ValueError:
        raise AccelbenchError(f"another fleet run holds actor '{STATUS_ACTOR}' on this cluster; one fleet "
                              f"run at a time (wait for it, or stop its driver)") from None


def run_fleet(scenarios: str | Sequence[str], address: str | None = None,
              outputs_dir: Path | str = paths.OUTPUTS_DIR, force: bool = False, retries: int = 2,
              progress: bool = True, *, model: str | None = None, workload: str | None = None,
              instance_override: Mapping[str, str | Sequence[str]] | None = None,
              timeout_s: float | None = None) -> dict[str, Outcome]:
    """Run each scenario on a node of its instance type through the Ray cluster at `address`.

    Each scenario is one Ray task needing {"instance:<type>": 1}; it executes run_scenario.ipynb with
    papermill there and its run folder and notebook are written under outputs_dir as soon as it ends.
    A lost node or worker is retried by Ray (max_retries=retries); a failed notebook is resubmitted up to
    `retries` times (its failed run folder is kept, marked failed); then the scenario is marked failed.
    A scenario with a completed run from this commit is skipped unless `force`. `timeout_s` gives up on a
    scenario that has not finished that long after it was (re)submitted, e.g. one no node can take.
    """
    outputs_dir = Path(outputs_dir)
    if retries < 0:
        raise AccelbenchError(f"retries must be >= 0, got {retries}")
    if timeout_s is not None and timeout_s <= 0:
        raise AccelbenchError(f"the timeout must be a positive number of seconds, got {timeout_s:g}")
    jobs = plan(scenarios, model, workload, instance_override)
    git = environment.git_state()
    commit = git["commit"]
    outcomes: dict[str, Outcome] = {}
    todo = []
    for job in jobs:
        # uncommitted changes here: no earlier run can be shown to come from this code
        done = None if force or git["dirty"] is not False else completed_run(outputs_dir, job, commit)
        if done:
            outcomes[job.name] = Outcome(job.scenario, job.resource, "skipped", run_dir=done)
        else:
            todo.append(job)
    if not todo:
        return outcomes

    import ray
    from ray.exceptions import RayError, RayTaskError

    connected = _connect(address)
    try:
        board = _status_board()
    except AccelbenchError:
        if connected:
            ray.shutdown()
        raise
    task = ray.remote(execute_on_node)
    pending: dict[Any, tuple[Job, int, float]] = {}
    view = ProgressView(jobs, progress)
    for name, o in outcomes.items():
        view.set(name, f"skipped: completed run {o.run_dir.name} at this commit", completed=0)
    if progress and git.get("dirty"):
        print(f"note: this checkout has uncommitted changes; nodes run commit {str(commit)[:12]} as committed")

    def submit(job: Job, attempt: int) -> None:
        board.update.remote(job.name, state="queued", level=None, levels_done=0)  # forget a failed attempt
        ref = task.options(num_cpus=0, resources={job.resource: 1}, max_retries=retries,
                           retry_exceptions=False, name=f"accelbench {job.name}").remote(job, commit, board)
        pending[ref] = (job, attempt, time.monotonic())
        outcomes[job.name].attempts = attempt
        wait = f"queued: waiting for a node with {job.resource}"
        view.set(job.name, wait if attempt == 1 else f"{wait} (attempt {attempt}/{retries + 1})", completed=0)

    def failed_attempt(job: Job, attempt: int, error: str, retry: bool, **facts: Any) -> None:
        o = outcomes[job.name]
        o.failed_attempts.append(dict(attempt=attempt, error=error, **facts))
        o.error = error
        if retry and attempt <= retries:
            submit(job, attempt + 1)
        else:
            o.status = "failed"
            view.set(job.name, f"failed after {attempt} attempt(s): {error[:160]}")

    try:
        with view:
            for job in todo:
                outcomes[job.name] = Outcome(job.scenario, job.resource, "queued")
                submit(job, 1)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=POLL_S)
                for ref in ready:
                    job, attempt, _ = pending.pop(ref)
                    o = outcomes[job.name]
                    try:
                        payload = ray.get(ref)
                    except RayTaskError as e:  # raised in execute_on_node: a user's error is not retried
                        cause = getattr(e, "cause", None)
                        failed_attempt(job, attempt, _one_line(cause or e),
                                       retry=not isinstance(cause, AccelbenchError))
                        continue
                    except RayError as e:  # worker or node lost beyond Ray's own max_retries
                        failed_attempt(job, attempt, _one_line(e), retry=False)
                        continue
                    o.node = {**payload["node"], "node_resources": _node_resources(payload["node"]["node_id"])}
                    try:
                        run_dir, notebook = write_back(outputs_dir, job, payload, attempt, commit)
                    except (AccelbenchError, OSError) as e:
                        failed_attempt(job, attempt, f"could not write the results back: {e}", retry=False)
                        continue
                    if payload["status"] == "completed":
                        o.status, o.run_dir, o.notebook, o.error = "completed", run_dir, notebook, None
                        view.set(job.name, f"done: {run_dir.name}", completed=job.levels_planned)
                    else:
                        failed_attempt(job, attempt, payload["error"], retry=True, run_dir=run_dir,
                                       notebook=notebook, node=payload["node"])
                _show(view, board, pending, retries)
                if timeout_s is not None:
                    for ref, (job, attempt, since) in list(pending.items()):
                        if time.monotonic() - since > timeout_s:
                            del pending[ref]
                            ray.cancel(ref, force=True)
                            failed_attempt(job, attempt, f"did not finish within {timeout_s:g} s of being "
                                                         f"submitted (is there a node with {job.resource}?)",
                                           retry=False)
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        ray.kill(board)
        if connected:
            ray.shutdown()
    return outcomes


def _node_resources(node_id: str) -> dict[str, float]:
    import ray
    return next((n["Resources"] for n in ray.nodes() if n["NodeID"] == node_id), {})


def _show(view: ProgressView, board: Any, pending: dict[Any, tuple[Job, int, float]], retries: int) -> None:
    import ray
    from ray.exceptions import GetTimeoutError, RayError

    if view.progress is None:
        return
    try:
        rows = ray.get(board.snapshot.remote(), timeout=5)
    except (GetTimeoutError, RayError):  # progress is best-effort; the results do not depend on it
        return
    for job, attempt, _ in pending.values():
        row = rows.get(job.name)
        if not row or row.get("state") != "running":
            continue
        node = row.get("node", {})
        again = f" (attempt {attempt}/{retries + 1})" if attempt > 1 else ""
        view.set(job.name, f"running on {node.get('hostname')} ({str(node.get('node_id'))[:8]}){again}: "
                           f"{row.get('level')}", completed=row.get("levels_done", 0))
