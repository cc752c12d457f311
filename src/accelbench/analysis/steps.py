"""What vLLM's engine steps did during each level, from the scheduler's per-step samples
(scheduler.parquet): how many steps finished a prefill (and so stalled the decodes batched with them),
and how long those steps took against decode-only steps. It explains why the client start policy moves
the latency columns: simultaneous starts pack prefills into few long steps, staggered starts spread them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from accelbench.config import paths
from accelbench.core import metrics
from accelbench.store import runset

COLUMNS = ["run_id", "replicate", "level_kind", "level_value", "repetition", "steps", "prefill_steps_pct",
           "prefill_step_mean_ms", "decode_step_mean_ms", "running_in_prefill_steps_mean"]


def level_steps(steps: pd.DataFrame, start_s: float, end_s: float) -> dict[str, float]:
    """Step figures over [start_s, end_s] of one engine's samples (t, prompt_tokens, generation_tokens,
    running); a step's duration is the time since the step before it."""
    s = steps.sort_values("t").assign(step_ms=lambda d: d["t"].diff() * 1e3)
    s = s[(s["t"] > start_s) & (s["t"] <= end_s) & s["step_ms"].notna()]
    prefill = s["prompt_tokens"].fillna(0) > 0
    decode = ~prefill & (s["generation_tokens"].fillna(0) > 0)
    mean = lambda x: float(x.mean()) if len(x) else np.nan  # noqa: E731
    return dict(steps=len(s), prefill_steps_pct=100 * float(prefill.mean()) if len(s) else np.nan,
                prefill_step_mean_ms=mean(s.loc[prefill, "step_ms"]), decode_step_mean_ms=mean(s.loc[decode, "step_ms"]),
                running_in_prefill_steps_mean=mean(s.loc[prefill, "running"]))


@runset.per_run_set
def step_mix(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """level_steps for every measured level of every run whose engine reported per-step token counts."""
    runs = runset.run_set(output_dir)
    rows = []
    for run_id in runs.manifests:
        steps, levels = runs.table(run_id, "scheduler"), runs.table(run_id, "levels")
        if steps.empty or "prompt_tokens" not in steps or steps["prompt_tokens"].isna().all() or levels.empty:
            continue
        steps = steps if "replicate" in steps else steps.assign(replicate=0)
        levels = levels if "replicate" in levels else levels.assign(replicate=0)
        for level in levels.itertuples():
            engine = steps[steps["replicate"] == level.replicate]
            rows.append(dict(run_id=run_id, **{k: getattr(level, k) for k in metrics.level_keys(levels)},
                             **level_steps(engine, level.level_start_s, level.level_end_s)))
    return pd.DataFrame(rows, columns=COLUMNS)
