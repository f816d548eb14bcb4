"""Reading and writing target networks: JSON target files, ``.npz`` arrays, the demo target.

A target file is ``{"domain": {...}, "target": {...}}`` exactly as in a certificate (SPEC §3/§7).
An ``.npz`` file holds ``W1, b1, …, WL, bL`` (integer or float; floats converted exactly to dyadic
rationals), optional ``lower``/``upper`` arrays and an optional string array ``activations``.

>>> g = demo_target()
>>> g.widths
(3, 4, 3, 2)
>>> target_from_dict(target_to_dict(g)) == g
True
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES
from exactnorm.errors import (
    InputError,
    LimitExceededError,
    NumberFormatError,
    ShapeError,
)
from exactnorm.exact.files import (
    atomic_write_bytes,
    npz_array,
    npz_box_arrays,
    npz_strings,
    read_npz_archive,
    read_text_file,
    require_file,
)
from exactnorm.exact.linalg import from_numpy_exact, to_fraction, to_fractions
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    format_number,
    parse_number,
    parse_option_number,
    strict_json_loads,
    unlimited_int_digits,
)
from exactnorm.exact.sampling import layer_rng, sample_matrix
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.operators.dense import dense_layers

#: the largest JSON target read (uncompressed): the checker's default certificate limit
DEFAULT_MAX_TARGET_BYTES = DEFAULT_MAX_BYTES
#: suffixes of pickled Python objects (scikit-learn models are usually saved so)
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")

__all__ = [
    "PICKLE_SUFFIXES",
    "box_bounds",
    "demo_target",
    "target_to_dict",
    "target_from_dict",
    "load_target",
    "save_target",
    "parse_box",
    "random_target",
]


def demo_target() -> TargetNetwork:
    """The embedded demo: 3 layers, widths 3 → 4 → 3 → 2, rational weights, identity output."""
    W1 = [["1/2", -1, "3/4"], [2, "1/3", 0], ["-3/2", 1, "1/5"], [0, "-2/3", 1]]
    b1 = ["1/4", -1, "1/2", 0]
    W2 = [[1, "-1/2", "2/3", "1/4"], ["3/5", 1, -1, 0], ["-1/3", "1/2", "1/2", 2]]
    b2 = [0, "1/3", "-1/2"]
    W3 = [["5/4", -1, "1/2"], ["-1/6", "2/3", 1]]
    b3 = ["1/8", -2]
    return target_from_dict({
        "domain": {"lower": [-1, "-1/2", 0], "upper": [1, "1/2", 2]},
        "target": {"layers": [
            {"weight": W1, "bias": b1, "activation": "relu"},
            {"weight": W2, "bias": b2, "activation": "relu"},
            {"weight": W3, "bias": b3, "activation": "identity"},
        ]},
    })


def _fmt_vec(v: Any) -> list[Any]:
    return [format_number(to_fraction(x)) for x in v]


def target_to_dict(g: TargetNetwork) -> dict[str, Any]:
    """``TargetNetwork`` → the ``domain``/``target`` sections of SPEC §3 (exact JSON values).
    The certificate writer writes them over one denominator when that is shorter
    (:func:`exactnorm.certificate.write.target_sections`); :func:`target_from_dict` reads both
    forms."""
    return {
        "domain": {"lower": _fmt_vec(g.lower), "upper": _fmt_vec(g.upper)},
        "target": {"layers": [
            {"weight": [[format_number(x) for x in row] for row in to_fractions(layer.weight)],
             "bias": _fmt_vec(layer.bias),
             "activation": layer.activation}
            for layer in dense_layers(g.layers, "a target file")
        ]},
    }


def _compact_numbers(obj: dict[str, Any], what: str, max_digits: int) -> list[Any]:
    """``{"den": D, "num": [...]}`` (a vector, or a matrix when ``num`` holds rows) as exact
    Fractions; ``D`` and the numerators are integers (JSON or decimal strings)."""
    if set(obj) != {"den", "num"} or not isinstance(obj["num"], list):
        raise ShapeError(f"{what} must be a list or {{\"den\": D, \"num\": [...]}}")
    den = parse_number(obj["den"], max_digits=max_digits, where=f"{what} den")
    if den.denominator != 1 or den <= 0:
        raise NumberFormatError(f"{what} den must be a positive integer")

    def one(x: Any, where: str) -> Fraction:
        n = parse_number(x, max_digits=max_digits, where=where)
        if n.denominator != 1:
            raise NumberFormatError(f"{where} must be an integer numerator")
        return n / den

    return [[one(x, f"{what}[{r}][{c}]") for c, x in enumerate(row)] if isinstance(row, list)
            else one(row, f"{what}[{r}]") for r, row in enumerate(obj["num"])]


def _numbers(obj: Any, what: str, max_digits: int) -> list[Fraction]:
    if isinstance(obj, dict):
        out = _compact_numbers(obj, what, max_digits)
        if any(isinstance(x, list) for x in out):
            raise ShapeError(f"{what} must be a vector")
        return out
    if not isinstance(obj, list):
        raise ShapeError(f"{what} must be a list")
    return [parse_number(x, max_digits=max_digits, where=f"{what}[{k}]") for k, x in enumerate(obj)]


def _matrix(obj: Any, what: str, max_digits: int) -> list[list[Fraction]]:
    if isinstance(obj, dict):
        rows = _compact_numbers(obj, what, max_digits)
        if not rows or not all(isinstance(row, list) for row in rows):
            raise ShapeError(f"{what} must be a non-empty list of rows")
        return rows
    if not isinstance(obj, list) or not obj:
        raise ShapeError(f"{what} must be a non-empty list of rows")
    return [_numbers(row, f"{what}[{i}]", max_digits) for i, row in enumerate(obj)]


def _field(obj: Any, key: str, what: str) -> Any:
    if not isinstance(obj, dict):
        raise InputError(f"{what} must be a JSON object")
    if key not in obj:
        raise InputError(f"{what} has no {key!r} field")
    return obj[key]


def target_from_dict(doc: Any, *, max_digits: int = DEFAULT_MAX_DIGITS,
                     max_width: int = DEFAULT_MAX_WIDTH,
                     box: tuple[Fraction, Fraction] | None = None) -> TargetNetwork:
    """Parse ``{"domain": …, "target": …}`` into a :class:`TargetNetwork` with clear errors.

    ``box`` (lo, hi) supplies a cube when the document has no ``domain``.
    """
    if not isinstance(doc, dict):
        raise InputError("a target file must be a JSON object with 'domain' and 'target'")
    layers = _field(_field(doc, "target", "document"), "layers", "target")
    if not isinstance(layers, list) or not layers:
        raise ShapeError("the target network has no layers")
    weights, biases, acts = [], [], []
    for i, layer in enumerate(layers, 1):
        weights.append(_matrix(_field(layer, "weight", f"target layer {i}"),
                               f"target layer {i} weight", max_digits))
        biases.append(_numbers(_field(layer, "bias", f"target layer {i}"),
                               f"target layer {i} bias", max_digits))
        acts.append(layer.get("activation", "relu" if i < len(layers) else "identity"))
    if "domain" in doc and box is not None:
        # precedence would silently drop one of two boxes; the user decides
        raise InputError("the target has its own 'domain' and box was given too; remove one",
                         parameter="box")
    if "domain" in doc:
        dom = doc["domain"]
        lower = _numbers(_field(dom, "lower", "domain"), "domain lower", max_digits)
        upper = _numbers(_field(dom, "upper", "domain"), "domain upper", max_digits)
    elif box is not None:
        d0 = len(weights[0][0])
        lower, upper = [box[0]] * d0, [box[1]] * d0
    else:
        raise InputError("the target has no 'domain'; give one in the file, or box LO:HI "
                         "(or box_file, box_from_data)",
                         parameter=("box", "box_file", "box_from_data"))
    return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper,
                                    max_width=max_width)


def parse_box(text: str) -> tuple[Fraction, Fraction]:
    """``"LO:HI"`` (exact numbers, e.g. ``-1:1``, ``-1/2:3/2`` or ``0:1e-3``) → ``(lo, hi)``.

    >>> parse_box("0:1e-3")
    (Fraction(0, 1), Fraction(1, 1000))
    """
    if not isinstance(text, str) or text.count(":") != 1:
        raise InputError(f"box must look like LO:HI, got {text!r}", parameter="box")
    lo_s, hi_s = text.split(":")
    lo = parse_option_number(lo_s, where="box LO")
    hi = parse_option_number(hi_s, where="box HI")
    if lo > hi:
        raise InputError(f"inverted box: {lo} > {hi}", parameter="box")
    return lo, hi


def npz_activations(data: Any, path: Path, count: int) -> list[str] | None:
    """The optional ``activations`` member of a target ``.npz``: exactly ``count`` strings.

    Shared by the ``W1, b1, …`` reader here and the state-dict reader of
    :mod:`~exactnorm.model.interop`, so that both accept the same files.
    """
    if "activations" not in data.files:
        return None
    return npz_strings(data, "activations", count, "one per Linear layer")


def npz_box(data: Any, path: Path, dim: int, box: tuple[Fraction, Fraction] | None, *,
            max_width: int) -> tuple[list[Fraction], list[Fraction]]:
    """The input box of a target ``.npz``: its ``lower``/``upper`` arrays (floats converted
    exactly), else the cube ``box`` of dimension ``dim``.

    Raises
    ------
    InputError
        Only one of ``lower``/``upper`` is present, or neither and no ``box`` (``parameter`` is
        ``"box"``).
    """
    arrays = npz_box_arrays(data, max_width)
    if arrays is not None and box is not None:
        raise InputError(f"{path} has its own box (lower/upper) and box was given too; remove one",
                         parameter="box")
    if arrays is not None:
        lower, upper = ([r[0] for r in to_fractions(from_numpy_exact(a, name))]
                        for a, name in zip(arrays, ("lower", "upper")))
        return lower, upper
    if box is None:
        raise InputError(f"{path} has no lower/upper arrays; it needs box LO:HI",
                         parameter="box")
    return [box[0]] * dim, [box[1]] * dim


def _read_npz(data: Any, path: Path, *, max_width: int,
              box: tuple[Fraction, Fraction] | None) -> TargetNetwork:
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
        weights.append(to_fractions(from_numpy_exact(W, f"W{i}")))
        b = npz_array(data, f"b{i}", max_width, matrix=False)
        biases.append([row[0] for row in to_fractions(from_numpy_exact(b, f"b{i}"))])
    acts = npz_activations(data, path, L)
    lower, upper = npz_box(data, path, len(weights[0][0]), box, max_width=max_width)
    return TargetNetwork.from_lists(weights, biases, acts, lower=lower, upper=upper,
                                    max_width=max_width)


def load_target(path: str | os.PathLike[str], *, max_digits: int = DEFAULT_MAX_DIGITS,
                max_width: int = DEFAULT_MAX_WIDTH,
                box: tuple[Fraction, Fraction] | None = None) -> TargetNetwork:
    """Load a target from ``.json`` (SPEC §3 sections) or ``.npz`` (``W1, b1, …``)."""
    p = require_file(path, "target file")
    if p.suffix == ".npz":
        return read_npz_archive(p, lambda data: _read_npz(data, p, max_width=max_width,
                                                              box=box))
    try:
        # a .json.gz target (a certificate is one too) is inflated with its own limit
        text = read_text_file(p, "target file", DEFAULT_MAX_TARGET_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc}") from None
    if p.suffix.lower() in PICKLE_SUFFIXES or text[:1] == b"\x80":  # pickle protocol ≥ 2
        raise InputError(f"{p} is a pickle; pickles are refused (loading one runs arbitrary "
                         f"code): for a scikit-learn model call "
                         f"exactnorm.model.interop.target_from_sklearn(model, lower, upper) in "
                         f"Python, or export it to ONNX")
    return target_from_dict(strict_json_loads(text, what=str(p), max_digits=max_digits),
                            max_digits=max_digits,
                            max_width=max_width, box=box)


def save_target(g: TargetNetwork, path: str | os.PathLike[str]) -> None:
    """Write ``g`` as a JSON target file (atomic)."""

    def produce(fh: Any) -> None:
        with unlimited_int_digits():
            fh.write(json.dumps(target_to_dict(g), indent=1).encode())

    atomic_write_bytes(path, produce)


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


def box_bounds(values: Any, what: str, d: int) -> list[Any]:
    """One side of an input box as exact numbers: a sequence of ``d`` numbers, or one number
    (a float, integer, ``Fraction`` or string such as ``"1e-3"``) for each of the ``d`` inputs.
    Floats become the dyadic rationals they denote.

    >>> box_bounds(0.5, "lower", 2), box_bounds(["1/3", 2], "upper", 2)
    ([Fraction(1, 2), Fraction(1, 2)], ['1/3', 2])
    """
    if np.ndim(values) == 0:  # one number: the same bound for each of the d inputs
        values = [parse_option_number(values, where=f"box {what}") if isinstance(values, str)
                  else values] * d
    arr = np.asarray(values)
    if np.issubdtype(arr.dtype, np.floating):
        if arr.dtype.itemsize > 8:
            raise NumberFormatError(f"box {what} has dtype {arr.dtype}; use float64 or integers")
        return to_fractions(from_numpy_exact(arr.reshape(1, -1), f"box {what}"))[0]
    return list(values)
