"""Fixtures shared by several test modules."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cpu_run_outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An outputs folder holding one real run of the cpu scenario (vLLM on this host, ~35 s), made once."""
    from accelbench import run_scenario

    outputs = tmp_path_factory.mktemp("cpu-run-outputs")
    run = run_scenario("cpu", outputs_dir=outputs)
    assert run.status == "completed", run.error
    return outputs
