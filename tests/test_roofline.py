"""Roofline bounds against hand-computed values, and efficiency of constructed measurements."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis import roofline
from accelbench.config import params
from accelbench.core import metrics
from accelbench.store import runs as results

INSTANCES = params.load_instances()
L8B = params.load_model("llama-3.1-8b")
SCOUT = params.load_model("llama-4-scout")
MAVERICK = params.load_model("llama-4-maverick")
H200 = roofline.hardware(INSTANCES["p5en.48xlarge"], 1)


def test_roofline_kv_bytes_per_token_from_config():
    # 2 (K,V) x 32 layers x 8 KV heads x 128 head_dim (4096 / 32) x 2 bytes
    assert roofline.kv_bytes_per_token(L8B) == 131072
    # Llama 4 reads text_config: 2 x 48 x 8 x 128 x 2
    assert roofline.kv_bytes_per_token(SCOUT) == 196608


def test_roofline_decode_bound_llama8b_one_h200():
    # 8.03e9 params x 2 bytes = 16.06 GB / 4800 GB/s = 3.3458 ms per step at batch 1
    assert roofline.weight_bytes(L8B, "bfloat16") == pytest.approx(16.06e9)
    assert roofline.decode_bound_ms(L8B, H200, "bfloat16") == pytest.approx(3.345833, rel=1e-6)
    # batch 4 at 576 tokens of context: (16.06e9 + 4 x 576 x 131072) / 4.8e12 = 3.408748 ms
    assert roofline.decode_bound_ms(L8B, H200, "bfloat16", 4, 576) == pytest.approx(3.408748, rel=1e-6)
    assert roofline.max_output_tok_per_s(L8B, H200, "bfloat16", 4, 576) == pytest.approx(4 / 3.408748e-3, rel=1e-6)


def test_roofline_moe_counts_active_params_only():
    hw = roofline.hardware(INSTANCES["p5.48xlarge"])  # 8 x 3350 GB/s
    assert hw.bandwidth_gb_s == 26800 and hw.accelerators == 8
    # 17e9 active x 2 bytes = 34 GB (not 218 GB total) / 26800 GB/s = 1.268657 ms
    assert roofline.decode_bound_ms(SCOUT, hw, "bfloat16") == pytest.approx(1.268657, rel=1e-6)


def test_roofline_fp8_halves_weight_bytes_and_doubles_hopper_peak():
    hw = roofline.hardware(INSTANCES["p5en.48xlarge"], 4)  # 19200 GB/s, 3956 dense BF16 TFLOP/s
    assert roofline.decode_bound_ms(MAVERICK, hw, "fp8") == pytest.approx(17e9 / 19.2e12 * 1e3)  # 0.885417 ms
    assert hw.peak_tflop_s("fp8") == pytest.approx(2 * 3956)
    assert roofline.hardware(INSTANCES["trn2.48xlarge"]).peak_tflop_s("fp8") == pytest.approx(16 * 667)
    assert roofline.hardware(INSTANCES["p4d.24xlarge"]).peak_tflop_s("fp8") == pytest.approx(8 * 312)  # no FP8 on A100


def test_roofline_prefill_bound_llama8b_512_tokens():
    # linear: 2 x 8.03e9 x 512 = 8.22272e12; attention: 2 x 32 layers x 512^2 x 32 heads x 128 = 6.8719e10
    assert roofline.prefill_flops(L8B, 512, include_attention=False) == pytest.approx(8.22272e12)
    assert roofline.prefill_flops(L8B, 512) == pytest.approx(8.22272e12 + 68_719_476_736)
    # / 989e12 FLOP/s = 8.383660 ms, above the 3.35 ms weight read
    assert roofline.prefill_bound_ms(L8B, H200, 512) == pytest.approx(8.383660, rel=1e-6)
    # one token: the weight read dominates
    assert roofline.prefill_bound_ms(L8B, H200, 1) == pytest.approx(3.345833, rel=1e-6)


def _summary() -> pd.DataFrame:
    bound_itl = (16.06e9 + 576 * 131072) / 4.8e12 * 1e3  # batch 1, context 512 + 128/2 = 3.361562 ms
    return pd.DataFrame([
        dict(level_kind="concurrency", level_value=1.0, itl_p50_ms=2 * bound_itl, ttft_p50_ms=2 * 8.383660,
             output_tok_per_s=0.5 / (bound_itl / 1e3), requests_per_s=1.0, e2e_p50_ms=500.0),
        dict(level_kind="rate", level_value=2.0, itl_p50_ms=10.0, ttft_p50_ms=40.0, output_tok_per_s=256.0,
             requests_per_s=2.0, e2e_p50_ms=4000.0)])


def test_roofline_table_efficiency_percent():
    resolved = params.resolve("h200")  # llama-3.1-8b, 1 x H200, seed-512-128
    t = roofline.roofline_table(_summary(), resolved)
    c1 = t.iloc[0]
    assert (c1["batch"], c1["context_tokens"], c1["precision"]) == (1, 576.0, "bfloat16")
    assert c1["decode_bound_ms"] == pytest.approx(3.361562, rel=1e-6)
    assert c1["itl_efficiency_pct"] == pytest.approx(50.0)
    assert c1["ttft_efficiency_pct"] == pytest.approx(50.0, rel=1e-6)
    assert c1["throughput_efficiency_pct"] == pytest.approx(50.0)
    rate = t.iloc[1]
    # Little's law: 2 req/s x 4.0 s in flight = batch 8
    assert rate["batch"] == 8 and "Little" in rate["batch_basis"]
    assert rate["decode_bound_ms"] == pytest.approx((16.06e9 + 8 * 576 * 131072) / 4.8e12 * 1e3)


def test_roofline_for_run_uses_manifest_params(tmp_path):
    resolved = params.resolve("h200")
    rows = []
    for rep, itl in enumerate((6.7, 6.8, 6.6)):
        rows.append(dict(level_kind="concurrency", level_value=1.0, repetition=rep, n_errors=0, saturated=False,
                         **{m: 1.0 for m in metrics.SUMMARY_METRICS} | dict(itl_p50_ms=itl)))
    run = results.save_run(tmp_path, "h200", "r1", {"status": "completed", "scenario": "h200",
                                                    "resolved": resolved.model_dump(mode="json")},
                           {"levels": pd.DataFrame(rows)})
    t = roofline.roofline_for_run(run)
    assert t["run_id"].tolist() == ["r1"]
    assert t["itl_p50_ms"].iloc[0] == pytest.approx(6.7)  # median of the repetitions
    assert t["itl_efficiency_pct"].iloc[0] == pytest.approx(100 * 3.361562 / 6.7, rel=1e-5)
    assert np.isfinite(t["prefill_bound_ms"].iloc[0])
