"""Thin typer CLI over the same functions the notebooks call."""

from __future__ import annotations

from pathlib import Path

import typer

from accelbench.config import paths

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


@app.command()
def run(scenario: str = typer.Argument(..., help="a scenario name: params/scenarios/<name>.yaml (a name, not a path)"),
        model: str | None = typer.Option(None, help="a model name in place of the scenario's: "
                                                    "params/models/<name>.yaml"),
        workload: str | None = typer.Option(None, help="a workload name in place of the scenario's: "
                                                       "params/workloads/<name>.yaml"),
        output_dir: Path = paths.OUTPUTS_DIR,
        stop_after_s: float | None = typer.Option(None, help="start no level after this many seconds from "
                                                  "the run's start; a run that left levels out is partial"),
        replicates: int = typer.Option(1, help="engine starts, one after another, each measuring every level")) -> None:
    """Measure one scenario on this machine (the same call run_scenario.ipynb makes)."""
    from accelbench.config import params
    # names only, checked before vLLM is imported: a path here would escape params/ and outputs/
    params.check_name(scenario, "scenario", paths.SCENARIOS_DIR, given_as="SCENARIO")
    if model is not None:
        params.check_name(model, "model", paths.MODELS_DIR, given_as="--model")
    if workload is not None:
        params.check_name(workload, "workload", paths.WORKLOADS_DIR, given_as="--workload")
    from accelbench.measure.study import RunInterrupted, raise_if_failed, run_scenario
    try:
        result = run_scenario(scenario, model, workload, output_dir, stop_after_s, replicates)
    except RunInterrupted as e:  # SIGINT/SIGTERM: what was measured is saved, marked interrupted
        typer.echo(f"interrupted: {e.run.run_dir}")
        raise typer.Exit(e.exit_code) from None  # 130 for SIGINT, 143 for SIGTERM, as a shell expects
    typer.echo(f"{result.status}: {result.run_dir}")
    raise_if_failed(result)


@app.command()
def scenarios() -> None:
    """List the scenarios, models and workloads in params/."""
    from accelbench.config import params
    for kind, names in (("scenarios", params.scenario_names()), ("models", params.model_names()),
                        ("workloads", params.workload_names())):
        typer.echo(f"{kind}: {', '.join(names)}")
    if unnamed := params.unnamed_files():
        from accelbench.config.names import NAME_RULE
        typer.echo(f"ignored (file names that are not names: {NAME_RULE}): "
                   f"{', '.join(str(p) for p in unnamed)}")


@app.command()
def report(output_dir: Path = paths.OUTPUTS_DIR) -> None:
    """Render the HTML report over every run under OUTPUT_DIR (executes notebooks/summary.ipynb)."""
    from accelbench.report import render_report
    typer.echo(f"report: {render_report(output_dir)}")


fleet_app = typer.Typer(no_args_is_help=True, help="Run scenarios across instances through a Ray cluster "
                                                    "(docs/fleet.md).")
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("run")
def fleet_run(scenarios: str = typer.Option(..., help="comma-separated scenarios, or 'all' (every non-cpu one)"),
              address: str | None = typer.Option(None, help="Ray cluster address (default: RAY_ADDRESS / auto)"),
              force: bool = typer.Option(False, help="rerun scenarios that have a completed run at this commit"),
              retries: int = typer.Option(2, help="retries per scenario after a lost node or a failed notebook"),
              model: str | None = None, workload: str | None = None, output_dir: Path = paths.OUTPUTS_DIR,
              timeout_min: float | None = typer.Option(None, help="give up on a scenario after this long")) -> None:
    """Run each scenario's notebook on a node of its instance type; results land under OUTPUT_DIR."""
    from accelbench.fleet import run_fleet
    outcomes = run_fleet(scenarios, address, output_dir, force, retries, model=model, workload=workload,
                         timeout_s=None if timeout_min is None else 60 * timeout_min)
    for name, o in outcomes.items():
        typer.echo(f"{name}: {o.status} after {o.attempts} attempt(s): {o.run_dir or o.error}")
    if any(o.status == "failed" for o in outcomes.values()):
        raise typer.Exit(1)


def _print_table(df, title: str = "") -> None:
    """A DataFrame as a rich table."""
    from rich.console import Console
    from rich.table import Table
    table = Table(title=title or None, show_lines=False)
    for col in df.columns:
        table.add_column(str(col), overflow="fold")
    for row in df.itertuples(index=False):
        table.add_row(*[f"{v:.4g}" if isinstance(v, float) else ("" if v is None else str(v)) for v in row])
    console = Console()
    if not console.is_terminal:  # piped or captured: do not fold cells to 80 columns
        console = Console(width=200)
    console.print(table)


prices_app = typer.Typer(no_args_is_help=True, help="Instance prices (params/instances.yaml) and their refresh.")
app.add_typer(prices_app, name="prices")


@prices_app.command("refresh")
def prices_refresh(region: str = "us-east-1",
                   instance: list[str] = typer.Option(None, help="instance type; repeat for several (default: all)")) -> None:
    """Read current prices from the AWS Price List API into params/prices-refreshed.yaml (needs boto3)."""
    from accelbench.analysis.prices import refresh_prices
    result = refresh_prices(instance or None, region)
    typer.echo(result.message)
    if not result.prices.empty:
        shown = result.prices[["instance", "price_kind", "usd_per_hour", "date", "source"]].copy()
        shown["source"] = [s if len(s) <= 100 else s[:97] + "..." for s in shown["source"]]
        _print_table(shown, "prices written" if result.path else "committed prices in use (full sources in the file)")


@app.command()
def compare(run_a: str, run_b: str, output_dir: Path = paths.OUTPUTS_DIR,
            all_metrics: bool = typer.Option(False, "--all", help="show every metric, not only significant changes")) -> None:
    """Two runs of one scenario side by side (B vs A): versions, then changes whose 95% CIs do not overlap."""
    from accelbench.analysis.compare import compare_runs
    comp = compare_runs(run_a, run_b, output_dir)
    typer.echo(f"A: {comp.run_a}\nB: {comp.run_b}")
    for w in comp.warnings:
        typer.echo(f"note: {w}")
    _print_table(comp.versions, "versions")
    shown = comp.changes if all_metrics else comp.significant()
    if shown.empty:
        typer.echo("no significant change: every metric's 95% CIs overlap (use --all to see them)")
        return
    import pandas as pd
    table = pd.DataFrame({
        "level": [f"{k} {v:g}" for k, v in zip(shown["level_kind"], shown["level_value"])],
        "metric": shown["metric"],
        "A [95% CI]": [f"{v:.4g} [{lo:.4g}, {hi:.4g}]" for v, lo, hi in zip(shown["a"], shown["a_ci_low"], shown["a_ci_high"])],
        "B [95% CI]": [f"{v:.4g} [{lo:.4g}, {hi:.4g}]" for v, lo, hi in zip(shown["b"], shown["b_ci_low"], shown["b_ci_high"])],
        "change": [f"{c:+.1f}%" for c in shown["change_pct"]],
        "verdict": shown["verdict"]})
    _print_table(table, "changes (B vs A)")


def main() -> None:
    from accelbench.errors import AccelbenchError
    try:
        app()
    except AccelbenchError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
