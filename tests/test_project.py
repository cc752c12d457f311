"""Project-level promises: thin notebooks, matching environment files, CI calling README's command."""

import ast
import re
import tomllib

import nbformat
import pytest
import yaml

from accelbench.config import paths

NOTEBOOKS = sorted(paths.NOTEBOOKS_DIR.glob("*.ipynb"))
LOGIC = re.compile(r"^\s*(def |class |for |while |async def |with open|import vllm|from vllm)|\.to_csv\(|\.to_parquet\("
                   r"|\.write_text\(|\.savefig\(|open\(", re.M)


def test_both_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == ["run_scenario.ipynb", "summary.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_cells_hold_no_logic_and_no_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        assert not LOGIC.search(cell.source), f"{path.name}: logic in a cell:\n{cell.source}"
        assert not cell.get("outputs") and cell.get("execution_count") is None, f"{path.name}: committed with outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_cell_holds_plain_literals_only(path):
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    for node in ast.parse(cell.source).body:
        assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant), ast.unparse(node)


def test_logic_pattern_catches_what_it_forbids():
    for bad in ("def f():\n    pass", "for x in y:\n    z", "df.to_csv('x')", "import vllm", "with open('f') as f:"):
        assert LOGIC.search(bad), bad
    assert not LOGIC.search("run = accelbench.run_scenario(scenario, model, workload, output_dir)")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_runtime_packages_of_pyproject():
    env = yaml.safe_load((paths.ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)}
    in_env = {_name(p) for p in pip if not p.startswith("-")}
    runtime = {_name(d) for d in tomllib.loads((paths.ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert "python" in conda and {"vllm", "torch", "pytest"} <= in_env
    assert runtime == in_env - {"vllm", "torch", "pytest"}


def test_ci_runs_the_test_command_readme_gives():
    readme = (paths.ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)", readme, re.M)
    assert commands[:2] == ["study", "test"]
    ci = (paths.ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)
