"""Thin typer CLI over the same functions the notebooks call."""

from __future__ import annotations

from pathlib import Path

import typer

from accelbench import paths

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


@app.command()
def run(scenario: str, model: str | None = None, workload: str | None = None,
        output_dir: Path = paths.OUTPUTS_DIR) -> None:
    """Measure one scenario on this machine (the same call run_scenario.ipynb makes)."""
    from accelbench.study import raise_if_failed, run_scenario
    result = run_scenario(scenario, model, workload, output_dir)
    typer.echo(f"{result.status}: {result.run_dir}")
    raise_if_failed(result)


@app.command()
def scenarios() -> None:
    """List the scenarios, models and workloads in params/."""
    from accelbench import params
    for kind, names in (("scenarios", params.scenario_names()), ("models", params.model_names()),
                        ("workloads", params.workload_names())):
        typer.echo(f"{kind}: {', '.join(names)}")


def main() -> None:
    from accelbench.errors import AccelbenchError
    try:
        app()
    except AccelbenchError as e:
        typer.echo(f"error: {e}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
