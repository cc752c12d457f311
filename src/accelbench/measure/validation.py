"""Cross-validation against vLLM's own `vllm bench serve`, after the in-process sweep: the same engine behind
vLLM's OpenAI-compatible server on loopback, bench serve at each concurrency level, and what the run folder
keeps of it (serve_levels, serve_requests, the logs and JSON, the manifest's "serve_validation" entry).
The comparison with the harness is analysis.validation's.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.config import paths
from accelbench.config.params import Resolved
from accelbench.core.serve_method import ENGINE_SIDE, METHODS_TEXT, SERVER_MODULE
from accelbench.errors import AccelbenchError
from accelbench.measure import serve
from accelbench.measure.engines import backend_module
from accelbench.measure.serve_results import bench_requests, levels_from_results
from accelbench.measure.tokenizer import serve_model_dir


@dataclass
class ServeValidation:
    """What a validation run hands back to the study: tables, files to move into the run folder, facts."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # name -> frame, saved as <name>.parquet
    files: dict[str, Path] = field(default_factory=dict)  # name in the run folder -> where it is now
    manifest: dict[str, Any] = field(default_factory=dict)  # the manifest's "serve_validation" entry
    error: str | None = None


def validate_with_serve(resolved: Resolved, engine_kwargs: dict[str, Any], outputs_dir: Path | str,
                        on_progress: Callable[[str], None] = print, skip_reason: str | None = None,
                        start_timeout_s: float = serve.SERVER_START_TIMEOUT_S) -> ServeValidation:
    """Serve the same engine config, run bench serve at each concurrency level, return serve_levels.

    Call it after the in-process engine is shut down (one engine at a time). It never raises for a failed
    validation: the error is returned (and recorded under the manifest's "serve_validation"), with every
    level measured before it; the server's process group is killed whatever happens. With `skip_reason`
    nothing runs and the manifest entry says why.
    """
    if skip_reason:
        return ServeValidation(manifest=dict(source=serve.SOURCE, status="skipped", error=None,
                                             reason=skip_reason))
    out = ServeValidation()
    out.manifest = dict(source=serve.SOURCE, status="failed", error=None, levels=[], bench_commands=[],
                        server_module=SERVER_MODULE, bench_driver=serve.BENCH_DRIVER, methods=METHODS_TEXT,
                        differences_from_in_process=["skip_tokenizer_init dropped: the server tokenizes text "
                                                     "prompts with the synthetic tokenizer"])
    results: dict[float, dict[str, Any]] = {}
    checks: dict[float, dict[str, float]] = {}
    # failures are recorded, never raised: the in-process measurements must still be saved, and the levels
    # bench serve measured before a failure are kept
    try:
        measure(resolved, engine_kwargs, Path(outputs_dir), out, results, checks, on_progress, start_timeout_s)
        out.manifest["status"] = "completed"
    except Exception as e:
        record_failure(out, e, on_progress)
    try:
        tabulate(resolved, out, results, checks)
    except Exception as e:
        record_failure(out, e, on_progress)
    out.files = {k: v for k, v in out.files.items() if Path(v).exists()}
    out.manifest["files"] = sorted(out.files)
    return out


def record_failure(out: ServeValidation, e: Exception, on_progress: Callable[[str], None]) -> None:
    text = f"{type(e).__name__}: {e}"
    out.error = f"{out.error}; then {text}" if out.error else text
    out.manifest["status"], out.manifest["error"] = "failed", out.error
    on_progress(f"validation failed: {text.splitlines()[0]}")


def measure(resolved: Resolved, engine_kwargs: dict[str, Any], outputs_dir: Path, out: ServeValidation,
            results: dict[float, dict[str, Any]], checks: dict[float, dict[str, float]],
            on_progress: Callable[[str], None], start_timeout_s: float) -> None:
    """Start the server, run bench serve per level into `results` (and server counters into `checks`)."""
    info = out.manifest
    levels = [float(c) for c in resolved.workload.concurrency_levels]  # params.Workload: never empty here
    cache = Path(paths.model_cache_dir(outputs_dir)).parent
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="serve-", dir=cache))  # same filesystem as results: files are moved
    env = {**os.environ, **backend_module(resolved.scenario.backend).engine_env(resolved)}
    model_dir, info["tokenizer"] = serve_model_dir(resolved, outputs_dir)
    info["model_dir"] = str(model_dir)
    gc.collect()  # drop what the in-process engine left before a second engine takes the memory
    port = serve.free_port()
    command = serve.server_args(engine_kwargs, model_dir, port)
    with serve.Server(command, env, work / "serve_server.log", port) as server:
        out.files["serve_server.log"] = server.log_path
        info["server_command"] = server.args
        on_progress(f"validation: starting vLLM's OpenAI server on 127.0.0.1:{port}")
        server.start(start_timeout_s)
        info["server_start_s"] = server.start_s
        for c in levels:
            name = f"serve_c{c:g}"
            warmup = serve.warmup_bench_args(resolved, model_dir, port, int(c))
            args = serve.bench_args(resolved, model_dir, port, int(c), work, f"{name}.json")
            info["bench_commands"] += [a[:2] + ["<BENCH_DRIVER>"] + a[3:] for a in (warmup, args)]
            out.files[f"{name}.log"] = work / f"{name}.log"  # the warm-up's output, then the measured run's
            on_progress(f"validation: bench serve at concurrency {c:g}: "
                        f"{serve.warmup_requests(resolved, int(c))} warm-up requests, then "
                        f"{resolved.workload.requests_for_concurrency(int(c))} measured")
            serve.run_bench(warmup, env, work / f"{name}.log", server,
                            what=f"bench serve's warm-up run at concurrency {c:g}")
            before = server.counters()
            serve.run_bench(args, env, work / f"{name}.log", server)
            after = server.counters()
            checks[c] = {k: after[k] - before.get(k, 0.0) for k in after}
            path = work / f"{name}.json"
            if not path.exists():
                raise AccelbenchError(f"bench serve finished but wrote no {path.name}; its log ends:\n"
                                      f"{serve.log_tail(work / f'{name}.log')}")
            out.files[path.name] = path
            results[c] = json.loads(path.read_text())
            info["levels"].append(c)


def tabulate(resolved: Resolved, out: ServeValidation, results: dict[float, dict[str, Any]],
             checks: dict[float, dict[str, float]]) -> None:
    """serve_levels (with the server-side token counts per request) and serve_requests from the results."""
    if not results:
        return
    table = levels_from_results(results)
    table["server_requests"] = [checks.get(c, {}).get("requests", np.nan) for c in table["level_value"]]
    for col, key in (("server_prompt_tokens_per_request", "prompt_tokens"),
                     ("server_output_tokens_per_request", "generation_tokens")):
        table[col] = [serve.per_request(checks.get(c, {}), key) for c in table["level_value"]]
    # the measured requests alone: the warm-up ran as its own bench serve before the counters were read
    for column, key, count in ENGINE_SIDE.values():
        table[column] = [1e3 * serve.per_count(checks.get(c, {}), key, count) for c in table["level_value"]]
    # every request the server counted should have the workload's shape
    w = resolved.workload
    out.manifest["server_tokens_match_workload"] = bool(
        (table["server_prompt_tokens_per_request"] == w.input_tokens).all()
        and (table["server_output_tokens_per_request"] == w.output_tokens).all())
    out.tables["serve_levels"] = table
    requests = [r for r in (bench_requests(res, c) for c, res in sorted(results.items())) if not r.empty]
    if requests:
        out.tables["serve_requests"] = pd.concat(requests, ignore_index=True)
