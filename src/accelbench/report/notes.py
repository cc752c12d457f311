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
from accelbench.report.escape import md_code, md_text
from accelbench.report.labels import NO_RUNS, NOTHING
from accelbench.store.manifest import STATUSES


def _shown(path: Path) -> str:
    """A path as the reader should see it: relative to the project root when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(paths.ROOT.resolve())) if path.is_relative_to(paths.ROOT.resolve()) else str(path)


def overview(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """How many runs were found where, how they ended, what each ran on, and how many folders were skipped."""
    r = runs(output_dir)
    where = md_code(_shown(paths.results_dir(Path(output_dir))))
    skipped = len(views.skipped_folders(output_dir))
    skipped_text = (f" **{skipped} folder(s) skipped**: not readable runs, each listed with the reason under "
                    "*Skipped run folders*." if skipped else "")
    if r.empty:
        return Markdown(f"{NO_RUNS} Looked in {where}.{skipped_text}")
    counts = r["status"].value_counts()
    statuses = ", ".join(f"{int(counts.get(st, 0))} {st}" for st in STATUSES
                         if st == "completed" or counts.get(st, 0))
    systems = "\n".join(f"- **{md_text(s)}**: {len(g)} run(s) ({md_text(', '.join(g['run_label']))})"
                        for s, g in r.groupby("system", sort=False))
    fixtures = int(r["fixture"].sum())
    fixture_text = (f" **{fixtures} fixture run(s)** (made-up data for testing, not measurements) are shown, "
                    "marked [fixture], and left out of the recommendations and the seed audit." if fixtures else "")
    return Markdown(f"**{len(r)} run(s)** read from {where}: "
                   f"{statuses} (marked in Provenance; a partial run stopped at its time bound between levels, "
                   "and its levels are used like a completed run's). "
                   f"Scenarios: {md_text(', '.join(sorted(r['scenario'].unique())))}.{fixture_text}{skipped_text}\n\n"
                   f"Measured on (from each run's manifest):\n\n{systems}")


def validation_notes(output_dir: Path | str = paths.OUTPUTS_DIR) -> Markdown:
    """Which runs were validated against `vllm bench serve`, how it went, and the tokenizer it used."""
    v = views.serve_runs(output_dir)
    if v.empty:
        return Markdown(NOTHING if runs(output_dir).empty else "No run was validated against `vllm bench serve` yet "
                       "(a workload with `validate_with_serve: true` does it).")
    return Markdown("\n".join(_validation_line(run) for _, run in v.iterrows()))


def _validation_line(run: pd.Series) -> str:
    """One validated run: its manifest's serve_validation record (an untyped dict: every value is shown as
    text, whatever its type)."""
    sv = run["serve_validation"]
    text = (f"- **{md_text(run['run_label'])}** ({md_text(run['run_id'])}): "
            f"validation {md_text(sv.get('status', 'unknown'))}")
    levels = _listed(sv.get("levels"))
    if levels:
        text += f", concurrency {md_text(', '.join(levels))}"
    if sv.get("error") or sv.get("reason"):
        text += f": {md_text(sv.get('error') or sv.get('reason'))}"
    tok = sv.get("tokenizer")
    tok = tok if isinstance(tok, dict) else {}
    if tok.get("synthetic"):
        vocab = tok.get("vocab_size", 0)
        vocab = f"{vocab:,}" if isinstance(vocab, int) else str(vocab)
        text += (f". **Tokenizer: synthetic, generated** ({md_text(tok.get('type'))}, {md_text(vocab)} words "
                 f"{md_text(tok.get('words'))}, {md_text(tok.get('pre_tokenizer'))}, "
                 f"{md_text(tok.get('special_tokens_added'))} special tokens added): no model hub was reachable")
    command = _listed(sv.get("server_command"))
    flag = "--max-num-batched-tokens"
    server_budget = (md_text(command[command.index(flag) + 1]) if flag in command[:-1] else "the server's default")
    text += (f"; harness clients started {md_text(run['closed_loop_start'])} (bench serve's start together); "
             f"tokens per scheduler step: harness {_budget(run['token_budget'])}, server {server_budget}")
    match = sv.get("server_tokens_match_workload")
    if match is not None:
        text += ("; the server counted exactly the workload's prompt and output tokens per request" if match else
                 "; ⚠ the server's token counts per request differ from the workload's")
    return text + "."


def _listed(value: Any) -> list[str]:
    """A recorded list as its items' text; [] for anything else."""
    return [str(x) if not isinstance(x, float) else _g(x) for x in value] if isinstance(value, list) else []


def _g(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _budget(value: Any) -> str:
    try:
        return f"{int(value)}" if pd.notna(value) else "not recorded (AsyncLLM's default for the run's vLLM version)"
    except (TypeError, ValueError):
        return md_text(value)


def price_caveats() -> Markdown:
    """The notes params/instances.yaml keeps on each instance and its prices."""
    notes = "\n".join(f"- **{i.name}** ({i.accelerator_name}): {i.notes}" for i in params.load_instances().values()
                      if i.notes)
    return Markdown(f"Notes on the instances and their prices (params/instances.yaml):\n\n{notes}")
