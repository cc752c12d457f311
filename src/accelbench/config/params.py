"""Typed, validated parameters: instances, models, workloads, scenarios, SLO profiles.

Every file under params/ loads through here; a bad file fails at load time naming file, entry, field, value
and what would be valid. Types are strict (no "64" -> 64), numbers finite and bounded (config/bounds.py), names
are names (config/names.py), and the YAML itself is read strictly (config/strict_yaml.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from accelbench.config import paths
from accelbench.config.bounds import (
    DATE_PATTERN,
    MAX_ACCELERATORS,
    MAX_BURSTINESS,
    MAX_CONCURRENCY,
    MAX_FIGURE,
    MAX_KV_CACHE_GB,
    MAX_LATENCY_MS,
    MAX_LEVEL_S,
    MAX_LEVELS,
    MAX_NUM_SEQS,
    MAX_PARAMS_B,
    MAX_POSITIONS,
    MAX_PROMPT_TOKENS_PER_LEVEL,
    MAX_RATE_PER_S,
    MAX_REPETITIONS,
    MAX_REQUESTS_PER_LEVEL,
    MAX_SEED,
    MAX_TOKENS,
    MAX_VOCAB_SIZE,
    MAX_WARMUP_REQUESTS,
    MIN_BURSTINESS,
    MIN_VOCAB_SIZE,
)
from accelbench.config.entries import build as _build
from accelbench.config.names import Name, name_problem, shown
from accelbench.config.neuron import NeuronSettings, check_resolved, check_scenario
from accelbench.config.strict_yaml import plain_data_problem, read_yaml
from accelbench.errors import AccelbenchError

Backend = Literal["cpu", "cuda", "neuron"]
Arrival = Literal["poisson", "gamma"]

Concurrency = Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)]
Rate = Annotated[float, Field(gt=0, le=MAX_RATE_PER_S)]


class Frozen(BaseModel):
    # strict: a YAML "64" is a string, never 64; finite: NaN and inf are refused wherever a float is
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Sourced(Frozen):
    """A figure taken from elsewhere, with where and when it was read."""

    value: float = Field(gt=0, le=MAX_FIGURE, description="the figure, in the unit its field name gives")
    source: str = Field(min_length=3, description="document or page the figure comes from")
    date: str = Field(pattern=DATE_PATTERN, description="when it was read, YYYY-MM[-DD]")


class Prices(Frozen):
    on_demand_usd_per_hour: Sourced | None = Field(None, description="on-demand price of the instance")
    spot_usd_per_hour: Sourced | None = Field(None, description="a recent observed spot price")
    reserved_1y_usd_per_hour: Sourced | None = Field(None, description="1-year commitment, per hour")
    reserved_3y_usd_per_hour: Sourced | None = Field(None, description="3-year commitment, per hour")


class Instance(Frozen):
    name: Name = Field(description="instance type, e.g. p5en.48xlarge")
    family: Backend = Field(description="which backend drives its accelerators")
    accelerator_name: str = Field(description="accelerator model, e.g. NVIDIA H200 SXM 141GB")
    accelerator_count: int = Field(ge=1, le=MAX_ACCELERATORS, description="accelerators in one instance")
    memory_per_accelerator_gb: Sourced = Field(description="device memory per accelerator, GB")
    memory_bandwidth_per_accelerator_gb_s: Sourced = Field(description="device memory bandwidth, GB/s")
    peak_dense_bf16_tflop_s: Sourced = Field(description="peak dense BF16 TFLOP/s per accelerator")
    interconnect: str = Field(description="how the accelerators are joined, with its bandwidth")
    prices: Prices = Field(default_factory=Prices, description="USD per instance-hour")
    notes: str = Field("", description="anything a reader of the figures should know")


class ModelConfig(Frozen):
    name: Name = Field(description="short name used in scenarios, e.g. llama-3.1-8b")
    display_name: str = Field(description="name shown in the report")
    total_params_b: float = Field(gt=0, le=MAX_PARAMS_B, description="total parameters, billions")
    active_params_b: float = Field(gt=0, le=MAX_PARAMS_B,
                                   description="parameters used per token, billions (MoE: active)")
    source: str = Field(description="where the architecture numbers come from")
    source_date: str = Field(pattern=DATE_PATTERN, description="when the source was read, YYYY-MM[-DD]")
    hf_config: dict[str, Any] = Field(description="the config.json vLLM reads for dummy weights: plain data; "
                                                  "vocab_size and max_position_embeddings (in text_config "
                                                  "when there is one) are required integers")
    notes: str = Field("", description="differences from the seeds, quantization, etc.")

    @field_validator("hf_config")
    @classmethod
    def _config_json(cls, v: dict[str, Any]) -> dict[str, Any]:
        if problem := plain_data_problem(v):
            raise ValueError(f"'{problem[0]}': {problem[1]}")
        text = v.get("text_config", v)
        where = "text_config." if "text_config" in v else ""
        if not isinstance(text, dict):
            raise ValueError(f"'text_config' is a {type(text).__name__}; it is the text model's config, a mapping")
        for key, low, high in (("vocab_size", MIN_VOCAB_SIZE, MAX_VOCAB_SIZE),
                               ("max_position_embeddings", 16, MAX_POSITIONS)):  # 16: max_model_len's floor
            value = text.get(key)
            if value is None:
                raise ValueError(f"'{where}{key}' is missing; vLLM needs it (an integer from {low} to {high})")
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"'{where}{key}' is {shown(value)}; valid: an integer from {low} to {high}")
        return v

    @model_validator(mode="after")
    def _active_within_total(self) -> ModelConfig:
        if self.active_params_b > self.total_params_b:
            raise ValueError(f"field 'active_params_b' is {self.active_params_b}, more than total_params_b="
                             f"{self.total_params_b}; valid: at most the total")
        return self

    @property
    def text_config(self) -> dict[str, Any]:
        return self.hf_config.get("text_config", self.hf_config)

    @property
    def vocab_size(self) -> int:
        return self.text_config["vocab_size"]

    @property
    def max_position_embeddings(self) -> int:
        return self.text_config["max_position_embeddings"]


class Workload(Frozen):
    name: Name = Field(description="short name used in scenarios")
    description: str = Field("", description="what the workload stands for")
    input_tokens: int = Field(ge=1, le=MAX_TOKENS, description="prompt length in tokens, every request")
    output_tokens: int = Field(ge=1, le=MAX_TOKENS,
                               description="generated tokens per request, the mean when they vary (ignore_eos)")
    output_tokens_range_ratio: float = Field(
        0.0, ge=0, lt=1, description="output tokens drawn uniformly on output_tokens x [1 - r, 1 + r] per "
        "request (vLLM's random dataset's range ratio); 0 fixes them. Varied lengths keep closed-loop "
        "clients from settling into lock-step patterns that differ between engine starts")
    concurrency_levels: list[Concurrency] = Field(
        max_length=MAX_LEVELS, description="closed-loop levels: clients each with one request in flight")
    request_rates_per_s: list[Rate] = Field(default_factory=list, max_length=MAX_LEVELS,
                                            description="open-loop offered rates, requests/s")
    arrival: Arrival = Field("poisson", description="open-loop arrival process: poisson (exponential gaps) or "
                                                    "gamma (gaps of shape `burstiness`)")
    burstiness: float = Field(1.0, ge=MIN_BURSTINESS, le=MAX_BURSTINESS,
                              description="arrival gamma: the gaps' gamma shape; 1 = Poisson, <1 burstier, >1 more "
                                          "regular; poisson needs 1")
    max_concurrency: int | None = Field(None, ge=1, le=MAX_CONCURRENCY,
                                        description="cap on requests in flight in open-loop levels")
    requests_per_worker: int = Field(4, ge=1, le=MAX_REQUESTS_PER_LEVEL,
                                     description="closed loop: requests sent per client per level")
    min_requests_per_level: int = Field(8, ge=1, le=MAX_REQUESTS_PER_LEVEL,
                                        description="at least this many requests in a level")
    min_level_duration_s: float = Field(0.0, ge=0, le=MAX_LEVEL_S,
                                        description="open loop: a level offers load at least this long")
    warmup_requests: int = Field(2, ge=0, le=MAX_WARMUP_REQUESTS,
                                 description="requests per measured shape sent before measuring")
    rate_warmup_concurrency: int | None = Field(
        None, ge=1, le=MAX_CONCURRENCY, description="open loop: batch the rate levels are warmed up at "
        "(default: max_concurrency, else the largest concurrency level, else 1)")
    closed_loop_start: Literal["staggered", "simultaneous"] = Field(
        "staggered", description="closed loop: clients start spread over one request's latency, or all at once")
    repetitions: int = Field(3, ge=1, le=MAX_REPETITIONS, description="times each level is measured")
    max_repetitions: int | None = Field(
        None, ge=1, le=MAX_REPETITIONS, description="adaptive mode: repeat a level beyond `repetitions` until its "
        "output tok/s 95% interval half-width is within target_half_width_pct, at most this many times")
    target_half_width_pct: float = Field(5.0, gt=0, le=100,
                                         description="adaptive mode's target half-width, % of the mean")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed for prompt token ids and arrivals")
    validate_with_serve: bool = Field(False, description="also run vllm bench serve on the same levels")

    @field_validator("burstiness")
    @classmethod
    def _burstiness_fits_arrival(cls, v: float, info: ValidationInfo) -> float:
        if info.data.get("arrival") == "poisson" and v != 1:
            raise ValueError(f"{v} with arrival 'poisson', whose gaps are exponential (burstiness 1); valid: "
                             f"arrival: gamma for gamma gaps of shape {v}, or burstiness 1 (the default) for "
                             f"Poisson arrivals")
        return v

    @model_validator(mode="after")
    def _levels(self) -> Workload:
        if not self.concurrency_levels and not self.request_rates_per_s:
            raise ValueError("fields 'concurrency_levels' and 'request_rates_per_s' are both empty: nothing to "
                             "measure; valid: at least one level in either")
        if self.max_repetitions is not None and self.max_repetitions < self.repetitions:
            raise ValueError(f"field 'max_repetitions' is {self.max_repetitions}, below repetitions="
                             f"{self.repetitions}; valid: at least repetitions, or null")
        if self.validate_with_serve and not self.concurrency_levels:
            raise ValueError("field 'validate_with_serve': validate_with_serve: true needs concurrency_levels: "
                             "bench serve is compared at closed-loop levels (--max-concurrency)")
        if self.warmup_requests * self.input_tokens > MAX_PROMPT_TOKENS_PER_LEVEL:
            raise ValueError(f"field 'warmup_requests' is {self.warmup_requests}: {self.warmup_requests} x "
                             f"input_tokens={self.input_tokens} exceeds {MAX_PROMPT_TOKENS_PER_LEVEL} prompt tokens")
        levels = [("concurrency_levels", c, self.requests_for_concurrency(c)) for c in self.concurrency_levels]
        levels += [("request_rates_per_s", r, self.requests_for_rate(r)) for r in self.request_rates_per_s]
        for field, value, n in levels:
            why = None
            if n > MAX_REQUESTS_PER_LEVEL:
                why = f"{n} requests, more than {MAX_REQUESTS_PER_LEVEL}"
            elif n * self.input_tokens > MAX_PROMPT_TOKENS_PER_LEVEL:
                why = (f"{n} requests x input_tokens={self.input_tokens} = {n * self.input_tokens} prompt tokens, "
                       f"more than {MAX_PROMPT_TOKENS_PER_LEVEL}")
            elif field == "request_rates_per_s" and n / value > MAX_LEVEL_S:
                why = f"{n} requests at {value:g}/s, {n / value:.0f} s, longer than {MAX_LEVEL_S:.0f} s"
            if why:
                raise ValueError(f"field '{field}': the level {value!r} is {why}; lower requests_per_worker, "
                                 f"min_requests_per_level or min_level_duration_s, or the level")
        return self

    @property
    def max_output_tokens(self) -> int:
        return round(self.output_tokens * (1 + self.output_tokens_range_ratio))

    def requests_for_concurrency(self, concurrency: int) -> int:
        return max(self.min_requests_per_level, self.requests_per_worker * concurrency)

    def requests_for_rate(self, rate_per_s: float) -> int:
        return max(self.min_requests_per_level, int(round(rate_per_s * self.min_level_duration_s)))


class EngineSettings(Frozen):
    tensor_parallel_size: int = Field(1, ge=1, le=MAX_ACCELERATORS,
                                      description="accelerators the model is sharded over")
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = Field("bfloat16", description="weight dtype")
    quantization: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
                                     description="vLLM quantization method, e.g. fp8")
    max_model_len: int = Field(2048, ge=16, le=MAX_TOKENS, description="longest prompt + output, tokens")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="share of device memory vLLM may use")
    cpu_kvcache_space_gb: int | None = Field(None, ge=1, le=MAX_KV_CACHE_GB,
                                             description="CPU backend: KV cache size, GB")
    max_num_seqs: int = Field(256, ge=1, le=MAX_NUM_SEQS, description="most sequences vLLM schedules at once")
    max_num_batched_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS, description="tokens per scheduler step")
    enforce_eager: bool = Field(False, description="disable CUDA graphs / compilation")
    neuron: NeuronSettings | None = Field(None, description="neuron backend only: NxD Inference settings "
                                                           "(config/neuron.py); absent = the plugin's defaults")


class Scenario(Frozen):
    name: Name = Field(description="scenario name, the file's stem")
    description: str = Field("", description="what this scenario measures")
    instance: Name = Field(description="key in params/instances.yaml")
    backend: Backend = Field(description="engine backend")
    accelerators_used: int = Field(1, ge=1, le=MAX_ACCELERATORS,
                                   description="accelerators of the instance this run uses")
    model: Name = Field(description="default model (params/models/<name>.yaml)")
    workload: Name = Field(description="default workload (params/workloads/<name>.yaml)")
    engine: EngineSettings = Field(default_factory=EngineSettings, description="vLLM engine settings")

    @model_validator(mode="after")
    def _tp(self) -> Scenario:
        tp = self.engine.tensor_parallel_size
        if self.accelerators_used % tp:
            raise ValueError(f"field 'engine.tensor_parallel_size': tensor_parallel_size={tp} must divide "
                             f"accelerators_used={self.accelerators_used}; valid: a divisor of accelerators_used")
        check_scenario(self)
        return self


class SloProfile(Frozen):
    name: Name = Field(description="profile name")
    ttft_p99_ms: float = Field(gt=0, le=MAX_LATENCY_MS, description="TTFT limit at p99, ms")
    tpot_p99_ms: float = Field(gt=0, le=MAX_LATENCY_MS, description="TPOT limit at p99, ms")
    models: list[Name] = Field(default_factory=list, max_length=256,
                               description="models it applies to (params/models/<name>.yaml); empty = all")
    source: str = Field(min_length=3, description="where the limits come from")

    @field_validator("models")
    @classmethod
    def _once_each(cls, v: list[str]) -> list[str]:
        if dup := sorted({m for m in v if v.count(m) > 1}):
            raise ValueError(f"model {dup[0]!r} is listed more than once; list each model once")
        return v


class Resolved(Frozen):
    """A scenario with every name replaced by the validated object it names."""

    scenario: Scenario
    instance: Instance
    model: ModelConfig
    workload: Workload

    @model_validator(mode="after")
    def _fits(self) -> Resolved:
        s, i, m, w = self.scenario, self.instance, self.model, self.workload
        where = f"params/scenarios/{s.name}.yaml"
        if s.backend != i.family:
            raise ValueError(f"{where}: field 'backend': backend '{s.backend}' does not drive instance {i.name} "
                             f"({i.family}); valid: backend '{i.family}', or an instance of family '{s.backend}'")
        if s.accelerators_used > i.accelerator_count:
            raise ValueError(f"{where}: field 'accelerators_used': accelerators_used={s.accelerators_used} but "
                             f"{i.name} has {i.accelerator_count} (params/instances.yaml: instance '{i.name}': "
                             f"field 'accelerator_count'); valid: at most {i.accelerator_count}")
        need = w.input_tokens + w.max_output_tokens
        if need > s.engine.max_model_len:
            raise ValueError(
                f"{where}: field 'engine.max_model_len': engine.max_model_len={s.engine.max_model_len} is too "
                f"short for workload '{w.name}' (params/workloads/{w.name}.yaml: fields 'input_tokens' and "
                f"'output_tokens', with output_tokens_range_ratio {w.output_tokens_range_ratio:g}), which needs "
                f"{w.input_tokens}+{w.max_output_tokens}={need} tokens; valid: max_model_len >= {need}, or a "
                f"shorter workload")
        if s.engine.max_model_len > m.max_position_embeddings:
            raise ValueError(
                f"{where}: field 'engine.max_model_len' is {s.engine.max_model_len}, which exceeds model "
                f"'{m.name}' max_position_embeddings={m.max_position_embeddings} (params/models/{m.name}.yaml: "
                f"field 'hf_config.max_position_embeddings'); valid: at most {m.max_position_embeddings}")
        check_resolved(s, i, m, w, where)
        return self


def _read_yaml(path: Path) -> Any:
    """The file's one YAML document, read strictly (config/strict_yaml.py); AccelbenchError naming the file."""
    return read_yaml(path)


def _names(directory: Path) -> list[str]:
    """The names of the YAML files in `directory`: stems that are names (config/names.py); others are
    listed by unnamed_files()."""
    return sorted(p.stem for p in directory.glob("*.yaml") if name_problem(p.stem) is None and p.is_file())


def unnamed_files() -> list[Path]:
    """Files in params/ whose stems are not names: no scenario, model, workload or reference can name them."""
    dirs = (paths.SCENARIOS_DIR, paths.MODELS_DIR, paths.WORKLOADS_DIR, paths.REFERENCE_DIR)
    return sorted(p for d in dirs for p in d.glob("*.yaml") if name_problem(p.stem) is not None)


def check_name(value: Any, kind: str, directory: Path, given_as: str | None = None) -> str:
    """`value` if it names a file in `directory`, else AccelbenchError saying why and listing the valid names.

    Names never hold a path: a scenario, model or workload is only ever read from params/.
    """
    valid = f"valid {kind}s are {', '.join(_names(directory))} (files in {directory})"
    label = f"{given_as} ({kind})" if given_as else kind
    if problem := name_problem(value):
        raise AccelbenchError(f"{label} {problem}; {valid}")
    if not (directory / f"{value}.yaml").is_file():
        raise AccelbenchError(f"unknown {kind} '{value}'{f' (given as {given_as})' if given_as else ''}: {valid}")
    return value


def _load_named(cls: type[Frozen], directory: Path, name: str, kind: str) -> Any:
    check_name(name, kind, directory)
    path = directory / f"{name}.yaml"
    return _build(cls, read_yaml(path), path, name=name)


def _load_entries(cls: type[Frozen], path: Path, kind: str) -> dict[str, Any]:
    """A file mapping entry names to fields (instances.yaml, slos.yaml): each key a name, each entry checked."""
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise AccelbenchError(f"{path}: field '<document>': expected a mapping of {kind} name to fields, got "
                              f"{'an empty document' if data is None else type(data).__name__}")
    for key in data:
        if problem := name_problem(key):
            raise AccelbenchError(f"{path}: field {shown(key)}: the {kind} key {problem}")
    return {key: _build(cls, fields, path, kind=kind, name=key) for key, fields in data.items()}


def scenario_names() -> list[str]:
    return _names(paths.SCENARIOS_DIR)


def model_names() -> list[str]:
    return _names(paths.MODELS_DIR)


def workload_names() -> list[str]:
    return _names(paths.WORKLOADS_DIR)


def load_instances(path: Path | None = None) -> dict[str, Instance]:
    return _load_entries(Instance, path or paths.INSTANCES_FILE, "instance")


def load_model(name: str) -> ModelConfig:
    return _load_named(ModelConfig, paths.MODELS_DIR, name, "model")


def load_workload(name: str) -> Workload:
    return _load_named(Workload, paths.WORKLOADS_DIR, name, "workload")


def load_scenario_file(name: str) -> Scenario:
    return _load_named(Scenario, paths.SCENARIOS_DIR, name, "scenario")


def load_slo_profiles(path: Path | None = None) -> list[SloProfile]:
    """params/slos.yaml, each profile's models checked against params/models/."""
    path = path or paths.SLO_FILE
    profiles = _load_entries(SloProfile, path, "SLO profile")
    models = set(model_names())
    for p in profiles.values():
        if unknown := [m for m in p.models if m not in models]:
            raise AccelbenchError(f"{path}: SLO profile '{p.name}': field 'models': unknown model '{unknown[0]}'; "
                                  f"valid: {', '.join(sorted(models))} (files in {paths.MODELS_DIR})")
    return list(profiles.values())


def resolve(scenario: str, model: str | None = None, workload: str | None = None) -> Resolved:
    """Load a scenario and what it names; `model`/`workload` override its defaults. Every name is a name
    under params/ (never a path); None keeps the scenario's own."""
    s = load_scenario_file(scenario)
    if model is not None:
        check_name(model, "model", paths.MODELS_DIR, given_as="the model override")
    if workload is not None:
        check_name(workload, "workload", paths.WORKLOADS_DIR, given_as="the workload override")
    s = s.model_copy(update={"model": s.model if model is None else model,
                             "workload": s.workload if workload is None else workload})
    instances = load_instances()
    if s.instance not in instances:
        raise AccelbenchError(f"{paths.SCENARIOS_DIR / f'{scenario}.yaml'}: field 'instance': unknown instance "
                              f"'{s.instance}'; valid: {', '.join(sorted(instances))} (keys in {paths.INSTANCES_FILE})")
    for kind, value, override, directory in (("model", s.model, model, paths.MODELS_DIR),
                                             ("workload", s.workload, workload, paths.WORKLOADS_DIR)):
        if override is None and not (directory / f"{value}.yaml").is_file():
            raise AccelbenchError(f"{paths.SCENARIOS_DIR / f'{scenario}.yaml'}: field '{kind}': unknown {kind} "
                                  f"'{value}'; valid: {', '.join(_names(directory))} (files in {directory})")
    parts = dict(scenario=s, instance=instances[s.instance], model=load_model(s.model),
                 workload=load_workload(s.workload))
    try:
        return Resolved(**parts)
    except ValidationError as e:
        raise AccelbenchError("; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())) from None
