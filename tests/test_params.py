"""Every file under params/ loads and resolves; bad files fail naming the file, the field and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from accelbench.config import params, paths
from accelbench.errors import AccelbenchError

SCENARIOS = sorted(p.stem for p in paths.SCENARIOS_DIR.glob("*.yaml"))
MODELS = sorted(p.stem for p in paths.MODELS_DIR.glob("*.yaml"))
WORKLOADS = sorted(p.stem for p in paths.WORKLOADS_DIR.glob("*.yaml"))


def _edit(path: Path, **changes) -> None:
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data))


# --- the real files ---------------------------------------------------------------------------------

def test_params_expected_files_present():
    assert {"h200", "h200x2-scout", "h100", "a100", "l40s", "trn2", "inf2", "maverick-h200x8",
            "maverick-h200x4-fp8", "cpu", "cpu-maverick-tiny"} <= set(SCENARIOS)
    assert {"llama-3.1-8b", "llama-3.3-70b", "llama-4-scout", "llama-4-maverick", "maverick-tiny",
            "tiny-llama"} <= set(MODELS)
    assert {"seed-512-128", "seed-512-256", "scout-512-128", "cpu-smoke"} <= set(WORKLOADS)


def test_params_instances_load_with_sources():
    instances = params.load_instances()
    assert {"p5.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "trn2.48xlarge", "inf2.48xlarge",
            "p5en.48xlarge", "local-cpu"} <= set(instances)
    p5en = instances["p5en.48xlarge"]
    assert (p5en.family, p5en.accelerator_count) == ("cuda", 8)
    assert p5en.memory_bandwidth_per_accelerator_gb_s.value == 4800
    assert instances["trn2.48xlarge"].family == "neuron"
    assert instances["local-cpu"].family == "cpu"
    for inst in instances.values():
        assert inst.name in instances
        for price in (inst.prices.on_demand_usd_per_hour, inst.prices.spot_usd_per_hour):
            assert price is None or (price.value > 0 and price.source)


@pytest.mark.parametrize("name", MODELS)
def test_params_model_loads(name):
    m = params.load_model(name)
    assert m.name == name
    assert m.active_params_b <= m.total_params_b
    assert m.vocab_size > 0 and m.max_position_embeddings >= 2048


def test_params_llama4_follow_public_config():
    scout = params.load_model("llama-4-scout").hf_config["text_config"]
    assert (scout["hidden_size"], scout["num_hidden_layers"], scout["num_attention_heads"]) == (5120, 48, 40)
    assert (scout["num_local_experts"], scout["num_experts_per_tok"]) == (16, 1)
    maverick = params.load_model("llama-4-maverick").hf_config["text_config"]
    tiny = params.load_model("maverick-tiny").hf_config  # the text model alone (Llama4ForCausalLM)
    assert tiny["architectures"] == ["Llama4ForCausalLM"]
    for cfg in (maverick, tiny):
        assert (cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["interleave_moe_layer_step"]) == (128, 1, 2)


@pytest.mark.parametrize("name", WORKLOADS)
def test_params_workload_loads(name):
    w = params.load_workload(name)
    assert w.name == name and w.input_tokens >= 1


@pytest.mark.parametrize("name", SCENARIOS)
def test_params_scenario_resolves(name):
    r = params.resolve(name)
    assert r.scenario.name == name
    assert r.instance.name == r.scenario.instance
    assert r.model.name == r.scenario.model and r.workload.name == r.scenario.workload
    assert r.scenario.accelerators_used <= r.instance.accelerator_count


def test_params_slo_profiles_name_real_models():
    profiles = {p.name: p for p in params.load_slo_profiles()}
    assert (profiles["mlperf-llama3.1-8b-server"].ttft_p99_ms, profiles["mlperf-llama3.1-8b-server"].tpot_p99_ms) == (2000, 100)
    assert (profiles["mlperf-llama2-70b-interactive"].ttft_p99_ms,
            profiles["mlperf-llama2-70b-interactive"].tpot_p99_ms) == (450, 40)
    for p in profiles.values():
        assert set(p.models) <= set(MODELS), p.name


# --- overrides -------------------------------------------------------------------------------------

def test_params_resolve_overrides_model_and_workload():
    r = params.resolve("cpu", model="maverick-tiny", workload="cpu-smoke")
    assert r.model.name == "maverick-tiny" and r.scenario.model == "maverick-tiny"
    r = params.resolve("h200", workload="seed-512-256")
    assert r.workload.output_tokens == 256 and r.model.name == "llama-3.1-8b"


def test_params_resolve_override_unknown_model_lists_valid():
    with pytest.raises(AccelbenchError, match="unknown model 'nope'") as e:
        params.resolve("cpu", model="nope")
    assert "tiny-llama" in str(e.value)


# --- bad files -------------------------------------------------------------------------------------

def test_params_unknown_scenario_lists_valid_names():
    with pytest.raises(AccelbenchError, match="unknown scenario 'h2000'") as e:
        params.load_scenario_file("h2000")
    assert "h200" in str(e.value) and "cpu-maverick-tiny" in str(e.value)


def test_params_scenario_unknown_key_names_file_and_field(tree):
    _edit(tree / "scenarios" / "cpu.yaml", acelerators_used=1)
    with pytest.raises(AccelbenchError) as e:
        params.load_scenario_file("cpu")
    assert "cpu.yaml" in str(e.value) and "'acelerators_used'" in str(e.value)


def test_params_engine_unknown_key_names_nested_field(tree):
    path = tree / "scenarios" / "cpu.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["tensor_paralel_size"] = 2
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError) as e:
        params.load_scenario_file("cpu")
    assert "cpu.yaml" in str(e.value) and "engine.tensor_paralel_size" in str(e.value)


def test_params_instance_unknown_key_names_file_and_field(tree):
    path = tree / "instances.yaml"
    data = yaml.safe_load(path.read_text())
    data["local-cpu"]["hbm_gb"] = 1
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError) as e:
        params.load_instances()
    assert "instances.yaml" in str(e.value) and "'hbm_gb'" in str(e.value)


def test_params_model_unknown_key_names_file_and_field(tree):
    _edit(tree / "models" / "tiny-llama.yaml", total_param_b=1.0)
    with pytest.raises(AccelbenchError) as e:
        params.load_model("tiny-llama")
    assert "tiny-llama.yaml" in str(e.value) and "'total_param_b'" in str(e.value)


def test_params_workload_wrong_type_names_file_and_field(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", input_tokens="many")
    with pytest.raises(AccelbenchError) as e:
        params.load_workload("cpu-smoke")
    assert "cpu-smoke.yaml" in str(e.value) and "'input_tokens'" in str(e.value)


def test_params_validation_without_closed_loop_levels_is_refused_at_load(tree):
    _edit(tree / "workloads" / "cpu-validate.yaml", concurrency_levels=[], request_rates_per_s=[2.0])
    with pytest.raises(AccelbenchError, match="cpu-validate.yaml.*validate_with_serve: true needs concurrency_levels"):
        params.load_workload("cpu-validate")


def test_params_workload_unknown_key_lists_valid_fields(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", burstyness=2.0)
    with pytest.raises(AccelbenchError) as e:
        params.load_workload("cpu-smoke")
    assert "cpu-smoke.yaml" in str(e.value) and "'burstyness'" in str(e.value)
    assert "burstiness" in str(e.value).split("valid fields here:")[1]


def test_params_poisson_arrival_with_burstiness_is_refused_at_load(tree):
    _edit(tree / "workloads" / "seed-512-128.yaml", burstiness=2.0)   # the file says arrival: poisson
    with pytest.raises(AccelbenchError) as e:
        params.load_workload("seed-512-128")
    msg = str(e.value)
    assert "seed-512-128.yaml" in msg and "field 'burstiness'" in msg and "2.0 with arrival 'poisson'" in msg
    assert "arrival: gamma" in msg  # what would be valid


def test_params_gamma_arrival_takes_burstiness(tree):
    _edit(tree / "workloads" / "seed-512-128.yaml", arrival="gamma", burstiness=2.0)
    w = params.load_workload("seed-512-128")
    assert (w.arrival, w.burstiness) == ("gamma", 2.0)
    _edit(tree / "workloads" / "seed-512-128.yaml", arrival="uniform")
    with pytest.raises(AccelbenchError, match=r"seed-512-128\.yaml: field 'arrival': Input should be 'poisson' or 'gamma'"):
        params.load_workload("seed-512-128")


def test_params_committed_workloads_keep_their_arrivals():
    arrivals = {n: (params.load_workload(n).arrival, params.load_workload(n).burstiness) for n in WORKLOADS}
    assert arrivals["idle-512-128"] == ("gamma", 50.0)
    assert all(b == 1.0 for a, b in arrivals.values() if a == "poisson")


def test_params_committed_manifests_load_with_their_params():
    from accelbench.store.manifest import RunManifest
    found = sorted(paths.results_dir().glob("*/*/manifest.json"))
    if not found:
        pytest.skip("no committed runs under outputs/results")
    for path in found:
        m = RunManifest.load(path.parent)
        if m.resolved.scenario.backend != "neuron":
            assert m.resolved.scenario.engine.neuron is None  # older manifests hold {} here
        assert m.resolved.workload.arrival == "gamma" or m.resolved.workload.burstiness == 1.0


def test_params_slo_wrong_type_names_file_and_field(tree):
    path = tree / "slos.yaml"
    data = yaml.safe_load(path.read_text())
    data["cpu-smoke"]["ttft_p99_ms"] = "fast"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError) as e:
        params.load_slo_profiles()
    assert "slos.yaml" in str(e.value) and "'ttft_p99_ms'" in str(e.value)


def test_params_sourced_bad_date_names_field(tree):
    path = tree / "instances.yaml"
    data = yaml.safe_load(path.read_text())
    data["local-cpu"]["memory_per_accelerator_gb"]["date"] = "last week"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError) as e:
        params.load_instances()
    assert "instances.yaml" in str(e.value) and "memory_per_accelerator_gb.date" in str(e.value)


def test_params_tp_not_dividing_accelerators_fails(tree):
    path = tree / "scenarios" / "h200.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["tensor_parallel_size"] = 2   # accelerators_used is 1
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError) as e:
        params.load_scenario_file("h200")
    assert "h200.yaml" in str(e.value) and "tensor_parallel_size=2 must divide accelerators_used=1" in str(e.value)


def test_params_more_accelerators_than_instance_fails(tree):
    path = tree / "scenarios" / "h200.yaml"
    data = yaml.safe_load(path.read_text())
    data["accelerators_used"] = 16
    data["engine"]["tensor_parallel_size"] = 16
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(AccelbenchError, match=r"h200\.yaml: accelerators_used=16 but p5en\.48xlarge has 8"):
        params.resolve("h200")


def test_params_workload_longer_than_max_model_len_fails_at_resolve(tree):
    path = tree / "scenarios" / "cpu.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["max_model_len"] = 64   # cpu-smoke needs 64 + 20 = 84 (16 output tokens, up to 25% more)
    path.write_text(yaml.safe_dump(data))
    params.load_scenario_file("cpu")   # the scenario alone is valid
    with pytest.raises(AccelbenchError) as e:
        params.resolve("cpu")
    assert "cpu.yaml" in str(e.value) and "64+20=84" in str(e.value) and "max_model_len=64" in str(e.value)


def test_params_backend_must_match_instance_family(tree):
    _edit(tree / "scenarios" / "cpu.yaml", backend="cuda")
    with pytest.raises(AccelbenchError, match=r"cpu\.yaml: backend 'cuda' does not drive instance local-cpu \(cpu\)"):
        params.resolve("cpu")


def test_params_unknown_instance_lists_valid(tree):
    _edit(tree / "scenarios" / "cpu.yaml", instance="p6.48xlarge")
    with pytest.raises(AccelbenchError) as e:
        params.resolve("cpu")
    assert "cpu.yaml" in str(e.value) and "field 'instance'" in str(e.value) and "local-cpu" in str(e.value)


def test_params_name_mismatch_names_file(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", name="cpu-smok")
    with pytest.raises(AccelbenchError, match=r"cpu-smoke\.yaml: field 'name' is 'cpu-smok'"):
        params.load_workload("cpu-smoke")
