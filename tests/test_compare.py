"""Runs of one scenario under different versions: a change counts only when the 95% CIs do not overlap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from accelbench.analysis import compare
from accelbench.config import params
from accelbench.core import metrics
from accelbench.errors import AccelbenchError
from accelbench.store import runs as results


def summary_row(**values) -> dict:
    """One summary level with metric m = (estimate, ci_low, ci_high): a t-interval over 3 engine starts,
    or, where the interval is missing, a single value."""
    row = dict(level_kind="concurrency", level_value=1.0)
    for m, (v, lo, hi) in values.items():
        tested = np.isfinite(lo)
        row |= {m: v, f"{m}_ci_low": lo, f"{m}_ci_high": hi, f"{m}_interval": "t, engine starts" if tested else "range",
                f"{m}_n": 3 if tested else 1}
    return row


def test_compare_summaries_verdicts_from_ci_overlap():
    a = pd.DataFrame([summary_row(output_tok_per_s=(100, 95, 105), ttft_p99_ms=(50, 45, 55), itl_p50_ms=(10, 9, 11),
                                  tpot_p50_ms=(10, np.nan, np.nan))])
    b = pd.DataFrame([summary_row(output_tok_per_s=(120, 115, 125), ttft_p99_ms=(70, 65, 75),
                                  itl_p50_ms=(10.5, 9.5, 11.5), tpot_p50_ms=(20, 19, 21))])
    c = compare.compare_summaries(a, b, ("output_tok_per_s", "ttft_p99_ms", "itl_p50_ms", "tpot_p50_ms")).set_index("metric")
    assert c.loc["output_tok_per_s", "verdict"] == "improvement"  # higher throughput, 105 < 115
    assert c.loc["output_tok_per_s", "change_pct"] == pytest.approx(20.0)
    assert c.loc["ttft_p99_ms", "verdict"] == "regression"  # higher latency, 55 < 65
    assert c.loc["itl_p50_ms", "verdict"] == "no significant change"  # [9, 11] overlaps [9.5, 11.5]
    assert c.loc["itl_p50_ms", "note"] == "95% CIs overlap"
    assert c.loc["tpot_p50_ms", "verdict"] == "not testable"  # doubled, but A has one value
    assert c.loc["tpot_p50_ms", "note"] == "not testable (n = 1 and 3; a test needs 3)"


def test_compare_faster_latency_is_an_improvement():
    a = pd.DataFrame([summary_row(itl_p50_ms=(10, 9.8, 10.2))])
    b = pd.DataFrame([summary_row(itl_p50_ms=(8, 7.9, 8.1))])
    c = compare.compare_summaries(a, b, ("itl_p50_ms",)).iloc[0]
    assert c["verdict"] == "improvement" and c["change_pct"] == pytest.approx(-20.0)


def _save(out, run_id: str, vllm: str, tput: list[float], scenario: str = "cpu", started: str = "2026-11-30T00:00:00"):
    resolved = params.resolve(scenario).model_dump(mode="json")
    rows = []
    for rep, t in enumerate(tput):
        rows.append(dict(level_kind="concurrency", level_value=1.0, repetition=rep, n_errors=0, saturated=False,
                         **{m: 10.0 + rep * 0.01 for m in metrics.SUMMARY_METRICS} | dict(output_tok_per_s=t)))
    manifest = dict(status="completed", error=None, scenario=scenario, started_at=started, resolved=resolved,
                    environment={"libraries": {"vllm": vllm, "torch": "2.9.0"}, "git": {"commit": "abc"}})
    return results.save_run(out, scenario, run_id, manifest, {"levels": pd.DataFrame(rows)})


@pytest.fixture
def two_runs(tmp_path):
    a = _save(tmp_path, "20261130T000000Z-host-aaaa", "0.10.0", [100.0, 101.0, 99.0], started="2026-11-30T00:00:00")
    b = _save(tmp_path, "20261130T010000Z-host-bbbb", "0.11.0", [120.0, 121.0, 119.0], started="2026-11-30T01:00:00")
    return tmp_path, a, b


def test_compare_runs_versions_and_verdicts(two_runs):
    out, a, b = two_runs
    comp = compare.compare_runs("20261130T000000Z", "20261130T010000Z-host-bbbb", out)  # a unique prefix works
    assert (comp.run_a, comp.run_b) == (a, b)
    v = comp.versions.set_index("key")
    assert (v.loc["vllm", "a"], v.loc["vllm", "b"], bool(v.loc["vllm", "changed"])) == ("0.10.0", "0.11.0", True)
    assert not bool(v.loc["torch", "changed"])
    tput = comp.changes.set_index("metric").loc["output_tok_per_s"]
    assert tput["a"] == 100.0 and tput["b"] == 120.0  # medians over the 3 repetitions
    assert tput["verdict"] == "improvement" and tput["change_pct"] == pytest.approx(20.0)
    assert list(comp.significant()["metric"]) == ["output_tok_per_s"]  # the other metrics did not move
    assert comp.warnings == []


def test_compare_refuses_different_scenarios(two_runs):
    out, a, _ = two_runs
    other = _save(out, "20261130T020000Z-host-cccc", "0.11.0", [1.0, 2.0, 3.0], scenario="cpu-maverick-tiny")
    with pytest.raises(AccelbenchError, match="scenario: 'cpu' vs 'cpu-maverick-tiny'"):
        compare.compare_runs(a, other)
    with pytest.raises(AccelbenchError, match="matches no run"):
        compare.compare_runs("nope", a, out)


def test_compare_version_changes_pairs_consecutive_runs(two_runs):
    out, _, _ = two_runs
    vc = compare.version_changes(out)
    assert set(vc["versions_changed"]) == {"vllm: 0.10.0 -> 0.11.0"}
    assert vc.set_index("metric").loc["output_tok_per_s", "verdict"] == "improvement"
    t = compare.versions_table(outputs_dir=out)
    assert list(t["vllm"]) == ["0.10.0", "0.11.0"]


def test_cli_compare_prints_the_table(two_runs):
    from accelbench.cli import app
    out, a, b = two_runs
    result = CliRunner().invoke(app, ["compare", str(a), str(b), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "improvement" in result.output and "0.11.0" in result.output and "output_tok_per_s" in result.output
