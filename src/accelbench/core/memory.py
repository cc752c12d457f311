"""Memory planning: does a model's weights fit the accelerators a scenario gives it, and what TP would."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError

BYTES_PER_PARAM = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "auto": 2.0, "fp8": 1.0}


@dataclass(frozen=True)
class MemoryPlan:
    model: str
    weights_gb: float
    usable_gb_per_accelerator: float
    tensor_parallel_size: int
    accelerator_count: int

    @property
    def weights_gb_per_accelerator(self) -> float:
        return self.weights_gb / self.tensor_parallel_size

    @property
    def fits(self) -> bool:
        # weights must leave room for activations and some KV cache: keep 10% of usable memory free
        return self.weights_gb_per_accelerator <= 0.9 * self.usable_gb_per_accelerator

    def smallest_tp_that_fits(self) -> int | None:
        for tp in (1, 2, 4, 8, 16, 32, 64):
            if tp <= self.accelerator_count and self.weights_gb / tp <= 0.9 * self.usable_gb_per_accelerator:
                return tp
        return None

    def explain(self) -> str:
        fit = self.smallest_tp_that_fits()
        advice = (f"tensor_parallel_size={fit} would fit" if fit else
                  f"no tensor_parallel_size up to the instance's {self.accelerator_count} accelerators fits")
        return (f"model '{self.model}' needs {self.weights_gb:.1f} GB of weights, "
                f"{self.weights_gb_per_accelerator:.1f} GB per accelerator at tensor_parallel_size="
                f"{self.tensor_parallel_size}, but {self.usable_gb_per_accelerator:.1f} GB is usable per "
                f"accelerator (memory x gpu_memory_utilization); {advice}")


def plan_memory(resolved: Resolved, memory_per_accelerator_gb: float | None = None) -> MemoryPlan:
    """Weights against usable device memory; pass the measured memory when it is known."""
    engine = resolved.scenario.engine
    precision = engine.quantization if engine.quantization == "fp8" else engine.dtype
    memory = memory_per_accelerator_gb or resolved.instance.memory_per_accelerator_gb.value
    return MemoryPlan(model=resolved.model.name,
                      weights_gb=resolved.model.total_params_b * BYTES_PER_PARAM[precision],
                      usable_gb_per_accelerator=memory * engine.gpu_memory_utilization,
                      tensor_parallel_size=engine.tensor_parallel_size,
                      accelerator_count=resolved.instance.accelerator_count)


def require_fit(resolved: Resolved, memory_per_accelerator_gb: float | None = None) -> MemoryPlan:
    plan = plan_memory(resolved, memory_per_accelerator_gb)
    if not plan.fits:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' cannot start: {plan.explain()}")
    return plan
