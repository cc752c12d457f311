"""The report's tables as declarative specs (TABLES: which view, which columns, which caption) and the one
function, `table`, that turns a spec into a labelled, rounded pandas Styler (or says why there is none)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from IPython.display import Markdown
from pandas.io.formats.style import Styler

from accelbench.analysis import compare, pareto, prices, spread, views
from accelbench.analysis.runs import order, provenance, runs
from accelbench.config import paths
from accelbench.config.reference import load_references
from accelbench.core import metrics, uncertainty
from accelbench.core.levels import level_name
from accelbench.errors import AccelbenchError
from accelbench.report.escape import html_text, md_text
from accelbench.report.labels import (
    CAPTION_CSS,
    CAPTIONS,
    EMPTY,
    LABELS,
    MEASURED,
    NOT_MEASURED,
    NOTHING,
    PROJECTION,
    PROJECTION_CHECK,
    SUMMARY_COLUMNS,
    label,
)

Frame = pd.DataFrame


@dataclass(frozen=True)
class TableSpec:
    """One table: the view whose rows it shows and how.

    columns: metric names in the order shown; `<metric>_ci` is the 95% CI of <metric> as text (from its
    _ci_low and _ci_high); an entry with '*' stands for the frame's other columns it matches, in their order.
    """
    view: Callable[[Path | str], Frame]  # accelbench.analysis: the numbers, under metric names
    columns: tuple[str, ...]
    caption: str | Callable[[Frame], str] = ""  # a callable gets the view's rows
    shown: Callable[[Frame], Frame | str] | None = None  # display text for some cells, or a sentence instead
    when: Mapping[str, Callable[[Frame], bool]] = field(default_factory=dict)  # a column shown only if true
    empty: str = NOTHING  # said instead of a table without rows (when there are runs)
    failed: str = "{error}"  # said when the view cannot be computed (AccelbenchError)
    na_rep: str = "—"


def number(x: Any) -> str:
    """A cell as the reader sees it: yes/no, thousands separated, else three significant digits."""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (float, np.floating)):
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"
    return str(x)


def ci_text(df: Frame, metric: str) -> list[Any]:
    """'low–high' of each row's 95% interval of `metric`, 'range low–high' where it is only a range (fewer
    than 3 values), marked 'within one start' where it cannot include the spread between engine starts;
    NaN where there is none (or it is one point)."""
    kinds = df[f"{metric}_interval"] if f"{metric}_interval" in df else pd.Series("", index=df.index)
    prefix = {"range": "range ", uncertainty.INTERVAL_KINDS[1]: "within one start: "}
    return [f"{prefix.get(k, '')}{number(lo)}–{number(hi)}" if np.isfinite(lo) and np.isfinite(hi) and lo != hi
            else np.nan
            for lo, hi, k in zip(df[f"{metric}_ci_low"].astype(float), df[f"{metric}_ci_high"].astype(float), kinds)]


def p99_text(df: Frame) -> Frame:
    """p99 cells resting on fewer than P99_MIN_N requests per repetition as 'n/a (n = ...)'."""
    for c in [c for c in df.columns if "_p99" in c and c.endswith("_ms")]:
        n = df["n_ok" if c.endswith("_level_ms") else "n_measured"] if "n_measured" in df else None
        if n is not None:
            df[c] = [v if not np.isfinite(k) or k >= metrics.P99_MIN_N else f"n/a (n = {k:.0f})"
                     for v, k in zip(df[c], n.astype(float))]
    return df


def styled(df: Frame, columns: list[str], caption: str = "", na_rep: str = "—") -> Styler:
    """The one place table text enters HTML: every cell, header and the caption shown as its characters
    (escape.html_text), since cells hold strings read from run folders."""
    shown = df[columns].rename(columns=label)
    text = [c for c in shown.columns if not pd.api.types.is_numeric_dtype(shown[c])]
    return (shown.style.hide(axis="index").format(lambda x: html_text(number(x)), na_rep=html_text(na_rep))
            .format_index(html_text, axis=1).set_caption(html_text(caption))
            .set_properties(subset=text, **{"text-align": "left"})
            .set_table_styles([{"selector": "caption", "props": CAPTION_CSS}], overwrite=False))


def table(name: str, output_dir: Path | str = paths.OUTPUTS_DIR) -> Styler | Markdown:
    """TABLES[name] over the runs under output_dir: its view's rows, labelled from LABELS and rounded."""
    if name not in TABLES:
        raise AccelbenchError(f"no report table '{name}': the tables are {', '.join(TABLES)}")
    spec = TABLES[name]
    try:
        data = spec.view(output_dir)
    except AccelbenchError as e:
        return Markdown(spec.failed.format(error=md_text(e)))
    if data.empty:
        return Markdown(NOTHING if runs(output_dir).empty else spec.empty)
    plain = [c for c in spec.columns if "*" not in c]
    df = data.reindex(columns=list(dict.fromkeys([*data.columns, *plain])))  # absent: shown as na_rep
    for c in plain:
        if c.endswith("_ci") and f"{c}_low" in df:
            df[c] = ci_text(df, c.removesuffix("_ci"))
    df = spec.shown(df) if spec.shown else df
    if isinstance(df, str):
        return Markdown(df)
    columns = []
    for c in spec.columns:
        columns += [d for d in df.columns if fnmatch(d, c) and d not in plain] if "*" in c else [c]
    columns = [c for c in columns if spec.when.get(c, lambda _: True)(df)]
    caption = spec.caption(data) if callable(spec.caption) else spec.caption
    return styled(df, columns, caption, spec.na_rep)


# --- display text for the cells that need more than rounding ---------------------------------------------

def _status(statuses: pd.Series) -> list[str]:
    return [s if s == "completed" else f"⚠ {s.upper()}" for s in statuses]


def _fixture(fixtures: pd.Series) -> list[str]:
    return [("⚠ fixture" if f else "no") for f in fixtures]


def _runs(r: Frame) -> Frame:
    r["workload_shape"] = [f"{w}: {i} / {o}" for w, i, o in zip(r["workload"], r["input_tokens"], r["output_tokens"])]
    return r.assign(fixture=_fixture(r["fixture"]), status=_status(r["status"]))


def _glance(g: Frame) -> Frame:
    g["low"] = [f"{number(tt)} / {number(tp)} ({lv})" if lv else "—"
                for tt, tp, lv in zip(g["low_ttft_p99_ms"], g["low_tpot_p50_ms"], g["low_level"])]
    g["peak"] = [f"{number(v)} ({lv})" if lv else "—" for v, lv in zip(g["peak_output_tok_per_s"], g["peak_level"])]
    g["min_j_per_output_token"] = [number(v) if np.isfinite(v) else NOT_MEASURED for v in g["min_j_per_output_token"]]
    return g


def _flags(s: Frame) -> Frame:
    s["unstable"] = [("yes" if u else "no") + (f" (max CV {cv:.0%})" if np.isfinite(cv) else "")
                     if n > 1 else "n/a (1 repetition)"
                     for u, cv, n in zip(s["unstable"], s["max_cv"], s["repetitions"])]
    s["saturated"] = [number(sat) if kind == "rate" else "n/a (closed loop)"
                      for sat, kind in zip(s["saturated"], s["level_kind"])]
    s["checks_failed"] = [f if isinstance(f, str) and f else "none failed" if kind == "concurrency" else
                          "n/a (open loop)" for f, kind in zip(s.get("checks_failed", [""] * len(s)), s["level_kind"])]
    return s


def _goodput_wide(g: Frame) -> Frame:
    """One pair of columns per SLO profile, '<metric>:<profile>'; '—' where the profile does not apply."""
    keys = ["run_label", "level_kind", "level_value", "level"]
    wide = g[keys].drop_duplicates().reset_index(drop=True)
    for profile, gp in g.groupby("profile", sort=False):
        names = {m: f"{m}:{profile}" for m in ("goodput_req_per_s", "good_share_pct")}
        wide = wide.merge(gp[keys + list(names)].rename(columns=names), on=keys, how="left")
    return order(wide)


def _energy(e: Frame) -> Frame | str:
    if e["power_mean_w"].isna().all():
        return EMPTY["energy_none"].format(backends=md_text(", ".join(sorted(map(str, e["backend"].unique())))))
    return e


def _slo_note(c: Frame) -> Frame:
    c["slo_note"] = [n if not np.isfinite(v) else "" for n, v in zip(c["note"], c["usd_per_m_output_tokens"])]
    return c


def _price_note(c: Frame) -> Frame:
    c["price_note"] = np.where(c["usd_per_m_output_tokens"].isna(), c["price_note"], "")
    return c


def _validation(v: Frame) -> Frame:
    return v.assign(metric=v["metric"].map(lambda m: LABELS.get(m, m)),
                    level=[level_name("concurrency", c) for c in v["concurrency"]])


def _marked_document(a: Frame) -> Frame:
    return a.assign(document=a["document"] + f" ({PROJECTION})")


def _audit(a: Frame) -> Frame:
    a["holds"] = [f"n/a ({s})" if pd.isna(h) else "holds" if h else "does not hold"
                  for h, s in zip(a["holds"], a["status"])]
    # the citation is the same on every row of a document (listed under the counts): keep the sections
    citation = {d.name: f"{d.citation}, " for d in load_references()}
    a["source"] = [s.removeprefix(citation.get(d, "")) for d, s in zip(a["document"], a["source"])]
    return _marked_document(a)


def _recommendations(rec: Frame) -> Frame:
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
    return rec.assign(workload_profile=rec["profile"])


def _sdk(v: Frame) -> Frame:
    v["git_commit"] = v["git_commit"].str[:10]
    v["started_at"] = v["started_at"].str[:16].str.replace("T", " ")
    return v.drop(columns=["run_id", "scenario", "status", "system"])


def _significant(ch: Frame) -> Frame | str:
    significant = ch[ch["verdict"] != compare.SAME].copy()
    if significant.empty:
        return EMPTY["version_changes_none"].format(pairs=ch[["run_a", "run_b"]].drop_duplicates().shape[0],
                                                    n=len(ch))
    return significant.assign(metric=significant["metric"].map(lambda m: LABELS.get(m, m)))


def _cv_pct(s: Frame) -> Frame:
    for c in ("output_tok_per_s_between_cv", "output_tok_per_s_within_cv"):
        s[c] = [f"{100 * v:.1f}%" if np.isfinite(v) else np.nan for v in s[c].astype(float)]
    return s


def _provenance(p: Frame) -> Frame:
    p["started_at"] = p["started_at"].str[:19].str.replace("T", " ")
    return p.assign(status=_status(p["status"]), fixture=_fixture(p["fixture"]))


def _repeated(s: Frame) -> bool:
    return bool((s["repetitions"] > 1).any())


def _summary(part: str, flags: tuple[str, ...] = ()) -> TableSpec:
    columns = [c for m in SUMMARY_COLUMNS[part] for c in (m, f"{m}_ci")]
    return TableSpec(views.summary, ("run_label", "level", "replicates", "repetitions", *columns, *flags),
                     CAPTIONS[part], shown=_flags if flags else p99_text,
                     when={f"{m}_ci": _repeated for m in SUMMARY_COLUMNS[part]}
                     | {"status": lambda s: (s["status"] != "completed").any()})


def _audit_check(output_dir: Path | str) -> Frame:
    a = views.seed_audit(output_dir)
    return a[a["check"] == PROJECTION_CHECK]


RECOMMENDATION = ("workload_profile", "workload_shape", "winner", "winner_level", "sentence", "runner_up")
AUDIT = ("document", "claim", "arithmetic", "holds", "source")
COSTS = ("run_label", "level", "output_tok_per_s", "usd_per_m_output_tokens", "usd_per_m_output_tokens_ci",
         "usd_per_m_total_tokens", "usd_per_k_requests", "price_note")

TABLES: dict[str, TableSpec] = {
    "runs": TableSpec(runs, ("run_label", "system", "model", "workload_shape", "levels", "status", "fixture", "note"),
                      CAPTIONS["runs"], shown=_runs),
    "glance": TableSpec(views.glance, ("run_label", "low", "peak", "min_j_per_output_token", "usd_at_slo:*"),
                        CAPTIONS["glance"], shown=_glance),
    "unmeasured": TableSpec(views.unmeasured, (
        "scenario", "instance", "declared_accelerators", "model", "workload_shape", "projection",
        "proj_output_tok_per_s", "proj_ttft_ms", "proj_itl_ms", "proj_usd_per_m_output_tokens", "proj_peak"),
        CAPTIONS["unmeasured"], empty=EMPTY["unmeasured"]),
    "latency": _summary("latency"),
    "throughput": _summary("throughput", ("checks_failed", "low_n", "unstable", "saturated", "n_errors", "status")),
    "slo": TableSpec(views.slo_best, ("run_label", "profile", "ttft_p99_limit_ms", "tpot_p99_limit_ms",
                                      "best_concurrency", "best_rate_per_s", "source"), CAPTIONS["slo"],
                     shown=lambda b: b.assign(best_concurrency=b["best_concurrency"].astype("Int64")),
                     empty=EMPTY["slo"], na_rep="none met"),
    "goodput": TableSpec(views.goodput, ("run_label", "level", "*:*"), CAPTIONS["goodput"], shown=_goodput_wide,
                         empty=EMPTY["goodput"]),
    "engine": TableSpec(views.engine_checks, ("run_label", "level", "ttft_engine_diff_p50_ms",
                                              "ttft_engine_diff_p99_ms", "jit_repetitions", *views.ENGINE_TOTALS,
                                              "kv_cache_usage_max_pct"), CAPTIONS["engine"]),
    "energy": TableSpec(views.energy, ("run_label", "level", *views.ENERGY_COLUMNS), CAPTIONS["energy"],
                        shown=_energy, na_rep=NOT_MEASURED),
    "pareto": TableSpec(pareto.pareto, ("run_label", "level", "tok_per_s_per_user", "tok_per_s_per_accelerator",
                                        "tpot_p50_ms", "ttft_p99_ms"),
                        lambda pf: CAPTIONS["pareto"].format(front=int(pf["on_frontier"].sum()), levels=len(pf)),
                        shown=lambda pf: pf[pf["on_frontier"]]),
    "cost_at_slo": TableSpec(views.costs_at_slo, ("run_label", "profile", "level", "ttft_p99_ms", "tpot_p99_ms",
                                                  "output_tok_per_s", "usd_per_m_output_tokens",
                                                  "usd_per_m_total_tokens", "usd_per_k_requests", "slo_note"),
                             CAPTIONS["cost_at_slo"], shown=_slo_note,
                             when={"slo_note": lambda c: c["slo_note"].astype(bool).any()},
                             empty=EMPTY["cost_at_slo"], na_rep="no level meets it"),
    "cost_level": TableSpec(views.costs, COSTS, CAPTIONS["cost_level"], shown=_price_note,
                            when={"price_note": lambda c: c["usd_per_m_output_tokens"].isna().any()}),
    "prices": TableSpec(lambda _: prices.price_table(), ("instance", "price_kind", "usd_per_hour",
                                                         "usd_per_accelerator_hour", "source", "date"),
                        CAPTIONS["prices"]),
    "roofline_decode": TableSpec(views.rooflines, (
        "run_label", "level", "precision", "batch", "context_tokens", "decode_bound_ms", "itl_p50_ms",
        "itl_efficiency_pct", "max_output_tok_per_s", "output_tok_per_s", "throughput_efficiency_pct"),
        CAPTIONS["roofline_decode"]),
    "roofline_prefill": TableSpec(views.rooflines, ("run_label", "level", "prefill_bound_ms", "ttft_p50_ms",
                                                    "ttft_efficiency_pct"), CAPTIONS["roofline_prefill"]),
    "validation": TableSpec(views.validations, ("run_label", "level", "metric", "harness", "serve", "ratio"),
                            CAPTIONS["validation"], shown=_validation, empty=EMPTY["validation"]),
    "audit_counts": TableSpec(views.audit_counts, ("document", "check", "holds", "does_not_hold", "not_checked"),
                              lambda _: CAPTIONS["audit_counts"].format(cited="; ".join(
                                  f"{d.name}: {d.citation}, read {d.read_date}" for d in load_references())),
                              shown=_marked_document),
    "audit": TableSpec(views.seed_audit, (AUDIT[0], "check", *AUDIT[1:]), CAPTIONS["audit"], shown=_audit),
    "audit_projection": TableSpec(_audit_check, AUDIT, CAPTIONS["audit"], shown=_audit,
                                  empty=EMPTY["audit_projection"]),
    "recommendations": TableSpec(views.recommendations, RECOMMENDATION, CAPTIONS["recommendations"],
                                 shown=_recommendations),
    "recommendations_projected": TableSpec(views.recommendation_changes, RECOMMENDATION,
                                           CAPTIONS["recommendations_projected"], shown=_recommendations,
                                           empty=EMPTY["recommendations_projected"]),
    "sdk": TableSpec(views.versions, ("run_label", "started_at", "git_commit", "*"), CAPTIONS["sdk"], shown=_sdk),
    "version_changes": TableSpec(views.version_changes, (
        "scenario", "run_a", "run_b", "versions_changed", "level", "metric", "a", "b", "change_pct", "verdict"),
        lambda ch: CAPTIONS["version_changes"].format(same=int((ch["verdict"] == compare.SAME).sum())),
        shown=_significant, empty=EMPTY["version_changes"], failed=EMPTY["version_changes_failed"]),
    "provenance_run": TableSpec(provenance, ("run_id", "run_label", "status", "error", "fixture", "model",
                                             "workload", "system", "note"), CAPTIONS["provenance_run"],
                                shown=_provenance),
    "provenance_machine": TableSpec(provenance, ("run_id", "instance", "accelerator", "measured_accelerators",
                                                 "vllm", "torch", "git", "started_at"),
                                    CAPTIONS["provenance_machine"], shown=_provenance),
    "engine_starts": TableSpec(spread.engine_starts, ("run_label", "level", "replicates", "repetitions",
                               "output_tok_per_s", "output_tok_per_s_ci", "output_tok_per_s_between_cv",
                               "output_tok_per_s_within_cv"), CAPTIONS["engine_starts"], shown=_cv_pct,
                               empty=EMPTY["engine_starts"]),
    "start_policy": TableSpec(spread.start_policy, ("run_label", "level", "closed_loop_start", "ttft_p99_ms",
                              "ttft_p99_level_ms", "itl_p50_ms", "itl_p99_ms", "output_tok_per_s",
                              "prefill_steps_pct", "prefill_step_mean_ms", "decode_step_mean_ms",
                              "running_in_prefill_steps_mean"), CAPTIONS["start_policy"], empty=EMPTY["start_policy"]),
    "skipped": TableSpec(views.skipped_folders, ("folder", "reason"), CAPTIONS["skipped"], empty=EMPTY["skipped"]),
}
