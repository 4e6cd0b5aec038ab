"""The ``accelsim`` command's output files, checked before any simulation.

An output path that resolves to one of the command's inputs (a scenario file, a trace it
replays) is refused, so ``accelsim run s.json --out s.json`` never destroys the scenario;
a directory, a missing folder or a place that cannot be written is refused too, in one line,
before minutes of simulation rather than after them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from accelsim.errors import AccelsimError
from accelsim.scenario import Scenario, Trace


def input_files(paths: Sequence[str], scenarios: Iterable[Scenario]) -> list[Path]:
    """The files a command reads: its scenario files and every trace they replay."""
    files = [Path(p) for p in paths]
    for s in scenarios:
        parts: list[object] = [*(s.workloads or []), s.workload, s.background]
        files += [Path(w.path) for w in parts if isinstance(w, Trace)]
    return files


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (links and relative spellings included)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def check_output(path: str | None, option: str, inputs: Sequence[Path]) -> None:
    """Refuse, before any work, an output ``path`` that is an input, a directory, in a folder
    that does not exist, or that cannot be written; ``option`` names it in the message.

    Writability is probed without touching the file's contents: an existing file is opened
    for update and closed, and for a new file a temporary file is made beside it and removed.

    Raises
    ------
    AccelsimError
        One line naming the option, the path and what is wrong.
    """
    if path is None:
        return
    out = Path(path)
    for source in inputs:
        if _same_file(out, source):
            raise AccelsimError(
                f"{option} {path}: that is the input file {source}; writing it would destroy "
                "the input: choose another path"
            )
    if out.is_dir():
        raise AccelsimError(f"{option} {path}: is a directory; give a file name in it")
    folder = out.resolve().parent
    if not folder.is_dir():
        raise AccelsimError(f"{option} {path}: {folder} is not an existing folder")
    try:
        if out.exists():
            with open(out, "r+b"):
                pass
        else:
            fd, probe = tempfile.mkstemp(dir=folder, prefix=".accelsim-probe-")
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise AccelsimError(f"{option} {path}: cannot write there ({exc.strerror})") from None


def check_plot(path: str | None) -> None:
    """Refuse, before any work, a ``--plot`` file whose extension matplotlib cannot write
    (``.txt``, ``.html``, ...), or any plot when matplotlib is not installed. A name without
    an extension is written as PNG.

    Raises
    ------
    AccelsimError
        One line naming the path and the formats that work.
    """
    if path is None:
        return
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise AccelsimError(
            f"--plot {path}: plots need matplotlib >= 3.8: pip install 'accelsim[plot]'"
        ) from None
    suffix = Path(path).suffix.lower().lstrip(".")
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if suffix and suffix not in formats:
        raise AccelsimError(
            f"--plot {path}: cannot write a .{suffix} plot; use one of "
            f"{', '.join('.' + f for f in formats)}"
        )


__all__ = ["check_output", "check_plot", "input_files"]
