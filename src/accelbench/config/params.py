"""Typed, validated parameters: instances, models, workloads, scenarios, SLO profiles.

Every file under params/ loads through here; a bad file fails at load time naming file, field and reason.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import yaml
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
from accelbench.config.neuron import NeuronSettings, check_resolved, check_scenario
from accelbench.errors import AccelbenchError

Backend = Literal["cpu", "cuda", "neuron"]
Arrival = Literal["poisson", "gamma"]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sourced(Frozen):
    """A figure taken from elsewhere, with where and when it was read."""

    value: float = Field(description="the figure, in the unit its field name gives")
    source: str = Field(min_length=3, description="document or page the figure comes from")
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="when it was read, YYYY-MM[-DD]")


class Prices(Frozen):
    on_demand_usd_per_hour: Sourced | None = Field(None, description="on-demand price of the instance")
    spot_usd_per_hour: Sourced | None = Field(None, description="a recent observed spot price")
    reserved_1y_usd_per_hour: Sourced | None = Field(None, description="1-year commitment, per hour")
    reserved_3y_usd_per_hour: Sourced | None = Field(None, description="3-year commitment, per hour")


class Instance(Frozen):
    name: str = Field(description="instance type, e.g. p5en.48xlarge")
    family: Backend = Field(description="which backend drives its accelerators")
    accelerator_name: str = Field(description="accelerator model, e.g. NVIDIA H200 SXM 141GB")
    accelerator_count: int = Field(ge=1, description="accelerators in one instance")
    memory_per_accelerator_gb: Sourced = Field(description="device memory per accelerator, GB")
    memory_bandwidth_per_accelerator_gb_s: Sourced = Field(description="device memory bandwidth, GB/s")
    peak_dense_bf16_tflop_s: Sourced = Field(description="peak dense BF16 TFLOP/s per accelerator")
    interconnect: str = Field(description="how the accelerators are joined, with its bandwidth")
    prices: Prices = Field(default_factory=Prices, description="USD per instance-hour")
    notes: str = Field("", description="anything a reader of the figures should know")


class ModelConfig(Frozen):
    name: str = Field(description="short name used in scenarios, e.g. llama-3.1-8b")
    display_name: str = Field(description="name shown in the report")
    total_params_b: float = Field(gt=0, description="total parameters, billions")
    active_params_b: float = Field(gt=0, description="parameters used per token, billions (MoE: active)")
    source: str = Field(description="where the architecture numbers come from")
    source_date: str = Field(description="when the source was read")
    hf_config: dict[str, Any] = Field(description="the config.json vLLM reads for dummy weights")
    notes: str = Field("", description="differences from the seeds, quantization, etc.")

    @property
    def vocab_size(self) -> int:
        cfg = self.hf_config.get("text_config", self.hf_config)
        return int(cfg["vocab_size"])

    @property
    def max_position_embeddings(self) -> int:
        cfg = self.hf_config.get("text_config", self.hf_config)
        return int(cfg["max_position_embeddings"])


class Workload(Frozen):
    name: str = Field(description="short name used in scenarios")
    description: str = Field("", description="what the workload stands for")
    input_tokens: int = Field(ge=1, description="prompt length in tokens, every request")
    output_tokens: int = Field(ge=1, description="generated tokens per request, the mean when they vary (ignore_eos)")
    output_tokens_range_ratio: float = Field(
        0.0, ge=0, lt=1, description="output tokens drawn uniformly on output_tokens x [1 - r, 1 + r] per "
        "request (vLLM's random dataset's range ratio); 0 fixes them. Varied lengths keep closed-loop "
        "clients from settling into lock-step patterns that differ between engine starts")
    concurrency_levels: list[int] = Field(description="closed-loop levels: clients each with one request in flight")
    request_rates_per_s: list[float] = Field(default_factory=list, description="open-loop offered rates, requests/s")
    arrival: Arrival = Field("poisson", description="open-loop arrival process: poisson (exponential gaps) or "
                                                    "gamma (gaps of shape `burstiness`)")
    burstiness: float = Field(1.0, gt=0, description="arrival gamma: the gaps' gamma shape; 1 = Poisson, <1 "
                                                     "burstier, >1 more regular; poisson needs 1")
    max_concurrency: int | None = Field(None, ge=1, description="cap on requests in flight in open-loop levels")
    requests_per_worker: int = Field(4, ge=1, description="closed loop: requests sent per client per level")
    min_requests_per_level: int = Field(8, ge=1, description="at least this many requests in a level")
    min_level_duration_s: float = Field(0.0, ge=0, description="open loop: a level offers load at least this long")
    warmup_requests: int = Field(2, ge=0, description="requests per measured shape sent before measuring")
    rate_warmup_concurrency: int | None = Field(
        None, ge=1, description="open loop: batch the rate levels are warmed up at "
        "(default: max_concurrency, else the largest concurrency level, else 1)")
    closed_loop_start: Literal["staggered", "simultaneous"] = Field(
        "staggered", description="closed loop: clients start spread over one request's latency, or all at once")
    repetitions: int = Field(3, ge=1, description="times each level is measured")
    max_repetitions: int | None = Field(
        None, ge=1, description="adaptive mode: repeat a level beyond `repetitions` until its output tok/s "
        "95% interval half-width is within target_half_width_pct, at most this many times")
    target_half_width_pct: float = Field(5.0, gt=0, description="adaptive mode's target half-width, % of the mean")
    seed: int = Field(0, description="seed for prompt token ids and arrivals")
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
            raise ValueError("concurrency_levels and request_rates_per_s are both empty: nothing to measure")
        if any(c < 1 for c in self.concurrency_levels):
            raise ValueError(f"concurrency_levels must be >= 1, got {self.concurrency_levels}")
        if any(r <= 0 for r in self.request_rates_per_s):
            raise ValueError(f"request_rates_per_s must be > 0, got {self.request_rates_per_s}")
        if self.max_repetitions is not None and self.max_repetitions < self.repetitions:
            raise ValueError(f"max_repetitions={self.max_repetitions} is below repetitions={self.repetitions}")
        if self.validate_with_serve and not self.concurrency_levels:
            raise ValueError("validate_with_serve: true needs concurrency_levels: bench serve is compared at "
                             "closed-loop levels (--max-concurrency)")
        return self

    @property
    def max_output_tokens(self) -> int:
        return round(self.output_tokens * (1 + self.output_tokens_range_ratio))

    def requests_for_concurrency(self, concurrency: int) -> int:
        return max(self.min_requests_per_level, self.requests_per_worker * concurrency)

    def requests_for_rate(self, rate_per_s: float) -> int:
        return max(self.min_requests_per_level, int(round(rate_per_s * self.min_level_duration_s)))


class EngineSettings(Frozen):
    tensor_parallel_size: int = Field(1, ge=1, description="accelerators the model is sharded over")
    dtype: Literal["bfloat16", "float16", "float32", "auto"] = Field("bfloat16", description="weight dtype")
    quantization: str | None = Field(None, description="vLLM quantization method, e.g. fp8")
    max_model_len: int = Field(2048, ge=16, description="longest prompt + output, tokens")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="share of device memory vLLM may use")
    cpu_kvcache_space_gb: int | None = Field(None, ge=1, description="CPU backend: KV cache size, GB")
    max_num_seqs: int = Field(256, ge=1, description="most sequences vLLM schedules at once")
    max_num_batched_tokens: int | None = Field(None, ge=1, description="tokens per scheduler step")
    enforce_eager: bool = Field(False, description="disable CUDA graphs / compilation")
    neuron: NeuronSettings | None = Field(None, description="neuron backend only: NxD Inference settings "
                                                           "(config/neuron.py); absent = the plugin's defaults")


class Scenario(Frozen):
    name: str = Field(description="scenario name, the file's stem")
    description: str = Field("", description="what this scenario measures")
    instance: str = Field(description="key in params/instances.yaml")
    backend: Backend = Field(description="engine backend")
    accelerators_used: int = Field(1, ge=1, description="accelerators of the instance this run uses")
    model: str = Field(description="default model (params/models/<name>.yaml)")
    workload: str = Field(description="default workload (params/workloads/<name>.yaml)")
    engine: EngineSettings = Field(default_factory=EngineSettings, description="vLLM engine settings")

    @model_validator(mode="after")
    def _tp(self) -> Scenario:
        tp = self.engine.tensor_parallel_size
        if self.accelerators_used % tp:
            raise ValueError(f"engine.tensor_parallel_size={tp} must divide accelerators_used={self.accelerators_used}")
        check_scenario(self)
        return self


class SloProfile(Frozen):
    name: str = Field(description="profile name")
    ttft_p99_ms: float = Field(gt=0, description="TTFT limit at p99, ms")
    tpot_p99_ms: float = Field(gt=0, description="TPOT limit at p99, ms")
    models: list[str] = Field(default_factory=list, description="models it applies to; empty = all")
    source: str = Field(description="where the limits come from")


class Resolved(Frozen):
    """A scenario with every name replaced by the validated object it names."""

    scenario: Scenario
    instance: Instance
    model: ModelConfig
    workload: Workload

    @model_validator(mode="after")
    def _fits(self) -> Resolved:
        s, i, w = self.scenario, self.instance, self.workload
        where = f"params/scenarios/{s.name}.yaml"
        if s.backend != i.family:
            raise ValueError(f"{where}: backend '{s.backend}' does not drive instance {i.name} ({i.family})")
        if s.accelerators_used > i.accelerator_count:
            raise ValueError(
                f"{where}: accelerators_used={s.accelerators_used} but {i.name} has {i.accelerator_count}")
        need = w.input_tokens + w.max_output_tokens
        if need > s.engine.max_model_len:
            raise ValueError(f"{where}: workload '{w.name}' needs {w.input_tokens}+{w.max_output_tokens}={need} "
                             f"tokens but engine.max_model_len={s.engine.max_model_len}")
        if s.engine.max_model_len > self.model.max_position_embeddings:
            raise ValueError(f"{where}: engine.max_model_len={s.engine.max_model_len} exceeds model "
                             f"'{self.model.name}' max_position_embeddings={self.model.max_position_embeddings}")
        check_resolved(s, i, self.model, w, where)
        return self


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise AccelbenchError(f"{path}: not valid YAML: {e}") from None


def _build(cls: type[Frozen], data: Any, path: Path, **extra: Any) -> Any:
    if not isinstance(data, dict):
        raise AccelbenchError(f"{path}: expected a mapping of fields, got {type(data).__name__}")
    try:
        return cls(**{**extra, **data})
    except ValidationError as e:
        raise AccelbenchError(f"{path}: {'; '.join(_problem(cls, err) for err in e.errors())}") from None


def _problem(cls: type[BaseModel], err: Any) -> str:
    """One validation error as 'field 'a.b': reason', listing the valid fields where a key is unknown."""
    loc, msg = tuple(err["loc"]), err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden" and (valid := _fields_at(cls, loc[:-1])):
        msg += f" (valid fields here: {', '.join(valid)})"
    return f"field '{'.'.join(map(str, loc))}': {msg}" if loc else msg


def _fields_at(cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The fields of the model found by following `loc` down from `cls`; [] where it leads elsewhere."""
    model: Any = cls
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        ann = field.annotation
        options = get_args(ann) if get_origin(ann) in (Union, UnionType) else (ann,)
        models = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
        if not models:
            return []
        model = models[0]
    return list(model.model_fields)


def _names(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.yaml"))


def _load_named(cls: type[Frozen], directory: Path, name: str, kind: str) -> Any:
    path = directory / f"{name}.yaml"
    if not path.is_file():
        raise AccelbenchError(f"unknown {kind} '{name}': valid {kind}s are {', '.join(_names(directory))} "
                              f"(files in {directory})")
    data = _read_yaml(path)
    if isinstance(data, dict) and data.get("name", name) != name:
        raise AccelbenchError(f"{path}: field 'name' is '{data['name']}' but the file is named '{name}'")
    return _build(cls, data, path, name=name)


def scenario_names() -> list[str]:
    return _names(paths.SCENARIOS_DIR)


def model_names() -> list[str]:
    return _names(paths.MODELS_DIR)


def workload_names() -> list[str]:
    return _names(paths.WORKLOADS_DIR)


def load_instances(path: Path | None = None) -> dict[str, Instance]:
    path = path or paths.INSTANCES_FILE
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise AccelbenchError(f"{path}: expected a mapping of instance name to fields")
    return {name: _build(Instance, fields, path, name=name) for name, fields in data.items()}


def load_model(name: str) -> ModelConfig:
    return _load_named(ModelConfig, paths.MODELS_DIR, name, "model")


def load_workload(name: str) -> Workload:
    return _load_named(Workload, paths.WORKLOADS_DIR, name, "workload")


def load_scenario_file(name: str) -> Scenario:
    return _load_named(Scenario, paths.SCENARIOS_DIR, name, "scenario")


def load_slo_profiles(path: Path | None = None) -> list[SloProfile]:
    path = path or paths.SLO_FILE
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise AccelbenchError(f"{path}: expected a mapping of profile name to fields")
    return [_build(SloProfile, fields, path, name=name) for name, fields in data.items()]


def resolve(scenario: str, model: str | None = None, workload: str | None = None) -> Resolved:
    """Load a scenario and what it names; `model`/`workload` override its defaults."""
    s = load_scenario_file(scenario)
    if model or workload:
        s = s.model_copy(update={"model": model or s.model, "workload": workload or s.workload})
    instances = load_instances()
    if s.instance not in instances:
        raise AccelbenchError(f"params/scenarios/{scenario}.yaml: field 'instance': unknown instance "
                              f"'{s.instance}'; valid: {', '.join(sorted(instances))}")
    parts = dict(scenario=s, instance=instances[s.instance], model=load_model(s.model),
                 workload=load_workload(s.workload))
    try:
        return Resolved(**parts)
    except ValidationError as e:
        raise AccelbenchError("; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())) from None
