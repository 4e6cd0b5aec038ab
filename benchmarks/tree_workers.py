"""A long-lived worker process running accelsim from one source tree, for the tree comparisons.

``compare_trees.py`` and ``compare_serving_trees.py`` time the same work in two trees, one
worker per tree, rounds interleaved. A worker is ``python -c CODE`` with the tree's ``src`` first
on ``PYTHONPATH``; its first line of output names the ``accelsim`` it imported, checked here to
lie inside the tree. Then each request is one line on its stdin and one JSON line back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def start_worker(tree: Path, code: str, **env: str) -> subprocess.Popen[str]:
    """Start ``code`` on ``tree``'s sources (``env`` added to the environment); check which
    accelsim it loaded."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree / "src"), **env},
    )
    assert proc.stdout is not None
    loaded = json.loads(proc.stdout.readline())["file"]
    if not Path(loaded).resolve().is_relative_to((tree / "src").resolve()):
        raise SystemExit(f"{tree}: accelsim loaded from {loaded}, not from the tree")
    return proc


def ask(proc: subprocess.Popen[str], request: str) -> dict[str, float]:
    """Send one request line to a worker and read its JSON answer."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(f"{request}\n")
    proc.stdin.flush()
    answer: dict[str, float] = json.loads(proc.stdout.readline())
    return answer
