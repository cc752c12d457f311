"""Property-based fuzz of the params loader (issue 17): for each kind of params file, generated documents are
either accepted, and then valid by the rules written out below independently of the loader, or refused with
AccelbenchError naming the file and the field (or, for text that is not YAML, the line) - never another
exception, never a hang.

The rules here restate each field's domain from the schema's descriptions and docs as numbers, on purpose
not imported from accelbench.config.bounds: a bound that moves there without moving here fails a test.
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accelbench.config import params, paths, reference
from accelbench.errors import AccelbenchError

EXAMPLES = 1000
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SECONDS_PER_LOAD = 5  # a load that takes longer is a hang

# --- the independent rules ---------------------------------------------------------------------------

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
DATE = re.compile(r"[0-9]{4}-[0-9]{2}(-[0-9]{2})?")
FIGURE_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
QUANTIZATION = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def is_name(v: Any) -> bool:
    return isinstance(v, str) and NAME.fullmatch(v) is not None and ".." not in v


def is_int(v: Any, low: int, high: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def is_number(v: Any, low: float, high: float, low_open: bool = False) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        x = float(v)
    except OverflowError:
        return False
    return math.isfinite(x) and (low < x if low_open else low <= x) and x <= high


def one_of(*options: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in options


def is_str(v: Any, min_len: int = 0) -> bool:
    return isinstance(v, str) and len(v) >= min_len


def optional(rule: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or rule(v)


def is_list(v: Any, rule: Callable[[Any], bool], min_len: int = 0, max_len: int = 10**9) -> bool:
    return isinstance(v, list) and min_len <= len(v) <= max_len and all(rule(x) for x in v)


def plain(v: Any, depth: int = 0) -> bool:
    """JSON-holdable: string keys, finite floats, 64-bit ints."""
    if depth > 16:
        return False
    if v is None or isinstance(v, (bool, str)):
        return True
    if isinstance(v, int):
        return -(2**63) <= v < 2**63
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and plain(x, depth + 1) for k, x in v.items())
    return False


def fields_ok(doc: dict[str, Any], rules: dict[str, tuple[bool, Callable[[Any], bool]]]) -> bool:
    """Every key known, every required one present, every value by its rule."""
    if set(doc) - set(rules):
        return False
    return all((key in doc or not required) and (key not in doc or rule(doc[key]))
               for key, (required, rule) in rules.items())


SOURCED = {"value": (True, lambda v: is_number(v, 0, 1e9, low_open=True)),
           "source": (True, lambda v: is_str(v, 3)),
           "date": (True, lambda v: isinstance(v, str) and DATE.fullmatch(v) is not None)}


def sourced_ok(v: Any) -> bool:
    return isinstance(v, dict) and fields_ok(v, SOURCED)


PRICES = {k: (False, optional(sourced_ok)) for k in ("on_demand_usd_per_hour", "spot_usd_per_hour",
                                                     "reserved_1y_usd_per_hour", "reserved_3y_usd_per_hour")}


def instance_ok(key: Any, entry: Any) -> bool:
    rules = {"name": (False, lambda v: v == key), "family": (True, lambda v: v in ("cpu", "cuda", "neuron")),
             "accelerator_name": (True, is_str), "accelerator_count": (True, lambda v: is_int(v, 1, 64)),
             "memory_per_accelerator_gb": (True, sourced_ok),
             "memory_bandwidth_per_accelerator_gb_s": (True, sourced_ok),
             "peak_dense_bf16_tflop_s": (True, sourced_ok), "interconnect": (True, is_str),
             "prices": (False, lambda v: isinstance(v, dict) and fields_ok(v, PRICES)), "notes": (False, is_str)}
    return is_name(key) and isinstance(entry, dict) and fields_ok(entry, rules)


def hf_config_ok(v: Any) -> bool:
    if not isinstance(v, dict) or not plain(v):
        return False
    text = v.get("text_config", v)
    return (isinstance(text, dict) and is_int(text.get("vocab_size"), 11, 2**24)
            and is_int(text.get("max_position_embeddings"), 16, 2**30))


def model_ok(doc: dict[str, Any]) -> bool:
    params_b = lambda v: is_number(v, 0, 1e5, low_open=True)  # noqa: E731
    rules = {"name": (False, lambda v: v == "m"), "display_name": (True, is_str),
             "total_params_b": (True, params_b), "active_params_b": (True, params_b), "source": (True, is_str),
             "source_date": (True, lambda v: isinstance(v, str) and DATE.fullmatch(v) is not None),
             "hf_config": (True, hf_config_ok), "notes": (False, is_str)}
    return fields_ok(doc, rules) and doc["active_params_b"] <= doc["total_params_b"]


WORKLOAD_DEFAULTS = dict(output_tokens_range_ratio=0.0, request_rates_per_s=[], arrival="poisson", burstiness=1.0,
                         max_concurrency=None, requests_per_worker=4, min_requests_per_level=8,
                         min_level_duration_s=0.0, warmup_requests=2, repetitions=3, max_repetitions=None,
                         validate_with_serve=False)


def workload_ok(doc: dict[str, Any]) -> bool:
    rules = {"name": (False, lambda v: v == "w"), "description": (False, is_str),
             "input_tokens": (True, lambda v: is_int(v, 1, 2**24)), "output_tokens": (True, lambda v: is_int(v, 1, 2**24)),
             "output_tokens_range_ratio": (False, lambda v: is_number(v, 0, 1) and v != 1),
             "concurrency_levels": (True, lambda v: is_list(v, lambda c: is_int(c, 1, 4096), max_len=64)),
             "request_rates_per_s": (False, lambda v: is_list(v, lambda r: is_number(r, 0, 1e4, low_open=True),
                                                              max_len=64)),
             "arrival": (False, lambda v: v in ("poisson", "gamma")),
             "burstiness": (False, lambda v: is_number(v, 0.01, 1000)),
             "max_concurrency": (False, optional(lambda v: is_int(v, 1, 4096))),
             "requests_per_worker": (False, lambda v: is_int(v, 1, 100_000)),
             "min_requests_per_level": (False, lambda v: is_int(v, 1, 100_000)),
             "min_level_duration_s": (False, lambda v: is_number(v, 0, 86_400)),
             "warmup_requests": (False, lambda v: is_int(v, 0, 10_000)),
             "rate_warmup_concurrency": (False, optional(lambda v: is_int(v, 1, 4096))),
             "closed_loop_start": (False, lambda v: v in ("staggered", "simultaneous")),
             "repetitions": (False, lambda v: is_int(v, 1, 100)),
             "max_repetitions": (False, optional(lambda v: is_int(v, 1, 100))),
             "target_half_width_pct": (False, lambda v: is_number(v, 0, 100, low_open=True)),
             "seed": (False, lambda v: is_int(v, 0, 2**31 - 1)),
             "validate_with_serve": (False, lambda v: isinstance(v, bool))}
    if not fields_ok(doc, rules):
        return False
    w = {**WORKLOAD_DEFAULTS, **doc}
    if w["arrival"] == "poisson" and w["burstiness"] != 1:
        return False
    if not w["concurrency_levels"] and not w["request_rates_per_s"]:
        return False
    if w["max_repetitions"] is not None and w["max_repetitions"] < w["repetitions"]:
        return False
    if w["validate_with_serve"] and not w["concurrency_levels"]:
        return False
    tokens = w["input_tokens"]
    if w["warmup_requests"] * tokens > 2**26:
        return False
    for c in w["concurrency_levels"]:
        n = max(w["min_requests_per_level"], w["requests_per_worker"] * c)
        if n > 100_000 or n * tokens > 2**26:
            return False
    for r in w["request_rates_per_s"]:
        n = max(w["min_requests_per_level"], int(round(r * w["min_level_duration_s"])))
        if n > 100_000 or n * tokens > 2**26 or n / r > 86_400:
            return False
    return True


TEXT_DERIVED = {"batch_size", "seq_len", "tp_degree"}  # a few of NxDI's keys the scenario's vLLM settings set
VISION_DERIVED = {"logical_nc_config", "torch_dtype"}


def buckets_ok(v: Any) -> bool:
    return v is None or (is_list(v, lambda b: is_int(b, 1, 2**24), 1, 64) and all(a < b for a, b in zip(v, v[1:])))


def neuron_ok(v: Any) -> bool:
    rules = {"logical_nc_config": (False, optional(lambda x: is_int(x, 1, 8))),
             "enable_bucketing": (False, lambda x: isinstance(x, bool)),
             "context_encoding_buckets": (False, buckets_ok), "token_generation_buckets": (False, buckets_ok),
             "extra_neuron_config": (False, lambda x: isinstance(x, dict) and plain(x) and not TEXT_DERIVED & set(x)),
             "vision_neuron_config": (False, lambda x: isinstance(x, dict) and plain(x) and not VISION_DERIVED & set(x))}
    if not isinstance(v, dict) or not fields_ok(v, rules):
        return False
    buckets = [v.get("context_encoding_buckets"), v.get("token_generation_buckets")]
    return v.get("enable_bucketing", True) or buckets == [None, None]


def scenario_ok(doc: dict[str, Any]) -> bool:
    engine_rules = {
        "tensor_parallel_size": (False, lambda v: is_int(v, 1, 64)),
        "dtype": (False, lambda v: v in ("bfloat16", "float16", "float32", "auto")),
        "quantization": (False, optional(lambda v: isinstance(v, str) and QUANTIZATION.fullmatch(v) is not None)),
        "max_model_len": (False, lambda v: is_int(v, 16, 2**24)),
        "gpu_memory_utilization": (False, lambda v: is_number(v, 0, 1, low_open=True)),
        "cpu_kvcache_space_gb": (False, optional(lambda v: is_int(v, 1, 2**16))),
        "max_num_seqs": (False, lambda v: is_int(v, 1, 16_384)),
        "max_num_batched_tokens": (False, optional(lambda v: is_int(v, 1, 2**24))),
        "enforce_eager": (False, lambda v: isinstance(v, bool)),
        "neuron": (False, optional(neuron_ok))}
    rules = {"name": (False, lambda v: v == "s"), "description": (False, is_str), "instance": (True, is_name),
             "backend": (True, lambda v: v in ("cpu", "cuda", "neuron")),
             "accelerators_used": (False, lambda v: is_int(v, 1, 64)), "model": (True, is_name),
             "workload": (True, is_name),
             "engine": (False, lambda v: isinstance(v, dict) and fields_ok(v, engine_rules))}
    if not fields_ok(doc, rules):
        return False
    engine = doc.get("engine", {})
    tp, max_len = engine.get("tensor_parallel_size", 1), engine.get("max_model_len", 2048)
    if doc.get("accelerators_used", 1) % tp:
        return False
    neuron = engine.get("neuron")
    if doc["backend"] != "neuron":
        return neuron is None
    if engine.get("dtype", "bfloat16") == "auto" or engine.get("quantization"):
        return False
    for field in ("context_encoding_buckets", "token_generation_buckets"):
        if neuron and neuron.get(field) and neuron[field][-1] > max_len:
            return False
    return True


MODELS_KNOWN = {"tiny-llama", "llama-3.1-8b"}  # the model files the SLO and reference properties see


def slo_ok(key: Any, entry: Any) -> bool:
    limit = lambda v: is_number(v, 0, 86_400_000, low_open=True)  # noqa: E731
    rules = {"name": (False, lambda v: v == key), "ttft_p99_ms": (True, limit), "tpot_p99_ms": (True, limit),
             "models": (False, lambda v: is_list(v, lambda m: is_name(m) and m in MODELS_KNOWN, max_len=256)
                        and len(set(v)) == len(v)),
             "source": (True, lambda v: is_str(v, 3))}
    return is_name(key) and isinstance(entry, dict) and fields_ok(entry, rules)


INSTANCES_KNOWN = {"local-cpu", "p5en.48xlarge"}
METRICS = {"ttft_ms", "output_tok_per_s", "price_usd_per_hour"}  # the ones generated below, all valid
ARITY = {"ratio_pct": 2, "reduction_pct": 2, "increase_pct": 2, "ratio_x": 2, "difference": 2,
         "scaling_advantage_x": 4}


def reference_ok(doc: dict[str, Any]) -> bool:
    figure_rules = {
        "id": (True, lambda v: isinstance(v, str) and FIGURE_ID.fullmatch(v) is not None),
        "metric": (True, one_of(*METRICS)), "value": (True, lambda v: is_number(v, -math.inf, math.inf)),
        "hardware_label": (False, is_str),
        "instance": (False, optional(lambda v: is_name(v) and v in INSTANCES_KNOWN)),
        "accelerators": (False, optional(lambda v: is_int(v, 1, 64))),
        "comparable_instance": (False, optional(lambda v: is_name(v) and v in INSTANCES_KNOWN)),
        "model": (False, optional(lambda v: is_name(v) and v in MODELS_KNOWN)),
        "concurrency": (False, optional(lambda v: is_int(v, 1, 4096))),
        "section": (True, lambda v: is_str(v, 2)), "quote": (False, is_str), "note": (False, is_str)}
    relation_rules = {
        "id": (True, lambda v: isinstance(v, str) and FIGURE_ID.fullmatch(v) is not None),
        "claim": (True, lambda v: is_str(v, 3)), "kind": (True, one_of(*ARITY, "product", "quotient")),
        "terms": (True, lambda v: is_list(v, is_str, 1, 16)),
        "factor": (False, lambda v: is_number(v, -math.inf, math.inf)),
        "value": (True, lambda v: is_number(v, -math.inf, math.inf)),
        "tolerance_pct": (False, lambda v: is_number(v, 0, 100)),
        "section": (True, lambda v: is_str(v, 2)), "note": (False, is_str)}
    date = lambda v: isinstance(v, str) and DATE.fullmatch(v) is not None  # noqa: E731
    rules = {"name": (False, lambda v: v == "r"), "document": (True, is_str), "title": (True, is_str),
             "published": (True, is_str), "read_date": (True, date), "kind": (True, lambda v: v == "projection"),
             "input_tokens": (False, optional(lambda v: is_int(v, 1, 2**24))),
             "output_tokens": (False, optional(lambda v: is_int(v, 1, 2**24))),
             "precision": (False, is_str), "stated_formula": (False, is_str), "notes": (False, is_str),
             "figures": (True, lambda v: is_list(v, lambda f: isinstance(f, dict) and fields_ok(f, figure_rules))),
             "relations": (False, lambda v: is_list(v, lambda r: isinstance(r, dict) and fields_ok(r, relation_rules)))}
    if not fields_ok(doc, rules):
        return False
    ids = [f["id"] for f in doc["figures"]] + [r["id"] for r in doc.get("relations", [])]
    if len(set(ids)) != len(ids):
        return False
    figure_ids = {f["id"] for f in doc["figures"]}
    return all(set(r["terms"]) <= figure_ids and (r["kind"] not in ARITY or len(r["terms"]) == ARITY[r["kind"]])
               for r in doc.get("relations", []))


# --- the generated documents -----------------------------------------------------------------------

# Values of the wrong type, sign, size or spelling for most fields: drawn from a fixed pool (one draw each,
# which keeps 1,000 documents per kind fast), plus random text and floats now and then.
ODD_POOL = [
    None, True, False, 0, 1, -1, 2, 11, 16, 64, 100, 4096, 4097, 2**24, 2**24 + 1, 2**31 - 1, 2**31, 2**63, 2**70,
    -(2**70), 10**9, 0.0, -0.0, 0.5, 1.0, 2.5, 1e-300, 1e300, float("nan"), float("inf"), -float("inf"),
    "64", "1.5", "", "ab", "x y", "../x", "/etc/passwd", "a" * 70, "2026-11-30", "2026-1-3", "cpu", "cuda",
    "neuron", "gamma", "poisson", "projection", "fp8", "auto", "tiny-llama", "local-cpu", "ttft_ms", "ratio_x",
    "0.5", "True", "null", "~", "é", "\x00", "a\nb", [], [1], [0, 5000], [-3], [1.5, float("nan")], ["a"], [None],
    {}, {"value": 1}, {"a": 1}, {"batch_size": 2}, {"source": "abc", "date": "2024-11", "value": 3},
]
ODD = st.one_of(st.sampled_from(ODD_POOL), st.sampled_from(ODD_POOL), st.sampled_from(ODD_POOL),
                st.text(max_size=8), st.floats(allow_nan=True, allow_infinity=True), st.integers())


def mutated(base: dict[str, Any], field_values: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    """`base` with some fields set from their strategy (or ODD), some removed, sometimes an unknown one added."""
    keys = sorted(set(base) | set(field_values))

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        doc = dict(base)
        for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 1, 2, 3, 4]))):  # most documents: a change or two
            key, choice = draw(st.sampled_from(keys)), draw(st.integers(0, 9))
            if choice == 0:
                doc.pop(key, None)
            elif choice <= 2 or key not in field_values:
                doc[key] = draw(ODD)
            else:
                doc[key] = draw(field_values[key])
        if draw(st.integers(0, 19)) == 0:
            doc[draw(st.sampled_from(["extra", "nmae", "Name", "seeds"]))] = draw(ODD)
        return doc

    return build()


SOURCED_BASE = {"value": 141, "source": "a datasheet", "date": "2024-11"}
sourced = mutated(SOURCED_BASE, {"value": st.sampled_from([141, 0, -1, 1e9, 1e9 + 1, 0.001, float("nan")]),
                                 "date": st.sampled_from(["2024-11", "2024-11-30", "24-11", "2024-11-30x"]),
                                 "source": st.sampled_from(["ab", "abc"])})
INSTANCE_BASE = {"family": "cpu", "accelerator_name": "a CPU", "accelerator_count": 1,
                 "memory_per_accelerator_gb": SOURCED_BASE, "memory_bandwidth_per_accelerator_gb_s": SOURCED_BASE,
                 "peak_dense_bf16_tflop_s": SOURCED_BASE, "interconnect": "none"}
instance_entry = mutated(INSTANCE_BASE, {
    "name": st.sampled_from(["x", "y", "local-cpu", "../x"]), "family": st.sampled_from(["cpu", "gpu"]),
    "accelerator_count": st.sampled_from([1, 8, 64, 65, 0, "8", 8.0]), "memory_per_accelerator_gb": sourced,
    "peak_dense_bf16_tflop_s": sourced,
    "prices": st.one_of(st.fixed_dictionaries({}, optional={"on_demand_usd_per_hour": st.one_of(st.none(), sourced),
                                                            "spot_usd_per_hour": sourced}),
                        st.fixed_dictionaries({"bogus": sourced}))})
entry_keys = st.sampled_from(["x", "y", "p5.48xlarge"] * 4 + ["a..b", "-x", "a/b", "a" * 65, "..", "text"]).flatmap(
    lambda k: st.text(max_size=5) if k == "text" else st.just(k))


def entries(entry: st.SearchStrategy) -> st.SearchStrategy:
    """A mapping file: one entry, or now and then two."""
    one, two = (st.dictionaries(entry_keys, entry, min_size=n, max_size=n) for n in (1, 2))
    return st.one_of(one, one, two)


instances_doc = entries(instance_entry)

HF_BASE = {"architectures": ["LlamaForCausalLM"], "vocab_size": 4096, "max_position_embeddings": 2048,
           "hidden_size": 256}
context_values = st.sampled_from([4096, 11, 10, 16, 15, 2**24, 2**24 + 1, 2**30, 2**30 + 1, 4096.0, "4096", True])
hf_plain = mutated(HF_BASE, {"vocab_size": context_values, "max_position_embeddings": context_values,
                             "rope_scaling": st.fixed_dictionaries({"factor": st.floats(allow_nan=True)})})
hf_config = st.one_of(hf_plain, hf_plain.map(lambda c: {"architectures": ["X"], "text_config": c}),
                      hf_plain.map(lambda c: {"text_config": [c]}))
MODEL_BASE = {"display_name": "M", "total_params_b": 8.0, "active_params_b": 8.0, "source": "hf",
              "source_date": "2025-05", "hf_config": HF_BASE}
model_doc = mutated(MODEL_BASE, {"name": st.sampled_from(["m", "n"]), "hf_config": hf_config,
                                 "total_params_b": st.sampled_from([8, 0.5, 1e5, 1e5 + 1, 0]),
                                 "active_params_b": st.sampled_from([8, 9, 0.5, 1e5, 0]),
                                 "source_date": st.sampled_from(["2025-05", "2025-05-01", "May 2025"])})

counts = st.sampled_from([0, 1, 4, 8, 100, 4096, 4097, 100_000, 100_001, 10**9, -1])
WORKLOAD_BASE = {"input_tokens": 512, "output_tokens": 128, "concurrency_levels": [1, 4]}
workload_doc = mutated(WORKLOAD_BASE, {
    "name": st.sampled_from(["w", "x"]), "input_tokens": st.sampled_from([1, 512, 8192, 2**24, 2**24 + 1, 0]),
    "output_tokens": st.sampled_from([1, 128, 2**24 + 1]),
    "output_tokens_range_ratio": st.sampled_from([0, 0.25, 0.999, 1, -0.1, float("nan")]),
    "concurrency_levels": st.lists(counts, max_size=3),
    "request_rates_per_s": st.lists(st.sampled_from([1.0, 4, 0.001, 1e-6, 1e4, 1e4 + 1, 0, -1.0, float("nan"),
                                                     float("inf")]), max_size=3),
    "arrival": st.sampled_from(["poisson", "gamma", "uniform"]),
    "burstiness": st.sampled_from([1, 1.0, 0.5, 50, 0.01, 0.009, 1000, 1001, 0, float("nan")]),
    "max_concurrency": counts, "requests_per_worker": counts, "min_requests_per_level": counts,
    "min_level_duration_s": st.sampled_from([0, 2.0, 86_400, 86_401, -1, float("inf")]),
    "warmup_requests": st.sampled_from([0, 2, 10_000, 10_001, -1]), "rate_warmup_concurrency": counts,
    "closed_loop_start": st.sampled_from(["staggered", "simultaneous", "random"]),
    "repetitions": st.sampled_from([1, 3, 100, 101, 0]), "max_repetitions": st.sampled_from([None, 1, 5, 100, 101]),
    "target_half_width_pct": st.sampled_from([5, 0.1, 100, 101, 0, float("nan")]),
    "seed": st.sampled_from([0, 7, -1, 2**31 - 1, 2**31, 2**64]),
    "validate_with_serve": st.sampled_from([False, True, "yes", 1])})

buckets = st.one_of(st.none(), st.lists(st.sampled_from([0, 128, 512, 1024, 4096, 8192]), max_size=3))
neuron_block = mutated({}, {"logical_nc_config": st.sampled_from([None, 1, 2, 8, 9, 0]),
                            "enable_bucketing": st.booleans(), "context_encoding_buckets": buckets,
                            "token_generation_buckets": buckets,
                            "extra_neuron_config": st.dictionaries(st.sampled_from(["fused_qkv", "batch_size", "x"]),
                                                                   st.one_of(st.booleans(), st.floats()), max_size=2),
                            "vision_neuron_config": st.dictionaries(st.sampled_from(["logical_nc_config", "y"]),
                                                                    st.integers(), max_size=2)})
engine_block = mutated({"max_model_len": 4096}, {
    "tensor_parallel_size": st.sampled_from([1, 2, 3, 8, 64, 65, 0]),
    "dtype": st.sampled_from(["bfloat16", "auto", "int4"]), "quantization": st.sampled_from([None, "fp8", "FP8", ""]),
    "max_model_len": st.sampled_from([16, 15, 512, 4096, 2**24, 2**24 + 1]),
    "gpu_memory_utilization": st.sampled_from([0.9, 1, 1.01, 0, float("nan")]),
    "cpu_kvcache_space_gb": st.sampled_from([None, 1, 2**16, 2**16 + 1, 0]),
    "max_num_seqs": st.sampled_from([1, 256, 16_384, 16_385, 0]),
    "max_num_batched_tokens": st.sampled_from([None, 1, 2**24, 2**24 + 1]),
    "enforce_eager": st.sampled_from([True, False, "no"]), "neuron": st.one_of(st.none(), neuron_block)})
SCENARIO_BASE = {"instance": "local-cpu", "backend": "cpu", "model": "tiny-llama", "workload": "cpu-smoke"}
scenario_doc = mutated(SCENARIO_BASE, {
    "name": st.sampled_from(["s", "t"]), "instance": st.sampled_from(["p5en.48xlarge", "../x", "a" * 65]),
    "backend": st.sampled_from(["cpu", "cuda", "neuron", "tpu"]),
    "accelerators_used": st.sampled_from([1, 2, 8, 64, 65, 0]), "model": st.sampled_from(["tiny-llama", "/m"]),
    "workload": st.sampled_from(["cpu-smoke", "w..x"]), "engine": engine_block})

SLO_BASE = {"ttft_p99_ms": 2000, "tpot_p99_ms": 100, "source": "a source"}
slo_entry = mutated(SLO_BASE, {
    "name": st.sampled_from(["x", "y", "p5.48xlarge"]),
    "ttft_p99_ms": st.sampled_from([1, 0.5, 2000, 86_400_000, 86_400_001, 0, -5]),
    "tpot_p99_ms": st.sampled_from([30, 7.5, float("inf"), float("nan")]),
    "models": st.lists(st.sampled_from(["tiny-llama", "llama-3.1-8b", "tiny-llama", "tiny-lama", "../m"]), max_size=3),
    "source": st.sampled_from(["ab", "abc"])})
slos_doc = entries(slo_entry)

FIGURE_BASE = {"id": "a", "metric": "ttft_ms", "value": 1.5, "section": "t1"}
figure = mutated(FIGURE_BASE, {
    "id": st.sampled_from(["a", "b", "A", "a.b", ""]), "metric": st.sampled_from(["ttft_ms", "output_tok_per_s",
                                                                                  "ttft_s"]),
    "value": st.sampled_from([0, -3, 1e300, float("nan"), float("inf")]),
    "instance": st.sampled_from([None, "local-cpu", "p9.48xlarge", "../i"]),
    "comparable_instance": st.sampled_from([None, "p5en.48xlarge", "x"]),
    "model": st.sampled_from([None, "tiny-llama", "llama-9"]), "accelerators": st.sampled_from([None, 1, 64, 65, 0]),
    "concurrency": st.sampled_from([None, 1, 4096, 4097]), "section": st.sampled_from(["t1", "t"])})
relation = mutated({"id": "r", "claim": "half", "kind": "ratio_x", "terms": ["a", "b"], "value": 0.5, "section": "s1"}, {
    "id": st.sampled_from(["r", "a", "q"]), "kind": st.sampled_from(["ratio_x", "product", "scaling_advantage_x", "sum"]),
    "terms": st.lists(st.sampled_from(["a", "b", "c"]), max_size=5), "factor": st.sampled_from([1, 2.5, float("inf")]),
    "tolerance_pct": st.sampled_from([0, 2, 100, 101, -1])})
REFERENCE_BASE = {"document": "seed.md", "title": "T", "published": "2025", "read_date": "2026-11-30",
                  "kind": "projection", "figures": [FIGURE_BASE, {**FIGURE_BASE, "id": "b"}]}
reference_doc = mutated(REFERENCE_BASE, {
    "name": st.sampled_from(["r", "s"]), "read_date": st.sampled_from(["2026-11-30", "30 Nov"]),
    "kind": st.sampled_from(["projection", "measurement"]), "input_tokens": st.sampled_from([None, 512, 0, 2**24 + 1]),
    "figures": st.lists(figure, max_size=3), "relations": st.lists(relation, max_size=2)})

# Text that is not a plain YAML document of unique string keys: each is refused whatever the document holds.
BREAKERS = [
    lambda text: text + "seed: 1\nseed: 2\n",  # a duplicate key
    lambda text: text + "zz: &a [1, 2]\nzy: *a\n",  # an anchor and an alias
    lambda text: "x: &a 1\n" + text,
    lambda text: text + "1: one\n",  # a non-string key
    lambda text: text + "deep: " + "[" * 40 + "]" * 40 + "\n",  # nested past any bound
    lambda text: text + "when: 2026-11-30\n",  # a timestamp
    lambda text: text + "x: !!python/object/apply:os.system [echo]\n",
    lambda text: text + "\t: ][\n",  # not YAML
    lambda text: text + "---\nx: 1\n",  # two documents
    lambda text: text + "<<: {a: 1}\n",  # a merge key
]


# libyaml where there is one, as the loader uses (config/strict_yaml.py)
FastDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
FastLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Dumper(FastDumper):
    def ignore_aliases(self, data: Any) -> bool:  # a value used twice is written out twice, as a person would
        return True


@st.composite
def file_text(draw: Any, docs: st.SearchStrategy) -> tuple[bytes, Any]:
    """(the file's bytes, the document it holds, or None where the text itself must be refused)."""
    doc = draw(docs)
    text = yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True)
    choice = draw(st.integers(0, 19))
    if choice == 0:
        return draw(st.sampled_from(BREAKERS))(text).encode(), None
    if choice == 1:  # a byte that UTF-8 never holds
        at = draw(st.integers(0, len(text)))
        return text[:at].encode() + b"\xff" + text[at:].encode(), None
    if choice == 2:  # cut short: whatever PyYAML reads from it is the document, if anything
        cut = text[:draw(st.integers(0, len(text)))]
        try:
            return cut.encode(), ("document", yaml.load(cut, Loader=FastLoader))
        except yaml.YAMLError:
            return cut.encode(), None
    return text.encode(), ("document", doc)


# --- the property -------------------------------------------------------------------------------------

@contextlib.contextmanager
def no_hang(seconds: int):
    def stop(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a load took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check(path: Path, raw: bytes, held: Any, load: Callable[[], Any], valid: Callable[[Any], bool]) -> None:
    path.write_bytes(raw)
    expected = held is not None and valid(held[1])
    try:
        with no_hang(SECONDS_PER_LOAD):
            load()
    except AccelbenchError as e:
        msg = str(e)
        assert not expected, f"refused a valid document: {msg}\n{raw.decode(errors='replace')}"
        assert str(path) in msg, msg
        assert re.search(r"fields? ['\"]", msg) or re.search(r"line \d+", msg), f"names no field or line: {msg}"
        return
    assert expected, f"accepted a document the rules refuse:\n{raw.decode(errors='replace')}"


def mapping_ok(entry_ok: Callable[[Any, Any], bool]) -> Callable[[Any], bool]:
    return lambda doc: isinstance(doc, dict) and len(doc) > 0 and all(entry_ok(k, v) for k, v in doc.items())


def named_ok(ok: Callable[[dict[str, Any]], bool]) -> Callable[[Any], bool]:
    return lambda doc: isinstance(doc, dict) and ok(doc)


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Empty params folders, but for two real models. In memory where there is a tmpfs: a file is written
    and read per example, and a disk's open() costs more than the load being tested."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="accelbench-props-", dir=shm)) if shm.is_dir() else tmp_path
    try:
        yield _params_dirs(root, monkeypatch)
    finally:
        if root != tmp_path:
            shutil.rmtree(root, ignore_errors=True)


def _params_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("models", "workloads", "scenarios", "reference"):
        (tmp_path / name).mkdir()
    for model in MODELS_KNOWN:
        (tmp_path / "models" / f"{model}.yaml").write_bytes((paths.MODELS_DIR / f"{model}.yaml").read_bytes())
    monkeypatch.setattr(paths, "MODELS_DIR", tmp_path / "models")
    monkeypatch.setattr(paths, "WORKLOADS_DIR", tmp_path / "workloads")
    monkeypatch.setattr(paths, "SCENARIOS_DIR", tmp_path / "scenarios")
    monkeypatch.setattr(paths, "REFERENCE_DIR", tmp_path / "reference")
    return tmp_path


# Hypothesis runs each inner property EXAMPLES times inside one test (function-scoped fixtures stay put).

def test_params_property_instances(dirs):
    path = dirs / "instances.yaml"

    @SETTINGS
    @given(file_text(instances_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: params.load_instances(path), mapping_ok(instance_ok))
    prop()


def test_params_property_models(dirs):
    path = dirs / "models" / "m.yaml"

    @SETTINGS
    @given(file_text(model_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: params.load_model("m"), named_ok(model_ok))
    prop()


def test_params_property_workloads(dirs):
    path = dirs / "workloads" / "w.yaml"

    @SETTINGS
    @given(file_text(workload_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: params.load_workload("w"), named_ok(workload_ok))
    prop()


def test_params_property_scenarios(dirs):
    path = dirs / "scenarios" / "s.yaml"

    @SETTINGS
    @given(file_text(scenario_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: params.load_scenario_file("s"), named_ok(scenario_ok))
    prop()


def test_params_property_slo_profiles(dirs):
    path = dirs / "slos.yaml"

    @SETTINGS
    @given(file_text(slos_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: params.load_slo_profiles(path), mapping_ok(slo_ok))
    prop()


def test_params_property_reference_documents(dirs, monkeypatch):
    path = dirs / "reference" / "r.yaml"
    instances = {k: v for k, v in params.load_instances().items() if k in INSTANCES_KNOWN}
    monkeypatch.setattr(params, "load_instances", lambda path=None: instances)  # parsed once, not per example

    @SETTINGS
    @given(file_text(reference_doc))
    def prop(case):  # unannotated: hypothesis would resolve the hints on every example
        check(path, *case, lambda: reference.load_reference("r"), named_ok(reference_ok))
    prop()
