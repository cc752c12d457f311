"""Provenance of the code: the commit git reads, and the one a shipped copy declares."""

import subprocess

from accelbench.config import paths
from accelbench.measure import environment


def test_git_checkout_records_its_commit_and_a_declared_one_beside_it(monkeypatch):
    monkeypatch.setenv("ACCELBENCH_GIT_COMMIT", "0123abc")
    monkeypatch.setenv("ACCELBENCH_GIT_DIRTY", "0")
    state = environment.git_state()
    assert state["source"] == "git" and len(state["commit"]) == 40 and state["commit"] != "0123abc"
    assert state["declared_commit"] == "0123abc" and state["declared_dirty"] is False


def test_copy_without_git_reports_the_declared_commit(monkeypatch):
    monkeypatch.setattr(environment, "_run", lambda cmd: None)
    monkeypatch.setenv("ACCELBENCH_GIT_COMMIT", "0123abc")
    monkeypatch.setenv("ACCELBENCH_GIT_DIRTY", "1")
    assert environment.git_state() == {"commit": "0123abc", "dirty": True,
                                       "source": "declared by ACCELBENCH_GIT_COMMIT"}
    monkeypatch.setenv("ACCELBENCH_GIT_DIRTY", "true")  # not 1 or 0: unknown, not clean
    assert environment.git_state()["dirty"] is None
    monkeypatch.delenv("ACCELBENCH_GIT_COMMIT")
    assert environment.git_state()["source"] == "unavailable"


def test_dirty_means_changed_code_not_changed_outputs(tmp_path, monkeypatch):
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "outputs" / "notebooks").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "outputs" / "notebooks" / "cpu.ipynb").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.delenv("ACCELBENCH_GIT_COMMIT", raising=False)
    (tmp_path / "outputs" / "notebooks" / "cpu.ipynb").write_text('{"executing": true}\n')  # papermill's own output
    assert environment.git_state()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert environment.git_state()["dirty"] is True
