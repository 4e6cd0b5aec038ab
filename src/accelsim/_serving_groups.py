"""The shipped serving efficiency by group: the calibration page's pooled law, for every
study (an extra, with :mod:`accelsim.serving_calibration`).

``docs/serving_calibration.md`` predicts each published row from the efficiencies the other
rows imply, partially pooled over nested groups (software stack, weight precision, dense or
mixture of experts; :func:`accelsim._calibration_stats.partial_pool`), and scores that
predictive law leave-one-out. A study of a deployment nobody has published is a new row of
its group: this module writes the same predictive law, from every poolable row, into the
shipped ``serving.yaml`` as ``efficiency_by_group`` (90 % interval of the Student-t law of
the log efficiency, as a log-normal of the same interval), so the efficiency a study draws
is the one the page validates. :meth:`accelsim.catalog.ServingPriors.efficiency_entry`
reads it after a measured configuration and a chip's own entry, before the precision's and
the stack's. Regenerate after the validation set or the physics changes (a test checks the
shipped block is current):

    python -m accelsim._serving_groups tests/validation/data/inference.csv \
        src/accelsim/catalog/data/serving.yaml
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import scipy.stats

from accelsim._calibration_stats import Implied, partial_pool, poolable
from accelsim.catalog import serving_group_key
from accelsim.serving_calibration import implied_efficiencies

STACKS = {"cuda": ("bf16", "fp8", "fp4"), "rocm": ("bf16", "fp8", "fp4")}
"""The groups written: each GPU stack with the weight precisions its chips serve in. Not
XLA: its rows are all vLLM TPU on the two chips with their own entries (TPU v6e, TPU7x),
so a group would only carry them to other TPUs, whose stacks (JetStream, Saxml) the rows do
not show; those keep the stack's judgement."""
BEGIN = "# BEGIN efficiency_by_group"
END = "# END efficiency_by_group"
_INTERVAL = 0.90


def group_laws(implied: Implied) -> dict[str, tuple[float, float, int]]:
    """Per group: the 5th and 95th percentiles of a new row's pooled predictive efficiency
    [fraction] and the rows of its deepest group. Every poolable row is used (a new
    deployment is in none of them). A stack and precision no row shows (CUDA BF16: the rows
    are FP8 and FP4) get no group: the pool would give them the stack's mean over other
    number formats and model kinds, which no row tests; the judgement priors serve them."""
    rows = [(implied[i][0], math.log(implied[i][1])) for i in poolable(implied, exclude="")]
    shown = {g[:2] for g, _ in rows}
    laws: dict[str, tuple[float, float, int]] = {}
    for stack, precisions in STACKS.items():
        for precision in (p for p in precisions if (stack, p) in shown):
            for moe in (False, True):
                keys = (stack, precision, "moe" if moe else "dense")
                mean, scale, dof = partial_pool(rows, keys)
                half = scale * float(scipy.stats.t.ppf(0.5 + _INTERVAL / 2, dof))
                own = sum(1 for g, _ in rows if g == keys)
                laws[serving_group_key(stack, precision, moe)] = (
                    math.exp(mean - half),
                    math.exp(mean + half),
                    own,
                )
    return laws


def render_block(laws: dict[str, tuple[float, float, int]], rows: int, as_of: str) -> str:
    """The YAML block of ``serving.yaml`` holding ``efficiency_by_group``."""
    lines = [
        f"{BEGIN}: written by `python -m accelsim._serving_groups` (see its docstring)",
        "# from the validation set's throughput rows; do not edit by hand.",
        "efficiency_by_group:",
    ]
    for key, (low, high, own) in laws.items():
        lines += [
            f"  {key}:",
            f"    value: {{dist: lognormal, low: {low:.4f}, high: {high:.4f}}}",
            '    unit: "fraction"',
            "    assumption: false",
            "    sources:",
            '      - {url: "https://github.com/mlcommons/inference_results_v6.0", '
            f'as_of: {as_of}, note: "the throughput rows of tests/validation/data/'
            'inference.csv (MLPerf Inference v4.1-v6.0, TensorRT-LLM tables, tpu-recipes)"}',
            "    note: >-",
            f"      Predictive law of a new row's implied efficiency in this group, partially "
            f"pooled over {rows}",
            f"      rows ({own} in the group): 90 % interval {low:.2f}-{high:.2f} "
            "(docs/serving_calibration.md scores it leave-one-out).",
        ]
    return "\n".join([*lines, END]) + "\n"


def main(argv: list[str]) -> int:
    """``python -m accelsim._serving_groups CSV SERVING_YAML``: rewrite the block."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows, _, implied = implied_efficiencies(argv[0])
    dates = [r["date"][:10] for r in rows if r["id"] in implied]
    as_of = max(d for d in dates if re.fullmatch(r"\d{4}-\d{2}-\d{2}", d))
    block = render_block(group_laws(implied), len(poolable(implied, exclude="")), as_of)
    path = Path(argv[1])
    text = path.read_text(encoding="utf-8")
    if BEGIN in text:
        text = text[: text.index(BEGIN)] + text[text.index(END) + len(END) + 1 :]
    path.write_text(text.rstrip("\n") + "\n\n" + block, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["BEGIN", "END", "STACKS", "group_laws", "main", "render_block"]
