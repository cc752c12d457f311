"""What a Neuron host has: devices, the vllm-neuron plugin and its version, the model checkpoint, and the
Neuron provenance facts (neuron-ls, SDK, compiler, runtime and library versions) a manifest records.

Nothing Neuron-specific is imported: this module loads on any host and only looks.
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

from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError

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

CHECKPOINTS_ENV = "ACCELBENCH_NEURON_CHECKPOINTS_DIR"
ARTIFACTS_ENV = "ACCELBENCH_NEURON_ARTIFACTS_DIR"
# Shape keys compared between the params model and the checkpoint's config.json: a checkpoint of another
# model would be measured under this model's name otherwise.
SHAPE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "vocab_size", "num_local_experts", "num_experts_per_tok")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")  # NxD Inference feature guide, "Checkpoint support"


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




# --- devices and plugin ------------------------------------------------------------------------------

def device_files() -> list[str]:
    return sorted(glob.glob("/dev/neuron*"))


def plugin_version() -> str | None:
    return library_version(PLUGIN_PACKAGE)


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
            f"add it to KNOWN_PLUGIN_VERSIONS in src/accelbench/measure/engines/neuron_host.py")
    parts = tuple(int(p) for p in release.split(".")[:2])
    if parts >= TRN2_ONLY_FROM and resolved.instance.accelerator_name != "AWS Trainium2":
        raise AccelbenchError(
            f"{PLUGIN_PACKAGE} {version} ({KNOWN_PLUGIN_VERSIONS[release]}) does not support "
            f"{resolved.instance.accelerator_name}: from Neuron 2.29, NxD Inference runs on Trn2 and newer only; "
            f"pin Neuron SDK 2.28 ({PLUGIN_PACKAGE}==0.4.1, environment-neuron.yml) for {resolved.instance.name}")


# --- provenance --------------------------------------------------------------------------------------

NEURON_LIBRARIES = ("vllm", PLUGIN_PACKAGE, "neuronx-distributed-inference", "neuronx-distributed",
                    "neuronx-cc", "torch-neuronx", "torch", "libneuronxla", "nki", "transformers")
NEURON_SYSTEM_PACKAGES = ("aws-neuronx-runtime-lib", "aws-neuronx-dkms", "aws-neuronx-collectives",
                          "aws-neuronx-tools")
NEURON_ENV_VARS = ("NEURON_CC_FLAGS", "NEURON_COMPILE_CACHE_URL", "NEURON_COMPILED_ARTIFACTS",
                   "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES",
                   "VLLM_NEURON_FRAMEWORK", CHECKPOINTS_ENV, ARTIFACTS_ENV)


def library_version(name: str) -> str | None:
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


def neuron_ls() -> Any:
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
        "neuron_ls": neuron_ls(),
        "neuronx_cc_version": _run(["neuronx-cc", "--version"]),
        "libraries": {name: library_version(name) for name in NEURON_LIBRARIES},
        "system_packages": {name: _system_package_version(name) for name in NEURON_SYSTEM_PACKAGES},
        "plugin": {"package": PLUGIN_PACKAGE, "version": library_version(PLUGIN_PACKAGE)},
        "env": {name: os.environ[name] for name in NEURON_ENV_VARS if name in os.environ},
    }
