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
    with pytest.raises(AccelbenchError, match=r"h200\.yaml: field 'accelerators_used': accelerators_used=16 but "
                                              r"p5en\.48xlarge has 8 \(params/instances\.yaml: instance 'p5en\.48xlarge': "
                                              r"field 'accelerator_count'\)"):
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
    with pytest.raises(AccelbenchError, match=r"cpu\.yaml: field 'backend': backend 'cuda' does not drive instance "
                                              r"local-cpu \(cpu\)"):
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


# --- the strict loader (issue 17, items 6 and 7) -------------------------------------------------------

def _error(load, *args) -> str:
    with pytest.raises(AccelbenchError) as e:
        load(*args)
    return str(e.value)


def _edit_entry(path: Path, key: str, **changes) -> None:
    data = yaml.safe_load(path.read_text())
    data[key].update(changes)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize("field, value", [("request_rates_per_s", [float("nan")]), ("request_rates_per_s", [float("inf")]),
                                          ("min_level_duration_s", float("inf")), ("min_level_duration_s", float("nan")),
                                          ("output_tokens_range_ratio", float("nan")), ("target_half_width_pct", float("inf"))])
def test_params_nan_and_inf_are_refused_at_load(tree, field, value):
    _edit(tree / "workloads" / "cpu-smoke.yaml", **{field: value})
    msg = _error(params.load_workload, "cpu-smoke")
    assert "cpu-smoke.yaml" in msg and f"field '{field}" in msg and ("nan" in msg or "inf" in msg)


def test_params_negative_seed_is_refused(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", seed=-1)
    msg = _error(params.load_workload, "cpu-smoke")
    assert "cpu-smoke.yaml" in msg and "field 'seed'" in msg and "(got -1)" in msg and "greater than or equal to 0" in msg


def test_params_concurrency_beyond_the_bound_is_refused_not_a_memory_error(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", concurrency_levels=[1, 1_000_000_000])
    msg = _error(params.load_workload, "cpu-smoke")
    assert "field 'concurrency_levels.1'" in msg and "less than or equal to 4096" in msg and "1000000000" in msg


def test_params_level_with_too_many_requests_or_lasting_days_is_refused(tree):
    _edit(tree / "workloads" / "cpu-smoke.yaml", requests_per_worker=1000)  # 4 clients x 1000 is fine, 4096 x not
    params.load_workload("cpu-smoke")
    _edit(tree / "workloads" / "cpu-smoke.yaml", concurrency_levels=[4096])
    assert "field 'concurrency_levels': the level 4096 is 4096000 requests" in _error(params.load_workload, "cpu-smoke")
    _edit(tree / "workloads" / "cpu-smoke.yaml", concurrency_levels=[1], request_rates_per_s=[1e-6])
    msg = _error(params.load_workload, "cpu-smoke")
    assert "field 'request_rates_per_s': the level 1e-06" in msg and "longer than 86400 s" in msg


def test_params_negative_or_zero_price_is_refused_naming_the_instance(tree):
    path = tree / "instances.yaml"
    data = yaml.safe_load(path.read_text())
    data["p5en.48xlarge"]["prices"]["on_demand_usd_per_hour"]["value"] = -84.8
    path.write_text(yaml.safe_dump(data))
    msg = _error(params.load_instances)
    assert "instances.yaml: instance 'p5en.48xlarge': field 'prices.on_demand_usd_per_hour.value'" in msg
    assert "(got -84.8)" in msg and "greater than 0" in msg


def test_params_strict_types_refuse_numeric_strings_and_bools(tree):
    path = tree / "scenarios" / "cpu.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["max_num_seqs"] = "64"
    path.write_text(yaml.safe_dump(data))
    msg = _error(params.load_scenario_file, "cpu")
    assert "cpu.yaml: field 'engine.max_num_seqs': Input should be a valid integer (got '64')" in msg
    _edit(tree / "workloads" / "cpu-smoke.yaml", repetitions=True)
    assert "field 'repetitions'" in _error(params.load_workload, "cpu-smoke")


def test_params_yaml_alias_bomb_is_refused_at_once(tree):
    path = tree / "models" / "tiny-llama.yaml"
    bomb = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    path.write_text(path.read_text().replace("hf_config:\n", "hf_config:\n  l0: &l0 [lol]\n" + bomb))
    msg = _error(params.load_model, "tiny-llama")
    assert "tiny-llama.yaml: field 'hf_config.l0'" in msg and "YAML anchor '&l0' refused" in msg


def test_params_duplicate_keys_are_refused(tree):
    path = tree / "workloads" / "cpu-smoke.yaml"
    path.write_text(path.read_text() + "seed: 7\n")
    msg = _error(params.load_workload, "cpu-smoke")
    assert "cpu-smoke.yaml: field 'seed'" in msg and "appears twice" in msg
    nested = tree / "models" / "tiny-llama.yaml"
    nested.write_text(nested.read_text().replace("  vocab_size: 4096\n", "  vocab_size: 4096\n  vocab_size: 8\n"))
    assert "field 'hf_config.vocab_size'" in _error(params.load_model, "tiny-llama")


@pytest.mark.parametrize("file, kind, key", [("instances.yaml", "instance", "local-cpu"),
                                             ("slos.yaml", "SLO profile", "cpu-smoke")])
def test_params_entry_name_may_not_override_its_key(tree, file, kind, key):
    _edit_entry(tree / file, key, name="p5en.48xlarge")
    load = params.load_instances if file == "instances.yaml" else params.load_slo_profiles
    msg = _error(load)
    assert f"{file}: {kind} '{key}': field 'name' is 'p5en.48xlarge' but the entry's key is named '{key}'" in msg
    _edit_entry(tree / file, key, name=key)  # the same name is allowed
    load()


def test_params_slo_naming_an_unknown_model_is_refused(tree):
    _edit_entry(tree / "slos.yaml", "cpu-smoke", models=["tiny-llama", "tiny-lama"])
    msg = _error(params.load_slo_profiles)
    assert "slos.yaml: SLO profile 'cpu-smoke': field 'models': unknown model 'tiny-lama'" in msg
    assert "tiny-llama" in msg.split("valid:")[1]


def test_params_instance_and_slo_errors_name_the_entry(tree):
    _edit_entry(tree / "instances.yaml", "local-cpu", hbm_gb=1)
    assert "instances.yaml: instance 'local-cpu': field 'hbm_gb'" in _error(params.load_instances)
    _edit_entry(tree / "slos.yaml", "cpu-smoke", ttft_p99_ms=-5)
    assert "slos.yaml: SLO profile 'cpu-smoke': field 'ttft_p99_ms'" in _error(params.load_slo_profiles)


def test_params_bad_entry_key_is_refused(tree):
    path = tree / "instances.yaml"
    path.write_text(path.read_text() + "\n../../evil:\n  family: cpu\n")
    assert "instances.yaml: field '../../evil': the instance key '../../evil' is not a name" in _error(params.load_instances)


def test_params_non_utf8_file_is_an_accelbench_error(tree):
    path = tree / "workloads" / "cpu-smoke.yaml"
    path.write_bytes(path.read_bytes().replace(b"name: cpu-smoke", "name: cpu-smoke # café".encode("latin-1")))
    msg = _error(params.load_workload, "cpu-smoke")
    assert "cpu-smoke.yaml: not UTF-8 text: byte 0xe9" in msg and "line " in msg


def test_params_deeply_nested_document_is_an_accelbench_error(tree):
    path = tree / "models" / "tiny-llama.yaml"
    text = path.read_text()
    path.write_text(text + "extra: " + "[" * 100 + "]" * 100 + "\n")
    msg = _error(params.load_model, "tiny-llama")
    assert "tiny-llama.yaml: field 'extra.0.0." in msg and "nested 17 levels deep; at most 16" in msg
    path.write_text(text + "extra: " + "{a: " * 100_000 + "}" * 100_000 + "\n")  # deeper than libyaml goes
    msg = _error(params.load_model, "tiny-llama")
    assert "tiny-llama.yaml" in msg and ("field 'extra.a.a." in msg or "line 26" in msg)


@pytest.mark.parametrize("text, field", [("1: one\n", "1"), ("yes: 2\n", "True"), ("null: 3\n", "None"),
                                         ("? [a, b]\n: 4\n", "['a', 'b']")])
def test_params_non_string_keys_are_an_accelbench_error(tree, text, field):
    path = tree / "workloads" / "cpu-smoke.yaml"
    path.write_text(path.read_text() + text)
    msg = _error(params.load_workload, "cpu-smoke")
    assert f"cpu-smoke.yaml: field '{field}'" in msg and "keys are strings" in msg


@pytest.mark.parametrize("text", ["when: 2026-11-30\n", "blob: !!binary aGk=\n", "n: !!int x\n", "x: !!python/name:os.system\n",
                                  "n: " + "9" * 5000 + "\n", "<<: {seed: 1}\n", "---\n---\n"])
def test_params_yaml_beyond_plain_data_is_an_accelbench_error(tree, text):
    path = tree / "workloads" / "cpu-smoke.yaml"
    path.write_text(path.read_text() + text)
    assert "cpu-smoke.yaml: " in _error(params.load_workload, "cpu-smoke")


@pytest.mark.parametrize("change, field", [("del", "max_position_embeddings"), ("4096.5", "max_position_embeddings"),
                                           ("'4096'", "max_position_embeddings"), ("true", "max_position_embeddings"),
                                           ("del", "vocab_size"), ("5", "vocab_size")])
def test_params_model_context_and_vocab_are_checked_at_load(tree, change, field):
    path = tree / "models" / "tiny-llama.yaml"
    lines = [line for line in path.read_text().splitlines() if not line.startswith(f"  {field}:")]
    if change != "del":
        lines.append(f"  {field}: {change}")  # hf_config is the file's last block
    path.write_text("\n".join(lines) + "\n")
    msg = _error(params.load_model, "tiny-llama")
    assert f"tiny-llama.yaml: field 'hf_config': '{field}' is" in msg


def test_params_hf_config_must_be_plain_data(tree):
    path = tree / "models" / "tiny-llama.yaml"
    path.write_text(path.read_text() + "  rope_scaling: {factor: .nan}\n")
    assert "field 'hf_config': 'rope_scaling.factor': nan is not a finite number" in _error(params.load_model, "tiny-llama")


def test_params_unreadable_or_empty_files_are_accelbench_errors(tree):
    assert f"{tree / 'models'}: cannot be read" in _error(params.load_instances, tree / "models")
    (tree / "workloads" / "cpu-smoke.yaml").unlink()
    (tree / "workloads" / "cpu-smoke.yaml").mkdir()  # not a file: not a workload
    text = _error(params.load_workload, "cpu-smoke")
    valid = text.split("valid workloads are ", 1)[1].split(" (files in", 1)[0].split(", ")
    assert text.startswith("unknown workload 'cpu-smoke'") and "cpu-validate" in valid and "cpu-smoke" not in valid
    (tree / "slos.yaml").write_text("")
    assert "slos.yaml: field '<document>': expected a mapping of SLO profile name to fields, got an empty document" \
        in _error(params.load_slo_profiles)
    (tree / "workloads" / "cpu-validate.yaml").write_text("- a\n- b\n")
    assert "cpu-validate.yaml: field '<document>': expected a mapping of fields" in _error(params.load_workload, "cpu-validate")


def test_params_cross_file_error_names_the_workload_file_and_fields(tree):
    path = tree / "scenarios" / "cpu.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["max_model_len"] = 64
    path.write_text(yaml.safe_dump(data))
    msg = _error(params.resolve, "cpu")
    assert "params/scenarios/cpu.yaml: field 'engine.max_model_len'" in msg
    assert "params/workloads/cpu-smoke.yaml: fields 'input_tokens' and 'output_tokens'" in msg
    _edit(tree / "scenarios" / "cpu.yaml", model="tiny-lama")
    assert "cpu.yaml: field 'model': unknown model 'tiny-lama'" in _error(params.resolve, "cpu")


def test_params_resolve_names_the_model_file_for_max_position_embeddings(tree):
    path = tree / "scenarios" / "cpu.yaml"
    data = yaml.safe_load(path.read_text())
    data["engine"]["max_model_len"] = 4096   # tiny-llama: 2048
    path.write_text(yaml.safe_dump(data))
    msg = _error(params.resolve, "cpu")
    assert "field 'engine.max_model_len' is 4096" in msg
    assert "params/models/tiny-llama.yaml: field 'hf_config.max_position_embeddings'" in msg
