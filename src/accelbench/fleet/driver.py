"""The fleet's driver: run each scenario as one Ray task on a node of its instance type, resubmit an attempt
that may succeed another time (a failed run; a lost node, once) but not one that cannot (the project's
error: params, a host without what the scenario needs), give up after a timeout, and write each task's run
folder and executed notebook under outputs/ as soon as it ends, as if the run had been local, checking
first that what the node sent is a run folder of that job; a lost or cancelled attempt's levels come back
too, from the status board, marked interrupted."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench.config import paths
from accelbench.errors import AccelbenchError
from accelbench.fleet.node import execute_on_node
from accelbench.fleet.plan import Job, completed_run, plan_jobs
from accelbench.fleet.progress import NAMESPACE, ProgressView, show, status_board
from accelbench.measure import environment
from accelbench.store import runs as results
from accelbench.store.manifest import RunManifest

POLL_S = 0.5
LOST_RETRIES = 1  # a lost node or worker is submitted again once: a second loss is no accident
FLEET_FILE = "fleet.json"  # written by the driver into each run folder it brings back


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


def _write_once(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "xb") as f:  # 'x': an existing file is an error, never overwritten
        f.write(data)


def check_payload(job: Job, payload: dict[str, Any]) -> None:
    """What a node sends back is data from another machine: its run id must be a plain name and its file
    names relative paths inside the run folder; the folder must hold a manifest of that run id and of the
    job's scenario (the folder's place, results/<scenario>/<run_id>/, follows from them); AccelbenchError
    naming what is wrong otherwise."""
    run_id, files, notebook = payload.get("run_id"), payload.get("run_files"), payload.get("notebook")
    where = f"the run sent back for {job.name}"
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in files.items()):
        raise AccelbenchError(f"{where}: run_files is not a mapping of file names to bytes")
    if notebook is not None and not isinstance(notebook, bytes):
        raise AccelbenchError(f"{where}: the notebook is not bytes")
    if run_id is None:
        if files:
            raise AccelbenchError(f"{where}: files without a run id")
        return
    results.check_name("run id", run_id)
    for rel in files:
        results.check_relative(rel)
    if FLEET_FILE in files:
        raise AccelbenchError(f"{where}: {FLEET_FILE} is the driver's to write, not the node's")
    if "manifest.json" not in files:
        raise AccelbenchError(f"{where}: no manifest.json")
    try:
        manifest = RunManifest.model_validate_json(files["manifest.json"])
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        raise AccelbenchError(f"{where}: manifest.json is not a run manifest ({str(e).splitlines()[0]})") from None
    if manifest.run_id != run_id or manifest.scenario != job.scenario:
        raise AccelbenchError(f"{where}: its manifest is run {manifest.run_id!r} of scenario {manifest.scenario!r}, "
                              f"sent as run {run_id!r} of scenario {job.scenario!r}")


def write_back(outputs_dir: Path, job: Job, payload: dict[str, Any], attempt: int,
               commit: str | None, lost: str | None = None) -> tuple[Path | None, Path | None]:
    """Put a task's run folder and executed notebook under outputs_dir as a local run would have, once
    check_payload accepts them. `lost`: why the attempt's task did not return (its folder was kept from
    the status board)."""
    import ray

    check_payload(job, payload)
    run_dir = notebook = None
    run_id = payload["run_id"]
    if run_id:
        fleet = dict(job=job.name, resource=job.resource, attempt=attempt, node=payload["node"],
                     driver_commit=commit, ray_version=ray.__version__, command=payload["command"],
                     started_at=payload["started_at"], finished_at=payload["finished_at"],
                     **({"lost": lost} if lost else {}))
        run_dir = results.write_run_files(outputs_dir, job.scenario, run_id, {
            **payload["run_files"], FLEET_FILE: json.dumps(fleet, indent=2, default=str).encode()})
    if payload["notebook"] is not None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        host = re.sub(r"[^A-Za-z0-9-]", "-", str(payload["node"].get("hostname")))[:16]
        name = (f"{job.scenario}-{run_id}.ipynb" if run_id else
                f"{job.scenario}-{stamp}-{host}-attempt{attempt}-failed.ipynb")
        notebook = Path(outputs_dir) / "notebooks" / name
        _write_once(notebook, payload["notebook"])
    return run_dir, notebook


def retry(failure: str, attempt: int, retries: int, losses: int) -> bool:
    """Whether an attempt that failed is submitted again. `failure`: 'final' (the project's error: the
    scenario's params, a host without what it needs, a node at another commit; the same every time) and
    'timeout' never; 'lost' (the node or worker gone; `losses` counts this job's, this one included) once;
    'failed' (the run failed or was cut off on its node) while attempts <= `retries`."""
    if failure in ("final", "timeout") or attempt > retries:
        return False
    return failure != "lost" or losses <= LOST_RETRIES


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:600]}"


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


def run_fleet(scenarios: str | Sequence[str], address: str | None = None,
              outputs_dir: Path | str = paths.OUTPUTS_DIR, force: bool = False, retries: int = 2,
              progress: bool = True, *, model: str | None = None, workload: str | None = None,
              timeout_s: float | None = None) -> dict[str, Outcome]:
    """Run each scenario on a node of its instance type through the Ray cluster at `address`.

    Each scenario is one Ray task needing {"instance:<type>": 1}; it executes run_scenario.ipynb with
    papermill there and its run folder and notebook are written under outputs_dir as soon as it ends.
    A failed run is resubmitted up to `retries` times (its folder is kept, marked failed); a lost node or
    worker once (Ray itself retries nothing: max_retries=0), keeping the levels the lost attempt had saved
    as an interrupted run; the project's error on the node (params, a host without what the scenario
    needs) is not retried; then the scenario is marked failed.
    A scenario with a completed run from this commit is skipped unless `force`. `timeout_s` gives up on a
    scenario that has not finished that long after it was (re)submitted, e.g. one no node can take.
    """
    outputs_dir = Path(outputs_dir)
    if retries < 0:
        raise AccelbenchError(f"retries must be >= 0, got {retries}")
    if timeout_s is not None and timeout_s <= 0:
        raise AccelbenchError(f"the timeout must be a positive number of seconds, got {timeout_s:g}")
    jobs = plan_jobs(scenarios, model, workload)
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
        board = status_board()
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
        ref = task.options(num_cpus=0, resources={job.resource: 1}, max_retries=0, retry_exceptions=False,
                           name=f"accelbench {job.name}").remote(job, commit, board, attempt)
        pending[ref] = (job, attempt, time.monotonic())
        outcomes[job.name].attempts = attempt
        wait = f"queued: waiting for a node with {job.resource}"
        view.set(job.name, wait if attempt == 1 else f"{wait} (attempt {attempt}/{retries + 1})", completed=0)

    def failed_attempt(job: Job, attempt: int, error: str, failure: str, **facts: Any) -> None:
        o = outcomes[job.name]
        o.failed_attempts.append(dict(attempt=attempt, error=error, failure=failure, **facts))
        o.error = error
        if retry(failure, attempt, retries, sum(a["failure"] == "lost" for a in o.failed_attempts)):
            submit(job, attempt + 1)
        else:
            o.status = "failed"
            view.set(job.name, f"failed after {attempt} attempt(s): {error[:160]}")

    def keep_lost(job: Job, attempt: int, why: str) -> dict[str, Any]:
        """Write back what a lost or cancelled attempt had saved (its folder as the board kept it, marked
        interrupted); the facts for its failed-attempt record."""
        try:
            kept = ray.get(board.kept_run.remote(job.name, attempt), timeout=60)
        except RayError:
            return {}
        if not kept:
            return {}
        try:
            run_dir, _ = write_back(outputs_dir, job, {**kept, "notebook": None}, attempt, commit, lost=why)
        except (AccelbenchError, OSError) as e:
            return {"kept_error": str(e)}
        return {"run_dir": run_dir, "node": kept.get("node")}

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
                                       "final" if isinstance(cause, AccelbenchError) else "failed")
                        continue
                    except RayError as e:  # the worker or node lost
                        failed_attempt(job, attempt, _one_line(e), "lost", **keep_lost(job, attempt, _one_line(e)))
                        continue
                    o.node = {**payload["node"], "node_resources": _node_resources(payload["node"]["node_id"])}
                    try:
                        run_dir, notebook = write_back(outputs_dir, job, payload, attempt, commit)
                    except (AccelbenchError, OSError) as e:
                        failed_attempt(job, attempt, f"could not write the results back: {e}", "final")
                        continue
                    if payload["status"] == "completed":
                        o.status, o.run_dir, o.notebook, o.error = "completed", run_dir, notebook, None
                        view.set(job.name, f"done: {run_dir.name}", completed=job.levels_planned)
                    else:
                        failed_attempt(job, attempt, payload["error"], payload.get("failure") or "failed",
                                       run_dir=run_dir, notebook=notebook, node=payload["node"])
                show(view, board, pending, retries)
                if timeout_s is not None:
                    for ref, (job, attempt, since) in list(pending.items()):
                        if time.monotonic() - since > timeout_s:
                            del pending[ref]
                            ray.cancel(ref, force=True)
                            why = (f"did not finish within {timeout_s:g} s of being submitted (is there a node "
                                   f"with {job.resource}?)")
                            failed_attempt(job, attempt, why, "timeout", **keep_lost(job, attempt, why))
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
