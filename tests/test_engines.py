"""Backend checks and the memory planner, on hand-made inputs (no accelerator needed)."""

import pytest

from accelbench.config.params import resolve
from accelbench.core.memory import plan_memory
from accelbench.errors import AccelbenchError
from accelbench.measure.engines import backend_module, cuda

GPUS = [{"index": 0, "uuid": "GPU-aaa", "name": "NVIDIA H200"}, {"index": 1, "uuid": "GPU-bbb", "name": "NVIDIA H200"}]


def test_cuda_visible_devices_maps_to_nvml_indices():
    assert cuda.select_visible(GPUS, None) == GPUS
    assert [g["index"] for g in cuda.select_visible(GPUS, "1")] == [1]
    assert [g["index"] for g in cuda.select_visible(GPUS, "GPU-bbb,0")] == [1, 0]
    assert cuda.select_visible(GPUS, "") == []
    assert [g["index"] for g in cuda.select_visible(GPUS, "0,7,1")] == [0]  # CUDA stops at an invalid id


def test_cuda_check_fails_fast_without_a_gpu(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(AccelbenchError, match="no NVIDIA GPU: looked for an NVIDIA driver through NVML"):
        cuda.check_host(resolve("h200"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(AccelbenchError, match="found none that CUDA_VISIBLE_DEVICES='' leaves visible"):
        cuda.check_host(resolve("h200"))


def test_unknown_backend_lists_valid_ones():
    with pytest.raises(AccelbenchError, match="unknown backend 'tpu'; valid backends are cpu, cuda, neuron"):
        backend_module("tpu")


@pytest.mark.parametrize("backend", ["cpu", "cuda", "neuron"])
def test_backend_modules_offer_the_backend_interface(backend):
    module = backend_module(backend)
    assert all(callable(getattr(module, name)) for name in ("check_host", "engine_kwargs", "engine_env"))
    if backend == "neuron":  # study.py and environment.py read these from the backend module
        assert callable(module.compilation_facts) and callable(module.neuron_facts)


def test_planner_70b_on_one_h200_says_what_would_fit():
    plan = plan_memory(resolve("h200", model="llama-3.3-70b"), memory_per_accelerator_gb=141)
    # 70.6e9 params x 2 bytes = 141.2 GB against 141 GB x 0.9 utilization = 126.9 GB usable
    assert plan.weights_gb == pytest.approx(141.2) and plan.usable_gb_per_accelerator == pytest.approx(126.9)
    assert not plan.fits and plan.smallest_tp_that_fits() == 2
    text = plan.explain()
    assert "'llama-3.3-70b' needs 141.2 GB" in text and "126.9 GB is usable" in text
    assert "tensor_parallel_size=2 would fit" in text


@pytest.mark.parametrize("scenario, fits", [("maverick-h200x8", True), ("maverick-h200x4-fp8", True)])
def test_planner_maverick_scenarios_fit_their_hosts(scenario, fits):
    assert plan_memory(resolve(scenario)).fits is fits


@pytest.mark.parametrize("tp", [1, 2])
def test_planner_explains_why_maverick_cannot_run_on_one_or_two_h200(tp):
    resolved = resolve("maverick-h200x8")
    engine = resolved.scenario.engine.model_copy(update={"tensor_parallel_size": tp})
    scenario = resolved.scenario.model_copy(update={"engine": engine, "accelerators_used": tp})
    plan = plan_memory(resolved.model_copy(update={"scenario": scenario}))
    # 400e9 params x 2 bytes = 800 GB; per GPU 800/tp against 126.9 GB usable; TP=8 gives 100 GB
    assert plan.weights_gb == pytest.approx(800) and not plan.fits
    assert f"{800 / tp:.1f} GB per accelerator at tensor_parallel_size={tp}" in plan.explain()
    assert plan.smallest_tp_that_fits() == 8
