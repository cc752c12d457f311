"""Level identity as data: what a sweep measures (Level), the plan of a workload, and the start/end
events the runner emits. Engine-log markers, JIT attribution, the report and the fleet read these
events, never a progress sentence."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from accelbench.config.params import Workload

EVENT_PREFIX = "[accelbench] event "
PHASES = ("start", "end")
KINDS = ("concurrency", "rate")


def level_name(kind: str, value: float) -> str:
    """A level without its repetition, for people: 'concurrency 4', 'rate 2 req/s'."""
    return f"{kind} {value:g}" + ("" if kind == "concurrency" else " req/s")


@dataclass(frozen=True)
class Level:
    kind: str  # "concurrency" (closed loop) or "rate" (open loop)
    value: float
    repetition: int
    num_requests: int
    index: int  # position in the sweep; seeds the prompts, output lengths and client phases of this level
    replicate: int = 0  # which engine start of the run measured it

    @property
    def key(self) -> tuple[int, str, float, int]:
        return (self.replicate, self.kind, self.value, self.repetition)

    @property
    def label(self) -> str:
        start = f"engine start {self.replicate + 1} " if self.replicate else ""
        return f"{level_name(self.kind, self.value)} {start}rep {self.repetition}"

    def event(self, phase: str, t_s: float) -> LevelEvent:
        return LevelEvent(phase, self.kind, self.value, self.repetition, t_s, self.num_requests, self.replicate)


@dataclass(frozen=True)
class LevelEvent:
    """A level started or ended, `t_s` seconds after the run's clock started."""
    phase: str
    kind: str
    value: float
    repetition: int
    t_s: float
    num_requests: int | None = None
    replicate: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LevelEvent:
        data: dict[str, Any] = json.loads(text)
        event = cls(**data)
        if event.phase not in PHASES or event.kind not in KINDS:
            raise ValueError(f"not a level event: {text!r}")
        return event

    def line(self) -> str:
        """The event as one log line (EVENT_PREFIX + JSON)."""
        return EVENT_PREFIX + self.to_json()

    @classmethod
    def parse_line(cls, line: str) -> LevelEvent | None:
        """The event a log line carries, or None for any other line."""
        if not line.startswith(EVENT_PREFIX):
            return None
        return cls.from_json(line[len(EVENT_PREFIX):])

    @property
    def level(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "repetition": self.repetition, "replicate": self.replicate}


def plan_levels(workload: Workload, replicate: int = 0) -> list[Level]:
    """Every level of one engine start, repetitions adjacent, closed loop first, then open loop. Each
    engine start measures the same levels with the same prompts (its prefix cache starts empty)."""
    levels = []
    points = [("concurrency", float(c), workload.requests_for_concurrency(c)) for c in workload.concurrency_levels]
    points += [("rate", r, workload.requests_for_rate(r)) for r in workload.request_rates_per_s]
    for kind, value, n in points:
        for rep in range(workload.repetitions):
            levels.append(Level(kind, value, rep, n, len(levels), replicate))
    return levels
