"""The study across instances: one Ray task per scenario executes notebooks/run_scenario.ipynb with papermill
on a node of the scenario's instance type, and its run folder and executed notebook come back under
outputs/ as if the run had been local. plan (jobs, skips, prices), node (the task, its guard, level events),
progress (status board and view), driver (run_fleet). Conventions: docs/fleet.md.
"""

from accelbench.fleet.driver import Outcome, run_fleet
from accelbench.fleet.node import JOB_ENV_VAR, notebook_env
from accelbench.fleet.plan import (
    Job,
    completed_run,
    node_prices,
    plan_jobs,
    resource_label,
)
from accelbench.fleet.progress import NAMESPACE, STATUS_ACTOR

__all__ = ["JOB_ENV_VAR", "NAMESPACE", "STATUS_ACTOR", "Job", "Outcome", "completed_run", "node_prices",
           "notebook_env", "plan_jobs", "resource_label", "run_fleet"]
