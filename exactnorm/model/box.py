"""The input box ``D = [lower, upper] ⊂ Q^d`` of a claim: one type, one home.

Contract
--------
A :class:`Box` holds exact bounds (:class:`~fractions.Fraction`), ``lower[k] ≤ upper[k]`` for
every coordinate. A *cube* ``[lo, hi]^d`` holds one bound per side and takes its dimension from
the network it is put on (:meth:`Box.bounds`, :meth:`Box.fit`); a *per-feature* box has its own
dimension, which must equal the network's input. Every reader of a target or frozen network and
every verb (``certify``, ``capacity``, the API) takes a :class:`Box`; the forms a person types or
a program passes (``"0:1"``, ``(0.0, 1.0)``, fractions, strings, NumPy arrays, a box file, a data
set) are converted into one *at the edge*, by :meth:`Box.of` and :meth:`Box.given`, and nowhere
below.

Correctness argument: every number is converted exactly — a float (Python or NumPy, of at most
64 bits) is the dyadic rational it denotes, a string is read as written (``"0.1"`` is 1/10,
``"1e-3"`` is 1/1000), integers and fractions as they are — so the box a certificate states is the
box the caller gave. What cannot be converted exactly (NaN, infinities, long doubles, booleans,
objects) is refused with a one-line :class:`~exactnorm.errors.InputError` naming the parameter,
as are inverted bounds, empty boxes, bounds of different lengths and a dimension that differs
from the network's. A box from data (:meth:`Box.from_data`) is the per-feature minimum and
maximum of the samples, converted exactly, so it contains every sample.

>>> Box.parse("-1/2:1")
Box.cube(-1/2, 1)
>>> Box.of((0.0, 1.0)).bounds(2)[1]
(1, 1)
>>> Box.of(([0, 0], ["1/3", 1])).lower
(Fraction(0, 1), Fraction(0, 1))
>>> Box.of((1, 0))
Traceback (most recent call last):
    ...
exactnorm.errors.InputError: inverted box: 1 > 0
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq, fmpz

from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES as MAX_DATA_BYTES
from exactnorm.errors import InputError, NumberFormatError, ShapeError
from exactnorm.exact.files import read_npz_archive, require_file
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    parse_number,
    parse_option_number,
    strict_json_loads,
)

__all__ = ["Box", "exact_number"]

#: the parameters a box may come from, one at a time (the API's and the command line's names)
BOX_PARAMETERS = ("box", "box_file", "box_from_data")


def _is_number(x: Any) -> bool:
    """One number (not a sequence): Python or NumPy integers and floats, ``Fraction``, the
    flint types, a string such as ``"1/3"`` or ``"0.1"``, a 0-d array."""
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (str, int, float, Fraction, np.integer, np.floating, fmpq, fmpz)) \
        or (isinstance(x, np.ndarray) and x.ndim == 0)


def exact_number(x: Any, what: str, max_digits: int = DEFAULT_MAX_DIGITS, *,
                 parameter: str | None = "box") -> Fraction:
    """``x`` exactly: a float is the dyadic rational it denotes, a string is read as written
    (``"0.1"`` is 1/10, ``"1e-3"`` is 1/1000), integers and fractions as they are.

    >>> exact_number(0.5, "x"), exact_number("0.1", "x"), exact_number(np.int64(3), "x")
    (Fraction(1, 2), Fraction(1, 10), Fraction(3, 1))
    """
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    if isinstance(x, (bool, np.bool_)):
        raise NumberFormatError(f"{what} is a boolean, not a number", parameter=parameter)
    if isinstance(x, np.floating) and x.dtype.itemsize > 8:
        raise NumberFormatError(f"{what} has dtype {x.dtype}; use float64 or integers",
                                parameter=parameter)
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            raise InputError(f"{what} is {x}, not a finite number", parameter=parameter)
        return Fraction(float(x))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, Fraction):
        return x
    if isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    if isinstance(x, fmpz):
        return Fraction(int(x))
    if isinstance(x, str):
        return parse_option_number(x, max_digits=max_digits, where=what)
    raise NumberFormatError(f"{what} is a {type(x).__name__}, not a number",
                            parameter=parameter)


def _side(values: Any, what: str, max_digits: int, parameter: str | None) -> tuple[Fraction, ...]:
    """One side of a per-feature box: a 1-D sequence or array of numbers, exactly."""
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1:
        raise InputError(f"{what} must be a 1-D sequence of numbers", parameter=parameter)
    if isinstance(values, np.ndarray) and values.dtype.kind not in "iuf":
        raise InputError(f"{what} must be an array of numbers, got dtype {values.dtype}",
                         parameter=parameter)
    items = list(values)
    return tuple(exact_number(x, f"{what}[{k}]", max_digits, parameter=parameter)
                 for k, x in enumerate(items))


@dataclass(frozen=True)
class Box:
    """Exact bounds ``lower ≤ upper`` (module docstring); ``cube``: one bound per side, of any
    dimension. Build one with :meth:`cube`, :meth:`per_feature`, :meth:`parse`,
    :meth:`from_data`, :meth:`from_file`, or from anything the API accepts with :meth:`of`."""

    lower: tuple[Fraction, ...]
    upper: tuple[Fraction, ...]
    cube: bool = False

    def __post_init__(self) -> None:
        lo = tuple(exact_number(x, f"box lower[{k}]") for k, x in enumerate(self.lower))
        hi = tuple(exact_number(x, f"box upper[{k}]") for k, x in enumerate(self.upper))
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        if len(lo) != len(hi):
            raise ShapeError(f"the box has {len(lo)} lower and {len(hi)} upper bounds",
                             parameter="box")
        if not lo:
            raise ShapeError("the box has no coordinates", parameter="box")
        if self.cube and len(lo) != 1:
            raise ShapeError("a cube has one lower and one upper bound", parameter="box")
        for k, (a, b) in enumerate(zip(lo, hi)):
            if a > b:
                raise InputError(f"inverted box: {a} > {b}" if self.cube else
                                 f"inverted box: lower[{k}] = {a} > upper[{k}] = {b}",
                                 parameter="box")

    # ------------------------------------------------------------------ constructors

    @classmethod
    def of_cube(cls, lo: Any, hi: Any, *, max_digits: int = DEFAULT_MAX_DIGITS) -> Box:
        """The cube ``[lo, hi]^d`` of any dimension ``d``."""
        return cls((exact_number(lo, "box lower end", max_digits),),
                   (exact_number(hi, "box upper end", max_digits),), cube=True)

    @classmethod
    def per_feature(cls, lower: Any, upper: Any, *, max_digits: int = DEFAULT_MAX_DIGITS,
                    what: str = "box", parameter: str | None = "box") -> Box:
        """Bounds per coordinate from two 1-D sequences or arrays of numbers (floats exactly)."""
        lo = _side(lower, f"{what} lower", max_digits, parameter)
        hi = _side(upper, f"{what} upper", max_digits, parameter)
        if len(lo) != len(hi):
            raise ShapeError(f"{what}: lower has {len(lo)} coordinates, upper {len(hi)}",
                             parameter=parameter)
        if not lo:
            raise ShapeError(f"{what} has no coordinates", parameter=parameter)
        for k, (a, b) in enumerate(zip(lo, hi)):
            if a > b:
                raise InputError(f"{what}: inverted bounds lower[{k}] = {a} > upper[{k}] = {b}",
                                 parameter=parameter)
        return cls(lo, hi)

    @classmethod
    def parse(cls, text: str, *, max_digits: int = DEFAULT_MAX_DIGITS) -> Box:
        """``"LO:HI"`` (exact numbers, e.g. ``-1:1``, ``-1/2:3/2`` or ``0:1e-3``): a cube.

        >>> Box.parse("0:1e-3").upper
        (Fraction(1, 1000),)
        """
        if not isinstance(text, str) or text.count(":") != 1:
            raise InputError(f"box must look like LO:HI, got {text!r}", parameter="box")
        lo_s, hi_s = text.split(":")
        lo = parse_option_number(lo_s, max_digits=max_digits, where="box LO")
        hi = parse_option_number(hi_s, max_digits=max_digits, where="box HI")
        if lo > hi:
            raise InputError(f"inverted box: {lo} > {hi}", parameter="box")
        return cls((lo,), (hi,), cube=True)

    @classmethod
    def from_data(cls, samples: Any, *, what: str = "data",
                  parameter: str | None = "box_from_data") -> Box:
        """The per-feature minimum and maximum of samples ``(n, d)`` or images
        ``(n, c, h, w)`` (any ``(n, …)``, each sample read in C order, as ``--data`` reads it),
        ``n ≥ 1`` (an array, or an ``.npy`` file of one): the smallest box that holds every
        sample."""
        if isinstance(samples, (str, os.PathLike)):
            p = require_file(samples, "data file", parameter=parameter)
            if p.suffix.lower() != ".npy":
                raise InputError(f"data file {p}: expected an .npy array of shape (n, d)",
                                 parameter=parameter)
            samples, what = _load_npy(p, parameter), str(p)
        arr = np.asarray(samples)
        if arr.ndim < 2 or arr.shape[0] == 0 or arr.size == 0:
            raise InputError(f"{what} must have shape (n, d) or (n, c, h, w) with n ≥ 1 "
                             f"samples, got {arr.shape}", parameter=parameter)
        arr = arr.reshape(arr.shape[0], -1)
        if arr.dtype.kind not in "iuf":
            raise InputError(f"{what} must hold numbers, got dtype {arr.dtype}",
                             parameter=parameter)
        if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
            raise InputError(f"{what} has a NaN or infinite entry", parameter=parameter)
        return cls.per_feature(arr.min(axis=0), arr.max(axis=0), what=what,
                               parameter=parameter)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *,
                  max_digits: int = DEFAULT_MAX_DIGITS) -> Box:
        """Per-feature bounds from a ``.json`` object ``{"lower": [...], "upper": [...]}`` (exact
        numbers), an ``.npz`` with arrays ``lower`` and ``upper``, or an ``.npy`` of shape
        ``(2, d)`` (row 0 lower, row 1 upper)."""
        p = require_file(path, "box file", parameter="box_file")
        suffix = p.suffix.lower()
        if suffix == ".json":
            if p.stat().st_size > MAX_DATA_BYTES:
                raise InputError(f"{p} is larger than {MAX_DATA_BYTES} bytes",
                                 parameter="box_file")
            doc = strict_json_loads(p.read_bytes(), what=str(p), max_digits=max_digits)
            if not isinstance(doc, dict) or not {"lower", "upper"} <= set(doc):
                raise InputError(f"{p} must be a JSON object with lists lower and upper",
                                 parameter="box_file")
            if not isinstance(doc["lower"], list) or not isinstance(doc["upper"], list):
                raise InputError(f"{p}: lower and upper must be lists", parameter="box_file")
            lo = [parse_number(x, max_digits=max_digits, where=f"{p} lower[{k}]")
                  for k, x in enumerate(doc["lower"])]
            hi = [parse_number(x, max_digits=max_digits, where=f"{p} upper[{k}]")
                  for k, x in enumerate(doc["upper"])]
            return cls.per_feature(lo, hi, what=str(p), parameter="box_file")
        if suffix == ".npz":
            def read(data: Any) -> Box:
                if not {"lower", "upper"} <= set(data.files):
                    raise InputError(f"{p} needs arrays lower and upper, has "
                                     f"{', '.join(sorted(data.files)) or 'none'}",
                                     parameter="box_file")
                return cls.per_feature(data["lower"], data["upper"], what=str(p),
                                       parameter="box_file")
            result: Box = read_npz_archive(p, read)
            return result
        if suffix == ".npy":
            arr = _load_npy(p, "box_file")
            if arr.ndim != 2 or arr.shape[0] != 2:
                raise InputError(f"{p} must have shape (2, d): row 0 lower, row 1 upper; got "
                                 f"{arr.shape}", parameter="box_file")
            return cls.per_feature(arr[0], arr[1], what=str(p), parameter="box_file")
        raise InputError(f"box file {p}: expected .json, .npz or .npy", parameter="box_file")

    @classmethod
    def of(cls, value: Any, upper: Any = None, *,
           max_digits: int = DEFAULT_MAX_DIGITS) -> Box:
        """Anything the API accepts as a box, converted exactly: a :class:`Box`; ``"LO:HI"``;
        a pair of numbers ``(lo, hi)`` (a cube); a pair of 1-D sequences or arrays ``(lower,
        upper)`` (per feature). With ``upper``, ``value`` is the lower side: two numbers (a
        cube) or two sequences (per feature), the form of the readers' ``lower, upper``."""
        if upper is not None:
            value = (value, upper)
        if isinstance(value, Box):
            return value
        if isinstance(value, str):
            return cls.parse(value, max_digits=max_digits)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            lo, hi = value
            if _is_number(lo) and _is_number(hi):
                cube = cls.of_cube(lo, hi, max_digits=max_digits)
                return cube
            if any(isinstance(side, (str, bytes)) or np.ndim(side) != 1 for side in (lo, hi)):
                raise InputError(f"box must be 'LO:HI', a pair of numbers or a pair of "
                                 f"sequences, got ({type(lo).__name__}, {type(hi).__name__})",
                                 parameter="box")
            return cls.per_feature(lo, hi, max_digits=max_digits)
        raise InputError(f"box must be 'LO:HI', (lo, hi) or (lower, upper) sequences, got "
                         f"{type(value).__name__}", parameter="box")

    @classmethod
    def given(cls, *, box: Any = None, box_file: str | os.PathLike[str] | None = None,
              box_from_data: Any = None,
              max_digits: int = DEFAULT_MAX_DIGITS) -> Box | None:
        """The box of the API's and the command line's three parameters, at most one of them
        given (``None`` when none is)."""
        named = [n for n, v in zip(BOX_PARAMETERS, (box, box_file, box_from_data))
                 if v is not None]
        if len(named) > 1:
            raise InputError(f"give one of box, box_file, box_from_data, not "
                             f"{' and '.join(named)}", parameter=tuple(named))
        if box_file is not None:
            return cls.from_file(box_file, max_digits=max_digits)
        if box_from_data is not None:
            return cls.from_data(box_from_data)
        return None if box is None else cls.of(box, max_digits=max_digits)

    # ------------------------------------------------------------------ use

    @property
    def dimension(self) -> int | None:
        """The number of coordinates, ``None`` for a cube (it fits any)."""
        return None if self.cube else len(self.lower)

    def fit(self, d: int, *, what: str = "the network input",
            parameter: str | None = "box") -> Box:
        """This box in dimension ``d``: a cube repeated, a per-feature box checked."""
        if self.cube:
            return Box(self.lower * d, self.upper * d) if d >= 1 else self._empty()
        if len(self.lower) != d:
            raise ShapeError(f"the box has {len(self.lower)} coordinates but {what} has {d}",
                             parameter=parameter)
        return self

    def _empty(self) -> Box:
        raise ShapeError("the input dimension must be at least 1")

    def bounds(self, d: int, *, what: str = "the network input",
               parameter: str | None = "box") -> tuple[tuple[fmpq, ...], tuple[fmpq, ...]]:
        """``(lower, upper)`` in dimension ``d`` as ``fmpq`` vectors (the networks' type)."""
        b = self.fit(d, what=what, parameter=parameter)
        return (tuple(fmpq(x.numerator, x.denominator) for x in b.lower),
                tuple(fmpq(x.numerator, x.denominator) for x in b.upper))

    def fractions(self, d: int) -> tuple[list[Fraction], list[Fraction]]:
        """``(lower, upper)`` in dimension ``d`` as lists of Fractions."""
        b = self.fit(d)
        return list(b.lower), list(b.upper)

    def __repr__(self) -> str:
        if self.cube:
            return f"Box.cube({self.lower[0]}, {self.upper[0]})"
        return f"Box(dimension {len(self.lower)})"

    def describe(self) -> str:
        """A few words: ``[lo, hi]^d``-style for a cube, else the dimension."""
        if self.cube:
            return f"[{self.lower[0]}, {self.upper[0]}] in every coordinate"
        if len(set(self.lower)) == 1 and len(set(self.upper)) == 1:
            return f"[{self.lower[0]}, {self.upper[0]}]^{len(self.lower)}"
        return f"a per-feature box of dimension {len(self.lower)}"


def _load_npy(path: Path, parameter: str | None) -> Any:
    if path.stat().st_size > MAX_DATA_BYTES:
        raise InputError(f"{path} is larger than {MAX_DATA_BYTES} bytes", parameter=parameter)
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as exc:  # a pickled object array, a broken header
        raise InputError(f"{path} is not a plain .npy array ({str(exc).splitlines()[0]}); "
                         f"pickles are refused", parameter=parameter) from None
