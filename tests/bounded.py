"""Running accelsim in a child process under a memory cap and a time limit.

Tests of the input boundary feed it what would exhaust memory or time if it got through
(aliases that expand to gigabytes, a billion runs, a ten-year serving horizon); run in the
test process, a regression would take the test runner down with it. Here the child gets an
address-space cap (``RLIMIT_AS``) and a wall-clock timeout, so a regression fails as a test.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

MEMORY_CAP_BYTES = 1536 * 2**20
"""Address space a child may map: imports (numpy, scipy, pydantic) take about 0.6 GiB."""

TIME_LIMIT_SECONDS = 30.0
"""Wall clock a child may take; every refusal tested here takes about 2 s on one core."""


def _cap_memory() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _run(argv: list[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run(  # our own interpreter on our own module
        [sys.executable, *argv],
        preexec_fn=_cap_memory,  # no threads in the test process at fork
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT_SECONDS,
        check=False,
    )


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``accelsim ARGS`` in a capped child; the completed process (returncode, stdout, stderr)."""
    return _run(["-m", "accelsim.cli", *args], cwd)


def python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a capped child, with this checkout's accelsim importable."""
    return _run(["-c", code], cwd)


def assert_refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """The CLI refused: exit 2, one line on stderr holding every word, no traceback."""
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = err.splitlines()
    assert len(lines) == 1, err[-2000:]
    assert lines[0].startswith("accelsim: error:"), err[-2000:]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]
