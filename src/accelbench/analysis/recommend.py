"""Which configuration to use for a workload profile (params/workload_profiles.yaml), from measured runs.

Profiles are a p99 latency limit plus an objective. Candidates are this study's measured summaries;
the seeds' projections (params/reference/) join only when the caller asks, marked "projection".
Configurations are compared within one model and one workload shape (input and output tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from accelbench.analysis import cost, prices
from accelbench.config import params, paths
from accelbench.config.params import Frozen
from accelbench.config.reference import ReferenceDocument, load_references
from accelbench.errors import AccelbenchError

Objective = Literal["lowest_cost", "highest_throughput", "lowest_latency"]
SHAPE = ["model", "input_tokens", "output_tokens"]
COLUMNS = ["profile", "model", "input_tokens", "output_tokens", "objective", "winner", "winner_source",
           "winner_level", "winner_value", "sentence", "runner_up", "runner_up_source", "runner_up_value",
           "best_measured", "n_candidates", "n_qualifying"]


class WorkloadProfile(Frozen):
    name: str = Field(description="profile name")
    description: str = Field("", description="what kind of service it stands for")
    ttft_p99_ms: float | None = Field(gt=0, description="TTFT limit at p99, ms; null = no limit")
    tpot_p99_ms: float | None = Field(gt=0, description="TPOT limit at p99, ms; null = no limit")
    objective: Objective = Field(description="what to optimise among configurations meeting the limits")
    min_input_tokens: int = Field(0, ge=0, description="only workloads with at least this many prompt tokens")
    max_accelerators_used: int | None = Field(None, ge=1, description="only configurations using at most this many")
    source: str = Field(min_length=3, description="where the limits come from")

    def limits_text(self) -> str:
        if self.ttft_p99_ms is None and self.tpot_p99_ms is None:
            return "no latency limit"
        parts = [f"{k} p99 <= {v:g} ms" for k, v in (("TTFT", self.ttft_p99_ms), ("TPOT", self.tpot_p99_ms))
                 if v is not None]
        return " and ".join(parts)


def profiles_file() -> Path:
    return paths.PARAMS_DIR / "workload_profiles.yaml"


def load_profiles(path: Path | None = None) -> list[WorkloadProfile]:
    path = path or profiles_file()
    data = params._read_yaml(path)
    if not isinstance(data, dict):
        raise AccelbenchError(f"{path}: expected a mapping of profile name to fields")
    return [params._build(WorkloadProfile, fields, path, name=name) for name, fields in data.items()]


def measured_candidates(summary: pd.DataFrame, basis: str = cost.BASIS_SHARE,
                        price_kind: str = "on_demand") -> pd.DataFrame:
    """Measured summary rows (analysis.summary.measured) with costs, a candidate label and source 'measured'.

    Several runs of one scenario: the latest run (run ids start with their UTC start time) stands for it.
    """
    if summary.empty:
        return pd.DataFrame()
    need = [c for c in ("scenario", "model", "instance", "accelerators_used", "level_kind", "level_value")
            if c not in summary]
    if need:
        raise AccelbenchError(f"recommend needs summary columns {need}: use accelbench.analysis.summary.measured(output_dir)")
    df = summary
    if "run_id" in df:
        keys = [c for c in ("scenario", "model", "workload") if c in df]
        latest = df.groupby(keys)["run_id"].transform("max")
        df = df[df["run_id"] == latest]
    costed = cost.cost_table(df, basis=basis, price_kind=price_kind) if "usd_per_m_output_tokens" not in df else df
    instances = params.load_instances()
    scale = [instances[i].accelerator_count / n if i in instances else np.nan
             for i, n in zip(costed["instance"], costed["accelerators_used"])]
    # one candidate per scenario and workload: a validation run must not merge with the sweep it checks
    label = costed["scenario"] + (" (" + costed["workload"] + ")" if "workload" in costed else "")
    return costed.assign(source="measured", candidate=label,
                         output_tok_per_s_instance=costed["output_tok_per_s"] * np.array(scale, dtype=float))


def projection_candidates(references: list[ReferenceDocument] | None = None,
                          price_kind: str = "on_demand") -> pd.DataFrame:
    """The seeds' headline and scaling-table figures as candidate rows, marked 'projection'.

    Stated TTFT and ITL (medians, as the seeds state them) stand in for p99 TTFT and TPOT. USD per 1M
    output tokens is recomputed with cost.FORMULA from this project's price of the instance when
    params/instances.yaml has one, else from the document's stated price (price_source says which).
    """
    references = references if references is not None else load_references()
    instances = params.load_instances()
    rows = []
    for doc in references:
        keys = {(f.instance, f.model) for f in doc.figures
                if f.instance and f.model and f.metric == "output_tok_per_s"}
        for inst_name, model in sorted(keys):
            inst = instances[inst_name]
            ours = prices.instance_price(inst, price_kind)
            stated = doc.find("price_usd_per_hour", inst_name)
            price, price_source = (ours.value, f"params/instances.yaml ({ours.source}, {ours.date})") if ours else \
                (stated[0].value, f"{doc.document}, {stated[0].section}") if stated else (np.nan, "no price")
            ttft = doc.find("ttft_ms", inst_name, model)
            itl = doc.find("itl_ms", inst_name, model)
            for f in doc.find("output_tok_per_s", inst_name, model):
                headline = f.concurrency is None
                rows.append(dict(
                    source="projection", candidate=f"{doc.name}: {f.hardware_label} ({inst_name})",
                    scenario=None, run_id=None, document=doc.name, model=model, instance=inst_name,
                    accelerators_used=f.accelerators or inst.accelerator_count,
                    input_tokens=doc.input_tokens, output_tokens=doc.output_tokens, level_kind="concurrency",
                    level_value=float(f.concurrency) if f.concurrency else np.nan,
                    ttft_p99_ms=ttft[0].value if ttft and headline else np.nan,
                    tpot_p99_ms=itl[0].value if itl and headline else np.nan,
                    n_errors=0, saturated=False, output_tok_per_s=f.value, output_tok_per_s_instance=f.value,
                    usd_per_m_output_tokens=cost.usd_per_m_output_tokens(price, f.value),
                    price_usd_per_hour=price, price_source=price_source, basis=cost.BASIS_FULL))
    return pd.DataFrame(rows)


def _qualifies(df: pd.DataFrame, p: WorkloadProfile) -> pd.Series:
    ok = (df["n_errors"].fillna(0) == 0) & ~df["saturated"].fillna(False).astype(bool)
    if p.ttft_p99_ms is not None:
        ok &= df["ttft_p99_ms"] <= p.ttft_p99_ms
    if p.tpot_p99_ms is not None:
        ok &= df["tpot_p99_ms"] <= p.tpot_p99_ms
    return ok


def _best_level(rows: pd.DataFrame, objective: str) -> pd.Series | None:
    if objective == "lowest_cost":
        rows = rows[rows["usd_per_m_output_tokens"].notna()]
        return rows.loc[rows["usd_per_m_output_tokens"].idxmin()] if not rows.empty else None
    if objective == "highest_throughput":
        rows = rows[rows["output_tok_per_s_instance"].notna()]
        return rows.loc[rows["output_tok_per_s_instance"].idxmax()] if not rows.empty else None
    rows = rows[rows["ttft_p99_ms"].notna()]
    return rows.sort_values(["ttft_p99_ms", "tpot_p99_ms"]).iloc[0] if not rows.empty else None


def _value(row: pd.Series, objective: str) -> float:
    return {"lowest_cost": row["usd_per_m_output_tokens"], "highest_throughput": row["output_tok_per_s_instance"],
            "lowest_latency": row["ttft_p99_ms"]}[objective]


def _describe(row: pd.Series, objective: str) -> str:
    level = "concurrency not stated" if not np.isfinite(row["level_value"]) else \
        f"{row['level_kind']} {row['level_value']:g}"
    lat = f"TTFT p99 {row['ttft_p99_ms']:.0f} ms, TPOT p99 {row['tpot_p99_ms']:.1f} ms" \
        if np.isfinite(row.get("ttft_p99_ms", np.nan)) and np.isfinite(row.get("tpot_p99_ms", np.nan)) else \
        "latency not stated"
    if objective == "lowest_cost":
        return f"${row['usd_per_m_output_tokens']:.3g} per 1M output tokens at {level} ({lat})"
    if objective == "highest_throughput":
        return f"{row['output_tok_per_s_instance']:,.0f} output tokens/s per full instance at {level} ({lat})"
    return f"{lat} at {level}"


def _name(row: pd.Series) -> str:
    return f"{row['candidate']} ({row['source']})"


WHAT = {"lowest_cost": "the lowest cost", "highest_throughput": "the highest throughput per instance",
        "lowest_latency": "the lowest p99 TTFT"}


def recommend(summary: pd.DataFrame | None, profiles: list[WorkloadProfile] | None = None,
              include_projections: bool = False, references: list[ReferenceDocument] | None = None,
              basis: str = cost.BASIS_SHARE, price_kind: str = "on_demand") -> pd.DataFrame:
    """Per profile and per (model, input tokens, output tokens): the winner, why, and the runner-up.

    summary: measured per-level summaries with run facts (accelbench.analysis.summary.measured),
    costed already or not. Each candidate competes with its best level that meets the profile's limits.
    """
    profiles = profiles if profiles is not None else load_profiles()
    parts = [measured_candidates(summary, basis, price_kind)] if summary is not None and not summary.empty else []
    if include_projections:
        parts.append(projection_candidates(references, price_kind))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    cands = pd.concat(parts, ignore_index=True)
    rows = []
    for shape, group in cands.groupby(SHAPE, sort=True, dropna=False):
        for p in profiles:
            rows.append(_recommend_one(p, dict(zip(SHAPE, shape)), group))
    return pd.DataFrame(rows, columns=COLUMNS)


def _recommend_one(p: WorkloadProfile, shape: dict[str, Any], group: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = dict(profile=p.name, objective=p.objective, **shape)
    eligible = group
    if p.min_input_tokens:
        eligible = eligible[eligible["input_tokens"] >= p.min_input_tokens]
    if p.max_accelerators_used:
        eligible = eligible[eligible["accelerators_used"] <= p.max_accelerators_used]
    out["n_candidates"] = int(eligible["candidate"].nunique())
    best = []
    for _, rows in eligible[_qualifies(eligible, p)].groupby("candidate", sort=False):
        level = _best_level(rows, p.objective)
        if level is not None:
            best.append(level)
    out["n_qualifying"] = len(best)
    where = f"{shape['model']} ({shape['input_tokens']:g} in / {shape['output_tokens']:g} out)"
    if not best:
        if eligible.empty:
            why = (f"inputs of at least {p.min_input_tokens} tokens" if p.min_input_tokens else
                   f"at most {p.max_accelerators_used} accelerator(s)")
            out["sentence"] = f"No configuration of {where} has {why}."
        else:
            out["sentence"] = (f"None of the {out['n_candidates']} configuration(s) of {where} meets {p.limits_text()}"
                               + (" with a price" if p.objective == "lowest_cost" else "") + ".")
        return out
    sign = -1.0 if p.objective == "highest_throughput" else 1.0

    def rank_key(r: pd.Series) -> tuple[float, float]:
        tpot = r.get("tpot_p99_ms", np.nan)
        return sign * _value(r, p.objective), tpot if np.isfinite(tpot) else np.inf

    ranked = sorted(best, key=rank_key)
    win = ranked[0]
    out |= dict(winner=win["candidate"], winner_source=win["source"], winner_value=_value(win, p.objective),
                winner_level=f"{win['level_kind']} {win['level_value']:g}")
    sentence = f"{_name(win)} has {WHAT[p.objective]} meeting {p.limits_text()}: {_describe(win, p.objective)}"
    if len(ranked) > 1:
        run = ranked[1]
        out |= dict(runner_up=run["candidate"], runner_up_source=run["source"],
                    runner_up_value=_value(run, p.objective))
        sentence += f"; runner-up {_name(run)}: {_describe(run, p.objective)}."
    else:
        sentence += "; no other configuration qualifies."
    if win["source"] != "measured":
        measured = [r for r in ranked if r["source"] == "measured"]
        out["best_measured"] = measured[0]["candidate"] if measured else None
        sentence += (f" The winner is a projection, not a measurement; the best measured configuration is "
                     f"{measured[0]['candidate']}." if measured else
                     " The winner is a projection, not a measurement; no measured configuration qualifies.")
    out["sentence"] = sentence
    return out
