"""The report's sentences about the runs themselves: how many were found and what they ran on, which were
checked against `vllm bench serve` and how, and the notes params/instances.yaml keeps on each price."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from IPython.display import Markdown

from accelbench.analysis import views
from accelbench.analysis.runs import runs
from accelbench.config import params, paths
from accelbench.report.labels import NO_RUNS, NOTHING
from accelbench.store.manifest import STATUSES


def _shown(path: Path) -> str:
    """A path as the reader should see it: relative to the project root when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(paths.ROOT.resolve())) if path.is_relative_to(paths.ROOT.resolve()) else str(path)


def overview(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """How many runs were found where, how they ended, and what each ran on."""
    r = runs(output_dir)
    if r.empty:
        return Markdown(f"{NO_RUNS} Looked in `{_shown(paths.results_dir(Path(output_dir)))}`.")
    counts = r["status"].value_counts()
    statuses = ", ".join(f"{int(counts.get(st, 0))} {st}" for st in STATUSES
                         if st == "completed" or counts.get(st, 0))
    systems = "\n".join(f"- **{s}**: {len(g)} run(s) ({', '.join(g['run_label'])})"
                        for s, g in r.groupby("system", sort=False))
    fixtures = int(r["fixture"].sum())
    fixture_text = (f" **{fixtures} fixture run(s)** (made-up data for testing, not measurements) are shown, "
                    "marked [fixture], and left out of the recommendations and the seed audit." if fixtures else "")
    return Markdown(f"**{len(r)} run(s)** read from `{_shown(paths.results_dir(Path(output_dir)))}`: "
                   f"{statuses} (marked in Provenance; a partial run stopped at its time bound between levels, "
                   "and its levels are used like a completed run's). "
                   f"Scenarios: {', '.join(sorted(r['scenario'].unique()))}.{fixture_text}\n\n"
                   f"Measured on (from each run's manifest):\n\n{systems}")


def validation_notes(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """Which runs were validated against `vllm bench serve`, how it went, and the tokenizer it used."""
    v = views.serve_runs(output_dir)
    if v.empty:
        return Markdown(NOTHING if runs(output_dir).empty else "No run was validated against `vllm bench serve` yet "
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
                     "tokens added): no model hub was reachable")
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
    return Markdown("\n".join(lines))


def _budget(value: Any) -> str:
    return f"{int(value)}" if pd.notna(value) else "not recorded (AsyncLLM's default for the run's vLLM version)"


def price_caveats() -> Markdown:
    """The notes params/instances.yaml keeps on each instance and its prices."""
    notes = "\n".join(f"- **{i.name}** ({i.accelerator_name}): {i.notes}" for i in params.load_instances().values()
                      if i.notes)
    return Markdown(f"Notes on the instances and their prices (params/instances.yaml):\n\n{notes}")
