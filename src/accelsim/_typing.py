"""Type aliases shared across accelsim: array-likes in, float64 arrays out."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

__all__ = ["ArrayLike", "BoolArray", "FloatArray", "IntArray"]
