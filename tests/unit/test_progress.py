"""Progress reports: an updating cell output under a (fake) Jupyter kernel, nothing elsewhere.

IPython is not installed in the test environment: a fake ``IPython`` package is put into
``sys.modules``, with ``get_ipython()`` returning a shell of the class name the progress
module looks for and ``display`` returning a handle that records its updates.
"""

from __future__ import annotations

import io
import re
import sys
import types
from typing import Any

import pytest

import accelsim as acs
from accelsim.engines._inputs import BLOCK_RUNS
from accelsim.study._progress import (
    NotebookProgress,
    ProgressBar,
    TtyProgress,
    as_progress,
    in_notebook,
)


def scenario() -> acs.Scenario:
    return acs.Scenario(
        name="progress",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=64, provider="aws")],
        assumptions=acs.Assumptions(mfu=acs.Uniform(low=0.3, high=0.5)),
    )


class ZMQInteractiveShell:
    """Named like the shell of a Jupyter kernel."""


class ColabShell(ZMQInteractiveShell):
    """A kernel's shell subclassing it under another name (as Google Colab's does)."""


class TerminalInteractiveShell:
    """Named like the shell of IPython in a terminal (not a notebook)."""


class Handle:
    def __init__(self, shown: list[Any]) -> None:
        self.shown = shown

    def update(self, obj: Any) -> None:
        self.shown.append(obj)


class FakeIPython:
    """Installs fake ``IPython`` and ``IPython.display`` modules; records what is shown."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, shell: object | None) -> None:
        self.shown: list[Any] = []
        self.displays = 0
        ipython = types.ModuleType("IPython")
        ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
        display_mod = types.ModuleType("IPython.display")
        display_mod.display = self.display  # type: ignore[attr-defined]
        ipython.display = display_mod  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "IPython", ipython)
        monkeypatch.setitem(sys.modules, "IPython.display", display_mod)

    def display(self, obj: Any, *, display_id: bool = False) -> Handle:
        assert display_id is True
        self.displays += 1
        self.shown.append(obj)
        return Handle(self.shown)


LINE = re.compile(
    r"accelsim: (?P<done>[\d,]+)/(?P<total>[\d,]+) runs \((?P<pct>\d+) %\), "
    r"(?:(?P<rate>[\d,.e+-]+) runs/s, ETA (?P<eta>\?|\d[\d.]* s|\d+ min \d\d s|\d+ h \d\d min)"
    r"|done in (?P<took>\S+ s|\d+ min \d\d s|\d+ h \d\d min|\?)"
    r"(?:, (?P<final_rate>[\d,.e+-]+) runs/s)?)$"
)


def parse(bar: Any) -> dict[str, str | None]:
    assert isinstance(bar, ProgressBar)
    match = LINE.match(str(bar))
    assert match is not None, str(bar)
    return match.groupdict()


@pytest.mark.parametrize("shell_class", [ZMQInteractiveShell, ColabShell])
def test_a_notebook_study_shows_a_bar_updated_in_place(
    monkeypatch: pytest.MonkeyPatch, shell_class: type
) -> None:
    """A 6-chunk study under a (fake) kernel displays one output and updates it in place: done
    counts never decrease, each is a whole number of chunks, the last is the total and says
    "done in", the others give a rate and an ETA; stderr (a terminal here) gets nothing."""
    nb = FakeIPython(monkeypatch, shell_class())
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    runs = 6 * BLOCK_RUNS
    acs.simulate(scenario(), runs=runs, seed=1, chunk_runs=BLOCK_RUNS, progress=True)
    assert nb.displays == 1
    assert tty.getvalue() == ""
    lines = [parse(bar) for bar in nb.shown]
    done = [int(str(g["done"]).replace(",", "")) for g in lines]
    assert done == sorted(done)
    assert all(d % BLOCK_RUNS == 0 and 0 < d <= runs for d in done)
    assert {g["total"] for g in lines} == {f"{runs:,}"}
    assert done[-1] == runs
    assert lines[-1]["took"] is not None
    assert lines[-1]["pct"] == "100"
    assert all(g["took"] is None and g["eta"] is not None for g in lines[:-1])
    assert [b.done for b in nb.shown] == done
    assert f'<progress value="{runs}" max="{runs}"' in nb.shown[-1]._repr_html_()


def test_notebook_updates_are_throttled_and_the_last_always_shown() -> None:
    """With a fake clock: reports at 0, 0.05, 0.1, 0.25, 0.3 and 0.35 s, then the total at
    0.36 s; at most one update per 0.2 s, so the display shows the reports at 0 and 0.25 s,
    then the final one. Rate from the first report: (12,288 - 4,096) runs / 0.25 s =
    32,768 runs/s, ETA (20,480 - 12,288) / 32,768 = 0.25 s."""
    shown: list[Any] = []
    times = iter([0.0, 0.0, 0.05, 0.1, 0.25, 0.3, 0.35, 0.36])

    def display(obj: Any, *, display_id: bool = False) -> Handle:
        shown.append(obj)
        return Handle(shown)

    bar = NotebookProgress(display, clock=lambda: next(times))
    total = 5 * BLOCK_RUNS
    for k, d in enumerate([1, 2, 2, 3, 4, 4]):
        bar(d * BLOCK_RUNS, total)
        assert len(shown) == 1 + (k >= 3)
    bar(total, total)
    assert [b.done for b in shown] == [BLOCK_RUNS, 3 * BLOCK_RUNS, total]
    assert str(shown[0]) == "accelsim: 4,096/20,480 runs (20 %), 0 runs/s, ETA ?"
    assert str(shown[1]) == "accelsim: 12,288/20,480 runs (60 %), 32,768 runs/s, ETA 0.25 s"
    # final: 16,384 runs in 0.36 s since the first report -> 45,511 runs/s
    assert str(shown[2]) == "accelsim: 20,480/20,480 runs (100 %), done in 0.36 s, 45,511 runs/s"


def test_a_notebook_study_of_one_chunk_shows_only_the_final_line() -> None:
    shown: list[Any] = []
    times = iter([10.0, 13.0])
    bar = NotebookProgress(lambda obj, **kw: shown.append(obj), clock=lambda: next(times))
    bar(100, 100)
    assert [str(b) for b in shown] == ["accelsim: 100/100 runs (100 %), done in 3 s"]


def test_progress_false_shows_nothing_in_a_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    nb = FakeIPython(monkeypatch, ZMQInteractiveShell())
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, progress=False)
    assert nb.shown == []
    assert as_progress(False) is None


@pytest.mark.parametrize("shell", [None, TerminalInteractiveShell()])
def test_progress_true_outside_a_terminal_or_notebook_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shell: object | None
) -> None:
    """stderr is captured (not a terminal); IPython is imported but no kernel runs (no shell,
    or IPython's terminal shell): nothing is printed or displayed. Then without IPython."""
    nb = FakeIPython(monkeypatch, shell)
    assert not in_notebook()
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, chunk_runs=BLOCK_RUNS, progress=True)
    assert nb.shown == []
    monkeypatch.delitem(sys.modules, "IPython")
    monkeypatch.delitem(sys.modules, "IPython.display")
    assert not in_notebook()
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, chunk_runs=BLOCK_RUNS, progress=True)
    assert capsys.readouterr() == ("", "")
    assert isinstance(as_progress(True), TtyProgress)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_progress_is_unchanged_outside_a_notebook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """IPython in a terminal (not a kernel) with stderr a terminal: the one-line report."""
    nb = FakeIPython(monkeypatch, TerminalInteractiveShell())
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    acs.simulate(scenario(), runs=2 * BLOCK_RUNS, seed=1, chunk_runs=BLOCK_RUNS, progress=True)
    assert nb.shown == []
    text = tty.getvalue()
    assert text.startswith(f"\raccelsim: {BLOCK_RUNS:,}/{2 * BLOCK_RUNS:,} runs (50 %), ")
    assert f"\raccelsim: {2 * BLOCK_RUNS:,}/{2 * BLOCK_RUNS:,} runs (100 %), " in text
    assert text.endswith("\n")
