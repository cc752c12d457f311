"""Runs as the report names them: one row per run with its label (run_label) and what it ran on
(system_label), read from the typed manifests of store.runset; per-level frames labelled and ordered the
same way everywhere; each run's provenance."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from accelbench.analysis import summary as summaries
from accelbench.config import paths
from accelbench.core.levels import level_name
from accelbench.store import runset
from accelbench.store.manifest import RunManifest


def system_label(m: RunManifest) -> str:
    """What a run ran on, from its manifest alone: 'H200 (p5en.48xlarge class), vLLM 0.24.0, torch 2.11,
    dummy weights'. The accelerator is the one the run saw (host_check, else NVML's names), never the
    instance class's declared one; a mismatch with the declaration is flagged."""
    env = m.environment
    instance, declared = m.resolved.instance.name, m.resolved.instance.accelerator_name
    used = m.resolved.scenario.accelerators_used
    checked = _texts([g.get("name") for g in m.host_check.gpus if g.get("name")])
    names = checked or _texts((env.gpus or {}).get("names"))[:used]
    if names:
        kinds = Counter(n.removeprefix("NVIDIA ").strip() for n in names)
        accel = ", ".join(name if n == 1 else f"{n}× {name}" for name, n in kinds.items())
        if any(_model_token(name) not in declared.lower() for name in kinds):
            accel += f" (⚠ params declare {declared})"
    elif env.neuron:
        accel = f"{used}× {declared} (declared; {len(_texts(env.neuron.get('devices')))} Neuron devices seen)"
    else:
        accel = f"CPU ({env.cpu.get('model', 'unknown')})"
    vllm, torch = env.vllm, env.libraries.get("torch")
    method = m.method or ""
    weights = "dummy weights" if "dummy" in method else "weights as loaded (not dummy)" if method else \
        "weights not recorded"
    parts = [f"{accel} ({instance} class)", f"vLLM {vllm}" if vllm else "vLLM version not recorded",
             f"torch {'.'.join(torch.split('+')[0].split('.')[:2])}" if torch else "torch version not recorded",
             weights]
    return ", ".join(parts)


def _texts(value: object) -> list[str]:
    """A list the environment recorded (GPU names, Neuron devices) as text; [] where it recorded none. The
    environment's parts are kept as recorded (store.manifest.Record), so their types are not checked on load."""
    return [x if isinstance(x, str) else str(x) for x in value] if isinstance(value, list) else []


def _model_token(gpu_name: str) -> str:
    """The model in a GPU name as NVML gives it: 'H200' of 'H200', 'a100' of 'A100-SXM4-40GB'."""
    words = re.split(r"[\s-]+", gpu_name.lower())
    return next((w for w in words if any(c.isdigit() for c in w)), words[0])


def _measured_accelerators(m: RunManifest) -> str:
    env = m.environment
    names = _texts((env.gpus or {}).get("names"))
    if names:
        return ", ".join(f"{n} × {name}" for name, n in Counter(names).items())
    if env.neuron:
        return f"{len(_texts(env.neuron.get('devices')))} Neuron device(s) (/dev/neuron*)"
    return f"no GPU detected; CPU: {env.cpu.get('model', 'unknown')}, {env.cpu.get('logical_cpus', '?')} logical CPUs"


@runset.per_run_set
def runs(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """One row per run (runset.manifests) plus the label charts use, what it ran on (system_label), the
    measured accelerators, the method text, the levels during which vLLM JIT-compiled, the run's note, its
    bench serve validation entry and how many levels its summary has (`levels`).

    run_label: the scenario when it has one run, else scenario · workload when that is unique, else
    scenario · run id; fixtures (manifest "fixture": true) are marked [fixture]."""
    df = runset.manifests(Path(output_dir))
    if df.empty:
        return df
    per_scenario = df.groupby("scenario")["run_id"].transform("count")
    per_workload = df.groupby(["scenario", "workload"])["run_id"].transform("count")
    df["run_label"] = np.select([per_scenario == 1, per_workload == 1],
                                [df["scenario"], df["scenario"] + " · " + df["workload"]],
                                df["scenario"] + " · " + df["run_id"])
    df["run_label"] = df["run_label"].where(~df["fixture"], df["run_label"] + " [fixture]")
    extra = [runset.run_set(output_dir).manifests[run_id] for run_id in df["run_id"]]
    df["system"] = [system_label(m) for m in extra]
    df["measured_accelerators"] = [_measured_accelerators(m) for m in extra]
    df["method"] = [m.method for m in extra]
    df["jit_compilation_levels"] = [m.jit_compilation_levels for m in extra]
    df["telemetry"] = [m.telemetry for m in extra]
    df["note"] = [m.note for m in extra]
    df["serve_validation"] = [m.serve_validation for m in extra]
    df["closed_loop_start"] = [m.resolved.workload.closed_loop_start for m in extra]
    df["token_budget"] = [m.engine_effective.get("max_num_batched_tokens") for m in extra]
    df["git_source"] = [getattr(m.environment.git, "source", None) or "git" for m in extra]
    s = summaries.all_levels(output_dir)
    counts = s.groupby("run_id").size() if not s.empty else pd.Series(dtype=int)  # one summary row per level
    df["levels"] = df["run_id"].map(counts).fillna(0).astype(int)
    return df


def with_run_facts(df: pd.DataFrame, output_dir: Path | str, columns: tuple[str, ...]) -> pd.DataFrame:
    """df (with run_id) with those of the runs' `columns` it does not have yet."""
    missing = [c for c in columns if c not in df]
    return df.merge(runs(output_dir)[["run_id", *missing]], on="run_id", how="left") if missing else df


def order(df: pd.DataFrame) -> pd.DataFrame:
    """By run, closed-loop levels first, then by level value."""
    df = df.assign(_open_loop=df["level_kind"] != "concurrency")
    df = df.sort_values(["run_label", "_open_loop", "level_value"], kind="stable")
    return df.drop(columns="_open_loop").reset_index(drop=True)


def with_level_names(df: pd.DataFrame) -> pd.DataFrame:
    """df (with level_kind, level_value) with `level`: 'concurrency 4', 'rate 2 req/s'; '—' without a kind."""
    df["level"] = [level_name(k, v) if isinstance(k, str) else "—" for k, v in zip(df["level_kind"], df["level_value"])]
    return df


def labelled(df: pd.DataFrame, output_dir: Path | str) -> pd.DataFrame:
    """df (with run_id and, per level, level_kind and level_value) with each run's label and system, a level
    name, and in report order."""
    out = with_run_facts(df, output_dir, ("run_label", "system"))
    return order(with_level_names(out)) if "level_kind" in out else out


_GIT_DIRTY = {True: " (dirty)", False: "", None: " (dirty: unknown)"}


@runset.per_run_set
def provenance(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run: identity, status and error, the instance class and the accelerators as measured, versions."""
    r = runs(output_dir)
    if r.empty:
        return r
    r["git"] = [f"{c[:10]}{_GIT_DIRTY[d]}" + ("" if src == "git" else f" ({src})") if c else f"unknown ({src})"
                for c, d, src in zip(r["git_commit"], r["git_dirty"], r["git_source"])]
    return r[["run_id", "run_label", "scenario", "status", "error", "fixture", "model", "workload", "system", "note",
              "instance", "accelerator", "measured_accelerators", "vllm", "torch", "git", "started_at"]]
