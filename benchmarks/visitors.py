"""The visitors of ``benchmarks.load``: one person each, working through the same interactions.

Every visitor opens the explorer from its own link and repeats ``CYCLE`` (the offset slider one
step to the right, a new width ``d``, the guided lesson and back), reading the page ``think_s``
seconds before each interaction, scaled by a seeded factor in [0.5, 1.5] so the class does not
click in lockstep. This module holds what they share: the cycle, the pauses, and a run's
bookkeeping; ``ws_visitor`` and ``browser_visitor`` drive a page. Latency runs from the message
sent until the run has finished with the result in place; think time is not part of it."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod

import numpy as np

# Widths typed into the ``d`` box in turn: small enough that a redraw is quick, different so
# every change misses the cache of the visitor before.
WIDTHS = (48, 64, 96, 32)
# One lap of what a visitor does; repeated until the interaction count is reached.
CYCLE = ("slider", "slider", "slider", "width", "slider", "lesson", "explorer", "slider")
PAGE_SWITCHES = ("lesson", "explorer")
# Reading the chart before the next move: a few seconds for a student, one by default so the
# run stays short; each pause is scaled by a factor drawn in [1 - JITTER, 1 + JITTER].
DEFAULT_THINK_S = 1.0
THINK_JITTER = 0.5
# With the visitor's number, seeds its pauses: the same class behaves the same in every run.
THINK_SEED = 20


class NoEffect(Exception):
    """A run that finished without the result the interaction asked for."""


class WorkerLost(Exception):
    """The visitor's connection closed under it: the worker that held its session is gone."""


class Visitor(ABC):
    """One person in the class: the cycle of interactions, their latencies and their errors.

    Besides ``latencies`` and ``errors`` it keeps, for the report: ``failed`` (interactions in
    flight when its worker died), ``restored_at`` (when each lost view came back, monotonic
    seconds), ``busy_answers`` (seconds each busy page took to arrive) and ``busy_wait_s``
    (from the first busy page to a seat)."""

    def __init__(
        self,
        number: int,
        base_url: str,
        step_timeout_s: float,
        load_timeout_s: float,
        think_s: float = DEFAULT_THINK_S,
    ) -> None:
        self.number = number
        self.base_url = base_url.rstrip("/")
        self.step_timeout_s, self.load_timeout_s = step_timeout_s, load_timeout_s
        self.think_s = think_s
        # How far through WIDTHS its width changes have gone (``next_width``).
        self.width = 0
        self.rng = np.random.default_rng((THINK_SEED, number))
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.restored_at: list[float] = []
        self.busy_answers: list[float] = []
        self.busy_wait_s = 0.0
        self.source_changed = False
        # Set once the first load is over, whether it worked or not.
        self.loaded = asyncio.Event()

    def error(self, what: str) -> None:
        self.errors.append(f"visitor {self.number}: {what}")

    @abstractmethod
    async def open(self) -> None:
        """The explorer from the visitor's link, run to the end; not counted as an interaction."""

    async def act(self, kind: str) -> None:
        """One interaction of ``CYCLE``; appends its latency, raises if it did not take effect."""
        if kind == "slider":
            await self.slider()
        elif kind == "width":
            await self.width_change()
        else:
            await self.switch(kind)

    @abstractmethod
    async def slider(self) -> None:
        """Move the explorer's offset slider one step."""

    @abstractmethod
    async def width_change(self) -> None:
        """Type a new width d."""

    @abstractmethod
    async def switch(self, topic: str) -> None:
        """Go to the page ``topic`` (or back to the explorer)."""

    @abstractmethod
    async def shows_exception(self) -> bool:
        """Whether the page now shows an exception."""

    async def think(self) -> bool:
        """Read the page before the next interaction; whether the connection dropped meanwhile."""
        await asyncio.sleep(self.pause())
        return False

    def next_width(self, shown: int) -> int:
        """The next width in turn that differs from the one ``shown``, so the chart must change."""
        self.width += 1
        while WIDTHS[self.width % len(WIDTHS)] == shown:
            self.width += 1
        return WIDTHS[self.width % len(WIDTHS)]

    def pause(self) -> float:
        if self.think_s <= 0:
            return 0.0
        return self.think_s * self.rng.uniform(1 - THINK_JITTER, 1 + THINK_JITTER)

    async def recover(self) -> None:
        """Reconnect after ``WorkerLost`` and check that the same view came back."""
        raise NoEffect(f"{type(self).__name__} does not reconnect by itself")

    async def run(self, interactions: int) -> None:
        try:
            await self.open()
        except Exception as exc:  # any failure to load is this visitor's error
            self.error(f"first load failed: {type(exc).__name__}: {str(exc)[:120]}")
            return
        finally:
            self.loaded.set()
        for i in range(interactions):
            kind = CYCLE[i % len(CYCLE)]
            try:
                if await self.think():
                    await self.recover()  # moved while reading: nothing was in flight
            except Exception as exc:  # left with a broken page: this visitor stops
                self.error(f"view not restored before {kind} #{i + 1}: {str(exc)[:120]}")
                return
            try:
                await self.act(kind)
            except WorkerLost:
                self.failed.append(f"visitor {self.number}: {kind} #{i + 1}")
                try:
                    await self.recover()
                    # The view restored is the last one shown: a page switch cut short is made
                    # again, or the next move would act on the page it left.
                    if kind in PAGE_SWITCHES:
                        await self.act(kind)
                except Exception as exc:  # left with a broken page: this visitor stops
                    self.error(f"view not restored after {kind} #{i + 1}: {str(exc)[:120]}")
                    return
                continue
            except Exception as exc:  # a timeout or an interaction without effect
                self.error(f"{kind} #{i + 1} failed: {type(exc).__name__}: {str(exc)[:120]}")
                # Back to a known state, so one failure does not cascade into the rest.
                try:
                    await self.open()
                except Exception:  # the page is gone: this visitor stops
                    return
                continue
            if await self.shows_exception():
                self.error(f"{kind} #{i + 1}: the page shows an exception")
