"""accelbench.fleet through a real local Ray cluster (raylet processes advertising instance resources): the
cpu scenario run "on two instance types", a node lost mid-run, a failing notebook retried; and the AWS
launcher config and KubeRay manifest checked against their schemas and against params/instances.yaml.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pandas as pd
import psutil
import pytest
import ray
import yaml
from ray.cluster_utils import Cluster

from accelbench import fleet
from accelbench.config import params, paths
from accelbench.core.levels import LevelEvent
from accelbench.errors import AccelbenchError
from accelbench.measure.study import EVENTS_FILE_VAR
from accelbench.store import runs as results
from accelbench.store import runset

STORE_BYTES = 100 * 2**20  # object store per raylet: a run comes back as ~150 kB
DATA = Path(__file__).parent / "data"
AWS_CONFIG = paths.ROOT / "cluster" / "aws-ray-cluster.yaml"
KUBERAY_MANIFEST = paths.ROOT / "cluster" / "kuberay-raycluster.yaml"
FLEET_TYPES = {"p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "trn2.48xlarge", "inf2.48xlarge"}


def _add_node(cluster: Cluster, label: str) -> Any:
    """A raylet advertising {"instance:<label>": 1}, as a node of that instance type does."""
    return cluster.add_node(num_cpus=1, resources={fleet.resource_label(label): 1},
                            object_store_memory=STORE_BYTES)


def _cluster(*labels: str) -> tuple[Cluster, dict[str, Any]]:
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, object_store_memory=STORE_BYTES,
                                                                include_dashboard=False))
    return cluster, {label: _add_node(cluster, label) for label in labels}


def _kill_node(cluster: Cluster, node: Any) -> None:
    """The node disappears: its raylet and the Ray workers under it die at once (the notebook's processes
    then go too: fleet.node.guard sees its worker gone)."""
    tree = psutil.Process(node.all_processes["raylet"][0].process.pid).children(recursive=True)
    cluster.remove_node(node, allow_graceful=False)
    for proc in tree:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def _wait(check: Any, timeout_s: float, what: str) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if value := check():
            return value
        time.sleep(0.5)
    pytest.fail(f"waited {timeout_s} s for {what}")


def _on_nodes(monkeypatch, labels: list[str], workload: str) -> list[fleet.Job]:
    """The cpu scenario's job on raylets advertising instance:<label> instead of its own instance type, once
    per label, keyed 'cpu@<label>' (the fleet itself refuses the cpu scenario: it runs where you are)."""
    job = fleet.Job.of(params.resolve("cpu", workload=workload), workload=workload)
    jobs = [dataclasses.replace(job, name=f"cpu@{label}", resource=fleet.resource_label(label)) for label in labels]
    monkeypatch.setattr("accelbench.fleet.driver.plan_jobs", lambda scenarios, model=None, workload=None: jobs)
    return jobs


def _levels_planned(workload: str) -> int:
    w = params.load_workload(workload)
    return len(w.concurrency_levels + w.request_rates_per_s) * w.repetitions


@pytest.fixture(scope="module")
def two_types():
    cluster, nodes = _cluster("type-a", "type-b")
    yield cluster, nodes
    cluster.shutdown()


# --- planning and the node environment (no cluster) ------------------------------------------------------


def test_plan_pins_each_scenario_to_its_instance_type():
    jobs = {j.name: j for j in fleet.plan_jobs("h100,trn2,inf2")}
    assert {n: j.resource for n, j in jobs.items()} == {
        "h100": "instance:p5.48xlarge", "trn2": "instance:trn2.48xlarge", "inf2": "instance:inf2.48xlarge"}
    every = {j.scenario for j in fleet.plan_jobs("all")}
    assert "cpu" not in every and {"h100", "h200", "trn2"} <= every
    with pytest.raises(AccelbenchError, match="unknown scenario 'h1000'"):
        fleet.plan_jobs("h1000")
    with pytest.raises(AccelbenchError, match="'all' stands alone .*got all, h100"):
        fleet.plan_jobs("all,h100")
    with pytest.raises(AccelbenchError, match="scenario 'cpu' runs on the cpu backend.*`accelbench run cpu`"):
        fleet.plan_jobs("cpu")


def test_bad_retries_and_timeout_are_refused_before_any_cluster_is_reached(tmp_path):
    with pytest.raises(AccelbenchError, match="retries must be >= 0, got -1"):
        fleet.run_fleet(["h100"], address="127.0.0.1:1", outputs_dir=tmp_path, retries=-1)
    with pytest.raises(AccelbenchError, match="timeout must be a positive number of seconds, got 0"):
        fleet.run_fleet(["h100"], address="127.0.0.1:1", outputs_dir=tmp_path, timeout_s=0)


def test_notebook_env_drops_what_ray_set_for_the_task(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("RAY_JOB_ID", "01000000")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "0-7")  # set by hand, not emptied by Ray: kept
    env = fleet.notebook_env()
    assert "OMP_NUM_THREADS" not in env and "RAY_JOB_ID" not in env and "CUDA_VISIBLE_DEVICES" not in env
    assert env["NEURON_RT_VISIBLE_CORES"] == "0-7"
    assert EVENTS_FILE_VAR not in env
    assert fleet.notebook_env("cpu@type-a", Path("/tmp/x/levels.jsonl"))[EVENTS_FILE_VAR] == "/tmp/x/levels.jsonl"


def test_level_follower_hands_over_each_event_once_and_waits_for_a_whole_line(tmp_path):
    from accelbench.fleet.node import LevelFollower

    path = tmp_path / "levels.jsonl"
    start = LevelEvent("start", "concurrency", 4.0, 1, 12.5, 8)
    end = LevelEvent("end", "concurrency", 4.0, 1, 20.0, 8)
    follower = LevelFollower(path, on_event=lambda event: None)
    assert follower.read() == []  # the run has not written the file yet
    path.write_text(start.to_json() + "\n" + end.to_json()[:10])  # the end event half written
    assert follower.read() == [start]
    with open(path, "a") as f:
        f.write(end.to_json()[10:] + "\nnot an event\n")
    assert follower.read() == [end] and follower.read() == []

    seen: list[LevelEvent] = []
    with LevelFollower(path, seen.append, poll_s=0.05):
        pass  # stopped at once: the last read still delivers what the file holds
    assert seen == [start, end]


def _save_run(outputs: Path, run_id: str, status: str = "completed", commit: str = "c1", dirty: bool = False,
              workload: str | None = None, resource: str | None = None) -> Path:
    resolved = params.resolve("h100", workload=workload)
    run_dir = results.save_run(outputs, "h100", run_id, {
        "status": status, "scenario": "h100", "resolved": resolved.model_dump(mode="json"),
        "environment": {"git": {"commit": commit, "dirty": dirty}}}, {})
    if resource:
        (run_dir / "fleet.json").write_text(json.dumps({"resource": resource}))
    return run_dir


def test_completed_run_is_a_clean_completed_run_of_this_commit_model_workload_and_node_kind(tmp_path):
    (job,) = fleet.plan_jobs("h100")
    assert fleet.completed_run(tmp_path, job, "c1") is None
    _save_run(tmp_path, "r1")
    _save_run(tmp_path, "r2", status="failed")
    _save_run(tmp_path, "r3", commit="c2")
    _save_run(tmp_path, "r4", dirty=True)
    _save_run(tmp_path, "r5", workload="seed-512-256")
    _save_run(tmp_path, "r6", resource="instance:type-a")  # made by a test on another kind of node
    assert fleet.completed_run(tmp_path, job, "c1") == tmp_path / "results" / "h100" / "r1"
    assert fleet.completed_run(tmp_path, job, None) is None  # no commit: nothing can be shown to be this code
    assert fleet.completed_run(tmp_path, job, "c2") == tmp_path / "results" / "h100" / "r3"
    on_a = dataclasses.replace(job, resource="instance:type-a")
    assert fleet.completed_run(tmp_path, on_a, "c1") == tmp_path / "results" / "h100" / "r6"


def _payload(outputs: Path) -> tuple[fleet.Job, dict[str, Any]]:
    """h100's job and what its node would send back for a run saved under `outputs`."""
    (job,) = fleet.plan_jobs("h100")
    run_dir = _save_run(outputs, "20260101T000000Z-node-0123456789abcdef")
    (run_dir / "engine.log").write_text("engine log")
    files = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    return job, dict(run_id=run_dir.name, run_files=files, notebook=b"{}", node={"hostname": "node/../x"},
                     command=["papermill"], started_at=None, finished_at=None)


@pytest.mark.parametrize("change, why", [
    (lambda p, tmp: p["run_files"].update({"../../../escaped.txt": b"x"}), "not a relative path inside a run folder"),
    (lambda p, tmp: p["run_files"].update({str(tmp / "absolute.txt"): b"x"}), "not a relative path inside a run folder"),
    (lambda p, tmp: p["run_files"].update({"sub/../../up.txt": b"x"}), "not a relative path inside a run folder"),
    (lambda p, tmp: p.update(run_id="../../elsewhere"), "run id '../../elsewhere' is not a plain name"),
    (lambda p, tmp: p.update(run_id="20260101T000000Z-other"), "its manifest is run '20260101T000000Z-node-0123"),
    (lambda p, tmp: p["run_files"].update({"fleet.json": b"{}"}), "fleet.json is the driver's to write"),
    (lambda p, tmp: p["run_files"].pop("manifest.json"), "no manifest.json"),
    (lambda p, tmp: p["run_files"].update({"manifest.json": b"[1]"}), "manifest.json is not a run manifest"),
    (lambda p, tmp: p.update(run_files={"levels.parquet": "text"}), "not a mapping of file names to bytes"),
])
def test_write_back_refuses_what_is_not_a_run_folder_of_the_job(tmp_path, change, why):
    from accelbench.fleet.driver import write_back
    job, payload = _payload(tmp_path / "node")
    change(payload, tmp_path)
    out = tmp_path / "deep" / "outputs"
    with pytest.raises(AccelbenchError, match=re.escape(why)):
        write_back(out, job, payload, 1, "c1")
    assert not (tmp_path / "deep").exists() and not (tmp_path / "absolute.txt").exists()


def test_write_back_puts_a_node_run_where_a_local_run_would_be(tmp_path):
    from accelbench.fleet.driver import write_back
    job, payload = _payload(tmp_path / "node")
    run_dir, notebook = write_back(tmp_path / "out", job, payload, 1, "c1")
    assert run_dir == tmp_path / "out" / "results" / "h100" / payload["run_id"]
    assert (run_dir / "engine.log").read_text() == "engine log" and (run_dir / "fleet.json").exists()
    assert notebook == tmp_path / "out" / "notebooks" / f"h100-{payload['run_id']}.ipynb"
    payload.update(run_id=None, run_files={})  # no run folder: the notebook is named after the node
    _, notebook = write_back(tmp_path / "out", job, payload, 2, "c1")
    assert notebook.parent == tmp_path / "out" / "notebooks" and "-node----x-attempt2-failed" in notebook.name


def test_only_an_attempt_that_may_go_otherwise_is_retried():
    from accelbench.fleet.driver import retry
    from accelbench.fleet.node import failure_kind
    no_gpu = ("AccelbenchError", "scenario 'h100' needs an NVIDIA GPU: no NVIDIA GPU found (NVML)")
    assert failure_kind(False, no_gpu) == "final"  # the host check, before any run folder: same every time
    assert failure_kind(True, ("AccelbenchError", "the run failed: engine died")) == "failed"
    assert failure_kind(False, ("DeadKernelError", "kernel died")) == failure_kind(False, None) == "failed"
    assert not retry("final", 1, 2, 0) and not retry("timeout", 1, 2, 0)
    assert retry("failed", 1, 2, 0) and retry("failed", 2, 2, 0) and not retry("failed", 3, 2, 0)
    assert retry("lost", 1, 2, 1) and not retry("lost", 2, 2, 2)  # a lost node: once
    assert retry("failed", 2, 2, 1) and not retry("lost", 1, 0, 1)  # retries=0: nothing is retried


def test_a_running_runs_folder_is_sent_once_it_holds_a_level(tmp_path):
    from accelbench.fleet.node import staging_snapshot
    assert staging_snapshot(tmp_path, "cpu") is None
    folder = results.RunFolder.reserve(tmp_path, "cpu")
    manifest = {"status": "interrupted", "scenario": "cpu", "resolved": params.resolve("cpu").model_dump(mode="json")}
    folder.write_manifest(manifest)
    assert staging_snapshot(tmp_path, "cpu") is None  # nothing measured yet
    folder.write_table("levels", pd.DataFrame({"level_kind": ["concurrency"], "level_value": [1.0],
                                               "repetition": [0]}))
    folder.write_manifest({**manifest, "levels_measured": 1})
    (folder.staging / ".levels.parquet.tmp").write_bytes(b"half written")
    snapshot = staging_snapshot(tmp_path, "cpu")
    assert snapshot["run_id"] == folder.run_id and set(snapshot["run_files"]) == {"manifest.json", "levels.parquet"}


# --- a real local cluster --------------------------------------------------------------------------------


@pytest.mark.slow
def test_fleet_runs_each_scenario_on_its_node_and_brings_the_run_back(two_types, tmp_path, monkeypatch):
    cluster, nodes = two_types
    jobs = _on_nodes(monkeypatch, ["type-a", "type-b"], "cpu-smoke")
    outcomes = fleet.run_fleet(["cpu"], address=cluster.address, outputs_dir=tmp_path, retries=0,
                               workload="cpu-smoke")
    assert set(outcomes) == {"cpu@type-a", "cpu@type-b"}
    for label, node in nodes.items():
        o = outcomes[f"cpu@{label}"]
        assert o.status == "completed", o.error
        assert o.node["node_id"] == node.node_id  # ran on the raylet advertising its resource
        assert o.node["assigned_resources"] == {f"instance:{label}": 1.0}
        assert o.node["node_resources"][f"instance:{label}"] == 1.0
        assert o.run_dir.parent == tmp_path / "results" / "cpu"
        manifest = results.load_manifest(o.run_dir)
        ran = json.loads((o.run_dir / "fleet.json").read_text())
        assert ran["resource"] == f"instance:{label}"
        assert manifest.status == "completed"
        assert manifest.environment.git.commit == ran["driver_commit"]  # the node ran the driver's code
        assert {"manifest.json", "requests.parquet", "levels.parquet", "engine.log"} <= {
            p.name for p in o.run_dir.iterdir()}
        assert o.notebook == tmp_path / "notebooks" / f"cpu-{o.run_dir.name}.ipynb"
        executed = nbformat.read(o.notebook, as_version=4)
        assert not [out for cell in executed.cells for out in cell.get("outputs", [])
                    if out.get("output_type") == "error"]

    levels = runset.load_levels(tmp_path)
    assert levels.groupby("run_id").size().to_dict() == {
        o.run_dir.name: _levels_planned("cpu-smoke") for o in outcomes.values()}
    from accelbench.analysis.summary import measured
    from accelbench.report import render_report
    assert set(measured(tmp_path)["run_id"]) == {o.run_dir.name for o in outcomes.values()}
    assert render_report(tmp_path).stat().st_size > 0

    # run again at the commit the runs were made at (pinned: another commit landing in this checkout
    # meanwhile must not turn the skip into a rerun): nothing runs; at another commit both would rerun
    git = results.load_manifest(outcomes["cpu@type-a"].run_dir).environment.git.model_dump()  # git_state()'s dict
    monkeypatch.setattr("accelbench.measure.environment.git_state", lambda: git)
    again = fleet.run_fleet(["cpu"], address=cluster.address, outputs_dir=tmp_path, workload="cpu-smoke",
                            progress=False)
    assert {k: (o.status, o.run_dir) for k, o in again.items()} == {
        k: ("skipped", o.run_dir) for k, o in outcomes.items()}
    assert fleet.completed_run(tmp_path, jobs[0], "0" * 40) is None


@pytest.mark.slow
def test_fleet_does_not_retry_a_scenario_on_a_node_without_its_hardware(two_types, tmp_path, monkeypatch):
    cluster, _ = two_types
    # h100 on a node without a GPU: the notebook stops at the host check, before anything is written; the
    # same would happen on every attempt
    (job,) = fleet.plan_jobs("h100")
    on_a = dataclasses.replace(job, name="h100@type-a", resource=fleet.resource_label("type-a"))
    monkeypatch.setattr("accelbench.fleet.driver.plan_jobs", lambda scenarios, model=None, workload=None: [on_a])
    outcomes = fleet.run_fleet(["h100"], address=cluster.address, outputs_dir=tmp_path, retries=2,
                               progress=False)
    o = outcomes["h100@type-a"]
    assert (o.status, o.attempts, len(o.failed_attempts)) == ("failed", 1, 1)
    assert "no NVIDIA GPU" in o.error and o.failed_attempts[0]["failure"] == "final"
    assert not (tmp_path / "results").exists()
    assert len(list((tmp_path / "notebooks").glob("h100-*-attempt*-failed.ipynb"))) == 1


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _processes_of(job_name: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(fleet.JOB_ENV_VAR) == job_name:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


@pytest.mark.slow
def test_fleet_gives_up_after_its_timeout_and_leaves_no_process_behind(two_types, tmp_path, monkeypatch):
    cluster, _ = two_types
    # 40 s: the task is inside the notebook, vLLM's engine process started, when it is cancelled. The
    # workload lasts well past that (the sweep, then vllm serve and bench serve): cpu-smoke alone can
    # finish in about 40 s here
    _on_nodes(monkeypatch, ["type-b"], "cpu-validate")
    outcomes = fleet.run_fleet(["cpu"], address=cluster.address, outputs_dir=tmp_path, retries=0, progress=False,
                               workload="cpu-validate", timeout_s=40)
    o = outcomes["cpu@type-b"]
    assert o.status == "failed" and "did not finish within 40 s" in o.error
    _wait(lambda: not _processes_of("cpu@type-b"), 30, "the cancelled run's processes to exit")
    # whatever levels it had saved come back, marked interrupted (here: most likely none, still starting)
    assert {results.load_manifest(d).status for d in results.run_dirs(tmp_path)} <= {"interrupted"}


@pytest.mark.slow
def test_fleet_reruns_a_scenario_whose_node_is_lost_and_keeps_finished_results(tmp_path, monkeypatch):
    _on_nodes(monkeypatch, ["type-a", "type-b"], "cpu-smoke")
    cluster, _ = _cluster("type-a")  # type-b nodes come later: its scenario waits in the queue
    ray.init(address=cluster.address)  # run_fleet uses this connection; the test reads the status board
    box: dict[str, Any] = {}

    def drive() -> None:
        try:
            box["outcomes"] = fleet.run_fleet(
                ["cpu"], address=cluster.address, outputs_dir=tmp_path, retries=1, progress=False,
                workload="cpu-smoke", timeout_s=600)
        except Exception as e:  # re-raised below, in the test's thread
            box["error"] = e

    driver = threading.Thread(target=drive)
    try:
        driver.start()
        first = _wait(lambda: list((tmp_path / "results" / "cpu").glob("*/manifest.json")), 300,
                      "cpu@type-a's run folder")[0].parent
        kept = {p.name: p.read_bytes() for p in first.iterdir()}
        doomed = _add_node(cluster, "type-b")
        board = ray.get_actor(fleet.STATUS_ACTOR, namespace=fleet.NAMESPACE)
        # a level saved, the next being measured: the lost attempt has something to keep
        _wait(lambda: ray.get(board.snapshot.remote()).get("cpu@type-b", {}).get("levels_done", 0) >= 1,
              300, "cpu@type-b measuring its second level on the node about to be lost")
        running = _processes_of("cpu@type-b")  # the guard, papermill, the kernel, vLLM's engine
        assert len(running) >= 4, [p.cmdline() for p in running]
        _kill_node(cluster, doomed)
        try:
            _wait(lambda: not [p for p in running if _alive(p)], 60, "the lost node's notebook processes to exit")
        except pytest.fail.Exception:
            pytest.fail(f"still running after the node was lost: {[(p.pid, p.cmdline()) for p in running if _alive(p)]}")
        replacement = _add_node(cluster, "type-b")
        driver.join(600)
        assert not driver.is_alive(), "run_fleet did not return"
    finally:
        ray.shutdown()
        cluster.shutdown()
    if "error" in box:
        raise box["error"]
    a, b = box["outcomes"]["cpu@type-a"], box["outcomes"]["cpu@type-b"]
    assert a.status == "completed" and a.run_dir == first
    assert {p.name: p.read_bytes() for p in first.iterdir()} == kept
    assert b.status == "completed", (b.error, b.failed_attempts)
    assert b.node["node_id"] == replacement.node_id != doomed.node_id  # submitted again, on the new node
    assert b.attempts == 2  # the lost attempt, then one more (Ray itself retries nothing)
    (lost,) = b.failed_attempts
    assert lost["failure"] == "lost" and lost["node"]["node_id"] == doomed.node_id
    manifest = results.load_manifest(lost["run_dir"])  # what the lost attempt had measured, kept
    assert manifest.status == "interrupted" and manifest.levels_measured >= 1
    assert len(pd.read_parquet(lost["run_dir"] / "levels.parquet")) == manifest.levels_measured
    assert json.loads((lost["run_dir"] / "fleet.json").read_text())["lost"] == lost["error"]
    assert len(results.run_dirs(tmp_path)) == 3


# --- the cluster files ------------------------------------------------------------------------------------


def test_aws_cluster_config_passes_the_ray_launcher_schema():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load(AWS_CONFIG.read_text())
    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    validate_config(prepare_config(config))  # Ray's own check, after its defaults are filled in
    instances = params.load_instances()
    workers = {k: v for k, v in config["available_node_types"].items() if k != config["head_node_type"]}
    assert set(workers) == FLEET_TYPES
    assert {params.load_scenario_file(s).instance for s in params.scenario_names()} - {"local-cpu"} <= FLEET_TYPES
    assert config["idle_timeout_minutes"] > 0
    for name, node_type in workers.items():
        assert node_type["node_config"]["InstanceType"] == name
        assert node_type["resources"] == {fleet.resource_label(name): 1}
        assert node_type["min_workers"] == 0
        image = node_type["node_config"]["ImageId"]
        assert ("neuron" in image, "nvidia" in image) == (instances[name].family == "neuron",
                                                          instances[name].family == "cuda"), name


def test_kuberay_manifest_passes_the_raycluster_crd_schema():
    docs = list(yaml.safe_load_all(KUBERAY_MANIFEST.read_text()))
    (raycluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    schema = yaml.safe_load((DATA / "raycluster_v1_subset.schema.yaml").read_text())
    jsonschema.validate(raycluster, schema)
    config_maps = {d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"}
    instances = params.load_instances()
    seen = set()
    for group in raycluster["spec"]["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        (container,) = pod["containers"]
        instance = pod["nodeSelector"]["node.kubernetes.io/instance-type"]
        seen.add(instance)
        # KubeRay passes the value to `ray start --resources=...` through a shell: a quoted JSON string
        assert json.loads(json.loads(group["rayStartParams"]["resources"])) == {fleet.resource_label(instance): 1}
        assert group["minReplicas"] == 0
        device = {"cuda": "nvidia.com/gpu", "neuron": "aws.amazon.com/neuron"}[instances[instance].family]
        assert container["resources"]["limits"][device] == instances[instance].accelerator_count, instance
        assert {ref["configMapRef"]["name"] for ref in container["envFrom"]} <= config_maps
    assert seen == FLEET_TYPES


def _pins(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z0-9_.-]+==[A-Za-z0-9_.+-]+", text))


def _environment_file_pins(name: str) -> set[str]:
    env = yaml.safe_load((paths.ROOT / name).read_text())
    (pip,) = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    return _pins(" ".join(pip))


def test_cluster_files_install_the_environment_files_pins_on_one_ray_and_python():
    wanted = {"cuda": _environment_file_pins("environment.yml"),
              "neuron": _environment_file_pins("environment-neuron.yml")}
    instances = params.load_instances()
    aws = yaml.safe_load(AWS_CONFIG.read_text())
    for name, node_type in aws["available_node_types"].items():
        if name == aws["head_node_type"]:
            continue
        pins = _pins(" ".join(node_type["worker_setup_commands"]))
        assert pins and pins <= wanted[instances[name].family], (name, pins - wanted[instances[name].family])
    raycluster = [d for d in yaml.safe_load_all(KUBERAY_MANIFEST.read_text()) if d["kind"] == "RayCluster"][0]
    for group in raycluster["spec"]["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        family = instances[pod["nodeSelector"]["node.kubernetes.io/instance-type"]].family
        env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
        pins = _pins(env["ACCELBENCH_BACKEND_PACKAGES"])
        assert pins and pins <= wanted[family], (group["groupName"], pins - wanted[family])
    # one Ray version and one Python minor on every node of either cluster
    ray_version = raycluster["spec"]["rayVersion"]
    assert f"'ray[default]=={ray_version}'" in aws["setup_commands"][0]
    assert "--python 3.12" in aws["setup_commands"][0]
    images = [c["image"] for g in [raycluster["spec"]["headGroupSpec"], *raycluster["spec"]["workerGroupSpecs"]]
              for c in g["template"]["spec"]["containers"]]
    assert all(i.startswith(f"rayproject/ray:{ray_version}-py312") for i in images), images


def test_fleet_docs_state_each_node_types_price_from_params():
    text = (paths.ROOT / "docs" / "fleet.md").read_text()
    for row in fleet.node_prices():
        price = row["on_demand_usd_per_hour"]
        shown = "no price checked" if price is None else f"{price:.2f}"
        assert re.search(rf"\| `{re.escape(row['instance'])}` \|[^\n]*\| {re.escape(shown)} \|", text), row
