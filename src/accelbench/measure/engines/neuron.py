"""Neuron backend: vLLM with the vllm-neuron platform plugin (NxD Inference) on Trainium2 / Inferentia2.

Owns the engine arguments and environment, the compiled-artifact cache keyed by them, and the host check.
The scenario's `engine.neuron` settings are typed and validated when it loads (config/neuron.py); what the
host has (devices, plugin, checkpoint, provenance) is neuron_host.py. Everything Neuron-specific is imported
or executed inside functions: this module loads on any host.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from accelbench.config import neuron as neuron_params
from accelbench.config import paths
from accelbench.config.neuron import NeuronSettings
from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError
from accelbench.measure.engines import neuron_host as host_facts
from accelbench.measure.engines.common import base_engine_kwargs
from accelbench.measure.engines.neuron_host import (
    neuron_facts as neuron_facts,  # the backend's provenance
)

COMPILED_MODEL_FILE = "model.pt"  # NxDI application_base: is_compiled(path) == isfile(path + "model.pt")
# libraries whose versions key the compiled artifacts: another version may compile other NEFFs
COMPILER_LIBRARIES = ("vllm", host_facts.PLUGIN_PACKAGE, "neuronx-distributed-inference", "neuronx-cc",
                      "torch-neuronx")


# --- settings, as the scenario's validated params give them ------------------------------------------

def settings(resolved: Resolved) -> NeuronSettings:
    """The scenario's `engine.neuron` block (validated when the scenario loaded; defaults where absent)."""
    return neuron_params.settings_of(resolved.scenario.engine)


def cores(resolved: Resolved) -> neuron_params.ChipCores:
    return neuron_params.HARDWARE[resolved.instance.accelerator_name]  # known: Resolved checked it


def logical_nc(resolved: Resolved) -> int:
    return neuron_params.logical_nc(settings(resolved), cores(resolved))


def tp_degree(resolved: Resolved) -> int:
    """NeuronCores the model is sharded over (config.neuron.tp_degree): whole chips x logical cores per chip."""
    return neuron_params.tp_degree(resolved.scenario.engine.tensor_parallel_size, settings(resolved), cores(resolved))


def override_neuron_config(resolved: Resolved) -> dict[str, Any]:
    """The `additional_config["override_neuron_config"]` dict the plugin merges over its defaults."""
    s, lnc = settings(resolved), logical_nc(resolved)
    text: dict[str, Any] = {"logical_nc_config": lnc, "enable_bucketing": s.enable_bucketing}
    if s.context_encoding_buckets:
        text["context_encoding_buckets"] = list(s.context_encoding_buckets)
    if s.token_generation_buckets:
        text["token_generation_buckets"] = list(s.token_generation_buckets)
    text.update(s.extra_neuron_config)
    if not neuron_params.is_multimodal(resolved.model):
        return text
    return {"text_neuron_config": text, "vision_neuron_config": {"logical_nc_config": lnc, **s.vision_neuron_config}}


# --- engine arguments and environment ---------------------------------------------------------------

def engine_kwargs(resolved: Resolved, model_dir: Path) -> dict[str, Any]:
    """vLLM engine arguments for vllm-neuron; `model_dir` (the dummy-weights config) is not used here."""
    e = resolved.scenario.engine
    # no JIT monitor: vllm-neuron 0.4.1 pins vLLM 0.13.0, whose EngineArgs predates the option, and NxDI
    # compiles everything inside engine start (compilation_facts)
    kwargs = base_engine_kwargs(resolved, host_facts.checkpoint_dir(resolved), jit_monitor=False)
    del kwargs["load_format"]  # NxDI loads the checkpoint whatever load_format says; do not pretend otherwise
    kwargs["tensor_parallel_size"] = tp_degree(resolved)  # the plugin sets NxDI's tp_degree from it
    # NxDI keeps a contiguous KV cache: with prefix caching off the plugin sets block_size = max_model_len
    # (platform.py, check_and_update_config), and the user guide's known issues ask for
    # num_gpu_blocks_override >= ceil(max_model_len / block_size) * max_num_seqs, which with that block size
    # is one block per sequence. vLLM V1 turns prefix caching on by default, which would switch NxDI to a
    # block KV layout.
    kwargs["enable_prefix_caching"] = False
    kwargs["num_gpu_blocks_override"] = e.max_num_seqs
    kwargs["additional_config"] = {"override_neuron_config": override_neuron_config(resolved)}
    return kwargs


def process_tag() -> str:
    """NEURON_PROCESS_TAG for this run's engine: neuron-monitor filters runtimes by it."""
    return f"accelbench-{os.getpid()}"


def artifacts_root() -> Path:
    root = os.environ.get(host_facts.ARTIFACTS_ENV)
    return Path(root) if root else paths.model_cache_dir().parent / "neuron-compiled"


def compile_key(resolved: Resolved) -> dict[str, Any]:
    """Everything compiled into the NEFFs: engine arguments (not the seed), LNC and library versions.

    The plugin loads whatever NEURON_COMPILED_ARTIFACTS holds and ignores a differing configuration
    (user guide, "Loading pre-compiled models"), so the folder must be keyed by the configuration.
    """
    kwargs = {k: v for k, v in engine_kwargs(resolved, Path()).items() if k not in ("seed", "disable_log_stats")}
    return {"engine_kwargs": kwargs, "logical_nc_config": logical_nc(resolved),
            "libraries": {name: host_facts.library_version(name) for name in COMPILER_LIBRARIES}}


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


# --- host check and compilation --------------------------------------------------------------------

def check_host(resolved: Resolved) -> dict[str, Any]:
    """Neuron devices and the plugin present, checkpoint usable; returns the host facts.

    The settings were validated when the scenario loaded (config/neuron.py).
    """
    from accelbench.core.memory import require_fit

    devices, neuron_ls_path = host_facts.device_files(), shutil.which("neuron-ls")
    version = host_facts.plugin_version()
    if not devices or version is None:
        raise AccelbenchError(
            f"scenario '{resolved.scenario.name}' needs the neuron backend ({resolved.instance.name}), but this "
            f"host cannot run it. Looked for: /dev/neuron* device files: "
            f"{', '.join(devices) if devices else 'none found'}; neuron-ls on PATH: "
            f"{neuron_ls_path or 'not found'}; the vllm_neuron package ({host_facts.PLUGIN_PACKAGE}): "
            f"{version or 'not installed'}. Run it on a {resolved.instance.name} with the Neuron driver and "
            f"environment-neuron.yml installed (docs/neuron.md), or choose the 'cpu' scenario here.")
    host_facts.check_plugin_version(version, resolved)
    listed = host_facts.neuron_ls()  # one entry per Neuron device; /dev/neuronN is the fallback count
    chips = len(listed) if isinstance(listed, list) else sum(d.removeprefix("/dev/neuron").isdigit() for d in devices)
    if chips < resolved.scenario.accelerators_used:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' uses {resolved.scenario.accelerators_used} "
                              f"Neuron devices, this host has {chips} ({resolved.instance.name} has "
                              f"{resolved.instance.accelerator_count})")
    require_fit(resolved)
    checkpoint = host_facts.check_checkpoint(resolved)
    artifacts = compiled_artifacts_dir(resolved)
    cached = artifacts_present(artifacts)
    return {
        "backend": "neuron",
        "devices": devices,
        "neuron_devices_seen": chips,
        "plugin": {"package": host_facts.PLUGIN_PACKAGE, "version": version},
        "accelerator": resolved.instance.accelerator_name,
        "physical_cores_per_chip": cores(resolved).physical_cores_per_chip,
        "logical_nc_config": logical_nc(resolved),
        "tp_degree": tp_degree(resolved),
        "override_neuron_config": override_neuron_config(resolved),
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

