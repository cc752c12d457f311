"""The Pareto frontier of per-user speed against per-accelerator throughput: which levels of a run no
other level of the same run beats on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.analysis import views
from accelbench.analysis.runs import with_run_facts
from accelbench.config import paths
from accelbench.store import runset
from accelbench.store.manifest import WHOLE_LEVELS


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


@runset.per_run_set
def pareto(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Per completed or partial run and level: output tokens/s per user (1000 / TPOT p50) and per accelerator (output
    tok/s / accelerators used), and whether the level is on its run's Pareto frontier (pareto_front)."""
    s = views.summary(output_dir)
    if s.empty:
        return s
    s = with_run_facts(s[s["status"].isin(WHOLE_LEVELS)].copy(), output_dir, ("accelerators_used", "system"))
    s["tok_per_s_per_user"] = 1000.0 / s["tpot_p50_ms"].where(s["tpot_p50_ms"] > 0)
    s["tok_per_s_per_accelerator"] = s["output_tok_per_s"] / s["accelerators_used"]
    s["on_frontier"] = False
    for _, g in s.groupby("run_label", sort=False):
        s.loc[g.index, "on_frontier"] = pareto_front(g["tok_per_s_per_accelerator"], g["tok_per_s_per_user"])
    return s.reset_index(drop=True)
