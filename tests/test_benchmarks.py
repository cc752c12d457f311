"""The benchmark scripts' committed results recompute from their raw requests; the serving-path client's
stream parsing against a stand-in server."""

from __future__ import annotations

import http.client
import http.server
import importlib.util
import json
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from accelbench.errors import AccelbenchError
from accelbench.measure.runner import Clock

ROOT = Path(__file__).resolve().parents[1]
SERVING_PATH_RUNS = sorted((ROOT / "outputs" / "benchmarks").glob("serving_path-*"))
COMMITTED_NAMES = {"engine_ttft_ms": "engine_ttft_mean_ms", "engine_queue_ms": "engine_queue_mean_ms",
                   "engine_prefill_ms": "engine_prefill_mean_ms"}


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_serving_path_runs_are_committed():
    assert [p.name for p in SERVING_PATH_RUNS] == ["serving_path-h200", "serving_path-h200x2-gpu1"]


@pytest.mark.parametrize("run", SERVING_PATH_RUNS, ids=lambda p: p.name)
def test_serving_path_table_recomputes_from_raw_requests(run):
    sp = load_script("serving_path")
    summary = json.loads((run / "summary.json").read_text())
    # the committed runs predate the shared engine-side names (metrics.ENGINE_MEANS)
    stored = pd.DataFrame(summary["table"]).set_index("variant").rename(columns=COMMITTED_NAMES)
    table = sp.summarize(pd.read_parquet(run / "requests.parquet"), summary["server_metrics_deltas"])
    pd.testing.assert_frame_equal(table[stored.columns], stored, check_exact=False, rtol=1e-9)
    assert list(stored.index) == [sp.BASELINE, "in-process, gap 6 ms", "in-process, gap 25 ms",
                                  "server, token ids", "server, text", "server, bench serve"]
    assert (stored["requests"] == summary["requests_per_variant"]).all() and (stored["errors"] == 0).all()
    env = summary["environment"]
    assert set(env["gpus"]["names"]) == {"NVIDIA H200"} and env["git"]["declared_commit"]


class SSEHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked responses on a kept-alive connection, as uvicorn sends them
    tokens = 3

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [{"choices": [{"text": f" t{i}"}]} for i in range(self.tokens)]
        events.append({"choices": [], "usage": {"completion_tokens": self.tokens}})
        for event in [*map(json.dumps, events), "[DONE]"]:
            data = f"data: {event}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def sse_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SSEHandler)
    server.bodies = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_stream_request_times_each_token_and_checks_the_count(sse_server):
    sp = load_script("serving_path")
    conn = http.client.HTTPConnection("127.0.0.1", sse_server.server_address[1], timeout=10)
    clock = Clock()
    ok = sp.stream_request(conn, "r0", sp.completion_body("m", [5, 6], 3), 2, 3, clock)
    short = sp.stream_request(conn, "r1", sp.completion_body("m", "t5 t6", 4), 2, 4, clock)  # same connection
    conn.close()
    assert ok["error"] is None and ok["output_tokens"] == 3 and ok["chunk_tokens"] == [1, 1, 1]
    assert ok["submit_s"] <= ok["first_token_s"] <= ok["end_s"] and len(ok["chunk_times_s"]) == 3
    assert short["error"] == "short output: 3 of 4 tokens"
    assert [b["prompt"] for b in sse_server.bodies] == [[5, 6], "t5 t6"]
    assert all(b["stream"] and b["ignore_eos"] and b["temperature"] == 1.0 for b in sse_server.bodies)


def test_serving_path_keeps_what_it_measured_when_the_server_fails(tmp_path, monkeypatch, capsys):
    sp = load_script("serving_path")
    measured = [dict(request_id=f"r{i}", scheduled_s=i, submit_s=i, first_token_s=i + 0.01, end_s=i + 0.05,
                     chunk_times_s=[i + 0.01, i + 0.03, i + 0.05], chunk_tokens=[1, 1, 1], input_tokens=8,
                     output_tokens=3, error=None, engine_first_token_latency_s=0.009, engine_queued_s=0.001,
                     engine_prefill_s=0.007, variant=sp.BASELINE) for i in range(2)]

    async def in_process(*args):
        return measured, {"model": "stand-in"}

    def server(*args):
        raise AccelbenchError("the vLLM server exited with code 1 before /health answered")

    monkeypatch.setattr(sp, "in_process_variants", in_process)
    monkeypatch.setattr(sp, "server_variants", server)
    monkeypatch.setattr(sys, "argv", ["serving_path.py", "--workload", "cpu-validate", "--requests", "2",
                                      "--gaps-ms", "6", "--out", str(tmp_path)])
    assert sp.main() == 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "failed" and "exited with code 1 before /health" in summary["error"]
    assert [r["variant"] for r in summary["table"]] == [sp.BASELINE]
    assert len(pd.read_parquet(tmp_path / "requests.parquet")) == 2
    assert "the server variants failed" in capsys.readouterr().err
