"""Planning a fleet run, on the driver: one job per scenario, pinned to the Ray resource its instance type's
nodes advertise; the completed run that lets a job be skipped; what each node type costs while it is up."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.config import params
from accelbench.config.params import Resolved
from accelbench.core.levels import plan_levels
from accelbench.errors import AccelbenchError
from accelbench.store import runs as results
from accelbench.store.manifest import RunManifest

RESOURCE_PREFIX = "instance:"  # a node of EC2 type T advertises {"instance:T": 1}: one benchmark per node


def resource_label(instance: str) -> str:
    """The custom resource a node of this instance type advertises: 'instance:p5en.48xlarge'."""
    return f"{RESOURCE_PREFIX}{instance}"


@dataclass(frozen=True)
class Job:
    """One scenario to run on one kind of node."""

    name: str  # the key of its outcome
    scenario: str
    resource: str
    model: str | None  # the override passed to the notebook (None: the scenario's default)
    workload: str | None
    model_name: str  # what the resolved scenario measures, for the skip check
    workload_name: str
    levels_planned: int

    @classmethod
    def of(cls, resolved: Resolved, model: str | None = None, workload: str | None = None) -> Job:
        """The job of a resolved scenario (`model`, `workload`: the overrides it was resolved with), on a
        node of its own instance type and named after it."""
        return cls(name=resolved.scenario.name, scenario=resolved.scenario.name,
                   resource=resource_label(resolved.instance.name), model=model, workload=workload,
                   model_name=resolved.model.name, workload_name=resolved.workload.name,
                   levels_planned=len(plan_levels(resolved.workload)))


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


def plan_jobs(scenarios: str | Sequence[str], model: str | None = None, workload: str | None = None) -> list[Job]:
    """One job per scenario, pinned to its instance type; every name is validated before anything runs."""
    jobs = []
    for scenario in dict.fromkeys(expand_scenarios(scenarios)):
        resolved = params.resolve(scenario, model, workload)
        if resolved.scenario.backend == "cpu":
            raise AccelbenchError(f"scenario '{scenario}' runs on the cpu backend, on the machine at hand: "
                                  f"`accelbench run {scenario}`; no fleet node offers {resolved.instance.name}")
        jobs.append(Job.of(resolved, model, workload))
    return jobs


def _ran_on(run_dir: Path, manifest: RunManifest) -> str:
    fleet = run_dir / "fleet.json"
    if fleet.is_file():
        return json.loads(fleet.read_text())["resource"]
    return resource_label(manifest.resolved.instance.name)


def completed_run(outputs_dir: Path, job: Job, commit: str | None) -> Path | None:
    """A completed run of this job made by this code commit from a clean tree (same model, workload and
    node kind), if any. A run made from uncommitted changes never counts as the commit's."""
    if not commit:  # without a commit no run can be shown to come from this code
        return None
    for run_dir in reversed(results.run_dirs(outputs_dir)):
        m = results.load_manifest(run_dir)
        r, git = m.resolved, m.environment.git
        if (r.scenario.name == job.scenario and m.status == "completed"
                and git.commit == commit and git.dirty is False
                and r.model.name == job.model_name
                and r.workload.name == job.workload_name
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
