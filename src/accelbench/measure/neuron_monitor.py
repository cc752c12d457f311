"""neuron-monitor telemetry: its JSON report stream parsed into telemetry.py's sample schema.

neuron-monitor (aws-neuronx-tools) writes one complete JSON report per line to stdout every period. The
format is the Neuron Monitor User Guide's, "The JSON output format":
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-sys-tools/neuron-monitor-user-guide.html
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

Sample = dict[str, float | None]

DEFAULT_PERIOD_S = 1.0


def monitor_config(tag: str | None = None, period_s: float = DEFAULT_PERIOD_S) -> dict[str, Any]:
    """The -c configuration: NeuronCore counters and memory for the runtimes whose tag matches `tag`."""
    return {
        "period": f"{period_s:g}s",
        "neuron_runtimes": [{
            "tag_filter": f"^{re.escape(tag)}$" if tag else ".*",
            "metrics": [{"type": "neuroncore_counters"}, {"type": "memory_used"}],
        }],
    }


def parse_report(report: dict[str, Any], tag: str | None = None) -> Sample:
    """One neuron-monitor report as {"power_w", "util_pct", "memory_used_gb"} over the matching runtimes.

    util_pct: mean `neuroncore_utilization` over every NeuronCore in use (percent, as reported);
    memory_used_gb: sum of `memory_used.neuron_runtime_used_bytes.neuron_device` (device HBM, 1e9 bytes);
    power_w: None. The user guide documents no power field in any metric group (neuron_hw_counters holds ECC
    counts only), so power is absent, never 0. A value is None when nothing reported it or it came with an
    error string.
    """
    utils: list[float] = []
    device_bytes: list[float] = []
    for runtime in report.get("neuron_runtime_data") or []:
        if tag is not None and runtime.get("neuron_runtime_tag") != tag:
            continue
        if runtime.get("error"):
            continue
        groups = runtime.get("report") or {}
        counters = groups.get("neuroncore_counters") or {}
        if not counters.get("error"):
            for core in (counters.get("neuroncores_in_use") or {}).values():
                if isinstance(core, dict) and core.get("neuroncore_utilization") is not None:
                    utils.append(float(core["neuroncore_utilization"]))
        memory = groups.get("memory_used") or {}
        used = memory.get("neuron_runtime_used_bytes") or {}
        if not memory.get("error") and used.get("neuron_device") is not None:
            device_bytes.append(float(used["neuron_device"]))
    return {"power_w": None,
            "util_pct": sum(utils) / len(utils) if utils else None,
            "memory_used_gb": sum(device_bytes) / 1e9 if device_bytes else None}


def parse_line(line: str, tag: str | None = None) -> Sample | None:
    """A stdout line as a sample, or None for a line that is not a JSON report (blank, log noise)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        report = json.loads(line)
    except json.JSONDecodeError:
        return None
    return parse_report(report, tag) if isinstance(report, dict) else None


class NeuronMonitorSampler:
    """Runs neuron-monitor between start() and stop(), parsing its reports in a thread.

    The same interface as telemetry.Sampler: `samples` holds {"t", "power_w", "util_pct", "memory_used_gb"},
    t being time.perf_counter() when the report line arrived (a report covers the period before it).
    """

    def __init__(self, tag: str | None = None, period_s: float = DEFAULT_PERIOD_S,
                 command: list[str] | None = None) -> None:
        self.tag, self.period_s = tag, period_s
        self.command = command or ["neuron-monitor"]
        self.samples: list[Sample] = []
        self.lines_seen = 0
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._config_dir: tempfile.TemporaryDirectory[str] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("neuron-monitor") is not None

    def start(self) -> None:
        self._config_dir = tempfile.TemporaryDirectory(prefix="accelbench-neuron-monitor-")
        config = Path(self._config_dir.name) / "monitor.json"
        config.write_text(json.dumps(monitor_config(self.tag, self.period_s)))
        self._proc = subprocess.Popen([*self.command, "-c", str(config)], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._read, daemon=True, name="accelbench-neuron-monitor")
        self._thread.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines_seen += 1
            sample = parse_line(line, self.tag)
            if sample is not None:
                self.samples.append({"t": time.perf_counter(), **sample})

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._config_dir is not None:
            self._config_dir.cleanup()
            self._config_dir = None
