"""The bounds params/ values must fall within, each with why: limits of what a run can do, well above every
committed file's values, so a typo or a hostile file fails when it loads, not after the engine started."""

DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}(-[0-9]{2})?$"  # YYYY-MM or YYYY-MM-DD: when a figure was read
MAX_ACCELERATORS = 64  # accelerators per instance / per run: the largest here has 16 (trn2.48xlarge chips)
MAX_TOKENS = 1 << 24  # tokens in one sequence: above every model's context (Llama 4 Scout: 10,485,760)
MAX_POSITIONS = 1 << 30  # a model's max_position_embeddings, as its config states it
MIN_VOCAB_SIZE = 11  # prompt token ids are drawn from [10, vocab_size) (measure/workload.py FIRST_ORDINARY_TOKEN_ID)
MAX_VOCAB_SIZE = 1 << 24
# Closed-loop clients, or requests in flight: one asyncio task each, while vLLM schedules at most
# max_num_seqs at once (256 in every scenario here), so far more clients only measure a queue.
MAX_CONCURRENCY = 4096
MAX_RATE_PER_S = 10_000.0  # offered load; ~40x the fastest rate measured here
MAX_LEVELS = 64  # concurrency levels, or rates, in one workload
MAX_REQUESTS_PER_LEVEL = 100_000
# The runner holds a level's prompts as Python lists of token ids (~36 bytes a token): 2**26 tokens is ~2.4 GB.
MAX_PROMPT_TOKENS_PER_LEVEL = 1 << 26
MAX_LEVEL_S = 86_400.0  # a level (its requests at its rate, or min_level_duration_s) ends within a day
MAX_REPETITIONS = 100
MAX_WARMUP_REQUESTS = 10_000
# Seeds reach `vllm bench serve --seed` as seed + concurrency + 7919 (measure/serve.py), which seeds
# numpy's legacy RandomState (below 2**32): a seed below 2**31 always fits.
MAX_SEED = (1 << 31) - 1
# Gamma shape of open-loop gaps: 0.01 is a coefficient of variation of 10 (extremely bursty), 1000 of 0.03
# (nearly regular); beyond these the draws underflow or overflow rather than describe traffic.
MIN_BURSTINESS, MAX_BURSTINESS = 0.01, 1000.0
MAX_FIGURE = 1e9  # a sourced figure (GB, GB/s, TFLOP/s, USD per hour): far above any instance's
MAX_LATENCY_MS = 86_400_000.0  # an SLO limit: a day
MAX_PARAMS_B = 100_000.0  # parameters, billions: 100 T
MAX_NUM_SEQS = 16_384
MAX_KV_CACHE_GB = 1 << 16

