"""Target networks from ``.npz`` arrays, the demo target and seeded random targets.

A ``W1, b1, …`` ``.npz`` file holds ``W1, b1, …, WL, bL`` (integer or float; floats converted
exactly to dyadic rationals), optional ``lower``/``upper`` arrays (the box) and an optional
string array ``activations`` (docs/user-guide.md, "Target files"). JSON target files — the
``domain`` and ``target`` sections of a certificate, layers of any kind — are read by the one
reader of documents (:func:`exactnorm.certificate.read_target`) and written by
:func:`exactnorm.certificate.save_target`; the one loader of every target file is
:func:`exactnorm.api.load_target`.

>>> g = demo_target()
>>> g.widths
(3, 4, 3, 2)
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES
from exactnorm.errors import (
    InputError,
    LimitExceededError,
    ShapeError,
)
from exactnorm.exact.files import (
    npz_array,
    npz_box_arrays,
    npz_strings,
    read_npz_archive,
    require_file,
)
from exactnorm.exact.linalg import from_numpy_exact, to_fractions
from exactnorm.exact.sampling import layer_rng, sample_matrix
from exactnorm.model.box import Box
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork

#: the largest JSON target read (uncompressed): the checker's default certificate limit
DEFAULT_MAX_TARGET_BYTES = DEFAULT_MAX_BYTES
#: suffixes of pickled Python objects (scikit-learn models are usually saved so)
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")


def pickle_refusal(path: Path) -> InputError:
    """The refusal of a pickled file (loading one runs arbitrary code), saying what works."""
    return InputError(f"{path} is a pickle; pickles are refused (loading one runs arbitrary "
                      f"code): for a scikit-learn model call exactnorm.model.interop."
                      f"target_from_sklearn(model, box) or exactnorm.certify(model, box=...) in "
                      f"Python, or export it to ONNX")

__all__ = [
    "PICKLE_SUFFIXES",
    "pickle_refusal",
    "demo_target",
    "target_from_npz",
    "npz_activations",
    "npz_box",
    "random_target",
]


def demo_target() -> TargetNetwork:
    """The embedded demo: 3 layers, widths 3 → 4 → 3 → 2, rational weights, identity output."""
    F = Fraction
    W1 = [[F(1, 2), -1, F(3, 4)], [2, F(1, 3), 0], [F(-3, 2), 1, F(1, 5)], [0, F(-2, 3), 1]]
    b1 = [F(1, 4), -1, F(1, 2), 0]
    W2 = [[1, F(-1, 2), F(2, 3), F(1, 4)], [F(3, 5), 1, -1, 0], [F(-1, 3), F(1, 2), F(1, 2), 2]]
    b2 = [0, F(1, 3), F(-1, 2)]
    W3 = [[F(5, 4), -1, F(1, 2)], [F(-1, 6), F(2, 3), 1]]
    b3 = [F(1, 8), -2]
    return TargetNetwork.from_lists([W1, W2, W3], [b1, b2, b3], ["relu", "relu", "identity"],
                                    lower=[-1, F(-1, 2), 0], upper=[1, F(1, 2), 2])


def npz_activations(data: Any, path: Path, count: int) -> list[str] | None:
    """The optional ``activations`` member of a target ``.npz``: exactly ``count`` strings.

    Shared by the ``W1, b1, …`` reader here and the state-dict reader of
    :mod:`~exactnorm.model.interop`, so that both accept the same files.
    """
    if "activations" not in data.files:
        return None
    return npz_strings(data, "activations", count, "one per Linear layer")


def npz_box(data: Any, path: Path, dim: int, box: Box | None, *,
            max_width: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The input box of a target ``.npz`` as ``fmpq`` bounds of dimension ``dim``: its
    ``lower``/``upper`` arrays (floats converted exactly), else ``box``.

    Raises
    ------
    InputError
        Only one of ``lower``/``upper`` is present, both the file's box and ``box``, or neither
        (``parameter`` is ``"box"``).
    """
    arrays = npz_box_arrays(data, max_width)
    if arrays is not None and box is not None:
        raise InputError(f"{path} has its own bounds (lower/upper) and box was given too; remove "
                         f"one", parameter="box")
    if arrays is not None:
        return Box.per_feature(*arrays, what=str(path), parameter=None).bounds(dim)
    if box is None:
        raise InputError(f"{path} has no lower/upper arrays; it needs box LO:HI",
                         parameter="box")
    return box.bounds(dim)


def _read_npz(data: Any, path: Path, *, max_width: int, box: Box | None) -> TargetNetwork:
    keys = set(data.files)
    L = 0
    while f"W{L + 1}" in keys:
        L += 1
    if L == 0:
        raise InputError(f"{path} has no arrays W1, b1, …")
    weights, biases = [], []
    for i in range(1, L + 1):
        if f"b{i}" not in keys:
            raise InputError(f"{path} has W{i} but no b{i}")
        W = npz_array(data, f"W{i}", max_width, matrix=True)
        weights.append(from_numpy_exact(W, f"W{i}"))  # exact, converted at once
        b = npz_array(data, f"b{i}", max_width, matrix=False)
        biases.append(from_numpy_exact(b, f"b{i}").entries())
    acts = npz_activations(data, path, L)
    lower, upper = npz_box(data, path, weights[0].ncols(), box, max_width=max_width)
    return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper,
                                    max_width=max_width)


def target_from_npz(path: str | os.PathLike[str], *, box: Box | None = None,
                    max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A target from a ``W1, b1, …`` ``.npz`` (module docstring) on its own box or ``box``."""
    p = require_file(path, "target file")
    return read_npz_archive(p, lambda data: _read_npz(data, p, max_width=max_width, box=box))


def random_target(widths: tuple[int, ...] | list[int], *, seed: int,
                  distribution: str = "rational:4", box: tuple[Any, Any] = (-1, 1),
                  activations: list[str] | None = None) -> TargetNetwork:
    """A seeded random target with the given widths ``(d_0, …, d_L)`` on the cube ``box``.

    Weights and biases come from ``layer_rng(seed, 10**6, i)`` so that they never coincide with
    the frozen weights drawn from the same seed.
    """
    if len(widths) < 2:
        raise ShapeError("a target needs at least one layer: widths (d_0, d_1, ...)")
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
            raise ShapeError(f"widths must be positive integers, got {list(widths)!r}")
        if w > DEFAULT_MAX_WIDTH:
            raise LimitExceededError(f"width {w} is above the width limit {DEFAULT_MAX_WIDTH}")
    widths = [int(w) for w in widths]
    weights, biases = [], []
    for i in range(1, len(widths)):
        rng = layer_rng(seed, 10**6, i)
        weights.append(to_fractions(sample_matrix(rng, widths[i], widths[i - 1], distribution)))
        biases.append([r[0] for r in to_fractions(sample_matrix(rng, widths[i], 1, distribution))])
    lo, hi = box
    return TargetNetwork.from_lists(weights, biases, activations, lower=[lo] * widths[0],
                                    upper=[hi] * widths[0])
