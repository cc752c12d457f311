"""A fleet run's progress: the status board (a Ray actor on the driver's node) the tasks report their state
and level to, and the view the driver draws from it, one line per job with a bar over its levels."""

from __future__ import annotations

import time
from typing import Any

from accelbench.errors import AccelbenchError
from accelbench.fleet.plan import Job

NAMESPACE = "accelbench"
STATUS_ACTOR = "accelbench-fleet-status"  # named, so a second fleet run on the same cluster is refused


class StatusBoard:
    """A Ray actor the tasks report their state to and the driver reads (one row per job); it also keeps
    each running attempt's run folder as it stood at its last level's end, for the driver to write back
    if the attempt is lost (its node gone, the task cancelled)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.kept: dict[str, tuple[int, dict[str, Any]]] = {}

    def update(self, name: str, **fields: Any) -> None:
        self.rows.setdefault(name, {}).update(fields, updated_s=time.time())

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return self.rows

    def keep(self, name: str, attempt: int, run: dict[str, Any]) -> None:
        self.kept[name] = (attempt, run)

    def kept_run(self, name: str, attempt: int) -> dict[str, Any] | None:
        """What attempt `attempt` of job `name` had measured and saved when last heard of (None: nothing)."""
        kept = self.kept.get(name)
        return kept[1] if kept is not None and kept[0] == attempt else None


def status_board() -> Any:
    """Start the run's StatusBoard actor; refused while another fleet run holds it on this cluster."""
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


def show(view: ProgressView, board: Any, pending: dict[Any, tuple[Job, int, float]], retries: int) -> None:
    """Draw what the board says of each pending job that is running: its node and its current level."""
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
