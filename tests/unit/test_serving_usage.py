"""The fast path's latency table: the load it sustains (where its shedding starts)."""

from __future__ import annotations

import numpy as np

from accelsim.engines.serving._usage import LOAD_NODES, _sustained


def test_the_sustained_load_is_the_last_node_before_the_first_saturated_one() -> None:
    """No saturated node: the whole saturated rate (1); saturated from node 5 on: node 4's
    load; saturated from the lightest load: 0 (nothing is served)."""
    k = len(LOAD_NODES)
    none = np.zeros((1, k), dtype=bool)
    from_five = none.copy()
    from_five[0, 5:] = True
    got = _sustained(np.concatenate([none, from_five, ~none]))
    np.testing.assert_array_equal(got, [1.0, LOAD_NODES[4], 0.0])
