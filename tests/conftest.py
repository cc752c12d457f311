"""Fixtures shared by several test modules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from accelbench.config import paths


@pytest.fixture(scope="session")
def cpu_run_outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An outputs folder holding one real run of the cpu scenario, made once per test session the way a user
    makes it: notebooks/run_scenario.ipynb executed by papermill (vLLM on this host), its executed copy in
    <outputs>/cpu.ipynb. The notebook tests, the oracle and the report tests share this one engine start."""
    import papermill as pm

    outputs = tmp_path_factory.mktemp("cpu-run-outputs")
    pm.execute_notebook(str(paths.RUN_NOTEBOOK), str(outputs / "cpu.ipynb"), parameters=dict(
        scenario="cpu", output_dir=str(outputs)), kernel_name="python3", cwd=str(paths.ROOT), progress_bar=False)
    return outputs


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of params/ that the loaders read instead of the real one."""
    root = tmp_path / "params"
    shutil.copytree(paths.PARAMS_DIR, root)
    monkeypatch.setattr(paths, "PARAMS_DIR", root)
    monkeypatch.setattr(paths, "INSTANCES_FILE", root / "instances.yaml")
    monkeypatch.setattr(paths, "MODELS_DIR", root / "models")
    monkeypatch.setattr(paths, "WORKLOADS_DIR", root / "workloads")
    monkeypatch.setattr(paths, "SCENARIOS_DIR", root / "scenarios")
    monkeypatch.setattr(paths, "SLO_FILE", root / "slos.yaml")
    return root
