"""accelbench: measured LLM-serving latency, throughput and cost across accelerators, with vLLM."""

from accelbench.config.params import resolve
from accelbench.errors import AccelbenchError
from accelbench.measure.study import RunResult, raise_if_failed, run_scenario

__all__ = ["AccelbenchError", "RunResult", "raise_if_failed", "resolve", "run_scenario"]
__version__ = "0.1.0"
