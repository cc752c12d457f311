"""Names are names: a scenario, model or workload is only ever read from params/, and what a run writes stays
under outputs/ (issue 17, item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from accelbench import cli
from accelbench.config import params, paths
from accelbench.config.names import name_problem
from accelbench.errors import AccelbenchError


def _nameless_copies(tree: Path, outside: Path) -> tuple[Path, Path]:
    """The cpu scenario and tiny-llama model copied outside params/, without `name:` (so no name check
    could catch them): the files a path-like name would reach."""
    outside.mkdir(parents=True, exist_ok=True)
    for src, dst in ((tree / "scenarios" / "cpu.yaml", outside / "evil.yaml"),
                     (tree / "models" / "tiny-llama.yaml", outside / "evil-model.yaml")):
        data = yaml.safe_load(src.read_text())
        data.pop("name", None)
        dst.write_text(yaml.safe_dump(data))
    return outside / "evil", outside / "evil-model"


def test_names_absolute_paths_are_refused(tree, tmp_path):
    scenario, model = _nameless_copies(tree, tmp_path / "some" / "dir")
    with pytest.raises(AccelbenchError, match="is not a name") as e:
        params.resolve(str(scenario), model=str(model))
    assert "valid scenarios are" in str(e.value) and "cpu" in str(e.value)
    with pytest.raises(AccelbenchError, match=r"the model override \(model\) '.*evil-model' is not a name"):
        params.resolve("cpu", model=str(model))


def test_names_relative_paths_are_refused(tree, tmp_path):
    scenario, model = _nameless_copies(tree, tmp_path / "elsewhere")
    up = Path(*[".."] * len((tree / "scenarios").parts))  # from params/scenarios/ up to /
    with pytest.raises(AccelbenchError, match="is not a name"):
        params.resolve(str(up / str(scenario).lstrip("/")))
    with pytest.raises(AccelbenchError, match="is not a name"):
        params.resolve("cpu", model=f"../../elsewhere/{model.name}")
    with pytest.raises(AccelbenchError, match="is not a name"):
        params.load_workload("../workloads/cpu-smoke")  # even one that stays inside params/


def test_names_long_name_is_an_accelbench_error_not_oserror(tree):
    for load in (params.load_scenario_file, params.load_model, params.load_workload):
        with pytest.raises(AccelbenchError, match=r"is not a name: names are 1 to 64 characters") as e:
            load("a" * 300)
        assert "(300 characters)" in str(e.value) and "a" * 100 not in str(e.value)


@pytest.mark.parametrize("bad", ["", ".", "..", "a..b", "-x", ".hidden", "a/b", "a\\b", "cpu\n", "cpu\x00",
                                 "cpu yaml", "ẞ", "a" * 65])
def test_names_rule_refuses(bad):
    assert name_problem(bad) is not None


@pytest.mark.parametrize("bad", [None, 3, ["cpu"]])
def test_names_non_strings_are_refused(bad):
    assert "not a name" in name_problem(bad)
    with pytest.raises(AccelbenchError, match="not a name"):
        params.load_scenario_file(bad)


def test_names_every_committed_name_is_a_name():
    names = (params.scenario_names() + params.model_names() + params.workload_names()
             + list(params.load_instances()) + [p.name for p in params.load_slo_profiles()])
    assert not [n for n in names if name_problem(n)]
    assert params.unnamed_files() == []
    assert len(params.scenario_names()) == len(list(paths.SCENARIOS_DIR.glob("*.yaml")))


def test_names_empty_override_is_refused_not_ignored(tree):
    with pytest.raises(AccelbenchError, match="not a name"):
        params.resolve("cpu", model="")


def test_names_run_cli_refuses_paths_before_anything_is_written(tree, tmp_path):
    scenario, model = _nameless_copies(tree, tmp_path / "some" / "dir")
    outputs = tmp_path / "outputs"
    for args in ([str(scenario)], ["cpu", "--model", str(model)], ["cpu", "--workload", "../workloads/cpu-smoke"],
                 ["x" * 300]):
        result = CliRunner().invoke(cli.app, ["run", *args, "--output-dir", str(outputs)])
        assert isinstance(result.exception, AccelbenchError), result.output
        assert "not a name" in str(result.exception)
    assert not outputs.exists()
    assert sorted(p.name for p in (tmp_path / "some" / "dir").iterdir()) == ["evil-model.yaml", "evil.yaml"]


def test_names_run_scenario_refuses_paths_before_anything_is_written(tree, tmp_path):
    from accelbench.measure.study import run_scenario
    scenario, model = _nameless_copies(tree, tmp_path / "some" / "dir")
    with pytest.raises(AccelbenchError, match="not a name"):
        run_scenario(str(scenario), model=str(model), outputs_dir=tmp_path / "outputs")
    assert not (tmp_path / "outputs").exists()


def test_names_scenarios_cli_lists_files_whose_names_are_not_names(tree):
    shutil.copy(tree / "scenarios" / "cpu.yaml", tree / "scenarios" / "cpu copy.yaml")
    result = CliRunner().invoke(cli.app, ["scenarios"])
    assert result.exit_code == 0, result.output
    listed = result.output.splitlines()[0].removeprefix("scenarios: ").split(", ")
    assert "cpu" in listed and "cpu copy" not in listed
    assert "ignored" in result.output and "cpu copy.yaml" in result.output
