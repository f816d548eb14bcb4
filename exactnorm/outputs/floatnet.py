"""A certificate's frozen network as a float copy, its evaluation in a float dtype, and the error
such a copy makes against the exact target at points of the box.

The float copy is read by :func:`exactnorm.certificate.float_network` (every kind's codec reads
its layers straight into float64 arrays, γ and β exact; no exact matrix is built) into a
:class:`~exactnorm.model.network.FloatNetwork`, whose kind-free :meth:`~exactnorm.model.network.
FloatNetwork.forward` evaluates each layer's float pre-activation
(:class:`~exactnorm.model.layers.FloatLayer`) in the requested dtype: what an export computes,
without a framework. The export formats, the report and the data study all use it.

>>> import numpy as np
>>> skip_array({"selection": [1, None], "columns": 3}).tolist()
[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.certificate import float_network
from exactnorm.certificate.arrays import matrix_array, skip_array
from exactnorm.exact.linalg import to_numpy
from exactnorm.model.layers import FloatLayer
from exactnorm.model.network import FloatNetwork

__all__ = ["FloatLayer", "FloatNetwork", "float_network", "matrix_array", "skip_array",
           "flint_array", "float_forward", "box_points", "float_errors"]


def flint_array(M: Any) -> np.ndarray:
    """``fmpz_mat``/``fmpq_mat`` → float64 array, each entry correctly rounded."""
    return to_numpy(M)


def float_forward(net: FloatNetwork, X: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """The network in ``dtype`` arithmetic, every parameter rounded once to ``dtype``
    (:meth:`FloatNetwork.forward <exactnorm.model.network.FloatNetwork.forward>`)."""
    return net.forward(X, dtype)


def box_points(lower: Sequence[Any], upper: Sequence[Any], points: int,
               seed: int = 0) -> list[list[fmpq]]:
    """``points`` exact points ``lower + t·(upper − lower)`` of a box, each ``t`` a multiple of
    1/1000 drawn from ``random.Random(seed)`` (the same points on every machine).

    >>> pts = box_points([0, -1], [1, 1], 3, seed=3)
    >>> len(pts), all(0 <= a <= 1 and -1 <= b <= 1 for a, b in pts)
    (3, True)
    >>> pts == box_points([0, -1], [1, 1], 3, seed=3)
    True
    """
    rng = random.Random(seed)
    return [[fmpq(lo) + (fmpq(hi) - fmpq(lo)) * fmpq(rng.randrange(0, 1001), 1000)
             for lo, hi in zip(lower, upper)] for _ in range(points)]


def _float(x: fmpq) -> float:
    return int(x.p) / int(x.q)  # correctly rounded, as float(Fraction) is


def float_errors(net: FloatNetwork, target: Any, points: int, seed: int = 0,
                 dtypes: Sequence[Any] = (np.float32, np.float64)) -> dict[str, dict[str, Any]]:
    """The error a float copy of the certified network makes, measured at ``points`` seeded
    points of the target's box (:func:`box_points`) against the exact target ``g``.

    For each dtype: ``abs`` (the absolute error of every output at every point, an array),
    ``max_abs``, ``max_rel`` (relative to the largest exact output) and ``argmax_agree`` (points
    whose largest output keeps its index). The certified network is exact; this is the error of
    its rounded image (:func:`float_forward`, every parameter rounded once).
    """
    xs = box_points(target.lower, target.upper, points, seed)
    exact = np.array([[_float(y) for y in target.evaluate(x)] for x in xs], dtype=np.float64)
    X = np.array([[_float(v) for v in x] for x in xs], dtype=np.float64)
    scale = float(np.max(np.abs(exact))) if points else 0.0
    out = {}
    for dtype in dtypes:
        with np.errstate(all="ignore"):
            Y = np.asarray(float_forward(net, X.astype(dtype), dtype), dtype=np.float64)
        err = np.abs(Y - exact)
        worst = float(np.max(err)) if points else 0.0
        out[np.dtype(dtype).name] = {
            "abs": err, "max_abs": worst, "max_rel": worst / scale if scale else worst,
            "argmax_agree": int(np.sum(np.argmax(Y, axis=1) == np.argmax(exact, axis=1)))
            if points else 0, "points": points}
    return out
