"""Progress of a study: a line on a terminal, an output updated in place in a notebook.

``progress=True`` (the default of :func:`accelsim.simulate`) reports runs done, runs/s and
the time left after each finished chunk: on a terminal as one line on stderr rewritten in
place, under a Jupyter kernel as a small progress bar in the cell's output, updated in place
(at most five times a second) and ending with the study's total time. Anywhere else (a
pipe, a log file, a batch job) it prints nothing. IPython is not a dependency: a kernel is
recognised from the ``IPython`` module a running kernel has already imported.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

ProgressLike = bool | Callable[[int, int], object]

NOTEBOOK_INTERVAL_S = 0.2
"""Shortest time between two updates of the notebook display [s] (the last is always shown)."""


def duration_text(seconds: float) -> str:
    """A duration for people: seconds under a minute, then minutes, then hours.

    Examples
    --------
    >>> duration_text(4.2), duration_text(75.0), duration_text(7322.0)
    ('4 s', '1 min 15 s', '2 h 02 min')
    >>> duration_text(0.04), duration_text(float("inf"))
    ('0.04 s', '?')
    """
    if not seconds < float("inf"):
        return "?"
    if seconds < 1:
        return f"{seconds:.2g} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def rate_text(runs_per_s: float) -> str:
    """A rate in runs/s with three significant figures below 100, whole runs above.

    Examples
    --------
    >>> rate_text(12345.6), rate_text(3.14159), rate_text(0.0123)
    ('12,346 runs/s', '3.14 runs/s', '0.0123 runs/s')
    """
    if runs_per_s >= 100:
        return f"{runs_per_s:,.0f} runs/s"
    return f"{runs_per_s:.3g} runs/s"


class ProgressBar:
    """What the notebook shows: an HTML ``<progress>`` bar with a line of text.

    Its plain-text form (``str``/``repr``) is the line alone, for frontends without HTML.

    Examples
    --------
    >>> bar = ProgressBar(4096, 16384, "accelsim: 4,096/16,384 runs (25 %)")
    >>> str(bar)
    'accelsim: 4,096/16,384 runs (25 %)'
    >>> bar._repr_html_()[:44]
    '<div><progress value="4096" max="16384" styl'
    """

    def __init__(self, done: int, total: int, text: str) -> None:
        self.done = done
        self.total = total
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return (
            f'<div><progress value="{self.done}" max="{max(self.total, 1)}" '
            f'style="width: 24em; vertical-align: middle"></progress> '
            f"<code>{self.text}</code></div>"
        )


class _ProgressText:
    """The line both displays show: runs done, share, runs/s and ETA, or the total time.

    The rate is measured from the first report (which may count resumed runs or the first
    chunk, i.e. before the workers are warm), the total time from construction.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.started = clock()
        self.first: tuple[int, float] | None = None

    def text(self, done: int, total: int, now: float) -> str:
        """The line shown after ``done`` of ``total`` runs at time ``now`` [s]."""
        if self.first is None:
            self.first = (done, now)
        first_done, first_t = self.first
        elapsed = now - first_t
        rate = (done - first_done) / elapsed if elapsed > 0 else 0.0
        head = f"accelsim: {done:,}/{total:,} runs ({100 * done / max(total, 1):.0f} %)"
        if done >= total:
            tail = f"done in {duration_text(now - self.started)}"
            return f"{head}, {tail}, {rate_text(rate)}" if rate > 0 else f"{head}, {tail}"
        eta = duration_text((total - done) / rate) if rate > 0 else "?"
        return f"{head}, {rate_text(rate)}, ETA {eta}"


class NotebookProgress(_ProgressText):
    """Progress as a cell output under a Jupyter kernel, updated in place.

    The first call displays a :class:`ProgressBar` with ``display(bar, display_id=True)``
    (``IPython.display.display``); later calls update it through the returned handle, at most
    once every ``interval_s`` seconds, except that the last call (``done >= total``) is always
    shown.
    """

    def __init__(
        self,
        display: Callable[..., Any],
        *,
        clock: Callable[[], float] = time.perf_counter,
        interval_s: float = NOTEBOOK_INTERVAL_S,
    ) -> None:
        super().__init__(clock)
        self.display = display
        self.interval_s = interval_s
        self.last_shown = -float("inf")
        self.handle: Any = None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        line = self.text(done, total, now)  # the first call also starts the rate's clock
        final = done >= total
        if self.handle is not None and not final and now - self.last_shown < self.interval_s:
            return
        bar = ProgressBar(done, total, line)
        if self.handle is None:
            self.handle = self.display(bar, display_id=True)
        else:
            self.handle.update(bar)
        self.last_shown = now


class TtyProgress(_ProgressText):
    """The same line on stderr, rewritten in place, only when stderr is a terminal."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(clock)
        self.enabled = sys.stderr.isatty()
        self.width = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        line = self.text(done, total, self.clock())
        pad = " " * max(0, self.width - len(line))  # blank what a longer line left behind
        self.width = len(line)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{line}{pad}{end}")
        sys.stderr.flush()


def in_notebook() -> bool:
    """True under a Jupyter kernel (IPython's ``ZMQInteractiveShell`` or a subclass of it).

    IPython is looked up among the imported modules only, never imported: a kernel has
    always imported it, and a plain script should not pay for the import.

    Examples
    --------
    >>> in_notebook()  # doctests run outside a kernel
    False
    """
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    if not callable(get_ipython):
        return False
    shell = get_ipython()
    return any(cls.__name__ == "ZMQInteractiveShell" for cls in type(shell).__mro__)


def as_progress(progress: ProgressLike) -> Callable[[int, int], object] | None:
    """The progress callback for ``progress=``.

    ``False``: none. ``True``: a :class:`NotebookProgress` under a Jupyter kernel, else a
    :class:`TtyProgress` (silent unless stderr is a terminal). A callable ``f(done, total)``
    is used as given.
    """
    if progress is False:
        return None
    if progress is True:
        if in_notebook():
            display = importlib.import_module("IPython.display").display
            return NotebookProgress(display)
        return TtyProgress()
    if callable(progress):
        return progress
    raise TypeError(f"progress must be a bool or a callable(done, total), not {progress!r}")


__all__ = [
    "NOTEBOOK_INTERVAL_S",
    "NotebookProgress",
    "ProgressBar",
    "ProgressLike",
    "TtyProgress",
    "as_progress",
    "duration_text",
    "in_notebook",
]
