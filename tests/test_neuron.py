"""The neuron backend: engine arguments against vllm-neuron's documented contract, settings validated when
the scenario loads, host detection, neuron-monitor parsing, provenance. Only the last test needs Neuron hardware."""

from __future__ import annotations

import glob
import json
import sys
import time
from pathlib import Path

import pytest
import yaml

import accelbench
from accelbench.config import params
from accelbench.config.neuron import NeuronSettings
from accelbench.errors import AccelbenchError
from accelbench.measure import neuron_monitor
from accelbench.measure.engines import neuron, neuron_host
from accelbench.store.manifest import RunManifest

DATA = Path(__file__).parent / "data" / "neuron_monitor"
HAS_NEURON = bool(glob.glob("/dev/neuron*"))


@pytest.fixture
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "checkpoints"
    root.mkdir()
    monkeypatch.setenv(neuron_host.CHECKPOINTS_ENV, str(root))
    monkeypatch.setenv(neuron_host.ARTIFACTS_ENV, str(tmp_path / "compiled"))
    return root


def edit_engine(tree: Path, scenario: str, **engine) -> None:
    path = tree / "scenarios" / f"{scenario}.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"].update(engine)
    path.write_text(yaml.safe_dump(data))


def edit_neuron(tree: Path, scenario: str, **fields) -> None:
    path = tree / "scenarios" / f"{scenario}.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["neuron"].update(fields)
    path.write_text(yaml.safe_dump(data))


def error_of(fn, *args) -> str:
    with pytest.raises(AccelbenchError) as e:
        fn(*args)
    return str(e.value)


# --- engine arguments: the plugin's documented names and ranges ----------------------------------------
# Contract sources (read 2026-11):
#  [UG] vLLM User Guide for NxD Inference: "Use the additional_config field to provide an
#       override_neuron_config dictionary"; known issue 2: num_gpu_blocks_override >=
#       ceil(max_model_len // block_size) * max_num_seqs; online example passes --no-enable-prefix-caching.
#       https://awsdocs-neuron.readthedocs-hosted.com/en/v2.28.1/libraries/nxd-inference/developer_guides/vllm-user-guide-v1.html
#  [API] NxD Inference API reference, NeuronConfig: logical_nc_config, enable_bucketing,
#       context_encoding_buckets, token_generation_buckets; tp_degree trn2 (LNC=2) 1..64, inf2 1,2,4,8,24.
#       https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/api-guides/api-guide.html
#  [LOADER] vllm-project/vllm-neuron vllm_neuron/worker/neuronx_distributed_model_loader.py: tp_degree =
#       tensor_parallel_size; Llama4ForConditionalGeneration overrides may only hold text_neuron_config and
#       vision_neuron_config.

BUCKETS = {"context_encoding_buckets": [512, 1024, 2048, 4096], "token_generation_buckets": [1024, 2048, 4096]}


def test_neuron_engine_kwargs_trn2_match_the_plugin_contract(checkpoints):
    kwargs = neuron.engine_kwargs(params.resolve("trn2"), Path("/unused"))
    assert kwargs["model"] == str(checkpoints / "llama-4-scout")
    assert "load_format" not in kwargs and "jit_monitor_verbose" not in kwargs
    assert kwargs["tensor_parallel_size"] == 64  # 16 Trainium2 x 8 physical cores / LNC 2 [API]
    assert (kwargs["dtype"], kwargs["max_model_len"], kwargs["max_num_seqs"]) == ("bfloat16", 4096, 64)
    assert kwargs["enable_prefix_caching"] is False  # [UG]
    assert kwargs["num_gpu_blocks_override"] == 64  # ceil(4096 / 4096) * 64 [UG]
    assert kwargs["limit_mm_per_prompt"] == {"image": 0}
    assert kwargs["additional_config"] == {"override_neuron_config": {  # [UG], [LOADER]
        "text_neuron_config": {"logical_nc_config": 2, "enable_bucketing": True, **BUCKETS},
        "vision_neuron_config": {"logical_nc_config": 2}}}


def test_neuron_engine_kwargs_inf2_match_the_plugin_contract(checkpoints):
    kwargs = neuron.engine_kwargs(params.resolve("inf2"), Path("/unused"))
    assert kwargs["tensor_parallel_size"] == 24  # 12 Inferentia2 x 2 cores, LNC 1 [API]
    assert kwargs["num_gpu_blocks_override"] == 64
    assert kwargs["additional_config"] == {"override_neuron_config": {
        "text_neuron_config": {"logical_nc_config": 1, "enable_bucketing": True, **BUCKETS},
        "vision_neuron_config": {"logical_nc_config": 1}}}


def test_neuron_text_model_override_is_flat(checkpoints):
    # a text-only architecture (LlamaForCausalLM): the plugin merges override_neuron_config directly [LOADER]
    r = params.resolve("trn2", model="llama-3.1-8b")
    override = neuron.engine_kwargs(r, Path("/unused"))["additional_config"]["override_neuron_config"]
    assert override == {"logical_nc_config": 2, "enable_bucketing": True, **BUCKETS}


def test_neuron_engine_env_points_at_a_config_keyed_artifact_folder(checkpoints, tmp_path):
    r = params.resolve("trn2")
    env = neuron.engine_env(r)
    assert Path(env["NEURON_COMPILED_ARTIFACTS"]).parent == tmp_path / "compiled" / "llama-4-scout"
    assert env["NEURON_LOGICAL_NC_CONFIG"] == "2" and env["NEURON_PROCESS_TAG"] == neuron.process_tag()
    # the workload's seed does not change what is compiled; the buckets do
    assert neuron.compiled_artifacts_dir(params.resolve("trn2", workload="seed-512-256")) == \
        neuron.compiled_artifacts_dir(r)
    assert neuron.compiled_artifacts_dir(params.resolve("inf2")) != neuron.compiled_artifacts_dir(r)


def test_neuron_artifacts_dir_changes_with_buckets(checkpoints, tree):
    before = neuron.compiled_artifacts_dir(params.resolve("trn2"))
    edit_neuron(tree, "trn2", token_generation_buckets=[1024, 4096])
    assert neuron.compiled_artifacts_dir(params.resolve("trn2")) != before


def test_neuron_engine_kwargs_need_a_checkpoint_folder(monkeypatch):
    monkeypatch.delenv(neuron_host.CHECKPOINTS_ENV, raising=False)
    msg = error_of(neuron.engine_kwargs, params.resolve("trn2"), Path("/unused"))
    assert neuron_host.CHECKPOINTS_ENV in msg and "load_format='dummy'" in msg


# --- settings validation: when the scenario loads, naming file, field and what is valid -----------------

def test_neuron_settings_of_the_real_files_validate():
    for name in ("trn2", "inf2"):
        s = neuron.settings(params.resolve(name))
        assert isinstance(s, NeuronSettings)
        assert s.enable_bucketing and s.context_encoding_buckets == [512, 1024, 2048, 4096]


def test_neuron_settings_fields_say_what_they_hold():
    assert all(f.description for f in NeuronSettings.model_fields.values())
    assert NeuronSettings.model_config["extra"] == "forbid" and NeuronSettings.model_config["frozen"]


def test_neuron_unknown_key_is_refused_when_the_scenario_loads(tree):
    edit_neuron(tree, "trn2", tp_degre=64)
    msg = error_of(params.load_scenario_file, "trn2")
    assert "params/scenarios/trn2.yaml" in msg and "engine.neuron.tp_degre" in msg
    assert "context_encoding_buckets" in msg  # lists the valid fields


def test_neuron_wrong_type_is_refused_when_the_scenario_loads(tree):
    edit_neuron(tree, "trn2", enable_bucketing="sometimes")
    msg = error_of(params.load_scenario_file, "trn2")
    assert "trn2.yaml" in msg and "engine.neuron.enable_bucketing" in msg


def test_neuron_settings_without_a_block_take_the_chip_defaults(tree, checkpoints):
    path = tree / "scenarios" / "trn2.yaml"
    data = yaml.safe_load(path.read_text())
    del data["engine"]["neuron"]
    path.write_text(yaml.safe_dump(data))
    r = params.resolve("trn2")
    assert r.scenario.engine.neuron is None and neuron.settings(r) == NeuronSettings()
    assert neuron.logical_nc(r) == 2 and neuron.tp_degree(r) == 64  # Trainium2's default LNC=2


def test_neuron_block_on_another_backend_is_refused(tree):
    path = tree / "scenarios" / "h200.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["neuron"] = {"logical_nc_config": 2}
    path.write_text(yaml.safe_dump(data))
    msg = error_of(params.load_scenario_file, "h200")
    assert "h200.yaml" in msg and "engine.neuron" in msg and "backend is 'cuda'" in msg


def test_neuron_buckets_must_ascend(tree):
    edit_neuron(tree, "trn2", context_encoding_buckets=[1024, 512])
    msg = error_of(params.load_scenario_file, "trn2")
    assert "trn2.yaml" in msg and "engine.neuron.context_encoding_buckets" in msg and "ascending" in msg


def test_neuron_buckets_without_bucketing_are_refused(tree):
    edit_neuron(tree, "trn2", enable_bucketing=False)
    msg = error_of(params.load_scenario_file, "trn2")
    assert "trn2.yaml" in msg and "context_encoding_buckets is set but enable_bucketing is false" in msg


def test_neuron_buckets_must_fit_max_model_len(tree):
    edit_neuron(tree, "trn2", token_generation_buckets=[1024, 8192])
    msg = error_of(params.load_scenario_file, "trn2")
    assert "engine.neuron.token_generation_buckets" in msg and "max_model_len=4096" in msg


def test_neuron_buckets_must_cover_the_workload(tree):
    edit_neuron(tree, "trn2", context_encoding_buckets=[256])
    msg = error_of(params.resolve, "trn2")
    assert "engine.neuron.context_encoding_buckets" in msg and "512" in msg and "seed-512-128" in msg
    edit_neuron(tree, "trn2", context_encoding_buckets=[512], token_generation_buckets=[512])
    msg = error_of(params.resolve, "trn2")
    assert "engine.neuron.token_generation_buckets" in msg and "at least 640" in msg


def test_neuron_lnc_2_is_refused_on_inferentia2(tree):
    edit_neuron(tree, "inf2", logical_nc_config=2)
    msg = error_of(params.resolve, "inf2")
    assert "inf2.yaml" in msg and "engine.neuron.logical_nc_config" in msg and "[1]" in msg


def test_neuron_tp_degree_outside_the_runtime_list_names_tensor_parallel_size(tree):
    edit_engine(tree, "inf2", tensor_parallel_size=3)  # 3 chips x 2 cores = 6: not in 1, 2, 4, 8, 24
    msg = error_of(params.resolve, "inf2")
    assert "engine.tensor_parallel_size" in msg and "TP degree 6" in msg and "[1, 2, 4, 8, 24]" in msg


def test_neuron_extra_config_may_not_shadow_derived_keys(tree):
    edit_neuron(tree, "trn2", extra_neuron_config={"batch_size": 8})
    msg = error_of(params.load_scenario_file, "trn2")
    assert "engine.neuron.extra_neuron_config" in msg and "'batch_size' shadows" in msg
    edit_neuron(tree, "trn2", extra_neuron_config={}, vision_neuron_config={"logical_nc_config": 1})
    msg = error_of(params.load_scenario_file, "trn2")
    assert "engine.neuron.vision_neuron_config" in msg and "'logical_nc_config' must match the text model's" in msg


def test_neuron_extra_config_reaches_the_text_model(tree, checkpoints):
    edit_neuron(tree, "trn2", extra_neuron_config={"fused_qkv": True})
    override = neuron.override_neuron_config(params.resolve("trn2"))
    assert override["text_neuron_config"]["fused_qkv"] is True and "fused_qkv" not in override["vision_neuron_config"]


def test_neuron_vision_config_needs_an_image_to_text_model(tree):
    edit_neuron(tree, "trn2", vision_neuron_config={"batch_size": 1})
    params.resolve("trn2")  # Llama 4 Scout has a vision encoder
    msg = error_of(params.resolve, "trn2", "llama-3.1-8b")
    assert "engine.neuron.vision_neuron_config" in msg and "LlamaForCausalLM" in msg


def test_neuron_refuses_vllm_quantization_and_auto_dtype(tree):
    edit_engine(tree, "trn2", quantization="fp8")
    assert "engine.quantization" in error_of(params.load_scenario_file, "trn2")
    edit_engine(tree, "trn2", quantization=None, dtype="auto")
    assert "engine.dtype" in error_of(params.load_scenario_file, "trn2")


def test_neuron_untyped_empty_block_of_older_manifests_loads_as_absent():
    resolved = params.resolve("h200").model_dump(mode="json")
    resolved["scenario"]["engine"]["neuron"] = {}  # what schemas 1-3 wrote for every backend
    m = RunManifest.model_validate(dict(run_id="r", status="completed", resolved=resolved))
    assert m.resolved.scenario.engine.neuron is None
    assert m.resolved == params.resolve("h200")


def test_neuron_checkpoint_of_another_model_is_refused(checkpoints):
    r = params.resolve("trn2")
    ckpt = checkpoints / "llama-4-scout"
    ckpt.mkdir()
    cfg = json.loads(json.dumps(r.model.hf_config))
    cfg["text_config"]["hidden_size"] = 8192
    (ckpt / "config.json").write_text(json.dumps(cfg))
    (ckpt / "model.safetensors.index.json").write_text("{}")
    (ckpt / "tokenizer.json").write_text("{}")
    msg = error_of(neuron_host.check_checkpoint, r)
    assert "hidden_size=8192" in msg and "params/models/llama-4-scout.yaml has 5120" in msg
    cfg["text_config"]["hidden_size"] = 5120
    (ckpt / "config.json").write_text(json.dumps(cfg))
    assert neuron_host.check_checkpoint(r)["path"] == str(ckpt)
    (ckpt / "tokenizer.json").unlink()
    assert "no tokenizer" in error_of(neuron_host.check_checkpoint, r)


# --- host detection ------------------------------------------------------------------------------------

@pytest.mark.skipif(HAS_NEURON, reason="this host has Neuron devices")
def test_neuron_check_host_without_devices_says_what_it_looked_for():
    msg = error_of(neuron.check_host, params.resolve("trn2"))
    assert "/dev/neuron*" in msg and "neuron-ls" in msg and "vllm_neuron" in msg and "none found" in msg


@pytest.mark.skipif(HAS_NEURON, reason="this host has Neuron devices")
def test_neuron_run_scenario_fails_before_writing_anything(tmp_path):
    outputs = tmp_path / "outputs"
    with pytest.raises(AccelbenchError, match=r"/dev/neuron"):
        accelbench.run_scenario("trn2", outputs_dir=outputs)
    assert not (outputs / "results").exists() and not outputs.exists()


def fake_neuron_host(monkeypatch, version: str) -> None:
    monkeypatch.setattr(neuron_host, "device_files", lambda: ["/dev/neuron0"])
    monkeypatch.setattr(neuron_host, "plugin_version", lambda: version)


def test_neuron_unknown_plugin_version_lists_known_versions(monkeypatch):
    fake_neuron_host(monkeypatch, "0.9.9")
    msg = error_of(neuron.check_host, params.resolve("trn2"))
    assert "vllm-neuron 0.9.9" in msg and "does not know" in msg
    for known in ("0.2.0", "0.4.1", "0.5.0", "0.6.0"):
        assert known in msg


def test_neuron_nxdi_free_plugin_is_refused_with_the_reason(monkeypatch):
    fake_neuron_host(monkeypatch, "0.24.0.1.1.0+e8242a9")
    msg = error_of(neuron.check_host, params.resolve("trn2"))
    assert "NxD-Inference-free" in msg and "neuron_config" in msg and "0.4.1" in msg


def test_neuron_plugin_after_2_28_is_refused_on_inferentia2(monkeypatch):
    fake_neuron_host(monkeypatch, "0.5.0")
    msg = error_of(neuron.check_host, params.resolve("inf2"))
    assert "AWS Inferentia2" in msg and "2.28" in msg
    neuron_host.check_plugin_version("0.5.0", params.resolve("trn2"))  # Trainium2 is fine with it
    neuron_host.check_plugin_version("0.4.1+abc123", params.resolve("inf2"))  # local version suffix ignored


def test_neuron_facts_none_without_devices_and_records_tools_with_them(monkeypatch):
    assert neuron.neuron_facts is neuron_host.neuron_facts  # what the environment records, via the backend
    monkeypatch.setattr(neuron_host, "device_files", lambda: [])
    assert neuron.neuron_facts() is None
    listing = [{"neuron_device": 0, "nc_count": 2, "memory_size": 34359738368, "neuroncore_ids": [0, 1]}]
    outputs = {"neuron-ls": json.dumps(listing), "neuronx-cc": "NeuronX Compiler version 2.23.6484.0",
               "dpkg-query": "2.30.51.0-1"}
    monkeypatch.setattr(neuron_host, "device_files", lambda: ["/dev/neuron0"])
    monkeypatch.setattr(neuron_host, "_run", lambda cmd, timeout_s=60: outputs.get(cmd[0]))
    facts = neuron.neuron_facts()
    assert facts["neuron_ls"] == listing and facts["neuronx_cc_version"].endswith("2.23.6484.0")
    assert facts["system_packages"]["aws-neuronx-runtime-lib"] == "2.30.51.0-1"
    assert set(facts["libraries"]) >= {"vllm-neuron", "neuronx-distributed-inference", "neuronx-cc", "torch-neuronx"}


def test_neuron_compilation_facts_split_compile_from_cache(tmp_path):
    host = {"compiled_artifacts_dir": str(tmp_path), "compiled_artifacts_cached": False,
            "engine_start_includes_compilation": True}
    started = time.time() - 30
    assert neuron.compilation_facts(host, started)["compile_s_estimate"] is None  # nothing written
    (tmp_path / "model.pt").write_bytes(b"")
    facts = neuron.compilation_facts(host, started)
    assert facts["artifacts_present_after_start"] and 29 <= facts["compile_s_estimate"] <= 60
    hit = neuron.compilation_facts({**host, "compiled_artifacts_cached": True,
                                    "engine_start_includes_compilation": False}, started)
    assert hit["cache_hit"] and hit["compile_s_estimate"] is None


# --- neuron-monitor ------------------------------------------------------------------------------------

def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_neuron_monitor_parser_counts_only_our_runtime():
    s = neuron_monitor.parse_report(load("trn2_two_runtimes.json"), tag="accelbench-test")
    assert s["util_pct"] == pytest.approx(23.5075)  # (42.01 + 42.02 + 10.0 + 0.0) / 4
    assert s["memory_used_gb"] == pytest.approx(12.519788544)
    assert s["power_w"] is None
    everyone = neuron_monitor.parse_report(load("trn2_two_runtimes.json"))
    assert everyone["util_pct"] == pytest.approx(290.03 / 6)
    assert everyone["memory_used_gb"] == pytest.approx(17.519788544)


def test_neuron_monitor_parser_inferentia2_and_absent_values():
    assert neuron_monitor.parse_report(load("inf2_steady.json"), "accelbench-test") == {
        "power_w": None, "util_pct": 75.0, "memory_used_gb": 30.0}
    assert neuron_monitor.parse_report(load("inf2_before_engine.json"), "accelbench-test") == {
        "power_w": None, "util_pct": None, "memory_used_gb": None}
    assert neuron_monitor.parse_report(load("inf2_counter_error.json"), "accelbench-test") == {
        "power_w": None, "util_pct": None, "memory_used_gb": 20.0}


def test_neuron_monitor_parse_line_skips_non_reports():
    assert neuron_monitor.parse_line("") is None and neuron_monitor.parse_line("warning: x") is None
    assert neuron_monitor.parse_line("{not json") is None
    line = json.dumps(load("inf2_steady.json"))
    assert neuron_monitor.parse_line(line, "accelbench-test")["util_pct"] == 75.0


def test_neuron_monitor_config_filters_by_tag():
    cfg = neuron_monitor.monitor_config("accelbench-12", period_s=0.5)
    assert cfg["period"] == "0.5s"
    (runtimes,) = cfg["neuron_runtimes"]
    assert runtimes["tag_filter"] == "^accelbench\\-12$"
    assert [m["type"] for m in runtimes["metrics"]] == ["neuroncore_counters", "memory_used"]


def test_neuron_monitor_sampler_reads_the_stream_in_a_thread(tmp_path):
    # a stand-in for neuron-monitor: checks it got a -c config, prints the recorded reports one per line
    stream = tmp_path / "stream.jsonl"
    names = ("inf2_before_engine.json", "inf2_steady.json", "inf2_counter_error.json")
    stream.write_text("".join(json.dumps(load(n)) + "\n" for n in names) + "not json\n")
    fake = tmp_path / "fake_monitor.py"
    fake.write_text(
        "import json, sys, time\n"
        "assert sys.argv[1] == '-c'\n"
        "json.load(open(sys.argv[2]))\n"
        f"for line in open({str(stream)!r}):\n"
        "    sys.stdout.write(line); sys.stdout.flush(); time.sleep(0.05)\n"
        "time.sleep(30)\n")
    sampler = neuron_monitor.NeuronMonitorSampler("accelbench-test", command=[sys.executable, str(fake)])
    sampler.start()
    deadline = time.monotonic() + 20
    while sampler.lines_seen < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.stop()
    assert [s["util_pct"] for s in sampler.samples] == [None, 75.0, None]
    assert [s["memory_used_gb"] for s in sampler.samples] == [None, 30.0, 20.0]
    assert all(s["power_w"] is None for s in sampler.samples)
    ts = [s["t"] for s in sampler.samples]
    assert ts == sorted(ts) and sampler._proc.poll() is not None  # stopped


# --- on a Neuron host ----------------------------------------------------------------------------------

@pytest.mark.neuron
@pytest.mark.skipif(not Path("/dev/neuron0").exists(), reason="needs AWS Neuron devices (/dev/neuron0)")
def test_neuron_engine_really_starts_and_measures(tmp_path):
    """Compiles (or loads) and serves the scenario named by ACCELBENCH_NEURON_SCENARIO (default trn2) with
    the small cpu-smoke workload; needs ACCELBENCH_NEURON_CHECKPOINTS_DIR and environment-neuron.yml."""
    import os
    scenario = os.environ.get("ACCELBENCH_NEURON_SCENARIO", "trn2")
    run = accelbench.run_scenario(scenario, workload="cpu-smoke", outputs_dir=tmp_path)
    assert run.status == "completed", run.error
    manifest = json.loads((run.run_dir / "manifest.json").read_text())
    assert manifest["host_check"]["backend"] == "neuron"
    assert manifest["environment"]["neuron"]["plugin"]["version"] in neuron_host.KNOWN_PLUGIN_VERSIONS
    assert manifest["engine_start_s"] > 0 and (run.levels["output_tok_per_s"] > 0).all()
