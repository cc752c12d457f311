"""Seeded synthetic load: prompts as random token ids, and open-loop arrival times."""

from __future__ import annotations

import numpy as np

from accelbench.config.params import Arrival, Workload

# Ids below this are often special tokens (bos/eos/pad) in Llama vocabularies: keep prompts clear of them.
FIRST_ORDINARY_TOKEN_ID = 10


def rng_for(seed: int, *keys: int) -> np.random.Generator:
    """One independent, reproducible stream per (seed, level, repetition, ...)."""
    return np.random.default_rng([seed, *keys])


def make_prompts(n: int, input_tokens: int, vocab_size: int, rng: np.random.Generator) -> list[list[int]]:
    ids = rng.integers(FIRST_ORDINARY_TOKEN_ID, vocab_size, size=(n, input_tokens))
    return ids.tolist()


def output_lengths(workload: Workload, n: int, rng: np.random.Generator) -> list[int]:
    """Output tokens of n requests: uniform on [mean x (1 - r), mean x (1 + r)] for the workload's
    output_tokens_range_ratio r (vLLM's random dataset draws its lengths the same way); r = 0 fixes them."""
    mean, r = workload.output_tokens, workload.output_tokens_range_ratio
    if r == 0:
        return [mean] * n
    low, high = max(1, round(mean * (1 - r))), round(mean * (1 + r))
    return rng.integers(low, high + 1, size=n).tolist()


def arrival_offsets_s(n: int, rate_per_s: float, burstiness: float, rng: np.random.Generator,
                      arrival: Arrival = "gamma") -> np.ndarray:
    """Arrival times (s from the level's start) of n requests at a mean rate, as the workload's `arrival` says.

    poisson: exponential gaps of mean 1/rate (drawn as the gamma of shape 1, the same numbers), and
    `burstiness` must be 1. gamma: gaps gamma(shape=burstiness, scale=1/(rate*burstiness)), mean 1/rate for
    any burstiness; below 1 burstier, above 1 smoother. The default, gamma, draws whatever burstiness says.
    """
    if arrival == "poisson":
        if burstiness != 1:
            raise ValueError(f"Poisson arrivals have burstiness 1, got {burstiness}: pass arrival='gamma'")
        shape = 1.0
    elif arrival == "gamma":
        shape = burstiness
    else:
        raise ValueError(f"unknown arrival '{arrival}'; valid: poisson, gamma")
    gaps = rng.gamma(shape=shape, scale=1.0 / (rate_per_s * shape), size=n)
    return np.cumsum(gaps) - gaps[0]  # the first request goes at once
