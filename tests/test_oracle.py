"""vLLM's own benchmark arithmetic as the oracle: the raw rows of a real cpu run, fed to
`vllm.benchmarks.serve.calculate_metrics`, give the level view's numbers (bench serve's definitions)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accelbench.core import metrics
from accelbench.store import runset

pytestmark = pytest.mark.slow
REL = 1e-6


def _bench_serve(level: pd.DataFrame) -> dict[str, float]:
    """calculate_metrics over one level's raw rows, its duration first submission to last token."""
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput
    from vllm.benchmarks.serve import calculate_metrics

    outputs = []
    for r in level.itertuples():
        ok = r.error is None or (isinstance(r.error, float) and np.isnan(r.error))
        times = np.asarray(r.chunk_times_s, dtype=float)
        outputs.append(RequestFuncOutput(
            success=ok, latency=(r.end_s - r.submit_s) if ok else 0.0, output_tokens=int(r.output_tokens),
            ttft=(r.first_token_s - r.submit_s) if ok else 0.0, itl=np.diff(times).tolist() if ok else [],
            prompt_len=int(r.input_tokens), start_time=float(r.submit_s), error="" if ok else str(r.error)))
    ok = level[level["error"].isna()]
    duration = float(ok["end_s"].max() - level["submit_s"].min())
    m, _ = calculate_metrics([None] * len(outputs), outputs, duration, None, [50, 99], {})
    p = {name: dict(getattr(m, f"percentiles_{name}_ms")) for name in ("ttft", "tpot", "itl")}
    return {**{f"{name}_mean_level_ms": getattr(m, f"mean_{name}_ms") for name in ("ttft", "tpot", "itl")},
            **{f"{name}_p50_level_ms": getattr(m, f"median_{name}_ms") for name in ("ttft", "tpot", "itl")},
            **{f"{name}_p99_level_ms": p[name][99] for name in ("ttft", "tpot", "itl")},
            "output_tok_per_s_level": m.output_throughput}


def test_level_view_equals_vllm_calculate_metrics_on_a_real_cpu_run(cpu_run_outputs):
    requests = metrics.request_table(runset.run_set(cpu_run_outputs).connect()
                                     .execute("SELECT * FROM requests").df())
    checked = 0
    for _, level in requests.groupby(metrics.level_keys(requests), sort=False):
        ours, oracle = metrics.level_row(level), _bench_serve(level)
        for name, want in oracle.items():
            assert ours[name] == pytest.approx(want, rel=REL), name
            checked += 1
    assert checked >= 10 * 6  # every level of the cpu run, ten figures each
