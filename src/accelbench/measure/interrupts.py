"""SIGINT and SIGTERM during a run: the first is recorded and cancels the measurement, so the run ends as
an interrupted run with every level measured before it saved and said where; a second stops at once
(KeyboardInterrupt; the levels saved so far stay saved)."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """A context manager around a run, in the main thread (signal handlers live there; in another thread it
    changes nothing). A signal the process was started ignoring (nohup, a background job) stays ignored."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.immediate = False  # outside the measurement: True raises KeyboardInterrupt at the first signal
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Task] | None = None
        self._previous: dict[int, Any] = {}

    @property
    def name(self) -> str | None:
        return signal.Signals(self.signum).name if self.signum else None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                previous = signal.getsignal(sig)
                if previous is not signal.SIG_IGN and previous is not None:  # None: set outside Python, kept
                    self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt(f"a second signal ({signal.Signals(signum).name}): stopping at once")
        self.signum = signum
        if self._target is not None:
            self.cancel()
        elif self.immediate:
            raise KeyboardInterrupt(f"{self.name}")

    def cancel(self) -> None:
        """Cancel the measurement (from any thread): it stops at its next await and shuts its engine down."""
        if self._target is not None:
            loop, task = self._target
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # its loop has closed: nothing left to cancel
                pass

    async def guard(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Await `coro` as the task a signal cancels (at once, if one came before it started)."""
        task = asyncio.current_task()
        assert task is not None
        self._target = (asyncio.get_running_loop(), task)
        try:
            if self.signum is not None:
                coro.close()
                raise asyncio.CancelledError
            return await coro
        finally:
            self._target = None
