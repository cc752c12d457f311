"""Audit of published figures: a small hand-made document with known answers, then the two seeds."""

from __future__ import annotations

import pandas as pd
import pytest

from accelbench.analysis import audit
from accelbench.config import reference
from accelbench.config.reference import Figure, ReferenceDocument, Relation
from accelbench.errors import AccelbenchError

COLUMNS = ["document", "check", "claim", "arithmetic", "holds", "status", "source"]


def fig(id_: str, metric: str, value: float, **kw) -> Figure:
    return Figure(id=id_, metric=metric, value=value, section=kw.pop("section", "table 1"), **kw)


def small_doc() -> ReferenceDocument:
    on_h200 = dict(instance="p5en.48xlarge", accelerators=1, hardware_label="one H200", model="llama-3.1-8b")
    return ReferenceDocument(
        name="small", document="small.txt", title="A small test post", published="2026-01", read_date="2026-11-30",
        kind="projection", input_tokens=512, output_tokens=128, precision="bfloat16",
        figures=[
            fig("price", "price_usd_per_hour", 100.0, instance="p5en.48xlarge"),
            fig("count", "accelerator_count", 8, instance="p5en.48xlarge"),
            fig("per-accel", "usd_per_accelerator_hour", 12.5, instance="p5en.48xlarge"),
            fig("tput", "output_tok_per_s", 1000, **on_h200),
            fig("tput-c1", "output_tok_per_s", 1000, concurrency=1, **on_h200),
            fig("tput-c8", "output_tok_per_s", 5000, concurrency=8, **on_h200),
            fig("cost", "usd_per_m_tokens", 27.78, **on_h200),
            fig("itl", "itl_ms", 10, **on_h200),
            fig("itl-fast", "itl_ms", 2, concurrency=1, **{**on_h200, "hardware_label": "one H200, fast"}),
            fig("ttft", "ttft_ms", 5, **on_h200),
            fig("hidden", "hidden_size", 4096, model="llama-3.1-8b"),
            fig("layers", "num_hidden_layers", 80, model="llama-3.1-8b"),
        ],
        relations=[Relation(id="half", claim="half the throughput", kind="ratio_pct", terms=["tput", "tput-c8"],
                            value=20, section="text"),
                   Relation(id="wrong", claim="ten times", kind="ratio_x", terms=["tput-c8", "tput"], value=10,
                            section="text")])


def one(df: pd.DataFrame, check_id: str, contains: str) -> pd.Series:
    rows = df[(df["check"] == audit.title(check_id)) & df["claim"].str.contains(contains, regex=False)]
    assert len(rows) == 1, (check_id, contains, rows[["claim", "status"]])
    return rows.iloc[0]


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return audit.audit(small_doc())


def test_audit_rows_have_the_columns(small):
    assert list(small.columns) == COLUMNS
    assert str(small["holds"].dtype) == "boolean"
    assert set(small["check"]) <= set(audit.CHECKS)


def test_audit_check_ids_and_titles_are_unique():
    ids = [c.id for c in audit.REGISTRY]
    assert len(ids) == len(set(ids)) == len(audit.REGISTRY) == 15
    assert len(set(audit.CHECKS)) == len(audit.CHECKS)
    assert all(c.id.isidentifier() and c.title for c in audit.REGISTRY)


@pytest.mark.parametrize("reference", [None, "small"], ids=["seeds", "small"])
def test_audit_every_row_names_a_registered_check(reference):
    rows = audit.rows(small_doc() if reference == "small" else None)
    assert rows and {r.check for r in rows} <= set(audit.BY_ID)
    df = audit.audit(small_doc() if reference == "small" else None)
    assert list(df["check"]) == [audit.title(r.check) for r in rows]


def test_audit_cost_formula_hand_computed(small):
    r = one(small, "cost_formula", "$27.78 per 1M tokens")
    # 100 / (1000 x 3600) x 1e6 = 27.778
    assert "100 / (1000 x 3600) x 1e6 = 27.778" in r["arithmetic"]
    assert bool(r["holds"]) is True
    assert "small.txt 'A small test post'" in r["source"]


def test_audit_relations_hold_or_not(small):
    assert bool(one(small, "stated_arithmetic", "half the throughput")["holds"]) is True
    wrong = one(small, "stated_arithmetic", "ten times")
    assert bool(wrong["holds"]) is False and "5000 / 1000 = 5x" in wrong["arithmetic"]


def test_audit_throughput_vs_itl_and_scaling(small):
    r = one(small, "throughput_vs_itl", "1000 output tokens/s at 1 concurrent request")
    # one stream at 10 ms/token is 100 tokens/s < 1000
    assert bool(r["holds"]) is False and "1000 / 10 = 100 tokens/s" in r["arithmetic"]
    assert bool(one(small, "scaling_vs_headline", "one H200")["holds"]) is True
    assert bool(one(small, "price_per_accelerator_hour", "$12.5")["holds"]) is True


def test_audit_instance_facts_and_architecture(small):
    price = one(small, "instance_facts", "$100/h")
    assert bool(price["holds"]) is False and "on_demand_usd_per_hour = 84.8" in price["arithmetic"]
    assert bool(one(small, "instance_facts", "8 accelerators")["holds"]) is True
    assert bool(one(small, "architecture", "hidden_size = 4096")["holds"]) is True
    layers = one(small, "architecture", "num_hidden_layers = 80")
    assert bool(layers["holds"]) is False and "num_hidden_layers = 32" in layers["arithmetic"]


def test_audit_physical_bounds(small):
    # decode bound on one H200 at batch 1, context 576: 3.3616 ms
    assert bool(one(small, "itl_vs_decode_bound", "ITL 10 ms")["holds"]) is True
    fast = one(small, "itl_vs_decode_bound", "ITL 2 ms")
    assert bool(fast["holds"]) is False and "= 3.362 ms" in fast["arithmetic"]
    ttft = one(small, "ttft_vs_prefill_bound", "TTFT 5 ms")
    assert bool(ttft["holds"]) is False and "= 8.384 ms" in ttft["arithmetic"]
    # 8 / ((16.06e9 + 8 x 576 x 131072) / 4.8e12) = 2304 tokens/s < 5000 claimed
    over = one(small, "throughput_vs_bandwidth", "at 8 concurrent")
    assert bool(over["holds"]) is False and "= 2304 tokens/s" in over["arithmetic"]
    assert bool(one(small, "weights_fit", "Llama 3.1 8B")["holds"]) is True


def test_audit_no_measurement_yet(small):
    r = one(small, "projection_vs_measurement", "llama-3.1-8b")
    assert r["status"] == "no measurement yet" and pd.isna(r["holds"])


def test_audit_projection_vs_measurement_on_faster_hardware():
    doc = reference.load_reference("seed-llama3-inf2")
    measured = pd.DataFrame([
        dict(scenario="h200", run_id="r1", model="llama-3.1-8b", instance="p5en.48xlarge", accelerators_used=1,
             input_tokens=512, output_tokens=256, level_kind="concurrency", level_value=1.0, ttft_p50_ms=50.0,
             itl_p50_ms=7.0, tpot_p50_ms=7.2, output_tok_per_s=130.0, requests_per_s=0.5),
        dict(scenario="h200", run_id="r1", model="llama-3.1-8b", instance="p5en.48xlarge", accelerators_used=1,
             input_tokens=512, output_tokens=256, level_kind="concurrency", level_value=32.0, ttft_p50_ms=300.0,
             itl_p50_ms=15.0, tpot_p50_ms=16.0, output_tok_per_s=2500.0, requests_per_s=10.0)])
    df = audit.audit(doc, measured)
    rows = df[df["check"] == audit.title("projection_vs_measurement")]
    # "H100 (g5.xlarge)" is placed on one H100 (3350 GB/s, 989 TFLOP/s); one H200 has 4800 and 989
    ttft = one(rows, "projection_vs_measurement", "ttft_ms 320")
    assert bool(ttft["holds"]) is True and "measured 50 " in ttft["arithmetic"]
    decode = one(rows, "projection_vs_measurement", "decode_tok_per_s_per_request 120")
    assert bool(decode["holds"]) is True and "measured 138.9" in decode["arithmetic"]  # 1000 / 7.2
    rpm = one(rows, "projection_vs_measurement", "requests_per_min 890")
    assert bool(rpm["holds"]) is False and "measured 600 " in rpm["arithmetic"]  # 10 req/s x 60
    assert len(rows) == 3  # inf2.xlarge figures have no hardware to compare with
    other_shape = audit.audit(doc, measured.assign(output_tokens=128))
    r = one(other_shape, "projection_vs_measurement", "llama-3.1-8b")
    assert r["status"] == "not checkable: no measurement of the same workload shape"


def test_audit_seed_llama4_findings():
    df = audit.audit("seed-llama4")
    cost_a = one(df, "cost_formula", "A: p5/H100 llama-4-scout")
    assert bool(cost_a["holds"]) is False and "98.32 / (4200 x 3600) x 1e6 = 6.503" in cost_a["arithmetic"]
    costs = df[df["check"] == audit.title("cost_formula")]
    assert len(costs) == 7 and not costs["holds"].any()
    assert bool(one(df, "stated_arithmetic", "Throughput D vs 基准 -17%")["holds"]) is True
    assert bool(one(df, "stated_arithmetic", "scales 3.2×")["holds"]) is False
    assert bool(one(df, "architecture", "Scout 17B-16E Instruct: hidden_size = 8192")["holds"]) is False
    assert bool(one(df, "architecture", "Scout 17B-16E Instruct: num_key_value_heads = 8")["holds"]) is True
    assert bool(one(df, "instance_facts", "p5.48xlarge: $98.32/h")["holds"]) is True
    assert bool(one(df, "instance_facts", "inf2.48xlarge: $12.89/h")["holds"]) is False
    assert bool(one(df, "weights_fit", "Maverick 17B-128E Instruct in bfloat16 on A:")["holds"]) is False
    assert bool(one(df, "weights_fit", "Single H100 80GB")["holds"]) is False
    # trn2 at 32 concurrent: 38,500 claimed, ceiling 32 / 0.8109 ms = 39,464 tokens/s
    trn2 = one(df, "throughput_vs_bandwidth", "D: trn2 [16 x AWS Trainium2, 1536 GB] llama-4-scout: 38,500")
    assert bool(trn2["holds"]) is True and "39,464" in trn2["arithmetic"]
    h100 = one(df, "throughput_vs_bandwidth", "A: p5/H100 [8 x NVIDIA H100 SXM 80GB, 640 GB] llama-4-scout: 4200 output_tok_per_s at 1")
    assert bool(h100["holds"]) is False and "785.6 tokens/s" in h100["arithmetic"]


def test_audit_seed_llama3_inf2_findings():
    df = audit.audit("seed-llama3-inf2")
    perm = one(df, "stated_arithmetic", "每 1M Token 成本 $2.53")
    assert bool(perm["holds"]) is False and "25.34" in perm["arithmetic"]
    assert bool(one(df, "stated_arithmetic", "日运行成本 $25.34")["holds"]) is True
    assert bool(one(df, "instance_facts", "'H100 (p4d.24xlarge)' names an H100")["holds"]) is False
    e2e = one(df, "e2e_vs_ttft_and_decode", "inf2.xlarge")
    assert bool(e2e["holds"]) is False and "6.347 s" in e2e["arithmetic"]  # 0.68 + 255 / 45


def test_audit_summary_counts():
    s = audit.audit_summary(audit.audit(small_doc())).set_index("check")
    assert s.loc[audit.title("stated_arithmetic"), "holds"] == 1
    assert s.loc[audit.title("stated_arithmetic"), "does_not_hold"] == 1
    assert s.loc[audit.title("projection_vs_measurement"), "not_checked"] == 1


def test_reference_files_load_and_bad_keys_fail(tmp_path, monkeypatch):
    for name in reference.reference_names():
        doc = reference.load_reference(name)
        assert doc.kind == "projection" and doc.figures
    from accelbench.config import paths
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ndocument: x.txt\ntitle: t\npublished: p\nread_date: '2026-11-30'\nkind: projection\n"
                   "figures:\n  - {id: a, metric: ttft_ms, value: 1, section: s1, instance: p9.48xlarge}\n")
    monkeypatch.setattr(paths, "REFERENCE_DIR", tmp_path)
    with pytest.raises(AccelbenchError, match="figure 'a': field 'instance': unknown instance 'p9.48xlarge'"):
        reference.load_reference("bad")
    with pytest.raises(ValueError, match="unknown figure"):
        ReferenceDocument(name="x", document="x", title="t", published="p", read_date="2026-11-30",
                          kind="projection", figures=[fig("a", "ttft_ms", 1)],
                          relations=[Relation(id="r", claim="abc", kind="ratio_x", terms=["a", "b"], value=1,
                                              section="s1")])
