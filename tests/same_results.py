"""Bit-for-bit comparison of two results, shared by the tests of chunking, designs and stores."""

from __future__ import annotations

import numpy as np

import accelsim as acs


def assert_same(a: acs.Result, b: acs.Result) -> None:
    """Every metric and input array equal bit for bit, in the same order."""
    assert list(a.data) == list(b.data)
    assert list(a.inputs) == list(b.inputs)
    for m in a.data:
        np.testing.assert_array_equal(a.samples(m), b.samples(m), err_msg=m)
    for k in a.inputs:
        np.testing.assert_array_equal(a.inputs[k], b.inputs[k], err_msg=k)
