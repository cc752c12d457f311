"""The validation against vLLM's own server and `vllm bench serve`, as both of its sides read it: the method
text the run's manifest records and the report quotes, and the engine-side quantities the comparison pairs
(the harness's RequestStateStats against the server's /metrics histograms)."""

from __future__ import annotations

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# the engine-side rows of the comparison: harness column (metrics.ENGINE_MEANS) -> serve_levels column and
# the server histogram's (sum, count) keys (measure.serve.COUNTERS)
ENGINE_SIDE = {"engine_ttft_mean_ms": ("server_engine_ttft_mean_ms", "ttft_sum_s", "ttft_count"),
               "engine_queue_mean_ms": ("server_engine_queue_mean_ms", "queue_sum_s", "queue_count"),
               "engine_prefill_mean_ms": ("server_engine_prefill_mean_ms", "prefill_sum_s", "prefill_count")}

METHODS_TEXT = (
    "Validation against vLLM's own client. After the in-process sweep, and after its engine is shut down,"
    " the same model configuration is served by vLLM's OpenAI-compatible server (python -m "
    f"{SERVER_MODULE}) on 127.0.0.1 with the same engine arguments (dummy weights, "
    "dtype, max_model_len, tensor parallelism, memory share, max_num_seqs, seed, and the per-step token "
    "budget max_num_batched_tokens the in-process engine ran with, passed explicitly because vLLM's "
    "default differs by entry point: 2048 for AsyncLLM, 8192 for the OpenAI server on GPUs), and `vllm "
    "bench serve` (random dataset, /v1/completions, streaming, ignore_eos, request rate inf) measures "
    "each concurrency level with --max-concurrency equal to the level and as many prompts as the harness "
    "sent, after a warm-up run of as many requests as the harness's warm-up (a separate bench serve run "
    "at the same concurrency, its prompts from another seed, so no measured prompt is a prefix-cache "
    "hit). No model hub is reachable, so a synthetic word-level tokenizer is generated for the model's "
    "vocabulary (token i is the word 't<i>', words split on whitespace, no special tokens added), so "
    "every prompt of N random ids decodes to text that encodes back to exactly N ids. What still differs:"
    " (1) the serving path: the client sends text over HTTP, the API server process tokenizes it, "
    "detokenizes every output token and streams JSON server-sent events back, while the harness hands "
    "token ids to AsyncLLM in its own process and receives ids, with detokenization off; (2) the client: "
    "bench serve is a separate process that times requests with aiohttp, the harness times them in the "
    "engine's process; (3) prompts: bench serve's random dataset uses runs of consecutive token ids, the "
    "harness uniformly random ids (no effect on the work with dummy weights); (4) definitions: the "
    "comparison holds both sides to bench serve's: throughput is all output tokens from the first request"
    " sent to the last token, ramp-up and drain included, and percentiles cover every request; the "
    "harness's side is computed from its raw requests (elsewhere in this report the harness uses its "
    "steady window, first completion to last submission). The row steady_output_tok_per_s holds both to "
    "that steady window instead, bench serve's recomputed from its own per-request timings. With clients "
    "that start together and fixed output lengths, requests move in waves, and a window bounded by single"
    " requests can start and end at different phases of a wave; (5) repetitions: bench serve runs each "
    "level once, the harness's figures are medians over its repetitions. The rows engine_*_mean_ms "
    "compare what each side's vLLM engine measures itself: the harness's RequestStateStats against the "
    "server's own /metrics histograms read before and after the measured run (its requests only). "
    "engine_ttft_mean_ms runs from the request's arrival to its first token; on the server, arrival is "
    "stamped before the prompt text is tokenized. engine_queue_mean_ms is the wait for the scheduler, "
    "engine_prefill_mean_ms the time from being scheduled to the first token, the GPU's part. Where the "
    "prefill rows agree and bench serve's TTFT does not, the difference lies in the serving path, outside"
    " the GPU's work. Ratios are harness / serve: TTFT and ITL ratios below 1 and throughput ratios above"
    " 1 are the cost of the HTTP path. On the cpu scenario the API server, its engine core and the client"
    " share a few cores with the engine's busy threads: streamed tokens often reach the client in one "
    "burst at the end of a request (TTFT close to E2E, ITL near 0), so there the validation checks the "
    "mechanics, not the size of the overhead."
)
