"""The numbers the report shows, one view per section, under metric names (tests assert on them): each
reads the one summary across repetitions (analysis.summary) or the run set (store.runset) and the
analysis modules, and is computed once per set of run folders (runset.per_run_set)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from accelbench.analysis import audit, compare, cost, recommend, roofline, validation
from accelbench.analysis import summary as summaries
from accelbench.analysis.runs import (
    labelled,
    order,
    runs,
    with_level_names,
    with_run_facts,
)
from accelbench.config import params, paths
from accelbench.core import metrics, uncertainty
from accelbench.errors import AccelbenchError
from accelbench.store import runset
from accelbench.store.manifest import WHOLE_LEVELS

ENGINE_TOTALS = ["num_preemptions", "preempted_requests"]  # summed over repetitions
ENERGY_COLUMNS = ("power_mean_w", "j_per_output_token", "gpu_util_mean_pct", "memory_used_max_gb")
# Cost figures: one basis and one price kind, named wherever a cost is shown. USD per token is the same
# under either basis (cost.py); the basis only changes the throughput and the hourly price it is set against.
COST_BASIS = cost.BASIS_SHARE
PRICE_KIND = "on_demand"
PROJECTION = "projection (seed)"  # how every figure from a seed document is marked


@runset.per_run_set
def summary(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """summaries.all_levels (every run, failed and fixtures included), one row per run and level, with the
    run's label and a level name, in report order."""
    s = summaries.all_levels(output_dir)
    if s.empty:
        return s
    s = with_run_facts(s, output_dir, ("run_label", "status", "model", "backend"))
    return order(with_level_names(s))


def skipped_folders(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """The folders under results/ that are not readable runs (store.runset.RunSet.skipped), left out of every
    other view: each folder relative to the results folder, and why it was skipped."""
    rs = runset.run_set(output_dir)
    root = paths.results_dir(rs.outputs_dir)
    return pd.DataFrame([dict(folder=str(d.relative_to(root)) if d.is_relative_to(root) else str(d), reason=why)
                         for d, why in rs.skipped], columns=["folder", "reason"])


@runset.per_run_set
def measured_requests(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every request of every run (DuckDB view `requests`), `measured` where it is inside its level's
    measurement interval, as the level aggregates' interval view counts it (core.metrics.interval)."""
    rs = runset.run_set(output_dir)
    if not rs.dirs:
        return pd.DataFrame()
    con = rs.connect()
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name='requests'").fetchone()[0]:
        return pd.DataFrame()
    columns = {c for c, *_ in con.execute("DESCRIBE requests").fetchall()}
    chunks = [c for c in ("chunk_times_s", "chunk_tokens") if c in columns]  # per-chunk lists: not needed here
    req = con.execute(f"SELECT * EXCLUDE ({', '.join(chunks)}) FROM requests" if chunks else
                      "SELECT * FROM requests").df()
    req["replicate"] = req["replicate"].fillna(0) if "replicate" in req else 0
    req["measured"] = False
    for _, level in req.groupby(["run_id", *metrics.level_keys(req)]):
        start, end, steady = metrics.interval(level)
        submitted = level["submit_s"].between(start, end) if steady else True
        req.loc[level.index, "measured"] = level["error"].isna() & submitted
    req = req.merge(runs(output_dir)[["run_id", "run_label"]], on="run_id")
    return order(with_level_names(req))


def _profiles_for(model: str) -> list[params.SloProfile]:
    return [p for p in params.load_slo_profiles() if not p.models or model in p.models]


@runset.per_run_set
def slo_best(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and SLO profile that names its model (or names none): the highest concurrency and rate
    meeting the profile at p99 over every request of the level (uncertainty.best_levels_meeting_slo)."""
    s = summary(output_dir)
    if s.empty:
        return s
    rows = []
    for run_label, g in s.groupby("run_label", sort=False):
        for p in _profiles_for(g["model"].iloc[0]):
            best = uncertainty.best_levels_meeting_slo(g, p.ttft_p99_ms, p.tpot_p99_ms)
            rows.append(dict(run_label=run_label, profile=p.name, ttft_p99_limit_ms=p.ttft_p99_ms,
                             tpot_p99_limit_ms=p.tpot_p99_ms, best_concurrency=best["concurrency"],
                             best_rate_per_s=best["rate"], source=p.source))
    return pd.DataFrame(rows)


@runset.per_run_set
def goodput(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run, applicable profile and level: metrics.goodput's requests/s meeting both limits (median over
    repetitions) and the share of the requests completed inside the interval that met them."""
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
                n=("n_completed", "sum")).reset_index()
            g["good_share_pct"] = 100 * g["good"] / g["n"].where(g["n"] > 0)  # none measured: NaN, not 0%
            parts.append(g.assign(run_id=run_id, run_label=r["run_label"].iloc[0], profile=p.name))
    if not parts:
        return pd.DataFrame()
    return order(with_level_names(pd.concat(parts, ignore_index=True)))


@runset.per_run_set
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


@runset.per_run_set
def energy(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run and level: power, energy per output token and utilization where telemetry measured them
    (NaN where it did not: absent, never 0)."""
    s = summary(output_dir)
    return s.reindex(columns=["run_id", "run_label", "backend", "level", *ENERGY_COLUMNS]) if not s.empty else s


# --- the decision sections ---------------------------------------------------------------------------

@runset.per_run_set
def costs(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """cost.cost_table on the report's basis and price kind over every completed run's levels (fixtures kept so
    they can be shown marked), labelled."""
    s = summaries.measured(output_dir, include_fixtures=True)
    return labelled(cost.cost_table(s, COST_BASIS, PRICE_KIND), output_dir) if not s.empty else s


@runset.per_run_set
def costs_at_slo(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """cost.cost_at_slo: per run and SLO profile of its model, the cheapest level meeting the profile."""
    c = costs(output_dir)
    at = cost.cost_at_slo(c) if not c.empty else pd.DataFrame()
    return labelled(at, output_dir) if not at.empty else at


def pricings(output_dir: Path | str = paths.OUTPUTS_DIR, price_kind: str = PRICE_KIND) -> list[str]:
    """How each (instance, accelerators used) of the completed or partial runs is charged, under both bases
    (cost.Pricing.explain); a sentence saying why where it cannot be priced."""
    r = runs(output_dir)
    if r.empty:
        return []
    r = r[r["status"].isin(WHOLE_LEVELS)]
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


@runset.per_run_set
def rooflines(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """roofline.run_rooflines (completed and partial runs, from the params in each manifest), labelled."""
    r = roofline.run_rooflines(output_dir)
    return labelled(r, output_dir) if not r.empty else r


def serve_runs(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """The runs whose manifest records a validation against `vllm bench serve`."""
    r = runs(output_dir)
    return r[[bool(v) for v in r["serve_validation"]]] if not r.empty else r


@runset.per_run_set
def validations(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per run validated against `vllm bench serve` (its manifest has serve_validation and the run folder
    serve_levels.parquet): validation.compare of the run's raw requests (DuckDB view `requests`) against
    bench serve, per concurrency level and metric; the steady row recomputed on both sides from their raw
    requests under the current measurement interval."""
    served = serve_runs(output_dir)
    served = served[[(Path(d) / "serve_levels.parquet").exists() for d in served["run_dir"]]] \
        if not served.empty else served
    if served.empty:
        return pd.DataFrame()
    con = runset.connect(output_dir)
    ids = list(served["run_id"])
    requests = con.execute(f"SELECT * FROM requests WHERE run_id IN ({', '.join('?' * len(ids))})", ids).df()
    parts = []
    for _, run in served.iterrows():
        mine = requests[requests["run_id"] == run["run_id"]].drop(columns="run_id").reset_index(drop=True)
        # serve_levels and serve_requests are not DuckDB views of the run set: read through RunSet.table
        runs_ = runset.run_set(output_dir)
        c = validation.compare(mine, runs_.table(run["run_id"], "serve_levels"),
                               runs_.table(run["run_id"], "serve_requests"))
        parts.append(c.assign(run_id=run["run_id"], run_label=run["run_label"]))
    return pd.concat(parts, ignore_index=True)


@runset.per_run_set
def seed_audit(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """audit.audit of every params/reference/ document, with this study's measured runs for the
    projection-vs-measurement check."""
    return audit.audit(measured_summary=summaries.measured(output_dir))


@runset.per_run_set
def audit_counts(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """audit.audit_summary of seed_audit: claims per document and check that hold, do not, or were not checked."""
    return audit.audit_summary(seed_audit(output_dir))


@runset.per_run_set
def recommendations(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """recommend.recommend over the completed or partial, non-fixture runs, costed on the report's basis
    (cost.run_costs)."""
    return _recommend(output_dir, include_projections=False)


@runset.per_run_set
def recommendations_with_projections(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """recommendations with the seeds' projections as candidates too."""
    return _recommend(output_dir, include_projections=True)


@runset.per_run_set
def _measured_costs(output_dir: Path | str) -> pd.DataFrame:
    return cost.run_costs(output_dir, COST_BASIS, PRICE_KIND)


def _recommend(output_dir: Path | str, include_projections: bool) -> pd.DataFrame:
    costed = _measured_costs(output_dir)
    return recommend.recommend(costed if not costed.empty else None, include_projections=include_projections,
                               basis=COST_BASIS, price_kind=PRICE_KIND)


@runset.per_run_set
def recommendation_changes(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """recommendations_with_projections, only the rows that differ from the measured-only ones."""
    rec = recommendations_with_projections(output_dir)
    measured = recommendations(output_dir)
    if rec.empty or measured.empty:
        return rec
    keys = ["profile", "model", "input_tokens", "output_tokens", "winner", "sentence"]
    same = rec[keys].astype(str).apply(tuple, axis=1).isin(measured[keys].astype(str).apply(tuple, axis=1))
    return rec[~same.to_numpy()]


@runset.per_run_set
def unmeasured(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Every scenario in params/scenarios/ without a completed or partial, non-fixture run, with what the seeds project
    for its instance and model (recommend.projection_candidates): the headline figures and the scaling
    table's peak, one row per seed document; "no seed projection" where there is none."""
    r = runs(output_dir)
    done = set(r.loc[r["status"].isin(WHOLE_LEVELS) & ~r["fixture"], "scenario"]) if not r.empty else set()
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


@runset.per_run_set
def glance(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per completed or partial run: latency at its lowest concurrency, its peak output throughput, its lowest energy
    per token (NaN where not measured) and, per SLO profile of its model, the cost at the cheapest level
    meeting it (costs_at_slo), in columns usd_at_slo:<profile>."""
    s = summary(output_dir)
    if s.empty:
        return s
    s = s[s["status"].isin(WHOLE_LEVELS)]
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


@runset.per_run_set
def versions(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """compare.versions_table: one row per run with every software version it recorded, labelled."""
    v = compare.versions_table(list(runset.run_set(output_dir).dirs))  # the readable runs only
    return labelled(v, output_dir) if not v.empty else v


@runset.per_run_set
def version_changes(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """compare.version_changes (a level-metric pair per row: A, B, change, verdict) with a level name;
    raises AccelbenchError where versions changed but the runs cannot be compared."""
    ch = compare.version_changes(Path(output_dir))
    return with_level_names(ch) if not ch.empty else ch
