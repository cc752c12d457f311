"""Harness overhead: the in-process harness against vLLM's offline LLM.generate on the same prompts.

One process, one run: batches of N prompts (N = the concurrency) go through `LLM.generate` (all at once),
then through the harness's closed loop at concurrency N on AsyncLLM, each timed --repeats times after a
warm-up pass. Every pass, warm-up included, sends prompts of its own (fresh token ids): vLLM's prefix
cache is on by default and would serve a repeated prompt's prefill from cache. Both sides get the same
sequence of prompt sets, each engine sees each set once. Prints the median output throughputs and their
ratio, plus the TTFT cross-check at concurrency 1 (harness TTFT vs vLLM's own first_token_latency).
Writes the figures as JSON with --out.

    python benchmarks/harness_overhead.py --scenario cpu
    python benchmarks/harness_overhead.py --scenario h200 --concurrency 128 --out bench.json
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from accelbench.config.params import resolve
from accelbench.core import metrics
from accelbench.measure.engines import backend_module
from accelbench.measure.engines.vllm_engine import VllmEngine, sampling_params
from accelbench.measure.environment import collect_environment
from accelbench.measure.runner import Clock, closed_loop
from accelbench.measure.workload import make_prompts, rng_for


def offline_tok_per_s(engine: VllmEngine, warm: list[list[int]], passes: list[list[list[int]]],
                      max_tokens: int) -> float:
    from vllm import LLM
    llm = LLM(**engine.kwargs)
    params = sampling_params(max_tokens, stream=False)  # the harness's requests, whole outputs at once
    llm.generate([{"prompt_token_ids": p} for p in warm], params, use_tqdm=False)  # the batch shape, compiled
    rates = []
    for prompts in passes:
        t = time.perf_counter()
        outs = llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        rates.append(sum(len(o.outputs[0].token_ids) for o in outs) / (time.perf_counter() - t))
    llm.llm_engine.engine_core.shutdown()
    del llm
    gc.collect()
    return float(np.median(rates))


async def harness(engine: VllmEngine, warm: list[list[int]], passes: list[list[list[int]]],
                  single: list[list[int]], max_tokens: int) -> tuple[float, float]:
    await engine.start()
    clock = Clock()
    await closed_loop(engine, warm, len(warm), max_tokens, clock, "warm")
    rates = []
    for i, prompts in enumerate(passes):
        records = await closed_loop(engine, prompts, len(prompts), max_tokens, clock, f"bench{i}")
        span = max(r["end_s"] for r in records) - min(r["submit_s"] for r in records)
        rates.append(sum(r["output_tokens"] for r in records) / span)
    await closed_loop(engine, single[:2], 1, max_tokens, clock, "warm1")
    one = metrics.request_table(await closed_loop(engine, single[2:], 1, max_tokens, clock, "one"))
    diff_ms = (one["ttft_ms"] - one["engine_first_token_latency_s"] * 1e3).abs()
    engine.close()
    return float(np.median(rates)), float(np.median(diff_ms))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="cpu")
    ap.add_argument("--model")
    ap.add_argument("--workload")
    ap.add_argument("--concurrency", type=int, help="prompts in the batch (default: the workload's largest level)")
    ap.add_argument("--repeats", type=int, default=5, help="timed passes per side; medians are compared")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    resolved = resolve(args.scenario, args.model, args.workload)  # bad names fail here, naming what is valid
    backend_module(resolved.scenario.backend).check_host(resolved)  # and a backend this host lacks
    w = resolved.workload
    n = args.concurrency or max(w.concurrency_levels)
    vocab = resolved.model.vocab_size
    passes = [make_prompts(n, w.input_tokens, vocab, rng_for(w.seed, 1, i)) for i in range(args.repeats)]
    warm = make_prompts(n, w.input_tokens, vocab, rng_for(w.seed, 2))
    single = make_prompts(10, w.input_tokens, vocab, rng_for(w.seed, 3))
    engine = VllmEngine(resolved, Path(tempfile.mkdtemp(prefix="accelbench-bench-")))
    offline = offline_tok_per_s(engine, warm, passes, w.output_tokens)
    ours, ttft_diff = asyncio.run(harness(engine, warm, passes, single, w.output_tokens))
    result = {
        "scenario": resolved.scenario.name, "model": resolved.model.name, "concurrency": n, "repeats": args.repeats,
        "input_tokens": w.input_tokens, "output_tokens": w.output_tokens,
        "prompts": "fresh token ids in every pass, the same sets on both sides", "offline_output_tok_per_s": offline, "harness_output_tok_per_s": ours, "ratio": ours / offline,
        "ttft_engine_absdiff_p50_ms_at_c1": ttft_diff, "environment": collect_environment(),
    }
    print(f"scenario {result['scenario']} ({result['model']}), {n} prompts of {w.input_tokens} in / "
          f"{w.output_tokens} out")
    print(f"  offline LLM.generate  {offline:10.1f} output tok/s")
    print(f"  harness (c={n:<4d})     {ours:10.1f} output tok/s")
    print(f"  ratio harness/offline {ours / offline:10.3f}")
    print(f"  median |harness TTFT - engine first_token_latency| at c=1: {ttft_diff:.3f} ms")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
