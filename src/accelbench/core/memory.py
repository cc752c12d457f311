"""Weight precision and bytes per parameter (the one table the planner and the roofline use), and memory
planning: does a model's weights fit the accelerators a scenario gives it, and what TP would."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError

# Bytes one weight takes, per precision a scenario can hold its weights in (a dtype or a quantization).
BYTES_PER_PARAM = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
# dtype "auto" is the checkpoint's own dtype; a checkpoint that does not state one counts as bfloat16
AUTO_DEFAULT = "bfloat16"


def weight_precision(dtype: str, quantization: str | None = None, model_dtype: str | None = None) -> str:
    """The precision weights are held in: the quantization if any, else the dtype ("auto" = model_dtype,
    the checkpoint's torch_dtype, or bfloat16 when unknown). Raises on a precision with no known size."""
    if quantization:
        precision = quantization
    elif dtype == "auto":
        precision = model_dtype or AUTO_DEFAULT
    else:
        precision = dtype
    if precision not in BYTES_PER_PARAM:
        what = f"quantization '{quantization}'" if quantization else f"dtype '{precision}'"
        raise AccelbenchError(f"no weight size known for {what}: valid are {', '.join(BYTES_PER_PARAM)}")
    return precision


def bytes_per_param(dtype: str, quantization: str | None = None) -> float:
    """Bytes per weight under weight_precision: int8 and fp8 1, bfloat16, float16 and auto 2, float32 4.
    `dtype` may also name a precision already resolved ("fp8", "int8")."""
    return BYTES_PER_PARAM[weight_precision(dtype, quantization)]


def precision_of(resolved: Resolved) -> str:
    """weight_precision of a scenario, with "auto" read from the model's hf_config torch_dtype."""
    engine = resolved.scenario.engine
    return weight_precision(engine.dtype, engine.quantization, resolved.model.hf_config.get("torch_dtype"))


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
    memory = memory_per_accelerator_gb or resolved.instance.memory_per_accelerator_gb.value
    return MemoryPlan(model=resolved.model.name,
                      weights_gb=resolved.model.total_params_b * BYTES_PER_PARAM[precision_of(resolved)],
                      usable_gb_per_accelerator=memory * engine.gpu_memory_utilization,
                      tensor_parallel_size=engine.tensor_parallel_size,
                      accelerator_count=resolved.instance.accelerator_count)


def require_fit(resolved: Resolved, memory_per_accelerator_gb: float | None = None) -> MemoryPlan:
    plan = plan_memory(resolved, memory_per_accelerator_gb)
    if not plan.fits:
        raise AccelbenchError(f"scenario '{resolved.scenario.name}' cannot start: {plan.explain()}")
    return plan
