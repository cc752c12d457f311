"""Provenance of the code: the commit git reads, and the one a shipped copy declares."""

from accelbench import environment


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
