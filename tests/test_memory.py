"""One bytes-per-parameter table and one precision rule for the planner and the roofline."""

from __future__ import annotations

import pytest

from accelbench.analysis import roofline
from accelbench.config.params import resolve
from accelbench.core import memory
from accelbench.errors import AccelbenchError


@pytest.mark.parametrize("dtype, quantization, expected", [
    ("bfloat16", None, 2.0), ("float16", None, 2.0), ("auto", None, 2.0), ("float32", None, 4.0),
    ("bfloat16", "fp8", 1.0), ("bfloat16", "int8", 1.0), ("float32", "int8", 1.0), ("fp8", None, 1.0),
])
def test_memory_bytes_per_param_by_dtype_and_quantization(dtype, quantization, expected):
    assert memory.bytes_per_param(dtype, quantization) == expected


def test_memory_auto_is_the_checkpoint_dtype():
    assert memory.weight_precision("auto", None, "float32") == "float32"
    assert memory.weight_precision("auto", None, None) == "bfloat16"
    assert memory.weight_precision("auto", "fp8", "float32") == "fp8"


def test_memory_unknown_quantization_is_refused_by_name():
    with pytest.raises(AccelbenchError, match="quantization 'awq'.*valid are bfloat16"):
        memory.bytes_per_param("bfloat16", "awq")


@pytest.mark.parametrize("quantization", [None, "fp8", "int8"])
def test_memory_planner_and_roofline_agree(quantization):
    resolved = resolve("h200", model="llama-3.3-70b")
    engine = resolved.scenario.engine.model_copy(update={"quantization": quantization})
    resolved = resolved.model_copy(update={"scenario": resolved.scenario.model_copy(update={"engine": engine})})
    plan = memory.plan_memory(resolved)
    precision = memory.precision_of(resolved)
    # 70.6B parameters: 141.2 GB in bfloat16, 70.6 GB in one byte
    assert plan.weights_gb == pytest.approx(roofline.weight_bytes(resolved.model, precision,
                                                                  resolved.model.total_params_b) / 1e9)
    assert plan.weights_gb == pytest.approx(resolved.model.total_params_b * (1.0 if quantization else 2.0))
