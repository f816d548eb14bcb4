"""scikit-learn models in: fitted ``MLPRegressor``/``MLPClassifier`` (relu) and pipelines
of scalers and such an MLP, as exact targets.

Correctness argument: ``coefs_[i]`` is ``(in, out)``, so ``W_i`` is its transpose; hidden
activation ``relu`` only; the output layer is identity (a classifier's softmax/logistic is
applied to the certified logits, so equal logits give equal probabilities). In a ``Pipeline``,
``StandardScaler`` (``x' = (x − mean)/scale``) and ``MinMaxScaler`` (``x' = x·scale + min``) are
diagonal affine maps ``x' = D x + c`` with rational ``D, c``; they fold exactly into the first
layer: ``W₁(Dx + c) + b₁ = (W₁D)x + (W₁c + b₁)``. The box is given in the coordinates ``predict``
receives (raw features), or in the scaled coordinates the MLP sees (``box_space="scaled"``), in
which case it is mapped back through the inverse scalers (``D`` has positive diagonal, so
interval endpoints map to interval endpoints).

A pickled model is never loaded from a file here (unpickling runs arbitrary code): load it
yourself if you trust it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from exactnorm.errors import InputError, ShapeError, require_extra
from exactnorm.model.box import Box
from exactnorm.model.interop.chain import exact_matrix, exact_vector
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork

__all__ = ["sklearn_mlp", "target_from_sklearn"]


def sklearn_mlp(model: Any) -> tuple[list[list[list[Fraction]]], list[list[Fraction]]]:
    coefs = getattr(model, "coefs_", None)
    intercepts = getattr(model, "intercepts_", None)
    if coefs is None or intercepts is None:
        raise InputError(f"the scikit-learn {type(model).__name__} is not fitted "
                         f"(no coefs_/intercepts_)")
    hidden = getattr(model, "activation", None)
    if hidden != "relu":
        raise InputError(f"the scikit-learn MLP has activation {hidden!r}; exactnorm certifies "
                         f"relu MLPs only (tanh and logistic are not piecewise linear)")
    if len(coefs) != len(intercepts):
        raise ShapeError(f"{len(coefs)} coefficient matrices but {len(intercepts)} intercepts")
    weights = [exact_matrix(np.asarray(C).T, f"coefs_[{i}]") for i, C in enumerate(coefs)]
    biases = [exact_vector(b, f"intercepts_[{i}]") for i, b in enumerate(intercepts)]
    return weights, biases


def _scaler_affine(step: Any, name: str, d: int) -> tuple[list[Fraction], list[Fraction]]:
    """A fitted scaler as ``x' = diag(D) x + c`` with exact rational ``D > 0`` and ``c``."""
    pre = require_extra("sklearn.preprocessing", "a scikit-learn Pipeline")
    one, zero = [Fraction(1)] * d, [Fraction(0)] * d
    if isinstance(step, pre.StandardScaler):
        if not hasattr(step, "n_features_in_"):
            raise InputError(f"pipeline step {name!r} (StandardScaler) is not fitted")
        mean = exact_vector(step.mean_, f"{name}.mean_") if step.mean_ is not None else zero
        scale = exact_vector(step.scale_, f"{name}.scale_") if step.scale_ is not None else one
        inv = [1 / s for s in scale]
        return inv, [-m * k for m, k in zip(mean, inv)]
    if isinstance(step, pre.MinMaxScaler):
        if not hasattr(step, "scale_"):
            raise InputError(f"pipeline step {name!r} (MinMaxScaler) is not fitted")
        if getattr(step, "clip", False):
            raise InputError(f"pipeline step {name!r}: MinMaxScaler(clip=True) is not affine; "
                             f"refit with clip=False")
        return (exact_vector(step.scale_, f"{name}.scale_"),
                exact_vector(step.min_, f"{name}.min_"))
    raise InputError(f"pipeline step {name!r} is a {type(step).__name__}; only StandardScaler "
                     f"and MinMaxScaler steps fold exactly into the first layer")


def target_from_sklearn(model: Any, box: Box | Any, upper: Any = None, *,
                        box_space: str = "raw",
                        max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A fitted scikit-learn MLP, or a ``Pipeline`` of scalers and an MLP, as an exact target.

    Parameters
    ----------
    model
        A fitted ``MLPRegressor``/``MLPClassifier`` with ``activation="relu"``, or a fitted
        ``Pipeline`` whose steps are ``StandardScaler``/``MinMaxScaler`` (or ``"passthrough"``)
        followed by such an MLP. Loaded by the caller: exactnorm never unpickles a file.
    box, upper
        The input box ``D``: a :class:`~exactnorm.model.box.Box`, or (converted by
        :meth:`Box.of <exactnorm.model.box.Box.of>`) its lower and upper sides: sequences, or
        one number each for a cube (floats convert exactly).
    box_space
        ``"raw"``: the box is in the coordinates ``model.predict`` receives (the target's input);
        ``"scaled"``: in the coordinates the MLP sees after the scalers; it is mapped back exactly.
    max_width
        Refuse wider layers.

    Returns
    -------
    TargetNetwork
        ``g`` on raw inputs; the scalers are folded into the first layer (module docstring).

    Raises
    ------
    InputError
        Unfitted model, a non-relu MLP, a step that is not a supported scaler,
        ``MinMaxScaler(clip=True)``, or an unknown ``box_space``.

    References
    ----------
    Giannou, Rajput, Papailiopoulos, COLT 2023, arXiv:2302.07937 (ReLU targets).
    """
    if box_space not in ("raw", "scaled"):
        raise InputError(f"box_space must be 'raw' or 'scaled', got {box_space!r}")
    steps = getattr(model, "steps", None)
    if steps is None:
        weights, biases = sklearn_mlp(model)
        affines: list[tuple[list[Fraction], list[Fraction]]] = []
    else:
        if not steps:
            raise InputError("the scikit-learn Pipeline has no steps")
        weights, biases = sklearn_mlp(steps[-1][1])
        d = len(weights[0][0])
        affines = [_scaler_affine(step, name, d) for name, step in steps[:-1]
                   if step is not None and step != "passthrough"]
    d = len(weights[0][0])
    lo, hi = Box.of(box, upper).fractions(d)
    if box_space == "scaled":
        # x' = D x + c with D > 0, so x = (x' − c)/D maps endpoints to endpoints
        for D, c in reversed(affines):
            lo = [(Fraction(v) - ck) / dk for v, ck, dk in zip(lo, c, D)]
            hi = [(Fraction(v) - ck) / dk for v, ck, dk in zip(hi, c, D)]
    # fold the last scaler first: W(Dx + c) + b = (W D) x + (W c + b)
    W1, b1 = weights[0], biases[0]
    for D, c in reversed(affines):
        b1 = [bk + sum((w * ck for w, ck in zip(row, c)), Fraction(0))
              for row, bk in zip(W1, b1)]
        W1 = [[w * dk for w, dk in zip(row, D)] for row in W1]
    weights[0], biases[0] = W1, b1
    acts = ["relu"] * (len(weights) - 1) + ["identity"]
    return TargetNetwork.from_lists(weights, biases, acts, lower=lo, upper=hi,
                                    max_width=max_width)
