"""The spread between engine starts and what the client start policy changes: per run and closed-loop
level, the estimate over engine starts with its interval and its variance split between and within
starts; and, where vLLM reported per-step tokens, how the engine's steps mixed prefills with decodes
next to the latency columns the start policy moves."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from accelbench.analysis import steps
from accelbench.analysis import summary as summaries
from accelbench.analysis.runs import labelled, runs
from accelbench.config import paths
from accelbench.store import runset

SPREAD = ("replicates", "repetitions", "output_tok_per_s", "output_tok_per_s_ci_low", "output_tok_per_s_ci_high",
          "output_tok_per_s_interval", "output_tok_per_s_between_cv", "output_tok_per_s_within_cv")
POLICY = ("ttft_p99_ms", "ttft_p99_level_ms", "itl_p50_ms", "itl_p99_ms", "output_tok_per_s")
STEPS = ("prefill_steps_pct", "prefill_step_mean_ms", "decode_step_mean_ms", "running_in_prefill_steps_mean")


@runset.per_run_set
def engine_starts(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Closed-loop levels of runs with more than one engine start: SPREAD per run and level."""
    s = summaries.measured(output_dir)
    if s.empty or "replicates" not in s:
        return pd.DataFrame()
    s = s[(s["replicates"] > 1) & (s["level_kind"] == "concurrency")]
    return labelled(s[["run_id", "level_kind", "level_value", *SPREAD]], output_dir) if not s.empty else s


@runset.per_run_set
def start_policy(output_dir: Path | str = paths.OUTPUTS_DIR) -> pd.DataFrame:
    """Closed-loop levels of runs whose engine reported per-step tokens: the client start policy, the
    latency it moves (interval and every-request p99) and the step mix (analysis.steps, mean over the
    level's repetitions and engine starts)."""
    mix = steps.step_mix(output_dir)
    if mix.empty:
        return mix
    mix = mix[mix["level_kind"] == "concurrency"].groupby(["run_id", "level_kind", "level_value"], as_index=False)[
        list(STEPS)].mean()
    s = summaries.measured(output_dir)[["run_id", "level_kind", "level_value", *POLICY]]
    out = mix.merge(s, on=["run_id", "level_kind", "level_value"], how="inner")
    out = out.merge(runs(output_dir)[["run_id", "closed_loop_start"]], on="run_id", how="left")
    return labelled(out, output_dir)
