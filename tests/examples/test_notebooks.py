"""Every notebook in notebooks/ (jupytext py:percent) runs as a script with few runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.py")), ids=lambda p: p.name)
def test_notebook_runs(path: Path) -> None:
    env = {**os.environ, "ACCELSIM_RUNS": "200", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Recommendation:" in done.stdout
