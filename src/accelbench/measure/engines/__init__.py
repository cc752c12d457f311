"""Backends: each module checks its host and builds vLLM engine arguments; vllm_engine drives them.

vLLM is imported only inside functions, so analysis code and most tests never need it.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

BACKENDS = ("cpu", "cuda", "neuron")


def backend_module(backend: str) -> ModuleType:
    if backend not in BACKENDS:
        from accelbench.errors import AccelbenchError
        raise AccelbenchError(f"unknown backend '{backend}'; valid backends are {', '.join(BACKENDS)}")
    return import_module(f"accelbench.measure.engines.{backend}")
