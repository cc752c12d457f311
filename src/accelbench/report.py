"""The summary report: tables over every run folder (read through DuckDB), display labels, and
render_report, which executes notebooks/summary.ipynb and writes one self-contained HTML file.

Each table comes twice: `x(output_dir)` returns the numbers under metric names (tests assert on it),
`x_table(output_dir)` the same rows labelled from LABELS for the reader.
"""

from __future__ import annotations

import inspect
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import Markdown
from pandas.io.formats.style import Styler

from accelbench import metrics, params, paths, results

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
}
# The summary in two tables, so each fits a page: latency, then throughput with the level's flags.
SUMMARY_COLUMNS = {
    "latency": ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms"),
    "throughput": ("output_tok_per_s", "total_tok_per_s", "requests_per_s"),
}
LABELS |= {f"{m}_ci": LABELS[m].replace(" (", " 95% CI (") for ms in SUMMARY_COLUMNS.values() for m in ms}
CAPTION_CSS = "caption-side: bottom; text-align: left; font-size: 0.9em; color: #555; padding-top: 0.4em;"
GROUP_BY = ("run_id", "scenario", "level_kind", "level_value")
NO_RUNS = "**No runs yet.** Measure a scenario first: `accelbench run cpu` (or notebooks/run_scenario.ipynb)."
NOTHING = "No runs yet: nothing to show here."
ENGINE_TOTALS = ["num_preemptions", "preempted_requests"]  # summed over repetitions
ENERGY_COLUMNS = ("power_mean_w", "j_per_output_token", "gpu_util_mean_pct", "memory_used_max_gb")

# The lab template without the CDN scripts (require.js, MathJax, mermaid) the report does not use, so
# index.html opens offline: its images are data URIs and its CSS is inline.
HTML_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def message(text: str) -> Markdown:
    return Markdown(text)


def level_label(kind: str, value: float) -> str:
    """The runner's level label without the repetition: 'concurrency 4', 'rate 2 req/s'."""
    return f"{kind} {value:g}" + ("" if kind == "concurrency" else " req/s")


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """By run, closed-loop levels first, then by level value."""
    df = df.assign(_open_loop=df["level_kind"] != "concurrency")
    df = df.sort_values(["run_label", "_open_loop", "level_value"], kind="stable")
    return df.drop(columns="_open_loop").reset_index(drop=True)


def _measured_accelerators(m: dict[str, Any]) -> str:
    env = m.get("environment") or {}
    names = (env.get("gpus") or {}).get("names") or []
    if names:
        return ", ".join(f"{n} × {name}" for name, n in Counter(names).items())
    if env.get("neuron"):
        return f"{len(env['neuron']['devices'])} Neuron device(s) (/dev/neuron*)"
    cpu = env.get("cpu", {})
    return f"no GPU detected; CPU: {cpu.get('model', 'unknown')}, {cpu.get('logical_cpus', '?')} logical CPUs"


def runs(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """One row per run (results.manifests) plus the label charts use, the measured accelerators,
    the method text and the levels during which vLLM JIT-compiled."""
    df = results.manifests(Path(output_dir))
    if df.empty:
        return df
    per_scenario = df.groupby("scenario")["run_id"].transform("count")
    df["run_label"] = np.where(per_scenario > 1, df["scenario"] + " · " + df["run_id"], df["scenario"])
    extra = [results.load_manifest(d) for d in df["run_dir"]]
    df["measured_accelerators"] = [_measured_accelerators(m) for m in extra]
    df["method"] = [m.get("method") for m in extra]
    df["jit_compilation_levels"] = [m.get("jit_compilation_levels", []) for m in extra]
    df["telemetry"] = [m.get("telemetry") for m in extra]
    df["git_source"] = [((m.get("environment") or {}).get("git") or {}).get("source", "git") for m in extra]
    return df


def summary(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """metrics.summarize_levels over every run's levels, one row per run and level, with run facts."""
    if not results.run_dirs(Path(output_dir)):  # results.connect cannot register an empty runs table
        return pd.DataFrame()
    levels = results.load_levels(Path(output_dir))
    if levels.empty:
        return pd.DataFrame()
    s = metrics.summarize_levels(levels, GROUP_BY)
    facts = runs(output_dir)[["run_id", "run_label", "status", "model", "backend"]]
    s = s.merge(facts, on="run_id", how="left")
    s["level"] = [level_label(k, v) for k, v in zip(s["level_kind"], s["level_value"])]
    return _order(s)


def measured_requests(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every request of every run (DuckDB view `requests`), `measured` where it is inside its level's
    steady-state window, as the level aggregates count it."""
    if not results.run_dirs(Path(output_dir)):
        return pd.DataFrame()
    con = results.connect(Path(output_dir))
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name='requests'").fetchone()[0]:
        return pd.DataFrame()
    req = con.execute("""SELECT run_id, level_kind, level_value, repetition, scheduled_s, submit_s,
        first_token_s, end_s, error, input_tokens, output_tokens, ttft_ms, tpot_ms, e2e_ms FROM requests""").df()
    req["measured"] = False
    for _, level in req.groupby(["run_id", *metrics.LEVEL_KEYS]):
        req.loc[level.index, "measured"] = metrics.in_window(level, *metrics.steady_window(level))
    req = req.merge(runs(output_dir)[["run_id", "run_label"]], on="run_id")
    req["level"] = [level_label(k, v) for k, v in zip(req["level_kind"], req["level_value"])]
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
    out["level"] = [level_label(k, v) for k, v in zip(out["level_kind"], out["level_value"])]
    return _order(out)


def engine_checks(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and level: harness TTFT minus vLLM's first_token_latency (medians over repetitions of the
    per-level p50/p99), preemptions summed and KV-cache use maxed over repetitions, and how many
    repetitions vLLM JIT-compiled during (from the manifests)."""
    s = summary(output_dir)
    if s.empty:
        return s
    levels = results.load_levels(Path(output_dir))
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
    out["jit_repetitions"] = [sum(j.rsplit(" rep ", 1)[0] == lvl for j in jit[r])
                              for r, lvl in zip(out["run_id"], out["level"])]
    return out


def energy(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and level: power, energy per output token and utilization where telemetry measured them
    (NaN where it did not: absent, never 0)."""
    s = summary(output_dir)
    return s.reindex(columns=["run_id", "run_label", "backend", "level", *ENERGY_COLUMNS]) if not s.empty else s


_GIT_DIRTY = {True: " (dirty)", False: "", None: " (dirty: unknown)"}


def provenance(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run: identity, status and error, the instance class and the accelerators as measured, versions."""
    r = runs(output_dir)
    if r.empty:
        return r
    r["git"] = [f"{c[:10]}{_GIT_DIRTY[d]}" + ("" if src == "git" else f" ({src})") if c else f"unknown ({src})"
                for c, d, src in zip(r["git_commit"], r["git_dirty"], r["git_source"])]
    return r[["run_id", "scenario", "status", "error", "model", "workload", "instance", "accelerator",
              "measured_accelerators", "vllm", "torch", "git", "started_at"]]


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


def overview(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    r = runs(output_dir)
    if r.empty:
        return message(f"{NO_RUNS} Looked in `{paths.results_dir(Path(output_dir))}`.")
    failed = int((r["status"] != "completed").sum())
    return message(f"**{len(r)} run(s)** read from `{paths.results_dir(Path(output_dir))}`: "
                   f"{len(r) - failed} completed, {failed} failed (marked in Provenance). "
                   f"Scenarios: {', '.join(sorted(r['scenario'].unique()))}.")


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
            s[f"{m}_ci"] = [f"{_number(lo)}–{_number(hi)}" if np.isfinite(lo) else np.nan
                            for lo, hi in zip(s[f"{m}_ci_low"], s[f"{m}_ci_high"])]
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
    return _styled(g, ["run_label", "profile", "level", "goodput_req_per_s", "good_share_pct"],
                   "Goodput: measured requests meeting both the TTFT and TPOT limits per second of the "
                   "steady-state window (median over repetitions).")


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
                   "steady-state window (median over repetitions).", na_rep="not measured")


def provenance_table(output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    p = provenance(output_dir)
    if p.empty:
        return message(NOTHING)
    p["status"] = [s if s == "completed" else f"⚠ {s.upper()}" for s in p["status"]]
    return _styled(p, list(p.columns), "Accelerators (measured): names as NVML / the host reported them; "
                   "the instance class's accelerator is what params/instances.yaml declares.")


def _quote(text: str | None) -> str:
    return "\n".join(f"> {line}" for line in inspect.cleandoc(text or "").splitlines())


def methods(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """The definitions the numbers follow, quoted from accelbench.metrics, and each run's method text."""
    doc = inspect.getdoc(metrics) or ""
    definitions = doc[doc.index("\n- ") + 1:] if "\n- " in doc else doc
    resamples = inspect.signature(metrics.bootstrap_ci).parameters["n_resamples"].default
    r = runs(output_dir)
    method = "No runs yet: each run records how it ran vLLM in its manifest.json." if r.empty else "\n\n".join(
        f"Runs {', '.join(g['run_label'])}:\n\n{_quote(text)}" for text, g in r.groupby("method", sort=False))
    return message(f"""**Definitions** (quoted from `accelbench.metrics`):

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
