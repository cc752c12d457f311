"""Neuron backend (placeholder until the neuron engine lands): detection only."""

from __future__ import annotations

import glob
from typing import Any


def neuron_facts() -> dict[str, Any] | None:
    devices = sorted(glob.glob("/dev/neuron*"))
    return {"devices": devices} if devices else None
