"""Neuron backend: vLLM with the vllm-neuron platform plugin (NxD Inference) on Trainium2 / Inferentia2.

Owns the scenario's `engine.neuron` settings, the host check (devices, plugin version, checkpoint), the
engine arguments and environment, the compiled-artifact cache, and the Neuron provenance facts.
Everything Neuron-specific is imported or executed inside functions: this module loads on any host.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from accelbench.config import paths
from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError
from accelbench.measure.engines.common import base_engine_kwargs

# --- what this code was written against ----------------------------------------------------------------
# The NxD Inference based vllm-neuron plugin (github.com/vllm-project/vllm-neuron, releases before the
# NxDI-free rewrite). Sources, read 2026-11:
#   - vLLM User Guide for NxD Inference, "Versioning" and "Feature Configuration":
#     https://awsdocs-neuron.readthedocs-hosted.com/en/v2.28.1/libraries/nxd-inference/developer_guides/vllm-user-guide-v1.html
#   - NxD Inference component release notes (plugin versions per Neuron release, Inf2/Trn1 dropped in 2.29):
#     https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.1/release-notes/components/nxd-inference.html
#   - the plugin's loader, vllm_neuron/worker/neuronx_distributed_model_loader.py (get_neuron_model,
#     _get_default_neuron_config, _get_compiled_model_path) and vllm_neuron/platform.py.
KNOWN_PLUGIN_VERSIONS: dict[str, str] = {
    "0.2.0": "Neuron SDK 2.26.1, vLLM 0.11.0, branch release-0.2.x",
    "0.2.1": "Neuron SDK 2.27, vLLM 0.11.0, branch 0.2.1+lts",
    "0.4.0": "Neuron SDK 2.28.0, vLLM 0.13.0",
    "0.4.1": "Neuron SDK 2.28.0, vLLM 0.13.0, PyTorch 2.9; the release this code targets",
    "0.5.0": "Neuron SDK 2.29.0, vLLM 0.16.0, PyTorch 2.9.1; Trn2 and newer only",
    "0.6.0": "Neuron SDK 2.30.0; Trn2 and newer only",
}
# Neuron 2.29 release notes, breaking changes: "NxD Inference models are now only supported on Trn2 and
# newer hardware. Customers who require ... Trn1 or Inf2 instances should pin to release 2.28."
TRN2_ONLY_FROM = (0, 5)
PLUGIN_PACKAGE = "vllm-neuron"

# Settings the plugin derives from vLLM's own arguments (_get_default_neuron_config) or that this module
# sets from a typed field: an extra NxDI key that shadows one of them is rejected, never merged.
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
HARDWARE: dict[str, dict[str, Any]] = {
    "AWS Trainium2": {"physical_cores_per_chip": 8, "lnc_values": (1, 2), "default_lnc": 2,
                      "tp_degrees": {2: (1, 2, 4, 8, 16, 32, 64)}},
    "AWS Inferentia2": {"physical_cores_per_chip": 2, "lnc_values": (1,), "default_lnc": 1,
                        "tp_degrees": {1: (1, 2, 4, 8, 24)}},
}

CHECKPOINTS_ENV = "ACCELBENCH_NEURON_CHECKPOINTS_DIR"
ARTIFACTS_ENV = "ACCELBENCH_NEURON_ARTIFACTS_DIR"
COMPILED_MODEL_FILE = "model.pt"  # NxDI application_base: is_compiled(path) == isfile(path + "model.pt")
# Shape keys compared between the params model and the checkpoint's config.json: a checkpoint of another
# model would be measured under this model's name otherwise.
SHAPE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "vocab_size", "num_local_experts", "num_experts_per_tok")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")  # NxD Inference feature guide, "Checkpoint support"

Json = int | float | bool | str | None | list[Any] | dict[str, Any]


class NeuronSettings(BaseModel):
    """A scenario's `engine.neuron` block: NxD Inference settings vLLM has no argument for.

    Batch size, sequence length, TP degree and dtype come from the scenario's vLLM settings
    (max_num_seqs, max_model_len, tensor_parallel_size x NeuronCores per chip, dtype), exactly as the
    plugin derives them; these fields only add what vLLM cannot express.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    logical_nc_config: int | None = Field(
        None, description="physical NeuronCores per logical NeuronCore (LNC); None = the chip's default "
                          "(Trainium2: 2, Inferentia2: 1)")
    enable_bucketing: bool = Field(True, description="compile one graph per bucket instead of one padded "
                                                     "to the longest length")
    context_encoding_buckets: list[int] | None = Field(
        None, description="prefill graph lengths, tokens of prompt, ascending; None = NxDI's powers of two "
                          "from 128 to max_model_len")
    token_generation_buckets: list[int] | None = Field(
        None, description="decode graph lengths, tokens of prompt + generated so far, ascending; None = "
                          "NxDI's powers of two from 128 to max_model_len")
    extra_neuron_config: dict[str, Json] = Field(
        default_factory=dict, description="further NxDI NeuronConfig fields for the (text) model, e.g. "
                                          "fused_qkv; keys derived from vLLM settings are rejected")
    vision_neuron_config: dict[str, Json] = Field(
        default_factory=dict, description="NxDI NeuronConfig fields for an image-to-text model's vision "
                                          "encoder (Llama 4); empty = the plugin's defaults")

    @field_validator("context_encoding_buckets", "token_generation_buckets")
    @classmethod
    def _ascending(cls, v: list[int] | None) -> list[int] | None:
        if v is None:
            return v
        if not v or any(b < 1 for b in v):
            raise ValueError(f"buckets must be a non-empty list of lengths >= 1 token, got {v}")
        if any(prev >= nxt for nxt, prev in zip(v[1:], v)):
            raise ValueError(f"buckets must be strictly ascending, got {v}")
        return v


# --- settings, validated against the scenario ---------------------------------------------------------

def _where(resolved: Resolved) -> str:
    return f"params/scenarios/{resolved.scenario.name}.yaml"


def hardware(resolved: Resolved) -> dict[str, Any]:
    name = resolved.instance.accelerator_name
    if name not in HARDWARE:
        raise AccelbenchError(f"{_where(resolved)}: instance {resolved.instance.name} has accelerator "
                              f"'{name}', which the neuron backend has no core counts for; known: "
                              f"{', '.join(HARDWARE)} (HARDWARE in src/accelbench/engines/neuron.py)")
    return HARDWARE[name]


def settings(resolved: Resolved) -> NeuronSettings:
    """The scenario's `engine.neuron` block, validated alone and against the rest of the scenario."""
    where = _where(resolved)
    try:
        s = NeuronSettings(**resolved.scenario.engine.neuron)
    except ValidationError as e:
        valid = ", ".join(NeuronSettings.model_fields)
        problems = "; ".join(f"field 'engine.neuron.{'.'.join(map(str, err['loc']))}': {err['msg']}"
                             for err in e.errors())
        raise AccelbenchError(f"{where}: {problems} (valid engine.neuron fields: {valid})") from None
    e, w, hw = resolved.scenario.engine, resolved.workload, hardware(resolved)
    lnc = logical_nc(resolved, s)
    if lnc not in hw["lnc_values"]:
        raise AccelbenchError(f"{where}: field 'engine.neuron.logical_nc_config' is {lnc}, but "
                              f"{resolved.instance.accelerator_name} supports {list(hw['lnc_values'])}")
    tp = tp_degree(resolved, s)
    cores = hw["physical_cores_per_chip"] * resolved.instance.accelerator_count // lnc
    supported = hw["tp_degrees"].get(lnc)
    if (supported and tp not in supported) or cores % tp:
        valid = (f"NxDI supports TP degrees {list(supported)} here" if supported else
                 f"the TP degree must divide the instance's {cores} logical NeuronCores")
        raise AccelbenchError(
            f"{where}: field 'engine.tensor_parallel_size' is {e.tensor_parallel_size} chips, which at "
            f"{hw['physical_cores_per_chip'] // lnc} logical NeuronCores per chip (LNC={lnc}) is TP degree "
            f"{tp}; {valid}")
    if e.dtype == "auto":
        raise AccelbenchError(f"{where}: field 'engine.dtype' is 'auto', which vllm-neuron maps to float32 "
                              f"(TORCH_DTYPE_TO_NEURON_AMP); set bfloat16, float16 or float32 explicitly")
    if e.quantization:
        raise AccelbenchError(f"{where}: field 'engine.quantization' is '{e.quantization}'; on Neuron, vLLM's "
                              f"quantization must stay unset (vLLM User Guide for NxD Inference, "
                              f"'Quantization'): configure NxDI quantization in engine.neuron.extra_neuron_config")
    for field, largest_needed, what in (
            ("context_encoding_buckets", w.input_tokens, f"workload '{w.name}' prompts of {w.input_tokens}"),
            ("token_generation_buckets", w.input_tokens + w.output_tokens,
             f"workload '{w.name}' sequences of {w.input_tokens}+{w.output_tokens}")):
        buckets = getattr(s, field)
        if buckets is None:
            continue
        if not s.enable_bucketing:
            raise AccelbenchError(f"{where}: field 'engine.neuron.{field}' is set but enable_bucketing is "
                                  f"false, so NxDI would ignore it; remove it or enable bucketing")
        if buckets[-1] > e.max_model_len:
            raise AccelbenchError(f"{where}: field 'engine.neuron.{field}' has {buckets[-1]} tokens, more than "
                                  f"engine.max_model_len={e.max_model_len}; buckets must be <= max_model_len")
        if buckets[-1] < largest_needed:
            raise AccelbenchError(f"{where}: field 'engine.neuron.{field}' ends at {buckets[-1]} tokens, too "
                                  f"short for {what} tokens; add a bucket of at least {largest_needed}")
    if shadowed := sorted(DERIVED_NEURON_KEYS & set(s.extra_neuron_config)):
        raise AccelbenchError(f"{where}: field 'engine.neuron.extra_neuron_config.{shadowed[0]}' shadows a setting "
                              f"derived from the scenario's vLLM settings or a typed engine.neuron field; "
                              f"set it there instead (derived keys: {', '.join(sorted(DERIVED_NEURON_KEYS))})")
    if s.vision_neuron_config and not is_multimodal(resolved):
        raise AccelbenchError(f"{where}: field 'engine.neuron.vision_neuron_config' is set, but model "
                              f"'{resolved.model.name}' ({architecture(resolved)}) has no vision encoder; "
                              f"image-to-text architectures: {', '.join(sorted(MULTIMODAL_ARCHITECTURES))}")
    if shadowed := sorted(VISION_DERIVED_KEYS & set(s.vision_neuron_config)):
        raise AccelbenchError(f"{where}: field 'engine.neuron.vision_neuron_config.{shadowed[0]}' must match the "
                              f"text model's and is set from the scenario; remove it")
    return s


def logical_nc(resolved: Resolved, s: NeuronSettings | None = None) -> int:
    s = s or settings(resolved)
    return s.logical_nc_config or hardware(resolved)["default_lnc"]


def tp_degree(resolved: Resolved, s: NeuronSettings | None = None) -> int:
    """NeuronCores the model is sharded over: the scenario shards over whole chips, each with
    physical_cores_per_chip / LNC logical cores (trn2.48xlarge: 16 chips x 4 = 64; inf2.48xlarge: 12 x 2 = 24)."""
    s = s or settings(resolved)
    hw = hardware(resolved)
    return resolved.scenario.engine.tensor_parallel_size * hw["physical_cores_per_chip"] // logical_nc(resolved, s)


def architecture(resolved: Resolved) -> str:
    return (resolved.model.hf_config.get("architectures") or ["?"])[0]


def is_multimodal(resolved: Resolved) -> bool:
    return architecture(resolved) in MULTIMODAL_ARCHITECTURES


def override_neuron_config(resolved: Resolved, s: NeuronSettings | None = None) -> dict[str, Any]:
    """The `additional_config["override_neuron_config"]` dict the plugin merges over its defaults."""
    s = s or settings(resolved)
    lnc = logical_nc(resolved, s)
    text: dict[str, Any] = {"logical_nc_config": lnc, "enable_bucketing": s.enable_bucketing}
    if s.context_encoding_buckets:
        text["context_encoding_buckets"] = list(s.context_encoding_buckets)
    if s.token_generation_buckets:
        text["token_generation_buckets"] = list(s.token_generation_buckets)
    text.update(s.extra_neuron_config)
    if not is_multimodal(resolved):
        return text
    return {"text_neuron_config": text, "vision_neuron_config": {"logical_nc_config": lnc, **s.vision_neuron_config}}


# --- checkpoint ------------------------------------------------------------------------------------------

def checkpoint_dir(resolved: Resolved) -> Path:
    """Where the model's Hugging Face checkpoint lies: $ACCELBENCH_NEURON_CHECKPOINTS_DIR/<model name>.

    vllm-neuron hands the model path to NxD Inference, which compiles and loads weights from the checkpoint
    files; it never consults vLLM's load_format, so the dummy weights the other backends use do not exist here.
    """
    root = os.environ.get(CHECKPOINTS_ENV)
    if not root:
        raise AccelbenchError(
            f"the neuron backend needs model weights: vllm-neuron (NxD Inference) compiles and loads from a "
            f"Hugging Face checkpoint and ignores vLLM's load_format='dummy'. Set {CHECKPOINTS_ENV} to a folder "
            f"holding '{resolved.model.name}/' (config.json, *.safetensors, tokenizer files); see docs/neuron.md")
    return Path(root) / resolved.model.name


def check_checkpoint(resolved: Resolved) -> dict[str, Any]:
    """The checkpoint exists, has weights and a tokenizer, and has the params model's shape."""
    path = checkpoint_dir(resolved)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise AccelbenchError(f"checkpoint for model '{resolved.model.name}' not found: {config_file} does not "
                              f"exist ({CHECKPOINTS_ENV}={os.environ.get(CHECKPOINTS_ENV)})")
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        raise AccelbenchError(f"checkpoint {path} has no weights: expected one of {', '.join(WEIGHT_FILES)}")
    if not any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        # the plugin's Llama 4 loader calls AutoTokenizer.from_pretrained(model path)
        raise AccelbenchError(f"checkpoint {path} has no tokenizer files (tokenizer.json / tokenizer_config.json)")
    found = json.loads(config_file.read_text())
    want_cfg = resolved.model.hf_config.get("text_config", resolved.model.hf_config)
    found_cfg = found.get("text_config", found)
    for key in SHAPE_KEYS:
        if key in want_cfg and key in found_cfg and want_cfg[key] != found_cfg[key]:
            raise AccelbenchError(
                f"checkpoint {path} is not model '{resolved.model.name}': its config.json has {key}="
                f"{found_cfg[key]} but params/models/{resolved.model.name}.yaml has {want_cfg[key]}")
    want_arch = resolved.model.hf_config.get("architectures")
    if found.get("architectures") != want_arch:
        raise AccelbenchError(f"checkpoint {path} has architectures {found.get('architectures')} but "
                              f"params/models/{resolved.model.name}.yaml has {want_arch}")
    return {"path": str(path), "config_sha256": hashlib.sha256(config_file.read_bytes()).hexdigest()}


# --- engine arguments and environment ---------------------------------------------------------------

def engine_kwargs(resolved: Resolved, model_dir: Path) -> dict[str, Any]:
    """vLLM engine arguments for vllm-neuron; `model_dir` (the dummy-weights config) is not used here."""
    s = settings(resolved)
    e = resolved.scenario.engine
    # no JIT monitor: vllm-neuron 0.4.1 pins vLLM 0.13.0, whose EngineArgs predates the option, and NxDI
    # compiles everything inside engine start (compilation_facts)
    kwargs = base_engine_kwargs(resolved, checkpoint_dir(resolved), jit_monitor=False)
    del kwargs["load_format"]  # NxDI loads the checkpoint whatever load_format says; do not pretend otherwise
    kwargs["tensor_parallel_size"] = tp_degree(resolved, s)  # the plugin sets NxDI's tp_degree from it
    # NxDI keeps a contiguous KV cache: with prefix caching off the plugin sets block_size = max_model_len
    # (platform.py, check_and_update_config), and the user guide's known issues ask for
    # num_gpu_blocks_override >= ceil(max_model_len / block_size) * max_num_seqs, which with that block size
    # is one block per sequence. vLLM V1 turns prefix caching on by default, which would switch NxDI to a
    # block KV layout.
    kwargs["enable_prefix_caching"] = False
    kwargs["num_gpu_blocks_override"] = e.max_num_seqs
    kwargs["additional_config"] = {"override_neuron_config": override_neuron_config(resolved, s)}
    return kwargs


def process_tag() -> str:
    """NEURON_PROCESS_TAG for this run's engine: neuron-monitor filters runtimes by it."""
    return f"accelbench-{os.getpid()}"


def artifacts_root() -> Path:
    root = os.environ.get(ARTIFACTS_ENV)
    return Path(root) if root else paths.model_cache_dir().parent / "neuron-compiled"


def compile_key(resolved: Resolved) -> dict[str, Any]:
    """Everything compiled into the NEFFs: engine arguments (not the seed), LNC and library versions.

    The plugin loads whatever NEURON_COMPILED_ARTIFACTS holds and ignores a differing configuration
    (user guide, "Loading pre-compiled models"), so the folder must be keyed by the configuration.
    """
    kwargs = {k: v for k, v in engine_kwargs(resolved, Path()).items() if k not in ("seed", "disable_log_stats")}
    return {"engine_kwargs": kwargs, "logical_nc_config": logical_nc(resolved),
            "libraries": {name: _version(name) for name in
                          ("vllm", PLUGIN_PACKAGE, "neuronx-distributed-inference", "neuronx-cc", "torch-neuronx")}}


def compiled_artifacts_dir(resolved: Resolved) -> Path:
    digest = hashlib.sha256(json.dumps(compile_key(resolved), sort_keys=True, default=str).encode()).hexdigest()
    return artifacts_root() / resolved.model.name / digest[:16]


def engine_env(resolved: Resolved) -> dict[str, str]:
    return {
        "NEURON_COMPILED_ARTIFACTS": str(compiled_artifacts_dir(resolved)),
        "NEURON_LOGICAL_NC_CONFIG": str(logical_nc(resolved)),  # NxDI API guide: LNC is also read from here
        "NEURON_PROCESS_TAG": process_tag(),
        "VLLM_NEURON_FRAMEWORK": "neuronx-distributed-inference",
    }


def artifacts_present(path: Path) -> bool:
    return (Path(path) / COMPILED_MODEL_FILE).is_file()


# --- host check -----------------------------------------------------------------------------------------

def device_files() -> list[str]:
    return sorted(glob.glob("/dev/neuron*"))


def plugin_version() -> str | None:
    return _version(PLUGIN_PACKAGE)


def check_plugin_version(version: str, resolved: Resolved) -> None:
    """Refuse a plugin this code was not written against, naming the ones it was."""
    release = version.split("+", 1)[0]
    known = "; ".join(f"{v} ({note})" for v, note in KNOWN_PLUGIN_VERSIONS.items())
    if release.count(".") >= 5:  # e.g. 0.24.0.1.1.0: <vLLM version>.<plugin version>
        raise AccelbenchError(
            f"{PLUGIN_PACKAGE} {version} is the NxD-Inference-free vLLM Neuron plugin (Neuron 2.31+, Trn2/Trn3 "
            f"only), configured through additional_config['neuron_config'] with other keys; this backend drives "
            f"the NxD Inference plugin and was written against: {known}. Install {PLUGIN_PACKAGE}==0.4.1 "
            f"(Neuron SDK 2.28, see environment-neuron.yml)")
    if release not in KNOWN_PLUGIN_VERSIONS:
        raise AccelbenchError(
            f"{PLUGIN_PACKAGE} {version} is a version this backend does not know; it was written against: "
            f"{known}. Check the plugin's additional_config/override_neuron_config contract for {version}, then "
            f"add it to KNOWN_PLUGIN_VERSIONS in src/accelbench/engines/neuron.py")
    parts = tuple(int(p) for p in release.split(".")[:2])
    if parts >= TRN2_ONLY_FROM and resolved.instance.accelerator_name != "AWS Trainium2":
        raise AccelbenchError(
            f"{PLUGIN_PACKAGE} {version} ({KNOWN_PLUGIN_VERSIONS[release]}) does not support "
            f"{resolved.instance.accelerator_name}: from Neuron 2.29, NxD Inference runs on Trn2 and newer only; "
            f"pin Neuron SDK 2.28 ({PLUGIN_PACKAGE}==0.4.1, environment-neuron.yml) for {resolved.instance.name}")


def check_host(resolved: Resolved) -> dict[str, Any]:
    """Settings valid, Neuron devices and the plugin present, checkpoint usable; returns the host facts."""
    from accelbench.core.memory import require_fit

    s = settings(resolved)
    devices, neuron_ls_path, version = device_files(), shutil.which("neuron-ls"), plugin_version()
    if not devices or version is None:
        raise AccelbenchError(
            f"scenario '{resolved.scenario.name}' needs the neuron backend ({resolved.instance.name}), but this "
            f"host cannot run it. Looked for: /dev/neuron* device files: "
            f"{', '.join(devices) if devices else 'none found'}; neuron-ls on PATH: "
            f"{neuron_ls_path or 'not found'}; the vllm_neuron package ({PLUGIN_PACKAGE}): "
            f"{version or 'not installed'}. Run it on a {resolved.instance.name} with the Neuron driver and "
            f"environment-neuron.yml installed (docs/neuron.md), or choose the 'cpu' scenario here.")
    check_plugin_version(version, resolved)
    listed = _neuron_ls()  # one entry per Neuron device; /dev/neuronN is the fallback count
    chips = len(listed) if isinstance(listed, list) else sum(d.removeprefix("/dev/neuron").isdigit() for d in devices)
    if chips < resolved.scenario.accelerators_used:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' uses {resolved.scenario.accelerators_used} "
                              f"Neuron devices, this host has {chips} ({resolved.instance.name} has "
                              f"{resolved.instance.accelerator_count})")
    require_fit(resolved)
    checkpoint = check_checkpoint(resolved)
    artifacts = compiled_artifacts_dir(resolved)
    cached = artifacts_present(artifacts)
    hw = hardware(resolved)
    lnc = logical_nc(resolved, s)
    return {
        "backend": "neuron",
        "devices": devices,
        "neuron_devices_seen": chips,
        "plugin": {"package": PLUGIN_PACKAGE, "version": version},
        "accelerator": resolved.instance.accelerator_name,
        "physical_cores_per_chip": hw["physical_cores_per_chip"],
        "logical_nc_config": lnc,
        "tp_degree": tp_degree(resolved, s),
        "override_neuron_config": override_neuron_config(resolved, s),
        "checkpoint": checkpoint,
        "neuron_process_tag": process_tag(),
        "compiled_artifacts_dir": str(artifacts),
        "compiled_artifacts_cached": cached,
        # NxDI compiles inside vLLM engine start when the folder holds no model.pt: engine_start_s then
        # counts compilation (minutes to hours) as well as loading; compilation_facts() splits the two.
        "engine_start_includes_compilation": not cached,
    }


def compilation_facts(host: dict[str, Any], engine_start_wall_s: float | None = None) -> dict[str, Any]:
    """After engine start: whether it compiled or hit the cache, and an estimate of the compile time.

    `engine_start_wall_s` is time.time() taken just before the engine started. NxDI writes model.pt when
    compilation ends, so its modification time minus the start estimates compile seconds; the rest of
    engine_start_s is loading weights and warm-up. An estimate from a file time, labelled as such.
    """
    model_file = Path(host["compiled_artifacts_dir"]) / COMPILED_MODEL_FILE
    written = model_file.is_file()
    facts: dict[str, Any] = {"compiled_artifacts_dir": host["compiled_artifacts_dir"],
                             "cache_hit": bool(host["compiled_artifacts_cached"]),
                             "engine_start_includes_compilation": bool(host["engine_start_includes_compilation"]),
                             "artifacts_present_after_start": written, "compile_s_estimate": None}
    if written and engine_start_wall_s is not None and not host["compiled_artifacts_cached"]:
        finished = model_file.stat().st_mtime
        if finished >= engine_start_wall_s:
            facts["compile_s_estimate"] = finished - engine_start_wall_s
    return facts


# --- provenance --------------------------------------------------------------------------------------

NEURON_LIBRARIES = ("vllm", PLUGIN_PACKAGE, "neuronx-distributed-inference", "neuronx-distributed",
                    "neuronx-cc", "torch-neuronx", "torch", "libneuronxla", "nki", "transformers")
NEURON_SYSTEM_PACKAGES = ("aws-neuronx-runtime-lib", "aws-neuronx-dkms", "aws-neuronx-collectives",
                          "aws-neuronx-tools")
NEURON_ENV_VARS = ("NEURON_CC_FLAGS", "NEURON_COMPILE_CACHE_URL", "NEURON_COMPILED_ARTIFACTS",
                   "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES",
                   "VLLM_NEURON_FRAMEWORK", CHECKPOINTS_ENV, ARTIFACTS_ENV)


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _run(cmd: list[str], timeout_s: float = 60) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=True).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return None


def _neuron_ls() -> Any:
    out = _run(["neuron-ls", "--json-output"])
    try:
        return json.loads(out) if out else None
    except json.JSONDecodeError:
        return {"unparsed": out}


def _system_package_version(name: str) -> str | None:
    return (_run(["dpkg-query", "-W", "-f", "${Version}", name])
            or _run(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", name]))


def neuron_facts() -> dict[str, Any] | None:
    """Neuron devices, neuron-ls, SDK/compiler/runtime/plugin versions; None where no /dev/neuron* exists."""
    devices = device_files()
    if not devices:
        return None
    return {
        "devices": devices,
        "collected_at_unix_s": time.time(),
        "neuron_ls": _neuron_ls(),
        "neuronx_cc_version": _run(["neuronx-cc", "--version"]),
        "libraries": {name: _version(name) for name in NEURON_LIBRARIES},
        "system_packages": {name: _system_package_version(name) for name in NEURON_SYSTEM_PACKAGES},
        "plugin": {"package": PLUGIN_PACKAGE, "version": _version(PLUGIN_PACKAGE)},
        "env": {name: os.environ[name] for name in NEURON_ENV_VARS if name in os.environ},
    }
