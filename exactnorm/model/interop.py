"""Real models in: ONNX MLPs, PyTorch ``nn.Sequential`` state dicts, scikit-learn MLPs/pipelines.

Contract
--------
Every loader returns a :class:`~exactnorm.model.network.TargetNetwork` ``g`` that is the stored
model's function **exactly**: every float parameter (float16/32/64) converts to the dyadic rational
it denotes (:func:`~exactnorm.exact.linalg.from_numpy_exact`, SPEC §1), and every structural fact
(which layers exist, which activation follows which layer) comes from the file or from an explicit
declaration, never from a guess. What cannot be represented exactly as
``a_i = σ_i(W_i a_{i-1} + b_i)`` with ``σ_i ∈ {relu, identity}`` is refused with a one-line
:class:`~exactnorm.errors.InputError` naming the offending part.

Correctness argument
--------------------
* **ONNX** (:func:`target_from_onnx`, :mod:`exactnorm.model.interop_onnx`): the graph is walked
  as a chain from its single input to its single output, or to the logits before a classifier
  head (``Softmax``, ``LogSoftmax``, ``Sigmoid`` and post-processing such as ``ArgMax`` and
  ``ZipMap``, recorded for the export). ``Gemm``/``MatMul`` are the linear layers; element-wise
  affine operators with stored constants (``Add``, ``Sub``, ``Mul``, ``Div``,
  ``BatchNormalization``, ``ai.onnx.ml`` ``Scaler``) fold exactly into a neighbouring linear
  layer; ``Relu`` sets the activation; ``Identity``, ``Cast`` and flattens change no value. Any
  other operator is refused with its op type, node name and what would work instead.
* **State dicts** (``.npz`` or ``.pt``, :func:`target_from_state_dict`): a state dict holds the
  ``Linear`` parameters only; the activations between them are modules without parameters, so a
  state dict does not say what they are. They must be declared: a string array ``activations``
  in the file or the ``activations=`` argument (``--activations relu,relu,identity``), one per
  ``Linear`` layer. A missing declaration is refused (the message says how to declare), and so is
  any name other than ``relu``/``identity`` (``tanh``, ``gelu``, ``sigmoid`` … are not piecewise
  linear: a certificate for them would be a certificate for a different function).
* **scikit-learn** (:func:`target_from_sklearn`): ``coefs_[i]`` is ``(in, out)``, so ``W_i`` is its
  transpose; hidden activation ``relu`` only; the output layer is identity (a classifier's
  softmax/logistic is applied to the certified logits, so equal logits give equal probabilities).
  In a ``Pipeline``, ``StandardScaler`` (``x' = (x − mean)/scale``) and ``MinMaxScaler``
  (``x' = x·scale + min``) are diagonal affine maps ``x' = D x + c`` with rational ``D, c``; they
  fold exactly into the first layer: ``W₁(Dx + c) + b₁ = (W₁D)x + (W₁c + b₁)``. The box is given in
  the coordinates ``predict`` receives (raw features), or in the scaled coordinates the MLP sees
  (``box_space="scaled"``), in which case it is mapped back through the inverse scalers (``D`` has
  positive diagonal, so interval endpoints map to interval endpoints).

A pickled scikit-learn model is **not** loaded from a file by :func:`load_target_any` or the CLI:
unpickling runs arbitrary code. Load it yourself if you trust it and call
:func:`target_from_sklearn`. ``.pt`` files are read with ``torch.load(weights_only=True)``, which
only rebuilds tensors and plain containers.

Box precedence: a file that carries its own box (``lower``/``upper`` arrays, a JSON ``domain``)
together with an explicit ``box=`` (``--box``) is refused rather than one of them being ignored.

References
----------
A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the Normalization
Layers", COLT 2023, arXiv:2302.07937 (the target class: ReLU networks).

Examples
--------
>>> import numpy as np
>>> arrays = {"0.weight": np.array([[1.0, -0.5]]), "0.bias": np.array([0.25]),
...           "2.weight": np.array([[2.0]]), "2.bias": np.array([0.0])}
>>> g = target_from_state_dict(arrays, [0, 0], [1, 1], ["relu", "identity"])
>>> g.widths, [layer.activation for layer in g.layers]
((2, 1, 1), ['relu', 'identity'])
>>> g.evaluate([1, 1])
(3/2,)
>>> try:
...     target_from_state_dict(arrays, [0, 0], [1, 1], ["tanh", "identity"])
... except InputError as exc:
...     print(exc)
activation 'tanh' of Linear layer 1 is not piecewise linear; use relu or identity
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
    require_extra,
)
from exactnorm.exact.files import npz_array, npz_box_arrays, read_npz_archive, require_file
from exactnorm.exact.linalg import from_numpy_exact, to_fractions
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.interop_onnx import ONNX_OPS, onnx_layers, target_from_onnx
from exactnorm.model.interop_onnx import with_source as _with_source
from exactnorm.model.network import ACTIVATIONS, DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import box_bounds, load_target, npz_activations

__all__ = [
    "exact_matrix",
    "exact_vector",
    "sklearn_mlp",
    "STATE_DICT_KEY",
    "STATE_DICT_RESERVED",
    "STATE_DICT_SUFFIXES",
    "ONNX_OPS",
    "parse_activations",
    "target_from_sklearn",
    "target_from_state_dict",
    "target_from_onnx",
    "is_state_dict_keys",
    "load_target_any",
]

#: ``"<module index>.weight"`` / ``"<module index>.bias"`` of an ``nn.Sequential`` state dict.
STATE_DICT_KEY = re.compile(r"^(\d+)\.(weight|bias)$")
# a parameter or buffer name of any torch module, e.g. "fc1.weight", "bn.running_mean"
_PARAMETER_KEY = re.compile(r"\.(weight|bias|running_mean|running_var|num_batches_tracked)$")
#: Keys of a state dict that are not parameters: the box and the activations (SPEC §7).
STATE_DICT_RESERVED = ("lower", "upper", "activations")
#: File suffixes read with ``torch.load(weights_only=True)``.
STATE_DICT_SUFFIXES = (".pt", ".pth")

_DECLARE_HINT = ("declare them with an 'activations' array in the file (one of relu/identity per "
                 "Linear layer) or --activations relu,...,identity")


def exact_matrix(a: Any, what: str) -> list[list[Fraction]]:
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        # float(x) would round a long double; only IEEE half/single/double convert exactly here
        raise NumberFormatError(f"{what} has dtype {arr.dtype}; save it as float64 or integers")
    return to_fractions(from_numpy_exact(arr, what))


def exact_vector(a: Any, what: str) -> list[Fraction]:
    return [row[0] for row in exact_matrix(np.asarray(a).reshape(-1), what)]


def parse_activations(declared: str | Sequence[str], n_layers: int | None = None) -> list[str]:
    """Validate declared activations: ``"relu,relu,identity"`` or a sequence of names.

    Parameters
    ----------
    declared
        Comma-separated text (the ``--activations`` option) or a sequence of names; names are
        case-insensitive (``ReLU`` is ``relu``).
    n_layers
        The number of ``Linear`` layers the declaration must cover, if known.

    Returns
    -------
    list of str
        ``relu``/``identity`` names, one per layer.

    Raises
    ------
    InputError
        For a name that is not piecewise linear (``tanh``, ``gelu``, …) or a wrong count.

    Examples
    --------
    >>> parse_activations("ReLU, relu ,identity", 3)
    ['relu', 'relu', 'identity']
    """
    names = declared.split(",") if isinstance(declared, str) else list(declared)
    acts = [str(a).strip().lower() for a in names]
    for i, a in enumerate(acts, 1):
        if a not in ACTIVATIONS:
            raise InputError(f"activation {a!r} of Linear layer {i} is not piecewise linear; "
                             f"use relu or identity")
    if n_layers is not None and len(acts) != n_layers:
        raise InputError(f"{len(acts)} activations declared for {n_layers} Linear layers")
    return acts


# --------------------------------------------------------------------------- scikit-learn


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


def target_from_sklearn(model: Any, lower: Sequence[Any], upper: Sequence[Any], *,
                        box_space: str = "raw",
                        max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A fitted scikit-learn MLP, or a ``Pipeline`` of scalers and an MLP, as an exact target.

    Parameters
    ----------
    model
        A fitted ``MLPRegressor``/``MLPClassifier`` with ``activation="relu"``, or a fitted
        ``Pipeline`` whose steps are ``StandardScaler``/``MinMaxScaler`` (or ``"passthrough"``)
        followed by such an MLP. Loaded by the caller: exactnorm never unpickles a file.
    lower, upper
        The input box ``D``: sequences, or one number each for a cube (floats convert exactly).
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
    lo, hi = box_bounds(lower, "lower", d), box_bounds(upper, "upper", d)
    if len(lo) != d or len(hi) != d:
        raise ShapeError(f"the box has {len(lo)}/{len(hi)} bounds, the model {d} inputs")
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


# --------------------------------------------------------------------------- state dicts


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
                             f"(only nn.Sequential of Linear layers and parameter-free "
                             f"activations is supported; save a custom module's Linear layers "
                             f"as an nn.Sequential state dict)")
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
                           upper: Sequence[Any], activations: str | Sequence[str] | None = None,
                           *, max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A PyTorch ``nn.Sequential`` state dict of ``Linear`` layers as an exact target.

    Parameters
    ----------
    arrays
        Maps ``"0.weight"``, ``"0.bias"``, ``"2.weight"``, … to arrays (numpy arrays or anything
        ``np.asarray`` accepts; the reserved keys ``lower``, ``upper``, ``activations`` are ignored
        here). Weights are ``(out, in)`` as in exactnorm; every float converts exactly.
    lower, upper
        The input box ``D``: sequences, or one number each for a cube.
    activations
        One of ``relu``/``identity`` per ``Linear`` layer, in module order. Required: a state
        dict does not contain its activations.

    Returns
    -------
    TargetNetwork
        The network exactly as stored.

    Raises
    ------
    InputError
        No or an unsupported activation declaration, a key outside the scheme, a Linear layer
        without weight or bias, a long-double array;
        :class:`~exactnorm.errors.LimitExceededError` above ``max_width``.
    """
    order = _state_dict_layers(list(arrays.keys()))
    if activations is None:
        raise InputError(f"a state dict does not record its activations; {_DECLARE_HINT}")
    acts = parse_activations(activations, len(order))
    weights, biases = [], []
    for idx in order:
        W = np.asarray(arrays[f"{idx}.weight"])
        b = np.asarray(arrays[f"{idx}.bias"])
        if W.ndim != 2:
            raise ShapeError(f"state dict {idx}.weight must be 2-D, got shape {W.shape}")
        if max(W.shape) > max_width or b.size > max_width:
            raise LimitExceededError(f"state dict {idx}.weight has shape {W.shape}, above the "
                                     f"width limit {max_width} (raise it with --max-width)")
        weights.append(exact_matrix(W, f"{idx}.weight"))
        biases.append(exact_vector(b, f"{idx}.bias"))
    d = len(weights[0][0])
    return TargetNetwork.from_lists(weights, biases, acts, lower=box_bounds(lower, "lower", d),
                                    upper=box_bounds(upper, "upper", d), max_width=max_width)


def _declared(in_file: Sequence[str] | None, option: str | Sequence[str] | None,
              path: Path) -> str | Sequence[str] | None:
    if in_file is not None and option is not None:
        raise InputError(f"{path} declares its activations and --activations was given too; "
                         f"remove one")
    return in_file if in_file is not None else option


def _cube(box: tuple[Fraction, Fraction] | None, d0: int, path: Path,
          has_own: bool) -> tuple[list[Any], list[Any]] | None:
    if has_own and box is not None:
        raise InputError(f"{path} has its own box (lower/upper) and --box was given too; "
                         f"remove one")
    return None if box is None else ([box[0]] * d0, [box[1]] * d0)


def _state_dict_target(arrays: Mapping[str, Any], path: Path, *,
                       box: tuple[Fraction, Fraction] | None,
                       activations: str | Sequence[str] | None,
                       file_acts: Sequence[str] | None, max_width: int) -> TargetNetwork:
    order = _state_dict_layers(list(arrays.keys()))
    has_lower, has_upper = "lower" in arrays, "upper" in arrays
    if has_lower != has_upper:
        raise InputError(f"{path} has only one of lower/upper; give both or neither")
    d0 = int(np.asarray(arrays[f"{order[0]}.weight"]).shape[-1])
    cube = _cube(box, d0, path, has_lower)
    if has_lower:
        lower: list[Any] = exact_vector(arrays["lower"], "lower")
        upper: list[Any] = exact_vector(arrays["upper"], "upper")
    elif cube is not None:
        lower, upper = cube
    else:
        raise InputError(f"{path} is a state dict without lower/upper arrays; pass --box LO:HI")
    return target_from_state_dict(arrays, lower, upper, _declared(file_acts, activations, path),
                                  max_width=max_width)


def _read_state_dict_npz(data: Any, path: Path, **kw: Any) -> TargetNetwork:
    keys = list(data.files)
    order = _state_dict_layers(keys)  # names a foreign key before anything is loaded
    arrays: dict[str, Any] = {}
    for idx in order:
        # headers first (files.npz_array): a tiny compressed file may declare a huge array
        arrays[f"{idx}.weight"] = npz_array(data, f"{idx}.weight", kw["max_width"], matrix=True)
        arrays[f"{idx}.bias"] = npz_array(data, f"{idx}.bias", kw["max_width"], matrix=False)
    # the shape rules of the W1, b1 reader, shared (exact.files, model.targets)
    bounds = npz_box_arrays(data, kw["max_width"])
    if bounds is not None:
        arrays["lower"], arrays["upper"] = bounds
    file_acts = npz_activations(data, path, len(order))
    return _state_dict_target(arrays, path, file_acts=file_acts, **kw)


def _read_state_dict_pt(path: Path, **kw: Any) -> TargetNetwork:
    torch = require_extra("torch", f"reading {path.name}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, … for foreign files
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise InputError(f"{path} is not a weights-only state dict (save model.state_dict(), "
                         f"not the model): {first}") from None
    if not isinstance(obj, Mapping):
        raise InputError(f"{path} holds a {type(obj).__name__}, not a state dict")
    arrays: dict[str, Any] = {}
    file_acts = None
    for k, v in obj.items():
        if k == "activations":
            if isinstance(v, str) or not isinstance(v, (list, tuple)) \
                    or not all(isinstance(a, str) for a in v):
                raise InputError(f"{path}: activations must be a list of strings")
            file_acts = list(v)
        elif isinstance(v, torch.Tensor):
            if v.dtype == torch.bfloat16:
                v = v.to(torch.float32)  # exact: bfloat16 is a truncated float32
            arrays[str(k)] = v.detach().cpu().numpy()
        else:
            raise InputError(f"{path}: entry {k!r} is a {type(v).__name__}, not a tensor")
    return _state_dict_target(arrays, path, file_acts=file_acts, **kw)


# --------------------------------------------------------------------------- one loader


def _npz_keys(path: Path) -> list[str]:
    """Member names of an ``.npz`` without loading any array (``0.weight.npy`` → ``0.weight``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return [n[:-4] if n.endswith(".npy") else n for n in zf.namelist()]
    except (OSError, zipfile.BadZipFile, zlib.error):
        return []


def load_target_any(path: str | os.PathLike[str], *,
                    box: tuple[Fraction, Fraction] | None = None,
                    activations: str | Sequence[str] | None = None,
                    max_width: int = DEFAULT_MAX_WIDTH,
                    max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Load a target from any supported file; the one loader of the API and the CLI.

    Parameters
    ----------
    path
        ``.json`` (SPEC §3 sections), ``.npz`` with ``W1, b1, …`` (SPEC §7), ``.npz`` or
        ``.pt``/``.pth`` PyTorch ``nn.Sequential`` state dict, or ``.onnx`` MLP.
    box
        ``(lo, hi)`` cube for a file without its own box (``--box``); refused when the file has
        one.
    activations
        Declared activations of a state dict (``--activations``); refused for formats that
        record their activations themselves and when the state dict declares them too.
    max_width, max_digits
        Refuse wider layers and longer numbers.

    Returns
    -------
    TargetNetwork
        The exact target (module docstring).

    Raises
    ------
    InputError
        Missing or unreadable file, unsupported structure or activation, missing or doubly
        given box or activations; :class:`~exactnorm.errors.MissingExtraError` when reading the
        format needs ``onnx`` or ``torch``.
    """
    p = require_file(path, "target file")
    kw = {"box": box, "activations": activations, "max_width": max_width}
    suffix = p.suffix.lower()
    if suffix in STATE_DICT_SUFFIXES:
        return _read_state_dict_pt(p, **kw)
    if suffix == ".npz" and zipfile.is_zipfile(p):
        keys = _npz_keys(p)
        # any module's state dict ("fc1.weight", BatchNorm statistics, …) goes to the
        # state-dict reader, which names the offending key instead of "no arrays W1, b1"
        if "W1" not in keys and any(_PARAMETER_KEY.search(k) for k in keys):
            return read_npz_archive(p, lambda data: _read_state_dict_npz(data, p, **kw))
    if activations is not None:
        raise InputError(f"--activations applies to state dicts (.npz/.pt); {p} records its "
                         f"activations itself")
    if suffix == ".onnx":
        if box is None:
            raise InputError(f"an ONNX model has no input box; pass --box LO:HI for {p}")
        source: dict[str, Any] = {}
        weights, biases, acts = onnx_layers(p, max_width, source)
        d0 = len(weights[0][0])
        return _with_source(TargetNetwork.from_lists(weights, biases, acts, lower=[box[0]] * d0,
                                                     upper=[box[1]] * d0, max_width=max_width),
                            source)
    return load_target(p, max_digits=max_digits, max_width=max_width, box=box)
