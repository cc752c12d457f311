"""Cross-validation against `vllm bench serve`: synthetic tokenizer, result parsing, comparison, processes."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accelbench.analysis.validation import METHODS_TEXT, compare
from accelbench.config.params import resolve
from accelbench.errors import AccelbenchError
from accelbench.measure import serve, serve_results, tokenizer, validation

# A bench serve result (--save-result --save-detailed) written by hand: concurrency 1, three requests of
# 4 prompt tokens and 3 output tokens, run back to back. Times are multiples of 0.25 s so that the
# steady-window arithmetic below is exact.
#   r0: sent 0.00, chunks 0.25 0.50 0.75
#   r1: sent 0.75, chunks 1.25 1.50 1.75
#   r2: sent 1.75, chunks 2.00 2.50 3.00
BENCH_RESULT = {
    "backend": "openai", "num_prompts": 3, "max_concurrency": 1, "request_rate": "inf",
    "duration": 3.0, "completed": 3, "failed": 0, "total_input_tokens": 12, "total_output_tokens": 9,
    "request_throughput": 1.0, "output_throughput": 3.0, "total_token_throughput": 7.0,
    "mean_ttft_ms": 333.3, "median_ttft_ms": 250.0, "std_ttft_ms": 117.9,
    "p50_ttft_ms": 250.0, "p90_ttft_ms": 450.0, "p99_ttft_ms": 495.0,
    "mean_tpot_ms": 333.3, "median_tpot_ms": 250.0, "std_tpot_ms": 117.9,
    "p50_tpot_ms": 250.0, "p90_tpot_ms": 450.0, "p99_tpot_ms": 495.0,
    "mean_itl_ms": 333.3, "median_itl_ms": 250.0, "std_itl_ms": 117.9,
    "p50_itl_ms": 250.0, "p90_itl_ms": 500.0, "p99_itl_ms": 500.0,
    "mean_e2el_ms": 916.7, "median_e2el_ms": 1000.0, "std_e2el_ms": 235.7,
    "p50_e2el_ms": 1000.0, "p90_e2el_ms": 1200.0, "p99_e2el_ms": 1245.0,
    "input_lens": [4, 4, 4], "output_lens": [3, 3, 3],
    "start_times": [0.0, 0.75, 1.75], "ttfts": [0.25, 0.5, 0.25],
    "itls": [[0.25, 0.25], [0.25, 0.25], [0.5, 0.5]], "latencies": [0.75, 1.0, 1.25],
    "errors": ["", "", ""],
}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tok")
    tokenizer.write_tokenizer(d, vocab_size=4096, model_max_length=2048)
    return d


# --- the synthetic tokenizer ------------------------------------------------------------------------

def test_tokenizer_round_trips_random_ids(tokenizer_dir: Path) -> None:
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    rng = np.random.default_rng(0)
    for n in (1, 64, 1000):
        ids = [0, 4095, *rng.integers(0, 4096, size=n).tolist()]
        assert tok.encode(tok.decode(ids)).ids == ids
    assert tok.get_vocab_size() == 4096


def test_tokenizer_adds_no_special_tokens_through_transformers(tokenizer_dir: Path) -> None:
    transformers = pytest.importorskip("transformers")
    # config.json says llama, as in the server's model folder: tokenizer_config.json must still win
    (tokenizer_dir / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 4096}))
    tok = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    ids = np.random.default_rng(1).integers(0, 4096, size=64).tolist()
    assert tok.vocab_size == 4096
    assert tok.num_special_tokens_to_add() == 0 and tok.all_special_ids == []
    assert tok(tok.decode(ids)).input_ids == ids  # add_special_tokens defaults to True, as on the server


def test_write_tokenizer_records_what_it_made(tmp_path: Path) -> None:
    info = tokenizer.write_tokenizer(tmp_path, vocab_size=10, model_max_length=64)
    assert info["synthetic"] is True and info["vocab_size"] == 10 and info["words"] == "t0..t9"
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["tokenizer_class"] == \
        "PreTrainedTokenizerFast"


@pytest.mark.slow
def test_random_dataset_prompts_encode_to_input_len(tokenizer_dir: Path) -> None:
    """vLLM's random dataset (what bench serve sends) makes prompts of exactly input_len tokens."""
    pytest.importorskip("vllm")
    from vllm.benchmarks.datasets import RandomDataset
    from vllm.tokenizers import get_tokenizer
    tok = get_tokenizer(str(tokenizer_dir))
    requests = RandomDataset(random_seed=0).sample(tok, 8, input_len=64, output_len=16, range_ratio=0.0,
                                                   prefix_len=0)
    assert [r.prompt_len for r in requests] == [64] * 8
    assert [len(tok(r.prompt).input_ids) for r in requests] == [64] * 8


# --- command lines ----------------------------------------------------------------------------------

def test_server_args_carry_the_engine_kwargs() -> None:
    kwargs = dict(model="/cache/models/m", load_format="dummy", skip_tokenizer_init=True, tensor_parallel_size=2,
                  dtype="bfloat16", max_model_len=512, gpu_memory_utilization=0.3, max_num_seqs=32,
                  enforce_eager=False, seed=0, disable_log_stats=False, quantization=None,
                  limit_mm_per_prompt={"image": 0}, jit_monitor_verbose=True, enable_prefix_caching=False)
    args = serve.server_args(kwargs, Path("/cache/serve-models/m"), 8123)
    assert args[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert args[3:] == [
        "--model", "/cache/serve-models/m", "--host", "127.0.0.1", "--port", "8123", "--disable-uvicorn-access-log",
        "--load-format", "dummy", "--tensor-parallel-size", "2", "--dtype", "bfloat16", "--max-model-len", "512",
        "--gpu-memory-utilization", "0.3", "--max-num-seqs", "32", "--no-enforce-eager", "--seed", "0",
        "--limit-mm-per-prompt", '{"image": 0}', "--jit-monitor-verbose", "--no-enable-prefix-caching"]


def test_bench_args_match_the_harness_level() -> None:
    r = resolve("cpu", workload="cpu-validate")
    args = serve.bench_args(r, Path("/m"), 8123, 4, Path("/out"), "serve_c4.json")
    opts = dict(zip(args[3:], args[4:]))
    assert opts["--max-concurrency"] == "4"
    assert opts["--num-prompts"] == str(r.workload.requests_for_concurrency(4)) == "12"
    # nothing but the measured requests: the warm-up is its own run, the server is known to be up
    assert opts["--num-warmups"] == "0" and opts["--ready-check-timeout-sec"] == "0"
    assert opts["--random-input-len"] == "64" and opts["--random-output-len"] == "16"
    assert opts["--random-range-ratio"] == "0" and opts["--request-rate"] == "inf"
    assert opts["--endpoint"] == "/v1/completions" and opts["--dataset-name"] == "random"
    assert opts["--percentile-metrics"] == "ttft,tpot,itl,e2el" and opts["--metric-percentiles"] == "50,90,99"
    assert {"--ignore-eos", "--save-result", "--save-detailed"} <= set(args)


def test_warmup_run_matches_the_harness_warmup_with_other_prompts() -> None:
    r = resolve("cpu", workload="cpu-validate")
    warmup = serve.warmup_bench_args(r, Path("/m"), 8123, 4)
    measured = serve.bench_args(r, Path("/m"), 8123, 4, Path("/out"), "serve_c4.json")
    w_opts, m_opts = dict(zip(warmup[3:], warmup[4:])), dict(zip(measured[3:], measured[4:]))
    assert w_opts["--num-prompts"] == "4"  # max(warmup_requests=2, concurrency=4), as runner.warm_up
    assert w_opts["--max-concurrency"] == "4" and w_opts["--num-warmups"] == "0"
    assert w_opts["--seed"] != m_opts["--seed"]  # no measured prompt is a prefix-cache hit
    assert "--save-result" not in warmup
    same = ("--random-input-len", "--random-output-len", "--endpoint", "--temperature", "--request-rate")
    assert all(w_opts[k] == m_opts[k] for k in same)


def test_cpu_validate_workload_turns_validation_on() -> None:
    w = resolve("cpu", workload="cpu-validate").workload
    assert w.validate_with_serve and w.concurrency_levels == [1, 4] and not w.request_rates_per_s


# --- results -> project names -----------------------------------------------------------------------

def test_level_from_result_maps_bench_names() -> None:
    row = serve_results.level_from_result(BENCH_RESULT, 1)
    assert row["source"] == "vllm bench serve" and row["level_kind"] == "concurrency" and row["level_value"] == 1.0
    assert (row["n_requests"], row["n_measured"], row["n_errors"]) == (3, 3, 0)
    assert row["output_tok_per_s"] == 3.0 and row["total_tok_per_s"] == 7.0 and row["requests_per_s"] == 1.0
    assert (row["ttft_p50_ms"], row["ttft_p90_ms"], row["ttft_p99_ms"]) == (250.0, 450.0, 495.0)
    assert (row["itl_p50_ms"], row["itl_p99_ms"]) == (250.0, 500.0)
    assert (row["tpot_p50_ms"], row["tpot_p99_ms"]) == (250.0, 495.0)
    assert (row["e2e_mean_ms"], row["e2e_p50_ms"], row["e2e_p99_ms"]) == (916.7, 1000.0, 1245.0)


def test_level_from_result_recomputes_the_steady_window() -> None:
    row = serve_results.level_from_result(BENCH_RESULT, 1)
    # interval (core.metrics.interval): the 1st completion (0.75) to the last submission (1.75); r1 and r2
    # are submitted inside it. Tokens arriving in (0.75, 1.75]: r1's three = 3 tokens over 1.0 s.
    assert row["steady_window"] is True and row["steady_n_measured"] == 2
    assert row["steady_output_tok_per_s"] == pytest.approx(3.0)
    # TTFTs of r1 and r2: 500 and 250 ms
    assert row["steady_ttft_p50_ms"] == pytest.approx(375.0) and row["steady_ttft_p99_ms"] == pytest.approx(497.5)


def test_bench_requests_rebuild_chunk_times_and_errors() -> None:
    result = {**BENCH_RESULT, "errors": ["", "", "boom"], "ttfts": [0.25, 0.5, 0.0],
              "itls": [[0.25, 0.25], [0.25, 0.25], []], "output_lens": [3, 5, 0]}
    req = serve_results.bench_requests(result, 1)
    assert req.loc[0, "chunk_times_s"] == [0.25, 0.5, 0.75] and req.loc[0, "chunk_tokens"] == [1, 1, 1]
    assert req.loc[1, "chunk_tokens"] == [1, 1, 3]  # 5 tokens in 3 chunks: the remainder on the last
    assert req.loc[2, "error"] == "boom" and req.loc[2, "chunk_times_s"] == []
    assert serve_results.bench_requests({"ttfts": [0.1]}, 1).empty  # no --save-detailed fields: nothing to rebuild


def test_levels_from_results_one_row_per_level_in_order() -> None:
    table = serve_results.levels_from_results({4.0: BENCH_RESULT, 1.0: BENCH_RESULT})
    assert table["level_value"].tolist() == [1.0, 4.0] and (table["source"] == "vllm bench serve").all()


def test_prometheus_counters_sum_label_sets() -> None:
    text = "\n".join([
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 640.0',
        'vllm:prompt_tokens_by_source_total{engine="0",source="local"} 9.0',
        'vllm:generation_tokens_total{engine="0",model_name="m"} 160.0',
        'vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 8.0',
        'vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 2.0',
        'vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="m"} 9.0',
        'vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.17',
        'vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 10.0',
        'vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 0.12',
        'vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 10.0',
        'vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} 0.01',
        'vllm:request_queue_time_seconds_count{engine="0",model_name="m"} 10.0',
        'vllm:request_decode_time_seconds_sum{engine="0",model_name="m"} 3.0',
    ])
    counters = serve.prometheus_counters(text)
    assert counters == {"prompt_tokens": 640.0, "generation_tokens": 160.0, "requests": 10.0,
                        "ttft_sum_s": 0.17, "ttft_count": 10.0, "prefill_sum_s": 0.12, "prefill_count": 10.0,
                        "queue_sum_s": 0.01, "queue_count": 10.0}
    assert serve.per_request({"prompt_tokens": 640.0, "requests": 10.0}, "prompt_tokens") == 64.0
    assert serve.per_count(counters, "ttft_sum_s", "ttft_count") == 0.017
    assert np.isnan(serve.per_request({}, "prompt_tokens"))


# --- compare ----------------------------------------------------------------------------------------

def harness_level(value: float, repetition: int, scale: float = 1.0, kind: str = "concurrency") -> list[dict]:
    """Two requests of 3 tokens, one after the other: sent at 0 and 0.3 s, tokens 0.1 s apart (x scale)."""
    rows = []
    for i, (submit, first) in enumerate(((0.0, 0.1), (0.3, 0.5))):
        times = [scale * (first + 0.1 * k) for k in range(3)]
        rows.append(dict(request_id=f"{value}-{repetition}-{i}", submit_s=scale * submit, first_token_s=times[0],
                         end_s=times[-1], chunk_times_s=times, chunk_tokens=[1, 1, 1], input_tokens=4,
                         output_tokens=3, error=None, level_kind=kind, level_value=value, repetition=repetition,
                         engine_first_token_latency_s=0.09 * scale, engine_queued_s=0.001, engine_prefill_s=0.08))
    return rows


def test_compare_holds_both_sides_to_bench_serve_definitions() -> None:
    requests = pd.DataFrame(harness_level(1.0, 0) + harness_level(4.0, 0) + harness_level(4.0, 1, scale=2.0)
                            + harness_level(2.0, 0, kind="rate"))
    serve = pd.DataFrame([
        dict(level_kind="concurrency", level_value=1.0, output_tok_per_s=2 * 6 / 0.7, ttft_p50_ms=300.0,
             ttft_p99_ms=np.nan, itl_p50_ms=100.0, itl_p99_ms=50.0, tpot_p50_ms=0.0,
             steady_output_tok_per_s=6 / 0.7, server_engine_ttft_mean_ms=45.0, server_engine_prefill_mean_ms=80.0),
        dict(level_kind="concurrency", level_value=4.0, output_tok_per_s=1.0, ttft_p50_ms=225.0, ttft_p99_ms=1.0,
             itl_p50_ms=1.0, itl_p99_ms=1.0, tpot_p50_ms=150.0, steady_output_tok_per_s=1.0,
             server_engine_ttft_mean_ms=1.0, server_engine_prefill_mean_ms=1.0),
        dict(level_kind="concurrency", level_value=8.0, output_tok_per_s=1.0, ttft_p50_ms=1.0, ttft_p99_ms=1.0,
             itl_p50_ms=1.0, itl_p99_ms=1.0, tpot_p50_ms=1.0, steady_output_tok_per_s=1.0,
             server_engine_ttft_mean_ms=1.0, server_engine_prefill_mean_ms=1.0),
    ])
    out = compare(requests, serve)
    assert list(out.columns) == ["concurrency", "metric", "harness", "serve", "ratio"]
    assert sorted(out["concurrency"].unique()) == [1.0, 4.0]  # 8 only served, rates never compared
    h = out.set_index(["concurrency", "metric"])["harness"]
    r = out.set_index(["concurrency", "metric"])["ratio"]
    # bench serve's definitions on the harness side: 6 tokens from the first send (0) to the last token (0.7 s),
    # TTFT of every request (100 and 200 ms), every gap between tokens (100 ms)
    assert h[(1.0, "output_tok_per_s")] == pytest.approx(6 / 0.7) and r[(1.0, "output_tok_per_s")] == pytest.approx(0.5)
    assert h[(1.0, "ttft_p50_ms")] == pytest.approx(150.0) and r[(1.0, "ttft_p50_ms")] == pytest.approx(0.5)
    assert h[(1.0, "itl_p50_ms")] == pytest.approx(100.0) and r[(1.0, "itl_p99_ms")] == pytest.approx(2.0)
    assert np.isnan(r[(1.0, "ttft_p99_ms")]) and np.isnan(r[(1.0, "tpot_p50_ms")])  # serve missing or 0
    assert r[(1.0, "steady_output_tok_per_s")] == pytest.approx(1.0)  # no steady window: the whole level
    assert r[(1.0, "engine_ttft_mean_ms")] == pytest.approx(2.0) and r[(1.0, "engine_prefill_mean_ms")] == 1.0
    assert (1.0, "engine_queue_mean_ms") not in r  # the server's histogram is absent: no row
    # two repetitions: the median (here the mean) of each figure; the second ran at half the pace
    assert h[(4.0, "output_tok_per_s")] == pytest.approx((6 / 0.7 + 6 / 1.4) / 2)
    assert h[(4.0, "ttft_p50_ms")] == pytest.approx(225.0) and h[(4.0, "tpot_p50_ms")] == pytest.approx(150.0)
    assert compare(requests, serve.iloc[0:0]).empty


def test_methods_text_names_the_differences() -> None:
    for words in ("HTTP", "detokeniz", "tokenizer", "steady window", "harness / serve"):
        assert words in METHODS_TEXT


# --- processes: start failures name the cause, the group is always killed ---------------------------

def test_server_that_exits_fails_with_its_log_tail(tmp_path: Path) -> None:
    server = serve.Server([sys.executable, "-c", "print('no such model'); raise SystemExit(3)"], {},
                               tmp_path / "server.log", serve.free_port())
    with pytest.raises(AccelbenchError, match=r"exited with code 3(.|\n)*no such model"):
        with server:
            server.start(timeout_s=30)


def test_server_that_never_answers_times_out_and_is_killed(tmp_path: Path) -> None:
    # a parent with a child in its group: both must be gone after the timeout
    script = ("import subprocess, sys, time; "
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
              "print('starting child', c.pid, flush=True); time.sleep(300)")
    log = tmp_path / "server.log"
    server = serve.Server([sys.executable, "-c", script], {}, log, serve.free_port())
    with pytest.raises(AccelbenchError, match=r"did not answer(.|\n)*starting child"):
        with server:
            server.start(timeout_s=3)
    assert server.proc.poll() is not None
    child = int(log.read_text().split("starting child")[1].split()[0])
    time.sleep(0.2)
    assert not alive(child)


def test_failed_bench_run_is_named_with_its_log(tmp_path: Path) -> None:
    class LiveServer:
        log_path = tmp_path / "server.log"

        def dead(self) -> bool:
            return False

    args = [sys.executable, "-c", "print('no endpoint'); raise SystemExit(2)"]
    with pytest.raises(AccelbenchError, match=r"warm-up run at concurrency 4 exited with code 2(.|\n)*no endpoint"):
        serve.run_bench(args, {}, tmp_path / "serve_c4.log", LiveServer(),
                             what="bench serve's warm-up run at concurrency 4")


def alive(pid: int) -> bool:
    """Running, not a zombie (an orphan killed here may wait for a container's init to reap it)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return False
    state = next(line for line in status.read_text().splitlines() if line.startswith("State:"))
    return "zombie" not in state and "dead" not in state


def test_failed_validation_is_returned_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "server_args",
                        lambda *a: [sys.executable, "-c", "print('engine failed'); raise SystemExit(1)"])
    r = resolve("cpu", workload="cpu-validate")
    out = validation.validate_with_serve(r, {}, tmp_path, on_progress=lambda text: None)
    assert out.error and "engine failed" in out.error
    assert out.manifest["status"] == "failed" and out.manifest["tokenizer"]["synthetic"] is True
    assert "serve_levels" not in out.tables and set(out.files) == {"serve_server.log"}


def test_levels_measured_before_a_failure_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = []

    def fake_bench(args: list[str], env: dict, log_path: Path, server: serve.Server,
                   what: str = "bench serve") -> None:
        opts = dict(zip(args[3:], args[4:]))
        runs.append((opts["--max-concurrency"], "--save-result" in args))
        if "--save-result" not in args:  # the warm-up run
            return
        if opts["--max-concurrency"] == "4":
            raise AccelbenchError("bench serve exited with code 1")
        (Path(opts["--result-dir"]) / opts["--result-filename"]).write_text(json.dumps(BENCH_RESULT))

    monkeypatch.setattr(serve.Server, "start", lambda self, timeout_s: setattr(self, "start_s", 0.0))
    monkeypatch.setattr(serve.Server, "counters", lambda self: {})
    monkeypatch.setattr(serve, "run_bench", fake_bench)
    out = validation.validate_with_serve(resolve("cpu", workload="cpu-validate"), {}, tmp_path,
                                         on_progress=lambda text: None)
    assert out.manifest["status"] == "failed" and "exited with code 1" in out.error
    assert out.tables["serve_levels"]["level_value"].tolist() == [1.0] and out.manifest["levels"] == [1.0]
    assert "serve_c1.json" in out.files and "serve_c4.json" not in out.files
    assert runs == [("1", False), ("1", True), ("4", False), ("4", True)]  # each level warmed up first
    assert out.manifest["server_tokens_match_workload"] is False  # counters unreadable: not confirmed


def test_skipped_validation_says_why(tmp_path: Path) -> None:
    out = validation.validate_with_serve(resolve("cpu", workload="cpu-validate"), {}, tmp_path,
                                         skip_reason="the in-process sweep failed")
    assert out.manifest["status"] == "skipped" and not out.tables and not out.files


# --- end to end on the cpu scenario -----------------------------------------------------------------

@pytest.mark.slow
def test_cpu_validate_run_saves_serve_levels(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    import accelbench
    from accelbench.store.runs import load_manifest
    run = accelbench.run_scenario("cpu", workload="cpu-validate", outputs_dir=tmp_path)
    assert run.status == "completed", run.error
    manifest = load_manifest(run.run_dir)
    sv = manifest.serve_validation
    assert sv["status"] == "completed", sv["error"]
    assert sv["tokenizer"]["synthetic"] is True and sv["tokenizer"]["vocab_size"] == 4096
    assert sv["server_tokens_match_workload"] is True
    serve = pd.read_parquet(run.run_dir / "serve_levels.parquet")
    assert serve["level_value"].tolist() == [1.0, 4.0]
    assert (serve["output_tok_per_s"] > 0).all() and (serve["n_errors"] == 0).all()
    assert (serve["server_prompt_tokens_per_request"] == 64).all()
    # the server's counters cover the measured requests alone: the warm-up ran before they were read
    assert serve["server_requests"].tolist() == serve["n_requests"].tolist() == [6, 12]
    for name in ("serve_c1.json", "serve_c4.json", "serve_server.log", "serve_requests.parquet"):
        assert (run.run_dir / name).exists()
    table = compare(pd.read_parquet(run.run_dir / "requests.parquet"), serve)
    assert len(table) == 2 * 10 and np.isfinite(table["ratio"]).all()
    for metric in ("engine_ttft_mean_ms", "engine_prefill_mean_ms"):
        assert (table.loc[table["metric"] == metric, "serve"] > 0).all()
    # the server ran with the token budget the in-process engine had (vLLM's defaults differ by entry point)
    budget = manifest.engine_effective["max_num_batched_tokens"]
    command = sv["server_command"]
    assert budget and command[command.index("--max-num-batched-tokens") + 1] == str(budget)


def test_compare_recomputes_serve_steady_row_from_its_requests_with_the_current_interval() -> None:
    requests = pd.DataFrame(harness_level(1.0, 0))
    serve = pd.DataFrame([dict(level_kind="concurrency", level_value=1.0, output_tok_per_s=1.0, ttft_p50_ms=1.0,
                               ttft_p99_ms=1.0, itl_p50_ms=1.0, itl_p99_ms=1.0, tpot_p50_ms=1.0,
                               steady_output_tok_per_s=123.0)])  # as an older estimator stored it
    stored = compare(requests, serve).set_index("metric")
    again = compare(requests, serve, serve_requests=requests).set_index("metric")
    assert stored.loc["steady_output_tok_per_s", "serve"] == 123.0
    # the same requests on both sides under one interval: the ratio is exactly 1
    assert again.loc["steady_output_tok_per_s", "ratio"] == pytest.approx(1.0)
