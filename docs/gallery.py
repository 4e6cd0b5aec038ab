"""Write the report of every example scenario (and two comparisons) for the docs gallery.

``make docs`` runs ``python docs/gallery.py docs/_build/html/gallery`` after Sphinx, so
``docs/gallery.md`` links to pages made by the code being documented. Runs are kept small
so the docs build stays fast: analytic studies take ``ANALYTIC_RUNS`` runs, discrete-event
ones (clusters, streams, traces) ``DES_RUNS``; each page states its runs and seed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import accelsim as acs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ANALYTIC_RUNS = 500
DES_RUNS = 6
SEED = 42
COMPARISONS = {
    "compare_h100_vs_tpu_v5p": ("llama70b_h100_aws.yaml", "llama70b_tpu_v5p_gcp.yaml"),
    "compare_serving_h100_vs_tpu_v6e": ("serve_llama70b_h100.yaml", "serve_llama70b_tpu_v6e.yaml"),
}
"""Gallery pages of several examples, compared with common random numbers."""


def _runs(scenario: acs.Scenario) -> int:
    probe = acs.simulate(scenario, runs=1, seed=SEED)
    return ANALYTIC_RUNS if probe.engine == "analytic" else DES_RUNS


def _how(files: list[str], runs: int) -> str:
    return f"accelsim report {' '.join('examples/' + f for f in files)} --runs {runs} --seed {SEED}"


def build(out: Path, names: list[str] | None = None) -> list[Path]:
    """Write one page per example (``names``: only those stems) and per comparison."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if names is not None and path.stem not in names:
            continue
        s = acs.load_scenario(path)
        runs = _runs(s)
        res = acs.simulate(s, runs=runs, seed=SEED)
        page = out / f"{path.stem}.html"
        acs.report(res, page, scenarios=s, reproduce=_how([path.name], runs))
        written.append(page)
    for stem, files in COMPARISONS.items():
        if names is not None and stem not in names:
            continue
        scenarios = [acs.load_scenario(EXAMPLES / f) for f in files]
        runs = min(_runs(s) for s in scenarios)
        cmp = acs.compare(scenarios, runs=runs, seed=SEED)
        page = out / f"{stem}.html"
        acs.report(cmp, page, scenarios=scenarios, reproduce=_how(list(files), runs))
        written.append(page)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python docs/gallery.py OUTPUT_DIRECTORY", file=sys.stderr)
        return 2
    started = time.perf_counter()
    pages = build(Path(argv[0]))
    print(f"gallery: {len(pages)} reports in {argv[0]} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
