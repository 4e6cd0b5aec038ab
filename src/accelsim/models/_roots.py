"""Roots of elementwise equations by scipy's vectorised Newton method, for any array shape.

``scipy.optimize.newton`` takes its vectorised path only for an ``x0`` of more than one
element (a single element goes to its scalar path, which returns a float), and raises
``RuntimeError`` when no element meets its tolerance within ``maxiter`` steps. This wrapper
broadcasts the start and the arguments to one shape, appends one element that is solved at
its start (``f = 0``, ``f' = 1``), so the path is always the vectorised one and never raises,
and returns the roots in the given shape.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import optimize

from accelsim._typing import ArrayLike, FloatArray

Elementwise = Callable[..., FloatArray]


def newton_roots(
    func: Elementwise,
    fprime: Elementwise,
    x0: ArrayLike,
    args: tuple[ArrayLike, ...] = (),
    *,
    tol: float,
    maxiter: int,
) -> FloatArray:
    """Roots of ``func(x, *args) = 0`` by ``scipy.optimize.newton`` from ``x0``, elementwise.

    Parameters
    ----------
    func, fprime : callable
        The function and its derivative, elementwise in ``x`` and the ``args``.
    x0 : array_like
        Starts, one per root, on the side from which Newton's method converges monotonically
        (the callers' equations are convex or concave there).
    args : tuple of array_like
        Extra arguments, broadcast against ``x0``.
    tol : float
        Absolute step below which an element has converged (scipy's ``tol``). [unit of x]
    maxiter : int
        Newton steps at most. Elements still moving by ``tol`` after them keep their last
        iterate, with no warning and no error (a caller's start is on the monotone side,
        so that iterate is its best bound).

    Returns
    -------
    FloatArray
        The roots, broadcast shape of ``x0`` and ``args``.
    """
    shape = np.broadcast_shapes(np.shape(x0), *(np.shape(a) for a in args))
    flat = [np.broadcast_to(np.asarray(v, dtype=float), shape).ravel() for v in (x0, *args)]
    if flat[0].size == 0:
        return np.empty(shape)

    def solved_last(f: Elementwise, at_last: float) -> Elementwise:
        def g(x: FloatArray, *a: FloatArray) -> FloatArray:
            return np.append(f(x[:-1], *a), at_last)

        return g

    start = np.append(flat[0], 0.0)
    with warnings.catch_warnings():
        # Elements still moving after maxiter are a RuntimeWarning in scipy; the iterate is kept.
        warnings.simplefilter("ignore", RuntimeWarning)
        root = optimize.newton(
            solved_last(func, 0.0),
            start,
            fprime=solved_last(fprime, 1.0),
            args=tuple(flat[1:]),
            tol=tol,
            maxiter=maxiter,
        )
    return np.asarray(root, dtype=float)[:-1].reshape(shape)


__all__ = ["newton_roots"]
