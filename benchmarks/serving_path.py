"""Serving path: where `vllm bench serve`'s TTFT at concurrency 1 goes that the harness's does not.

One process, one run, one engine configuration, the workload's prompt and output lengths. Each variant
sends --requests requests one at a time, after warm-up requests of its own, every prompt new (no
prefix-cache hits):

  in-process             the harness: AsyncLLM in this process, token ids in, token ids out (baseline)
  in-process, gap G ms   the same, with the client waiting G ms between requests: the engine idles
                         before each prefill, as it does behind a server for one HTTP round trip
  server, token ids      vLLM's OpenAI server on loopback; a minimal streaming client in this process
                         sends each prompt as token ids (no tokenization on the server)
  server, text           the same client sends each prompt as text (the synthetic tokenizer's words)
  server, bench serve    `vllm bench serve` against the same server, as the validation runs it

For each: the client's TTFT, its first inter-token gap and the later ones, and the engine's own means
(arrival to first token, queue, prefill = scheduled to first token): RequestStateStats in process, the
server's /metrics histograms read before and after the variant. Ratios and differences are against the
in-process baseline measured in the same run.

    python benchmarks/serving_path.py --scenario cpu --workload cpu-validate --requests 6
    python benchmarks/serving_path.py --scenario h200 --workload validate-512-128 --out outputs/benchmarks/serving_path-h200
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.config import paths
from accelbench.config.params import Resolved, resolve
from accelbench.core import metrics
from accelbench.core.serve_method import ENGINE_SIDE
from accelbench.measure import serve
from accelbench.measure.engines import backend_module
from accelbench.measure.engines.vllm_engine import VllmEngine
from accelbench.measure.environment import collect_environment
from accelbench.measure.runner import Clock, closed_loop
from accelbench.measure.serve_results import bench_requests, streamed_record
from accelbench.measure.tokenizer import serve_model_dir, token_word
from accelbench.measure.workload import make_prompts, rng_for

BASELINE = "in-process"
CLIENTS = {"server, token ids": False, "server, text": True}  # the minimal client's variants: prompt as text?
BENCH_SERVE = "server, bench serve"


def gap_variant(gap_ms: float) -> str:
    return f"in-process, gap {gap_ms:g} ms"


# --- in process ---------------------------------------------------------------------------------------

async def in_process_variants(resolved: Resolved, prompts: dict[str, list[list[int]]],
                              warm: dict[str, list[list[int]]], gaps_ms: dict[str, float],
                              clock: Clock) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The harness's own closed loop at concurrency 1, once per variant in `gaps_ms` (name -> think time)."""
    engine = VllmEngine(resolved, paths.model_cache_dir(paths.OUTPUTS_DIR))
    await engine.start()
    max_tokens = resolved.workload.output_tokens
    records = []
    try:
        for name, gap_ms in gaps_ms.items():
            await closed_loop(engine, warm[name], 1, max_tokens, clock, f"warm-{name}", think_s=gap_ms / 1e3)
            measured = await closed_loop(engine, prompts[name], 1, max_tokens, clock, name, think_s=gap_ms / 1e3)
            records += [{**r, "variant": name} for r in measured]
    finally:
        engine.close()
    return records, engine.serve_kwargs()


# --- the server and a minimal streaming client ----------------------------------------------------------

def completion_body(model: str, prompt: list[int] | str, max_tokens: int) -> bytes:
    """What bench serve's OpenAI-completions client sends (random dataset, --ignore-eos, temperature 1)."""
    return json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "repetition_penalty": 1.0,
                       "logprobs": None, "stream": True, "stream_options": {"include_usage": True},
                       "ignore_eos": True, "temperature": 1.0}).encode()


def stream_request(conn: http.client.HTTPConnection, request_id: str, body: bytes, input_tokens: int,
                   max_tokens: int, clock: Clock) -> dict[str, Any]:
    """One streamed completion on a kept-alive connection, timed when each server-sent event with text
    arrives (before it is parsed)."""
    times: list[float] = []
    usage: dict[str, Any] = {}
    error = None
    submit = clock()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        error = f"HTTP {resp.status}: {resp.read()[:300]!r}"
    else:
        for line in resp:
            now = clock()
            if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("choices") and event["choices"][0].get("text"):
                times.append(now)
            usage = event.get("usage") or usage
    out = int(usage.get("completion_tokens", 0))
    if error is None and out != max_tokens:
        error = f"short output: {out} of {max_tokens} tokens"
    return streamed_record(request_id, submit, times, input_tokens, out, error)


def client_variant(server: serve.Server, model: str, name: str, prompts: list[list[int]],
                   warm: list[list[int]], as_text: bool, max_tokens: int,
                   clock: Clock) -> tuple[list[dict[str, Any]], dict[str, float]]:
    def body(prompt: list[int]) -> bytes:
        return completion_body(model, " ".join(map(token_word, prompt)) if as_text else prompt,
                               max_tokens)

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    try:
        for i, prompt in enumerate(warm):
            stream_request(conn, f"warm-{name}-{i}", body(prompt), len(prompt), max_tokens, clock)
        before = server.counters()
        records = [{**stream_request(conn, f"{name}-{i}", body(p), len(p), max_tokens, clock), "variant": name}
                   for i, p in enumerate(prompts)]
        after = server.counters()
    finally:
        conn.close()
    return records, {k: after[k] - before.get(k, 0.0) for k in after}


def bench_serve_variant(resolved: Resolved, server: serve.Server, model_dir: Path, work: Path,
                        env: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """bench serve at concurrency 1 with the validation's own command lines (warm-up run, measured run)."""
    warmup = serve.warmup_bench_args(resolved, model_dir, server.port, 1)
    args = serve.bench_args(resolved, model_dir, server.port, 1, work, "bench_serve_c1.json")
    serve.run_bench(warmup, env, work / "bench_serve_c1.log", server, what="bench serve's warm-up run")
    before = server.counters()
    serve.run_bench(args, env, work / "bench_serve_c1.log", server)
    after = server.counters()
    result = json.loads((work / "bench_serve_c1.json").read_text())
    records = bench_requests(result, 1).assign(variant="server, bench serve")
    return records.to_dict("records"), {k: after[k] - before.get(k, 0.0) for k in after}


def server_variants(resolved: Resolved, serve_kwargs: dict[str, Any], prompts: dict[str, list[list[int]]],
                    warm: dict[str, list[list[int]]], work: Path, clock: Clock,
                    records: list[dict[str, Any]], deltas: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Serve the same engine config and measure the three client variants into `records` and `deltas`
    (kept up to a failure); returns the server's command line and tokenizer facts."""
    model_dir, tokenizer = serve_model_dir(resolved, paths.OUTPUTS_DIR)
    env = {**os.environ, **backend_module(resolved.scenario.backend).engine_env(resolved)}
    port = serve.free_port()
    facts = dict(server_command=serve.server_args(serve_kwargs, model_dir, port), tokenizer=tokenizer)
    with serve.Server(facts["server_command"], env, work / "server.log", port) as server:
        server.start()
        for name, as_text in CLIENTS.items():
            recs, deltas[name] = client_variant(server, str(model_dir), name, prompts[name], warm[name], as_text,
                                                resolved.workload.output_tokens, clock)
            records += recs
        recs, deltas[BENCH_SERVE] = bench_serve_variant(resolved, server, model_dir, work, env)
        records += recs
    return facts


# --- the table --------------------------------------------------------------------------------------------

def summarize(requests: pd.DataFrame, server_deltas: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per variant: client-side figures from the raw requests, engine-side means (the harness's
    RequestStateStats, metrics.engine_means; the server's /metrics, serve_method.ENGINE_SIDE), vs the baseline."""
    rows = []
    for name, df in requests.groupby("variant", sort=False):
        ok = df[df["error"].isna()]
        first_itl = [(c[1] - c[0]) * 1e3 for c in ok["chunk_times_s"] if len(c) > 1]
        later_itl = [float(np.mean(np.diff(c[1:]))) * 1e3 for c in ok["chunk_times_s"] if len(c) > 2]
        row = dict(variant=name, requests=len(df), errors=int(df["error"].notna().sum()),
                   ttft_p50_ms=ok["ttft_ms"].median(), ttft_mean_ms=ok["ttft_ms"].mean(),
                   first_itl_mean_ms=float(np.mean(first_itl)) if first_itl else np.nan,
                   later_itl_mean_ms=float(np.mean(later_itl)) if later_itl else np.nan)
        delta = server_deltas.get(name)
        if delta is None:
            row |= metrics.engine_means(ok)
        else:
            row |= {col: 1e3 * serve.per_count(delta, key, count)
                    for col, (_, key, count) in ENGINE_SIDE.items()}
        rows.append(row)
    table = pd.DataFrame(rows).set_index("variant")
    table["outside_engine_ms"] = table["ttft_mean_ms"] - table["engine_ttft_mean_ms"]
    table["ttft_p50_ratio"] = table["ttft_p50_ms"] / table.at[BASELINE, "ttft_p50_ms"]
    table["prefill_minus_baseline_ms"] = (table["engine_prefill_mean_ms"]
                                          - table.at[BASELINE, "engine_prefill_mean_ms"])
    return table


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def gaps(text: str) -> list[float]:
    try:
        values = [float(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated milliseconds such as 6,25, got {text!r}")
    if any(g <= 0 for g in values):
        raise argparse.ArgumentTypeError(f"gaps must be > 0 ms (the baseline has none), got {text!r}")
    return values


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="cpu")
    ap.add_argument("--model")
    ap.add_argument("--workload")
    ap.add_argument("--requests", type=positive_int, default=32, help="measured requests per variant")
    ap.add_argument("--warmup", type=positive_int, default=4, help="warm-up requests before each variant")
    ap.add_argument("--gaps-ms", type=gaps, default=[6.0, 25.0], help="client waits of the in-process gap variants")
    ap.add_argument("--out", type=Path, help="folder for requests.parquet, summary.json and the server's logs")
    args = ap.parse_args()
    resolved = resolve(args.scenario, args.model, args.workload)  # bad names fail here, naming what is valid
    backend_module(resolved.scenario.backend).check_host(resolved)  # and a backend this host lacks
    w = resolved.workload
    # bench serve takes its request and warm-up counts from the workload
    resolved = resolved.model_copy(update={"workload": w.model_copy(update={
        "min_requests_per_level": args.requests, "requests_per_worker": 1, "warmup_requests": args.warmup})})
    in_process = {BASELINE: 0.0} | {gap_variant(g): g for g in args.gaps_ms}
    names = [*in_process, *CLIENTS]
    # every prompt new: prefix caching is on, and a repeated prompt would skip its prefill
    prompts = {n: make_prompts(args.requests, w.input_tokens, resolved.model.vocab_size, rng_for(w.seed, 9000, k))
               for k, n in enumerate(names)}
    warm = {n: make_prompts(args.warmup, w.input_tokens, resolved.model.vocab_size, rng_for(w.seed, 9100, k))
            for k, n in enumerate(names)}
    out = args.out or Path(tempfile.mkdtemp(prefix="accelbench-serving-path-"))
    out.mkdir(parents=True, exist_ok=True)
    cache = paths.model_cache_dir(paths.OUTPUTS_DIR).parent
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="serving-path-", dir=cache))
    clock = Clock()

    records, serve_kwargs = asyncio.run(in_process_variants(resolved, prompts, warm, in_process, clock))
    gc.collect()  # one engine at a time: drop what the in-process one left before the server takes the GPU
    deltas: dict[str, dict[str, float]] = {}
    facts: dict[str, Any] = {}
    error = None
    try:
        facts = server_variants(resolved, serve_kwargs, prompts, warm, work, clock, records, deltas)
    except Exception as e:  # what was measured before is still written, and the summary says what failed
        error = f"{type(e).__name__}: {e}"
    requests = metrics.request_table(records)
    table = summarize(requests, deltas)

    print(f"scenario {resolved.scenario.name} ({resolved.model.name}), {w.input_tokens} in / {w.output_tokens} "
          f"out, concurrency 1, {args.requests} requests per variant")
    cols = ["ttft_p50_ms", "ttft_p50_ratio", "outside_engine_ms", "engine_ttft_mean_ms", "engine_queue_mean_ms",
            "engine_prefill_mean_ms", "prefill_minus_baseline_ms", "first_itl_mean_ms", "later_itl_mean_ms",
            "errors"]
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.float_format", "{:.2f}".format):
        print(table[cols])
    for f in ("server.log", "bench_serve_c1.json", "bench_serve_c1.log"):
        if (work / f).exists():
            shutil.copy(work / f, out / f)
    requests.to_parquet(out / "requests.parquet")
    summary = dict(scenario=resolved.scenario.name, model=resolved.model.name, workload=w.name,
                   input_tokens=w.input_tokens, output_tokens=w.output_tokens, requests_per_variant=args.requests,
                   warmup_per_variant=args.warmup, gaps_ms=args.gaps_ms, status="failed" if error else "completed",
                   error=error, engine_kwargs=serve_kwargs, **facts, server_metrics_deltas=deltas,
                   command=sys.argv, table=table.reset_index().to_dict("records"),
                   environment=collect_environment())
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"raw requests, summary and logs: {out}")
    shutil.rmtree(work, ignore_errors=True)
    if error:
        print(f"the server variants failed, the variants above were measured before it: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
