"""The input box of a target: a cube ``LO:HI``, a box file, or the range of a data set.

A certificate proves equality on a box ``D = [lower, upper]``; files that do not record one
(ONNX, state dicts, ``W1, b1, …`` arrays without ``lower``/``upper``) get it from the caller in
one of three ways, exactly one at a time:

* ``box``: the cube ``[lo, hi]^{d_0}`` (``"LO:HI"`` or a pair of numbers: ints, floats — taken
  exactly —, fractions or strings), or per-feature bounds as a pair of sequences or arrays
  ``(lower, upper)``;
* ``box_file``: a ``.json`` object ``{"lower": [...], "upper": [...]}`` (exact numbers), an
  ``.npz`` with arrays ``lower`` and ``upper``, or an ``.npy`` of shape ``(2, d_0)``;
* ``box_from_data``: an ``.npy`` array of samples, shape ``(n, d_0)`` or images ``(n, c, h, w)``
  (the arrays ``--data`` takes): the box is the per-feature minimum and maximum (floats
  converted exactly: the box contains every sample).

>>> lo, hi = resolve_box(box="-1/2:1")
>>> lo, hi
(Fraction(-1, 2), Fraction(1, 1))
>>> resolve_box(box=(0.0, 1.0))
(Fraction(0, 1), Fraction(1, 1))
>>> resolve_box(box=([0, 0], ["1/3", 1]))
([Fraction(0, 1), Fraction(0, 1)], [Fraction(1, 3), Fraction(1, 1)])
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq, fmpz

from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES as MAX_DATA_BYTES
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.files import read_npz_archive, require_file
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    parse_number,
    parse_option_number,
    strict_json_loads,
)
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import parse_box

__all__ = ["resolve_box", "apply_box", "exact_number", "Box", "Cube", "Bounds"]

Cube = tuple[Fraction, Fraction]
Bounds = tuple[list[Fraction], list[Fraction]]
Box = Cube | Bounds



def _is_number(x: Any) -> bool:
    """One number (not a sequence): Python or NumPy integers and floats, ``Fraction``, the
    flint types, a string such as ``"1/3"`` or ``"0.1"``, a 0-d array."""
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (str, int, float, Fraction, np.integer, np.floating, fmpq, fmpz)) \
        or (isinstance(x, np.ndarray) and x.ndim == 0)


def exact_number(x: Any, what: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Fraction:
    """``x`` exactly: a float is the dyadic rational it denotes (as in an ``.npz``), a string is
    read as written (``"0.1"`` is 1/10), integers and fractions as they are.

    >>> exact_number(0.5, "x"), exact_number("0.1", "x"), exact_number(np.int64(3), "x")
    (Fraction(1, 2), Fraction(1, 10), Fraction(3, 1))
    """
    if isinstance(x, np.ndarray):
        x = x.item()
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            raise InputError(f"{what} is {x}, not a finite number", parameter="box")
        return Fraction(float(x))
    if isinstance(x, np.integer):
        return Fraction(int(x))
    if isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    if isinstance(x, fmpz):
        return Fraction(int(x))
    return parse_option_number(x, max_digits=max_digits, where=what)


def _exact_floats(a: Any, what: str) -> list[Fraction]:
    arr = np.asarray(a)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1:
        raise InputError(f"{what} must be a 1-D array of numbers, got dtype {arr.dtype} and "
                         f"shape {arr.shape}")
    floating = np.issubdtype(arr.dtype, np.floating)
    if floating and not np.all(np.isfinite(arr)):
        raise InputError(f"{what} has a NaN or infinite entry")
    return [Fraction(x) if floating else Fraction(int(x)) for x in arr.tolist()]


def _python_exact(values: Any, what: str) -> list[Any]:
    if isinstance(values, np.ndarray):
        if np.issubdtype(values.dtype, np.floating):
            return _exact_floats(values, what)
        return values.tolist()
    out: list[Any] = []
    for x in values:
        if isinstance(x, (float, np.floating)):
            if not np.isfinite(x):
                raise InputError(f"{what} has a NaN or infinite entry", parameter="box")
            out.append(Fraction(float(x)))
        else:
            out.append(int(x) if isinstance(x, np.integer) else x)
    return out


def _bounds(lower: Sequence[Any], upper: Sequence[Any], what: str,
            max_digits: int = DEFAULT_MAX_DIGITS) -> Bounds:
    lo = [x if isinstance(x, Fraction) else parse_number(x, max_digits=max_digits,
                                                        where=f"{what} lower[{k}]")
          for k, x in enumerate(lower)]
    hi = [x if isinstance(x, Fraction) else parse_number(x, max_digits=max_digits,
                                                        where=f"{what} upper[{k}]")
          for k, x in enumerate(upper)]
    if len(lo) != len(hi):
        raise ShapeError(f"{what}: lower has {len(lo)} coordinates, upper {len(hi)}")
    if not lo:
        raise ShapeError(f"{what} has no coordinates")
    for k, (a, b) in enumerate(zip(lo, hi)):
        if a > b:
            raise InputError(f"{what}: inverted bounds lower[{k}] = {a} > upper[{k}] = {b}")
    return lo, hi


def _load_npy(path: Path) -> Any:
    if path.stat().st_size > MAX_DATA_BYTES:
        raise InputError(f"{path} is larger than {MAX_DATA_BYTES} bytes")
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:  # a pickled object array, a broken header
        raise InputError(f"{path} is not a plain .npy array ({str(exc).splitlines()[0]}); "
                         f"pickles are refused") from None


def box_from_file(path: str | os.PathLike[str], *,
                  max_digits: int = DEFAULT_MAX_DIGITS) -> Bounds:
    """Per-feature bounds from a ``.json``, ``.npz`` or ``.npy`` file (module doc)."""
    p = require_file(path, "box file", parameter="box_file")
    suffix = p.suffix.lower()
    if suffix == ".json":
        doc = strict_json_loads(p.read_bytes(), what=str(p))
        if not isinstance(doc, dict) or not {"lower", "upper"} <= set(doc):
            raise InputError(f"{p} must be a JSON object with lists lower and upper",
                             parameter="box_file")
        if not isinstance(doc["lower"], list) or not isinstance(doc["upper"], list):
            raise InputError(f"{p}: lower and upper must be lists", parameter="box_file")
        return _bounds(doc["lower"], doc["upper"], str(p), max_digits)
    if suffix == ".npz":
        def read(data: Any) -> Bounds:
            if not {"lower", "upper"} <= set(data.files):
                raise InputError(f"{p} needs arrays lower and upper, has "
                                 f"{', '.join(sorted(data.files)) or 'none'}",
                                 parameter="box_file")
            return _bounds(_exact_floats(data["lower"], f"{p} lower"),
                           _exact_floats(data["upper"], f"{p} upper"), str(p))
        result: Bounds = read_npz_archive(p, read)
        return result
    if suffix == ".npy":
        arr = _load_npy(p)
        if arr.ndim != 2 or arr.shape[0] != 2:
            raise InputError(f"{p} must have shape (2, d): row 0 lower, row 1 upper; got "
                             f"{arr.shape}", parameter="box_file")
        return _bounds(_exact_floats(arr[0], f"{p} lower"), _exact_floats(arr[1], f"{p} upper"),
                       str(p))
    raise InputError(f"box file {p}: expected .json, .npz or .npy", parameter="box_file")


def box_from_samples(path: str | os.PathLike[str]) -> Bounds:
    """Per-feature minimum and maximum of an ``.npy`` sample array: ``(n, d)``, or images
    ``(n, c, h, w)`` (any ``(n, …)``, each sample read in C order, as ``--data`` reads it)."""
    p = require_file(path, "data file", parameter="box_from_data")
    if p.suffix.lower() != ".npy":
        raise InputError(f"data file {p}: expected an .npy array of shape (n, d)",
                         parameter="box_from_data")
    arr = _load_npy(p)
    if arr.ndim < 2 or arr.shape[0] == 0 or arr.size == 0:
        raise InputError(f"{p} must have shape (n, d) or (n, c, h, w) with n ≥ 1 samples, got "
                         f"{arr.shape}", parameter="box_from_data")
    arr = arr.reshape(arr.shape[0], -1)
    return _bounds(_exact_floats(arr.min(axis=0), f"{p} minimum"),
                   _exact_floats(arr.max(axis=0), f"{p} maximum"), str(p))


def resolve_box(*, box: Any = None, box_file: str | os.PathLike[str] | None = None,
                box_from_data: str | os.PathLike[str] | None = None,
                max_digits: int = DEFAULT_MAX_DIGITS) -> Box | None:
    """The box the caller gave, as a cube ``(lo, hi)`` or bounds ``(lower, upper)`` lists.

    Raises
    ------
    InputError
        More than one of ``box``, ``box_file``, ``box_from_data``; a malformed box (naming the
        parameter).
    """
    given = [n for n, v in (("box", box), ("box_file", box_file),
                            ("box_from_data", box_from_data)) if v is not None]
    if len(given) > 1:
        raise InputError(f"give one of box, box_file, box_from_data, not {' and '.join(given)}",
                         parameter=tuple(given))
    if box_file is not None:
        return box_from_file(box_file, max_digits=max_digits)
    if box_from_data is not None:
        return box_from_samples(box_from_data)
    if box is None:
        return None
    if isinstance(box, str):
        return parse_box(box)
    if isinstance(box, (tuple, list)) and len(box) == 2:
        lo, hi = box
        if _is_number(lo) and _is_number(hi):
            cube = (exact_number(lo, "box lower end", max_digits),
                    exact_number(hi, "box upper end", max_digits))
            if cube[0] > cube[1]:
                raise InputError(f"inverted box: {cube[0]} > {cube[1]}", parameter="box")
            return cube
        if any(isinstance(side, (str, bytes)) or np.ndim(side) != 1 for side in (lo, hi)):
            raise InputError(f"box must be 'LO:HI', a pair of numbers or a pair of sequences, "
                             f"got ({type(lo).__name__}, {type(hi).__name__})",
                             parameter="box")
        # Python and NumPy floats are dyadic rationals: taken exactly, as in an .npz
        return _bounds(_python_exact(lo, "box lower"), _python_exact(hi, "box upper"), "box",
                       max_digits)
    raise InputError(f"box must be 'LO:HI', (lo, hi) or (lower, upper) sequences, got "
                     f"{type(box).__name__}", parameter="box")


def is_cube(box: Box) -> bool:
    return not isinstance(box[0], list)


def apply_box(g: TargetNetwork, bounds: Bounds, *, parameter: str = "box") -> TargetNetwork:
    """``g`` on the per-feature box ``bounds`` (dimension checked against the network input)."""
    n = g.layers[0].input_size
    if len(bounds[0]) != n:
        raise ShapeError(f"the box has {len(bounds[0])} coordinates but the network input has "
                         f"{n}", parameter=parameter)
    lower, upper = (tuple(fmpq(x.numerator, x.denominator) for x in side) for side in bounds)
    return dataclasses.replace(g, lower=lower, upper=upper)
