"""Entry distributions, and seeded numpy draws for sweeps and tables (docs/model.md).

:func:`parse_distribution` names the entry distributions of every frozen weight. Certificates
draw their frozen matrices with :mod:`exactnorm.exact.generator` (``exactnorm.shake256.v1``, which
a checker regenerates from the draw record); the numpy draws below serve the sweeps, symbolic
tables and targets, which write no certificate, so nothing has to regenerate them and their
tables stay as they were.

Every numpy draw comes from a :class:`numpy.random.Generator` on PCG64 built from an explicit seed
and a *spawn key* (layer index, task index, …), never from global state, so the same seed gives
the same weights on every machine and in every execution order (serial, process pool, Dask).

Distributions are named by short strings:

=================  =============================================================
``int:B``          integers uniform in [−B, B]
``bits:b``         integers uniform in [−2^b, 2^b]
``nonzero:B``      integers uniform in [−B, B] \\ {0}    (default ``nonzero:8``)
``set:a,b,c``      uniform on the listed integers
``rational:B``     p/q with p uniform in [−B, B], q uniform in [1, B]
``gauss:b``        dyadic Gaussian round(2^b·z)/2^b, z ~ N(0, 1), 1 ≤ b ≤ 52
=================  =============================================================

(``gauss:b`` of the certificate generator is the Irwin–Hall sum of twelve ``b``-bit uniforms
instead, exact without floats; docs/generator.md.)

>>> a = sample_matrix(layer_rng(7, 1), 2, 3, "int:8")
>>> a == sample_matrix(layer_rng(7, 1), 2, 3, "int:8"), a.nrows(), a.ncols()
(True, 2, 3)
>>> all(-8 <= int(x) <= 8 for x in a.entries())
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.errors import InputError

__all__ = [
    "DEFAULT_DISTRIBUTION",
    "Distribution",
    "parse_distribution",
    "layer_rng",
    "sample_matrix",
    "bernoulli_mask",
]

DEFAULT_DISTRIBUTION = "nonzero:8"
#: ``gauss:b`` is exact for ``b ≤ 52``: ``|z|·2^52 < 2^63`` for every float64 normal draw
#: ``z`` (|z| < 2^10), and the Irwin–Hall sum of the certificate generator stays below 2^56;
#: beyond it int64 would wrap, so larger ``b`` is refused, never wrapped
MAX_GAUSS_BITS = 52

_LAWS = ("int", "bits", "nonzero", "set", "rational", "gauss")


@dataclass(frozen=True)
class Distribution:
    """A named entry distribution, its ``law`` and ``param`` (spec ``law:param``);
    ``support_size`` feeds the Schwartz–Zippel bound."""

    law: str
    param: int
    values: tuple[int, ...] = ()

    @property
    def spec(self) -> str:
        if self.law == "set":
            return "set:" + ",".join(str(v) for v in self.values)
        return f"{self.law}:{self.param}"

    @property
    def support_size(self) -> int | None:
        """Number of distinct values, or ``None`` when not a finite uniform set we can count."""
        if self.law == "int":
            return 2 * self.param + 1
        if self.law == "bits":
            return 2 ** (self.param + 1) + 1
        if self.law == "nonzero":
            return 2 * self.param
        if self.law == "set":
            return len(set(self.values))
        return None

    @property
    def is_integer(self) -> bool:
        return self.law in ("int", "bits", "nonzero", "set")


def parse_distribution(spec: str | Distribution) -> Distribution:
    """Parse ``"int:8"``, ``"set:-1,1"``, … into a :class:`Distribution` (clear error otherwise)."""
    if isinstance(spec, Distribution):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise InputError(f"distribution must look like 'int:8' or 'set:-1,1', got {spec!r}")
    law, _, arg = spec.partition(":")
    law = law.strip()
    if law not in _LAWS:
        raise InputError(f"unknown distribution {law!r}; choose one of {', '.join(_LAWS)}")
    try:
        if law == "set":
            values = tuple(int(v) for v in arg.split(","))
            if not values:
                raise ValueError
            if any(abs(v) >= 2**62 for v in values):
                raise InputError(f"set values must lie strictly between -2^62 and 2^62 in "
                                 f"{spec[:60]!r}")
            return Distribution("set", len(values), values)
        param = int(arg)
    except ValueError:
        raise InputError(f"bad distribution parameter in {spec!r}") from None
    limits = {"int": (1, 2**62), "bits": (0, 62), "nonzero": (1, 2**62), "rational": (1, 2**62),
              "gauss": (1, MAX_GAUSS_BITS)}
    lo, hi = limits[law]
    if not lo <= param <= hi:
        raise InputError(f"distribution parameter of {law!r} must lie in [{lo}, {hi}], "
                         f"got {param}")
    return Distribution(law, param)


def layer_rng(seed: int, *key: int) -> np.random.Generator:
    """The generator for one unit of work: PCG64 seeded by ``SeedSequence(seed, spawn_key=key)``.

    Keys make draws independent of execution order: layer 3 gets the same weights whether layers
    are processed serially or in parallel.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed),
                                                                      spawn_key=tuple(key))))


def sample_matrix(rng: np.random.Generator, nrows: int, ncols: int,
                  dist: Distribution | str = DEFAULT_DISTRIBUTION) -> fmpz_mat | fmpq_mat:
    """Draw an ``nrows × ncols`` matrix: ``fmpz_mat`` for integer laws, ``fmpq_mat`` otherwise."""
    d = parse_distribution(dist)
    shape = (nrows, ncols)
    if d.law == "int":
        vals = rng.integers(-d.param, d.param, size=shape, endpoint=True, dtype=np.int64)
    elif d.law == "bits":
        vals = rng.integers(-(2**d.param), 2**d.param, size=shape, endpoint=True, dtype=np.int64)
    elif d.law == "nonzero":
        vals = rng.integers(1, d.param, size=shape, endpoint=True, dtype=np.int64)
        vals = vals * rng.choice(np.array([-1, 1], dtype=np.int64), size=shape)
    elif d.law == "set":
        vals = rng.choice(np.array(d.values, dtype=np.int64), size=shape)
    elif d.law == "rational":
        num = rng.integers(-d.param, d.param, size=shape, endpoint=True, dtype=np.int64)
        den = rng.integers(1, d.param, size=shape, endpoint=True, dtype=np.int64)
        rows = [[fmpq(int(num[i, j]), int(den[i, j])) for j in range(ncols)] for i in range(nrows)]
        return fmpq_mat(rows) if nrows and ncols else fmpq_mat(nrows, ncols)
    else:  # gauss
        z = rng.standard_normal(size=shape)
        if z.size and not np.abs(z).max() < 2.0**10:  # keeps z·2^52 inside int64 (never seen)
            raise InputError("a normal draw beyond 2^10 standard deviations; use another seed")
        scaled = np.rint(z * 2.0**d.param).astype(np.int64)
        rows = [[fmpq(int(scaled[i, j]), 2**d.param) for j in range(ncols)] for i in range(nrows)]
        return fmpq_mat(rows) if nrows and ncols else fmpq_mat(nrows, ncols)
    if nrows == 0 or ncols == 0:
        return fmpz_mat(nrows, ncols)
    return fmpz_mat(vals.tolist())


def bernoulli_mask(rng: np.random.Generator, nrows: int, ncols: int, p: float) -> np.ndarray:
    """Boolean ``nrows × ncols`` mask with i.i.d. Bernoulli(``p``) entries (``True`` = kept)."""
    if not 0.0 <= float(p) <= 1.0:
        raise InputError(f"keep probability must lie in [0, 1], got {p}")
    return rng.random(size=(nrows, ncols)) < float(p)
