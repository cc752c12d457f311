"""The Neuron backend's settings (a scenario's `engine.neuron` block) and the chip facts they are checked against.

Everything here is validated when a scenario loads or resolves, naming the file and field; the backend
(measure/engines/neuron.py) only reads the result. Written against the NxD Inference based vllm-neuron plugin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from accelbench.config.bounds import MAX_TOKENS
from accelbench.config.strict_yaml import plain_data_problem

if TYPE_CHECKING:
    from accelbench.config.params import (
        EngineSettings,
        Instance,
        ModelConfig,
        Scenario,
        Workload,
    )

# Settings the plugin derives from vLLM's own arguments (_get_default_neuron_config in the plugin's
# vllm_neuron/worker/neuronx_distributed_model_loader.py) or that the backend sets from a typed field: an
# extra NxDI key that shadows one of them is rejected, never merged.
DERIVED_NEURON_KEYS = frozenset({
    "tp_degree", "batch_size", "max_batch_size", "ctx_batch_size", "tkg_batch_size", "seq_len",
    "max_context_length", "torch_dtype", "is_continuous_batching", "padding_side", "pa_num_blocks",
    "pa_block_size", "is_block_kv_layout", "is_prefix_caching", "logical_nc_config",
    "logical_neuron_cores", "enable_bucketing", "context_encoding_buckets", "token_generation_buckets",
    "text_neuron_config", "vision_neuron_config", "quantized", "chunked_prefill_config",
})
VISION_DERIVED_KEYS = frozenset({"logical_nc_config", "logical_neuron_cores", "torch_dtype"})

# Architectures the plugin loads as NxDI image-to-text models, whose override_neuron_config may only hold
# text_neuron_config / vision_neuron_config (get_neuron_model and
# _validate_image_to_text_override_neuron_config in neuronx_distributed_model_loader.py).
MULTIMODAL_ARCHITECTURES = frozenset({
    "Llama4ForConditionalGeneration", "LlavaForConditionalGeneration",
    "Qwen2VLForConditionalGeneration", "Qwen3VLForConditionalGeneration",
})

MAX_BUCKETS = 64  # graphs compiled per phase; NxDI's defaults are powers of two, 7 up to 8192 tokens
MAX_BUCKET_TOKENS = MAX_TOKENS  # the longest sequence any scenario may set


@dataclass(frozen=True)
class ChipCores:
    """How one Neuron chip's cores group, and the TP degrees the runtime supports at each grouping."""

    physical_cores_per_chip: int
    lnc_values: tuple[int, ...]
    default_lnc: int
    tp_degrees: dict[int, tuple[int, ...]]  # LNC -> supported degrees; an LNC absent here is unconfirmed


# Per accelerator, from the AWS Neuron docs (read 2026-11):
#   - Trainium2: 8 physical NeuronCore-v3 per chip; LNC=2 (the Trn2 default) pairs them into 4 logical cores
#     (neuron-ls user guide, trn2.48xlarge: "NEURON CORES 8, LOGICAL NC 4"; NxDI API guide:
#     "logical_nc_config ... On Trn1 and Inf2, this defaults to 1. On Trn2, this defaults to 2").
#   - Inferentia2: 2 NeuronCore-v2 per chip, no LNC (inf2.48xlarge: 12 chips, 24 cores).
#   - TP degrees the Neuron runtime supports, NxDI API guide, "tp_degree": "trn2: 1, 2, 4, 8, 16, 32, and 64
#     (with logical_nc_config set to 2); inf2: 1, 2, 4, 8, and 24"
#     https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/api-guides/api-guide.html
#   The guide lists no TP degrees for Trn2 with LNC=1; there any degree that divides the instance's physical
#   cores is let through, unconfirmed.
HARDWARE: dict[str, ChipCores] = {
    "AWS Trainium2": ChipCores(physical_cores_per_chip=8, lnc_values=(1, 2), default_lnc=2,
                               tp_degrees={2: (1, 2, 4, 8, 16, 32, 64)}),
    "AWS Inferentia2": ChipCores(physical_cores_per_chip=2, lnc_values=(1,), default_lnc=1,
                                 tp_degrees={1: (1, 2, 4, 8, 24)}),
}


class NeuronSettings(BaseModel):
    """A scenario's `engine.neuron` block: NxD Inference settings vLLM has no argument for.

    Batch size, sequence length, TP degree and dtype come from the scenario's vLLM settings
    (max_num_seqs, max_model_len, tensor_parallel_size x NeuronCores per chip, dtype), exactly as the
    plugin derives them; these fields only add what vLLM cannot express. Field names are NxDI's own
    NeuronConfig names, passed through unchanged, so the NxDI docs can be searched by them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    logical_nc_config: int | None = Field(
        None, ge=1, le=8, description="physical NeuronCores per logical NeuronCore (LNC); None = the chip's default "
                                "(Trainium2: 2, Inferentia2: 1)")
    enable_bucketing: bool = Field(True, description="compile one graph per bucket instead of one padded "
                                                     "to the longest length")
    context_encoding_buckets: list[int] | None = Field(
        None, max_length=MAX_BUCKETS, description="prefill graph lengths, tokens of prompt, ascending; None = "
                                                  "NxDI's powers of two from 128 to max_model_len")
    token_generation_buckets: list[int] | None = Field(
        None, max_length=MAX_BUCKETS, description="decode graph lengths, tokens of prompt + generated so far, "
                                                  "ascending; None = NxDI's powers of two from 128 to max_model_len")
    extra_neuron_config: dict[str, Any] = Field(
        default_factory=dict, description="further NxDI NeuronConfig fields for the (text) model, e.g. "
                                          "fused_qkv; keys derived from vLLM settings are rejected")
    vision_neuron_config: dict[str, Any] = Field(
        default_factory=dict, description="NxDI NeuronConfig fields for an image-to-text model's vision "
                                          "encoder (Llama 4); empty = the plugin's defaults")

    @field_validator("context_encoding_buckets", "token_generation_buckets")
    @classmethod
    def _ascending(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if not v or any(not 1 <= b <= MAX_BUCKET_TOKENS for b in v):
            raise ValueError(f"buckets must be a non-empty list of lengths from 1 to {MAX_BUCKET_TOKENS} tokens, "
                             f"got {v}")
        if any(prev >= nxt for nxt, prev in zip(v[1:], v)):
            raise ValueError(f"buckets must be strictly ascending, got {v}")
        return v

    @field_validator("extra_neuron_config", "vision_neuron_config")
    @classmethod
    def _not_derived(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if problem := plain_data_problem(v):
            raise ValueError(f"'{problem[0]}': {problem[1]}")
        text = info.field_name == "extra_neuron_config"
        if shadowed := sorted((DERIVED_NEURON_KEYS if text else VISION_DERIVED_KEYS) & set(v)):
            why = (f"shadows a setting derived from the scenario's vLLM settings or a typed engine.neuron field; "
                   f"set it there instead (derived keys: {', '.join(sorted(DERIVED_NEURON_KEYS))})" if text else
                   "must match the text model's and is set from the scenario; remove it")
            raise ValueError(f"key '{shadowed[0]}' {why}")
        return v

    @model_validator(mode="after")
    def _buckets_need_bucketing(self) -> NeuronSettings:
        for field in ("context_encoding_buckets", "token_generation_buckets"):
            if getattr(self, field) is not None and not self.enable_bucketing:
                raise ValueError(f"{field} is set but enable_bucketing is false, so NxDI would ignore it; "
                                 f"remove it or enable bucketing")
        return self


def settings_of(engine: EngineSettings) -> NeuronSettings:
    """The engine's Neuron settings; a neuron scenario without an `engine.neuron` block gets the defaults."""
    return engine.neuron or NeuronSettings()


def chip(instance: Instance, where: str) -> ChipCores:
    if instance.accelerator_name not in HARDWARE:
        raise ValueError(f"{where}: instance {instance.name} has accelerator '{instance.accelerator_name}', "
                         f"which the neuron backend has no core counts for; known: {', '.join(HARDWARE)} "
                         f"(HARDWARE in src/accelbench/config/neuron.py)")
    return HARDWARE[instance.accelerator_name]


def logical_nc(s: NeuronSettings, cores: ChipCores) -> int:
    return s.logical_nc_config or cores.default_lnc


def tp_degree(tensor_parallel_size: int, s: NeuronSettings, cores: ChipCores) -> int:
    """NeuronCores the model is sharded over: the scenario shards over whole chips, each with
    physical_cores_per_chip / LNC logical cores (trn2.48xlarge: 16 chips x 4 = 64; inf2.48xlarge: 12 x 2 = 24)."""
    return tensor_parallel_size * cores.physical_cores_per_chip // logical_nc(s, cores)


def architecture(model: ModelConfig) -> str:
    return (model.hf_config.get("architectures") or ["?"])[0]


def is_multimodal(model: ModelConfig) -> bool:
    return architecture(model) in MULTIMODAL_ARCHITECTURES


def check_scenario(scenario: Scenario) -> None:
    """Rules a scenario file alone decides: Neuron settings only on the neuron backend, and what vllm-neuron
    needs of the vLLM settings. Raises ValueError naming the field."""
    e = scenario.engine
    if scenario.backend != "neuron":
        if e.neuron is not None:
            raise ValueError(f"field 'engine.neuron' is set, but backend is '{scenario.backend}'; Neuron "
                             f"settings apply to backend: neuron only, remove the block")
        return
    if e.dtype == "auto":
        raise ValueError("field 'engine.dtype' is 'auto', which vllm-neuron maps to float32 "
                         "(TORCH_DTYPE_TO_NEURON_AMP); set bfloat16, float16 or float32 explicitly")
    if e.quantization:
        raise ValueError(f"field 'engine.quantization' is '{e.quantization}'; on Neuron, vLLM's quantization "
                         f"must stay unset (vLLM User Guide for NxD Inference, 'Quantization'): configure NxDI "
                         f"quantization in engine.neuron.extra_neuron_config")
    s = settings_of(e)
    for field in ("context_encoding_buckets", "token_generation_buckets"):
        buckets = getattr(s, field)
        if buckets is not None and buckets[-1] > e.max_model_len:
            raise ValueError(f"field 'engine.neuron.{field}' has {buckets[-1]} tokens, more than "
                             f"engine.max_model_len={e.max_model_len}; buckets must be <= max_model_len")


def check_resolved(scenario: Scenario, instance: Instance, model: ModelConfig, workload: Workload,
                   where: str) -> None:
    """Rules that need the instance, model and workload a neuron scenario resolves to. Raises ValueError."""
    if scenario.backend != "neuron":
        return
    e, s, cores = scenario.engine, settings_of(scenario.engine), chip(instance, where)
    lnc = logical_nc(s, cores)
    if lnc not in cores.lnc_values:
        raise ValueError(f"{where}: field 'engine.neuron.logical_nc_config' is {lnc}, but "
                         f"{instance.accelerator_name} supports {list(cores.lnc_values)}")
    tp = tp_degree(e.tensor_parallel_size, s, cores)
    logical_cores = cores.physical_cores_per_chip * instance.accelerator_count // lnc
    supported = cores.tp_degrees.get(lnc)
    if (supported and tp not in supported) or logical_cores % tp:
        valid = (f"NxDI supports TP degrees {list(supported)} here" if supported else
                 f"the TP degree must divide the instance's {logical_cores} logical NeuronCores")
        raise ValueError(
            f"{where}: field 'engine.tensor_parallel_size' is {e.tensor_parallel_size} chips, which at "
            f"{cores.physical_cores_per_chip // lnc} logical NeuronCores per chip (LNC={lnc}) is TP degree "
            f"{tp}; {valid}")
    w = workload
    for field, largest_needed, what in (
            ("context_encoding_buckets", w.input_tokens, f"workload '{w.name}' prompts of {w.input_tokens}"),
            ("token_generation_buckets", w.input_tokens + w.output_tokens,
             f"workload '{w.name}' sequences of {w.input_tokens}+{w.output_tokens}")):
        buckets = getattr(s, field)
        if buckets is not None and buckets[-1] < largest_needed:
            raise ValueError(f"{where}: field 'engine.neuron.{field}' ends at {buckets[-1]} tokens, too short "
                             f"for {what} tokens; add a bucket of at least {largest_needed}")
    if s.vision_neuron_config and not is_multimodal(model):
        raise ValueError(f"{where}: field 'engine.neuron.vision_neuron_config' is set, but model "
                         f"'{model.name}' ({architecture(model)}) has no vision encoder; image-to-text "
                         f"architectures: {', '.join(sorted(MULTIMODAL_ARCHITECTURES))}")
