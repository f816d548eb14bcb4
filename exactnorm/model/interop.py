"""Real models in: scikit-learn MLPs and PyTorch ``nn.Sequential`` state dicts as exact targets.

Every float64 parameter converts **exactly** to the dyadic rational it denotes
(:func:`~exactnorm.exact.linalg.from_numpy_exact`, SPEC §1), so the target ``g`` is the trained
model's network exactly as stored, not a rounded copy.

What ``g`` is (SPEC §1): ``a_i = σ_i(W_i a_{i-1} + b_i)`` with ``σ_i ∈ {relu, identity}`` and an
identity last layer. A classifier's output nonlinearity (scikit-learn ``out_activation_`` softmax or
logistic) is **not** part of ``g``: we certify the logits, and the same softmax applied to equal
logits gives equal probabilities.

PyTorch without a torch dependency: save the state dict as an ``.npz``::

    np.savez(path, **{k: v.numpy() for k, v in model.state_dict().items()})

for ``model = nn.Sequential(Linear, ReLU, …, Linear)``; the keys are ``"0.weight"``, ``"0.bias"``,
``"2.weight"``, … (the integer is the module index in the Sequential), and a weight is
``(out, in)`` like ours. Layers are ordered by that integer (numerically: ``"10.weight"`` comes
after ``"2.weight"``); the ``ReLU`` modules have no parameters, so the activations are not in the
file: relu on every layer but the last, identity on the last, unless ``activations`` says otherwise.
Three more keys are reserved, with the meaning they have in a ``W1, b1, …`` file (SPEC §7):
``lower``/``upper`` (the box, float or integer arrays, converted exactly) and ``activations`` (a
string array, one per Linear layer)::

    np.savez(path, lower=X.min(axis=0), upper=X.max(axis=0),
             **{k: v.numpy() for k, v in model.state_dict().items()})

Any other key (``"1.running_mean"`` of a BatchNorm, …) is refused with its name.

>>> import numpy as np
>>> arrays = {"0.weight": np.array([[1.0, -0.5]]), "0.bias": np.array([0.25]),
...           "2.weight": np.array([[2.0]]), "2.bias": np.array([0.0])}
>>> g = target_from_state_dict(arrays, [0, 0], [1, 1])
>>> g.widths, [layer.activation for layer in g.layers]
((2, 1, 1), ['relu', 'identity'])
>>> g.evaluate([1, 1])
(3/2,)
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm.errors import (
    InputError,
    LimitExceededError,
    NumberFormatError,
    ShapeError,
)

# the private npz helpers read shapes and dtypes from headers before inflating an array
from exactnorm.exact.files import npz_array, read_npz_archive
from exactnorm.exact.linalg import from_numpy_exact, to_fractions
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.network import ACTIVATIONS, DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import load_target, npz_activations, npz_box

__all__ = [
    "STATE_DICT_KEY",
    "target_from_sklearn",
    "target_from_state_dict",
    "STATE_DICT_RESERVED",
    "is_state_dict_keys",
    "load_target_any",
]

#: ``"<module index>.weight"`` / ``"<module index>.bias"`` of an ``nn.Sequential`` state dict.
STATE_DICT_KEY = re.compile(r"^(\d+)\.(weight|bias)$")
#: Keys of a state-dict ``.npz`` that are not parameters: the box and the activations (SPEC §7).
STATE_DICT_RESERVED = ("lower", "upper", "activations")


def _exact_matrix(a: np.ndarray, what: str) -> list[list[Fraction]]:
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        # float(x) would round a long double; only IEEE half/single/double convert exactly here
        raise NumberFormatError(f"{what} has dtype {arr.dtype}; save it as float64 or integers")
    return to_fractions(from_numpy_exact(arr, what))


def _exact_vector(a: np.ndarray, what: str) -> list[Fraction]:
    return [row[0] for row in _exact_matrix(np.asarray(a).reshape(-1), what)]


def target_from_sklearn(model: Any, lower: Sequence[Any], upper: Sequence[Any], *,
                        max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A fitted scikit-learn ``MLPRegressor``/``MLPClassifier`` as an exact target network.

    scikit-learn stores ``coefs_[i]`` as ``(in, out)``; our weights are ``(out, in)``, hence the
    transpose. Hidden layers use ``model.activation`` (``relu`` or ``identity``; ``tanh`` and
    ``logistic`` are not piecewise linear and are refused); the output layer is identity. For a
    classifier the certified output is the logits: ``out_activation_`` (softmax/logistic) is not
    part of ``g`` (SPEC §1).

    Parameters
    ----------
    model
        A fitted MLP (anything with ``coefs_``, ``intercepts_``, ``activation``).
    lower, upper
        The input box ``D``, exact numbers (floats convert exactly).

    Raises
    ------
    InputError
        For an unfitted model or an unsupported activation.
    """
    coefs = getattr(model, "coefs_", None)
    intercepts = getattr(model, "intercepts_", None)
    if coefs is None or intercepts is None:
        raise InputError("the scikit-learn model is not fitted (no coefs_/intercepts_)")
    hidden = getattr(model, "activation", "relu")
    if hidden not in ACTIVATIONS:
        raise InputError(f"hidden activation {hidden!r} is not piecewise linear; "
                         f"exactnorm supports {ACTIVATIONS}")
    if len(coefs) != len(intercepts):
        raise ShapeError(f"{len(coefs)} coefficient matrices but {len(intercepts)} intercepts")
    weights = [_exact_matrix(np.asarray(C).T, f"coefs_[{i}]") for i, C in enumerate(coefs)]
    biases = [_exact_vector(b, f"intercepts_[{i}]") for i, b in enumerate(intercepts)]
    acts = [hidden] * (len(weights) - 1) + ["identity"]
    return TargetNetwork.from_lists(weights, biases, acts, lower=_box(lower, "lower"),
                                    upper=_box(upper, "upper"), max_width=max_width)


def _box(values: Sequence[Any], what: str) -> list[Any]:
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        return _exact_vector(arr, f"box {what}")
    return list(values)


def is_state_dict_keys(keys: Sequence[str]) -> bool:
    """``True`` when every key is ``"<int>.weight"``, ``"<int>.bias"`` or reserved, and at least
    one is a parameter.

    >>> is_state_dict_keys(["0.weight", "0.bias", "lower", "upper"]), is_state_dict_keys(["W1"])
    (True, False)
    """
    params = [k for k in keys if k not in STATE_DICT_RESERVED]
    return bool(params) and all(STATE_DICT_KEY.match(k) for k in params)


def _state_dict_layers(keys: Sequence[str]) -> list[int]:
    modules: dict[int, set[str]] = {}
    for k in keys:
        if k in STATE_DICT_RESERVED:
            continue
        m = STATE_DICT_KEY.match(k)
        if m is None:
            raise InputError(f"state dict key {k!r} is not '<index>.weight' or '<index>.bias' "
                             f"(only nn.Sequential(Linear, ReLU, …, Linear) is supported)")
        modules.setdefault(int(m.group(1)), set()).add(m.group(2))
    if not modules:
        raise InputError("the state dict has no Linear layers")
    for idx, kinds in modules.items():
        if kinds != {"weight", "bias"}:
            missing = ({"weight", "bias"} - kinds).pop()
            raise InputError(f"state dict module {idx} has no {missing!r} "
                             f"(Linear layers need weight and bias)")
    # numeric order: "10.weight" comes after "2.weight"
    return sorted(modules)


def target_from_state_dict(arrays: Mapping[str, Any], lower: Sequence[Any],
                           upper: Sequence[Any], activations: Sequence[str] | None = None, *,
                           max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A PyTorch ``nn.Sequential(Linear, ReLU, …, Linear)`` state dict as an exact target.

    Parameters
    ----------
    arrays
        Maps ``"0.weight"``, ``"0.bias"``, ``"2.weight"``, … to arrays (a loaded ``.npz`` works;
        the reserved keys ``lower``, ``upper``, ``activations`` are ignored here: the box and the
        activations are the arguments). Weights are ``(out, in)`` as in exactnorm; every float
        converts exactly (SPEC §1).
    lower, upper
        The input box ``D``.
    activations
        One of ``relu``/``identity`` per Linear layer; default relu on every layer but the last,
        which is identity (``nn.Sequential(Linear, ReLU, …, Linear)``).

    Raises
    ------
    InputError
        For a key outside the scheme, a Linear layer without weight or bias, or a long-double
        array; :class:`~exactnorm.errors.LimitExceededError` above ``max_width``.
    """
    order = _state_dict_layers(list(arrays.keys()))
    weights, biases = [], []
    for idx in order:
        W = np.asarray(arrays[f"{idx}.weight"])
        b = np.asarray(arrays[f"{idx}.bias"])
        if W.ndim != 2:
            raise ShapeError(f"state dict {idx}.weight must be 2-D, got shape {W.shape}")
        if max(W.shape) > max_width or b.size > max_width:
            raise LimitExceededError(f"state dict {idx}.weight has shape {W.shape}, above the "
                                     f"width limit {max_width} (raise it with --max-width)")
        weights.append(_exact_matrix(W, f"{idx}.weight"))
        biases.append(_exact_vector(b, f"{idx}.bias"))
    return TargetNetwork.from_lists(weights, biases, activations, lower=_box(lower, "lower"),
                                    upper=_box(upper, "upper"), max_width=max_width)


def _npz_keys(path: Path) -> list[str]:
    """Member names of an ``.npz`` without loading any array (``0.weight.npy`` → ``0.weight``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return [n[:-4] if n.endswith(".npy") else n for n in zf.namelist()]
    except (OSError, zipfile.BadZipFile, zlib.error):
        return []


def _read_state_dict_npz(data: Any, path: Path, *, box: tuple[Fraction, Fraction] | None,
                         max_width: int) -> TargetNetwork:
    keys = list(data.files)
    order = _state_dict_layers(keys)  # names a foreign key before anything is loaded
    arrays = {}
    for idx in order:
        # headers first (io.npz_array): a tiny compressed file may declare a huge array
        arrays[f"{idx}.weight"] = npz_array(data, f"{idx}.weight", max_width, matrix=True)
        arrays[f"{idx}.bias"] = npz_array(data, f"{idx}.bias", max_width, matrix=False)
    acts = npz_activations(data, path, len(order))
    lower, upper = npz_box(data, path, arrays[f"{order[0]}.weight"].shape[1], box,
                           max_width=max_width)
    return target_from_state_dict(arrays, lower, upper, acts, max_width=max_width)


def load_target_any(path: str | os.PathLike[str], *,
                    box: tuple[Fraction, Fraction] | None = None,
                    max_width: int = DEFAULT_MAX_WIDTH,
                    max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Load a target from any supported file: JSON, ``W1, b1, …`` npz, or state-dict npz.

    An ``.npz`` with ``"<int>.weight"``/``"<int>.bias"`` members (and no ``W1``) is a PyTorch
    state dict (module docstring); its box is the ``lower``/``upper`` arrays if present, else the
    cube ``box`` (``--box LO:HI``). Anything else goes to
    :func:`~exactnorm.model.targets.load_target` unchanged (same arguments, same errors).

    Raises
    ------
    InputError
        Missing or unreadable file, a key outside the scheme, no box.
    """
    p = Path(path)
    if p.suffix == ".npz" and p.is_file() and zipfile.is_zipfile(p):
        keys = _npz_keys(p)
        # a state dict with extra modules (BatchNorm statistics, …) goes to the state-dict
        # reader too, which names the offending key instead of "no arrays W1, b1"
        if "W1" not in keys and any(STATE_DICT_KEY.match(k) for k in keys):
            return read_npz_archive(p, lambda data: _read_state_dict_npz(
                data, p, box=box, max_width=max_width))
    return load_target(p, max_digits=max_digits, max_width=max_width, box=box)
