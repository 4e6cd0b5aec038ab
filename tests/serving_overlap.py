"""The built-in catalog with the serving prior ``compute_memory_overlap`` set to a value, as a
user serving file may set it: the agreement tests hold the fast path to the request DES at
the shipped value (0, the sum of compute and memory time) and at the roofline max (1)."""

from __future__ import annotations

import dataclasses
from functools import cache

from accelsim import catalog

OVERLAPS = (0.0, 1.0)
"""The shipped overlap and the roofline max. [fraction]"""


@cache
def at_overlap(overlap: float) -> catalog.Catalog:
    """The built-in catalog with ``compute_memory_overlap`` fixed at ``overlap``."""
    base = catalog.builtin_catalog()
    priors = base.serving_priors
    fixed = priors.overlap_prior().model_copy(update={"value": float(overlap)})
    return dataclasses.replace(
        base, serving_priors=priors.model_copy(update={"compute_memory_overlap": fixed})
    )
