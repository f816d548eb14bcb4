"""Exact linear algebra: Khatri–Rao/Kronecker/Hadamard, vec, rank, solve, kernels, conversions.

Ground domains, stated once for the whole module:

* ``fmpz_mat`` / ``fmpq_mat`` (python-flint) are the working types. Products take either and return
  the type of their arguments (``fmpq_mat`` if either is rational).
* ``list[list[Fraction]]`` is the pure-Python interchange type; ``sympy.Matrix`` (of
  ``Rational``) is the symbolic one; ``numpy.ndarray`` of ``float64`` is for comparison only
  and never flows back into a certified result without :func:`from_numpy_exact`.

Vectorization conventions (docs/model.md): ``vec(M, "F")`` stacks columns (column-major),
``vec(M, "C")`` stacks rows. For ``A`` (p×m), ``γ`` (m) and ``B`` (m×n)::

    vec(A diag(γ) B, "F") = khatri_rao(Bᵀ, A) γ
    vec(A diag(γ) B, "C") = khatri_rao(A, Bᵀ) γ

>>> from flint import fmpz_mat
>>> A = fmpz_mat([[1, 2], [3, 4]]); B = fmpz_mat([[5, 6], [7, 8]])
>>> khatri_rao(A, B).tolist()
[[5, 12], [7, 16], [15, 24], [21, 32]]
>>> g = fmpz_mat([[1], [-1]])
>>> khatri_rao(B.transpose(), A) * g == vec(A * diag(g) * B, "F")
True
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal, TypeVar, cast, overload

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat, nmod_mat

from exactnorm.errors import InputError, NumberFormatError, ShapeError, SingularSystemError

__all__ = [
    "FlintMatrix",
    "compact_when_shorter",
    "khatri_rao",
    "khatri_rao_system",
    "khatri_rao_int64",
    "int64_array",
    "max_abs",
    "kronecker",
    "hadamard",
    "diag",
    "vec",
    "unvec",
    "exact_rank",
    "solve_exact",
    "kernel_vector",
    "is_prime",
    "random_prime",
    "rank_mod_prime",
    "clear_denominators",
    "max_bits",
    "to_fmpq_mat",
    "to_fraction",
    "to_fractions",
    "to_sympy",
    "from_sympy",
    "from_numpy_exact",
    "dyadic_numerators",
    "to_numpy",
]

FlintMatrix = fmpz_mat | fmpq_mat
Order = Literal["F", "C"]

#: one of the two FLINT matrix types, kept through a function (``fmpz_mat`` in, ``fmpz_mat`` out)
MatT = TypeVar("MatT", fmpz_mat, fmpq_mat)

#: nmod_mat works with word-size moduli only.
_MAX_MODULUS = 2**63


def _shape(M: FlintMatrix) -> tuple[int, int]:
    return M.nrows(), M.ncols()


def _rows(M: FlintMatrix) -> list[list[Any]]:
    return M.tolist()


def _same_kind(*mats: FlintMatrix) -> type:
    return fmpq_mat if any(isinstance(M, fmpq_mat) for M in mats) else fmpz_mat


def _build(mtype: type[MatT], nrows: int, ncols: int, rows: Sequence[Sequence[Any]]) -> MatT:
    if nrows == 0 or ncols == 0:
        return mtype(nrows, ncols)
    return mtype(rows)


@overload
def khatri_rao(X: fmpz_mat, Y: fmpz_mat) -> fmpz_mat: ...
@overload
def khatri_rao(X: fmpq_mat, Y: FlintMatrix) -> fmpq_mat: ...
@overload
def khatri_rao(X: FlintMatrix, Y: fmpq_mat) -> fmpq_mat: ...
@overload
def khatri_rao(X: FlintMatrix, Y: FlintMatrix) -> FlintMatrix: ...
def khatri_rao(X: FlintMatrix, Y: FlintMatrix) -> FlintMatrix:
    """Column-wise Khatri–Rao product ``X ⊙ Y``.

    Definition (Definition 6 of the source): for ``X`` (p×n) and ``Y`` (q×n), column ``k`` of
    ``X ⊙ Y`` is ``X[:, k] ⊗ Y[:, k]``; entry ``(a*q + b, k)`` is ``X[a, k]·Y[b, k]``.

    Parameters
    ----------
    X, Y : fmpz_mat or fmpq_mat
        Same number of columns.

    Returns
    -------
    fmpz_mat or fmpq_mat of shape (p·q)×n.

    Examples
    --------
    >>> from flint import fmpz_mat
    >>> khatri_rao(fmpz_mat([[1, 2]]), fmpz_mat([[3, 4], [5, 6]])).tolist()
    [[3, 8], [5, 12]]
    """
    p, n = _shape(X)
    q, n2 = _shape(Y)
    if n != n2:
        raise ShapeError(f"khatri_rao needs equal column counts, got {n} and {n2}")
    xr, yr = _rows(X), _rows(Y)
    rows = [[xa[k] * yb[k] for k in range(n)] for xa in xr for yb in yr]
    return _build(_same_kind(X, Y), p * q, n, rows)


def int64_array(M: fmpz_mat) -> np.ndarray:
    """An ``fmpz_mat`` whose entries fit 64 bits as an ``int64`` array.

    Raises
    ------
    OverflowError
        If an entry does not fit a signed 64-bit integer (numpy refuses it; nothing wraps).

    >>> int64_array(fmpz_mat([[1, -2]])).tolist()
    [[1, -2]]
    """
    return np.array([int(x) for x in M.entries()], dtype=np.int64).reshape(M.nrows(), M.ncols())


def max_abs(V: np.ndarray) -> int:
    """``max |V|`` of an integer array as a Python int (exact: no int64 ``abs`` of ``-2^63``).

    >>> max_abs(np.array([[3, -7]], dtype=np.int64))
    7
    """
    arr = np.asarray(V)
    if arr.size == 0:
        return 0
    return max(abs(int(arr.min())), abs(int(arr.max())))


def khatri_rao_int64(V_in: np.ndarray, V_out: np.ndarray) -> np.ndarray:
    """``K = V_inᵀ ⊙ V_out`` as an ``int64`` array: ``K[a·d_out + b, k] = V_in[k, a]·V_out[b, k]``.

    Exact only if ``max|V_in|·max|V_out| < 2^63``; the caller checks that with :func:`max_abs`
    in Python integers (as :func:`khatri_rao_system` does) before calling.

    >>> khatri_rao_int64(np.array([[1], [2]]), np.array([[3, 4]])).tolist()
    [[3, 8]]
    """
    Vi, Vo = np.asarray(V_in, dtype=np.int64), np.asarray(V_out, dtype=np.int64)
    m, d_in = Vi.shape
    d_out = Vo.shape[0]
    return (Vi.T[:, None, :] * Vo[None, :, :]).reshape(d_in * d_out, m)


@overload
def khatri_rao_system(V_in: fmpz_mat, V_out: fmpz_mat) -> fmpz_mat: ...
@overload
def khatri_rao_system(V_in: fmpq_mat, V_out: FlintMatrix) -> fmpq_mat: ...
@overload
def khatri_rao_system(V_in: FlintMatrix, V_out: fmpq_mat) -> fmpq_mat: ...
@overload
def khatri_rao_system(V_in: FlintMatrix, V_out: FlintMatrix) -> FlintMatrix: ...
def khatri_rao_system(V_in: FlintMatrix, V_out: FlintMatrix) -> FlintMatrix:
    """``K = V_inᵀ ⊙ V_out`` so that ``vec(V_out diag(γ) V_in, "F") = K γ`` (Lemma 2 of [1]_).

    Integer factors whose entry products fit 63 bits are multiplied as ``int64`` outer products
    (exact; the bound is checked in Python integers first); anything else goes through
    :func:`khatri_rao`. Same matrix either way.

    Parameters
    ----------
    V_in : fmpz_mat or fmpq_mat, m×d_in
    V_out : fmpz_mat or fmpq_mat, d_out×m

    Returns
    -------
    fmpz_mat or fmpq_mat
        The ``(d_in·d_out)×m`` Khatri–Rao system.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937.

    >>> khatri_rao_system(fmpz_mat([[1], [2]]), fmpz_mat([[3, 4]])).tolist()
    [[3, 8]]
    """
    if isinstance(V_in, fmpz_mat) and isinstance(V_out, fmpz_mat) and V_in.nrows() \
            and V_in.ncols() and V_out.nrows():
        try:
            a, b = int64_array(V_in), int64_array(V_out)
        except OverflowError:  # an entry beyond 64 bits
            return khatri_rao(V_in.transpose(), V_out)
        if max_abs(a) * max_abs(b) < 2**63:
            return fmpz_mat(khatri_rao_int64(a, b).tolist())
    return khatri_rao(V_in.transpose(), V_out)


def kronecker(X: FlintMatrix, Y: FlintMatrix) -> FlintMatrix:
    """Kronecker product ``X ⊗ Y`` (Definition 5): block ``(a, c)`` is ``X[a, c]·Y``."""
    p, n = _shape(X)
    q, r = _shape(Y)
    xr, yr = _rows(X), _rows(Y)
    rows = [[xa[c] * yb[e] for c in range(n) for e in range(r)] for xa in xr for yb in yr]
    return _build(_same_kind(X, Y), p * q, n * r, rows)


def hadamard(X: FlintMatrix, Y: FlintMatrix) -> FlintMatrix:
    """Entry-wise (Hadamard) product ``X ∘ Y`` of two matrices of equal shape."""
    if _shape(X) != _shape(Y):
        raise ShapeError(f"hadamard needs equal shapes, got {_shape(X)} and {_shape(Y)}")
    rows = [[a * b for a, b in zip(ra, rb)] for ra, rb in zip(_rows(X), _rows(Y))]
    return _build(_same_kind(X, Y), *_shape(X), rows)


def diag(v: FlintMatrix | Sequence[Any]) -> FlintMatrix:
    """Diagonal matrix from a column vector (n×1 matrix) or a sequence of exact numbers."""
    mtype: type[fmpz_mat] | type[fmpq_mat]
    entries: list[Any]
    if isinstance(v, (fmpz_mat, fmpq_mat)):
        mtype = type(v)
        entries = list(v.entries())
    else:
        entries = list(v)
        mtype = fmpq_mat if any(isinstance(e, (fmpq, Fraction)) for e in entries) else fmpz_mat
        entries = [fmpq(e.numerator, e.denominator) if isinstance(e, Fraction) else e
                   for e in entries]
    n = len(entries)
    D: FlintMatrix = mtype(n, n)
    for i, e in enumerate(entries):
        D[i, i] = e
    return D


def vec(M: MatT, order: Order = "F") -> MatT:
    """Stack ``M`` into a column: columns one after another (``"F"``) or rows (``"C"``)."""
    p, n = _shape(M)
    rows = _rows(M)
    if order == "F":
        flat = [rows[i][j] for j in range(n) for i in range(p)]
    elif order == "C":
        flat = [x for row in rows for x in row]
    else:
        raise InputError(f"order must be 'F' or 'C', got {order!r}")
    return _build(type(M), p * n, 1, [[x] for x in flat])


def unvec(v: MatT, shape: tuple[int, int], order: Order = "F") -> MatT:
    """Inverse of :func:`vec`: reshape a column (or row) vector into ``shape``."""
    p, n = shape
    flat: list[Any] = list(v.entries())
    if len(flat) != p * n:
        raise ShapeError(f"cannot unvec {len(flat)} entries into shape {shape}")
    if order == "F":
        rows = [[flat[j * p + i] for j in range(n)] for i in range(p)]
    elif order == "C":
        rows = [flat[i * n:(i + 1) * n] for i in range(p)]
    else:
        raise InputError(f"order must be 'F' or 'C', got {order!r}")
    return _build(type(v), p, n, rows)


def clear_denominators(M: FlintMatrix) -> tuple[fmpz_mat, fmpz]:
    """``(N, den)`` with ``M = N / den``, ``N`` integer, ``den > 0`` least common denominator."""
    if isinstance(M, fmpz_mat):
        return M, fmpz(1)
    if M.nrows() == 0 or M.ncols() == 0:
        return fmpz_mat(M.nrows(), M.ncols()), fmpz(1)
    return M.numer_denom()


def compact_when_shorter(M: FlintMatrix, *, vector: bool = False) -> Any:
    """An exact matrix (or a 1-row matrix as a vector) as JSON: plain rows of exact numbers, or
    ``{"den": D, "num": rows}`` over its least common denominator ``D`` when that is shorter.

    Shorter is measured in bits: the plain form writes ``bits(p) + bits(q)`` per entry ``p/q``
    (``bits(p)`` for an integer), the compact form ``bits(D)`` once and ``bits(p·D/q)`` per entry
    (docs/certificate-format.md §5). Weights with one shared scale (float weights of one
    exponent range: powers of two) become one denominator; weights whose denominators differ
    wildly (subnormal floats next to ordinary ones) stay plain, and the checker bounds their
    common denominator by what it really is.

    >>> from flint import fmpq_mat
    >>> compact_when_shorter(fmpq_mat([[fmpq(1, 4), fmpq(3, 4), fmpq(-1, 2)]]), vector=True)
    {'den': 4, 'num': [1, 3, -2]}
    >>> compact_when_shorter(fmpq_mat([[2, fmpq(1, 2**60)]]), vector=True)
    [2, '1/1152921504606846976']
    """
    from exactnorm.exact.rationals import format_number

    if isinstance(M, fmpz_mat) or M.nrows() == 0 or M.ncols() == 0:
        rows: list[list[Any]] = [[format_number(int(x)) if isinstance(x, fmpz)
                                  else format_number(x) for x in row] for row in M.tolist()]
        return rows[0] if vector else rows
    entries = M.entries()
    plain = sum(int(x.p).bit_length() + (int(x.q).bit_length() if x.q != 1 else 0)
                for x in entries)
    numer, den = M.numer_denom()
    nums = [int(x) for x in numer.entries()]
    compact = int(den).bit_length() + sum(n.bit_length() for n in nums)
    cols = M.ncols()
    if compact < plain:
        flat = [format_number(n) for n in nums]
        rows = [flat[r * cols:(r + 1) * cols] for r in range(M.nrows())]
        return {"den": format_number(int(den)), "num": rows[0] if vector else rows}
    flat = [format_number(x) for x in entries]
    rows = [flat[r * cols:(r + 1) * cols] for r in range(M.nrows())]
    return rows[0] if vector else rows


def exact_rank(M: FlintMatrix) -> int:
    """Exact rank over Q (fraction-free elimination in FLINT)."""
    if M.nrows() == 0 or M.ncols() == 0:
        return 0
    return clear_denominators(M)[0].rank()


def kernel_vector(M: FlintMatrix) -> list[int] | None:
    """A nonzero integer ``x`` with ``M x = 0``, or ``None`` if ``M`` has full column rank."""
    N, nullity = clear_denominators(M)[0].nullspace()
    if nullity == 0:
        return None
    col = [int(N[i, 0]) for i in range(N.nrows())]
    return col


def solve_exact(K: FlintMatrix, rhs: FlintMatrix, *, layer: int | None = None,
                where: str | None = None) -> fmpq_mat:
    """Solve the square system ``K x = rhs`` exactly.

    ``layer`` (the target layer) is attached to a :class:`SingularSystemError`; ``where``
    (default ``"layer <layer>"``) names the system in its message.

    Returns
    -------
    fmpq_mat
        The unique solution.

    Raises
    ------
    SingularSystemError
        If ``K`` is singular, with its exact rank and an integer kernel vector; never an
        approximate or least-squares answer.
    """
    m, n = _shape(K)
    if m != n:
        raise ShapeError(f"solve_exact needs a square matrix, got {m}×{n}")
    if rhs.nrows() != m:
        raise ShapeError(f"right-hand side has {rhs.nrows()} rows, system has {m}")
    if m == 0:
        return fmpq_mat(0, rhs.ncols())
    Kz, _ = clear_denominators(K)
    rz, rden = clear_denominators(rhs)
    kden = clear_denominators(K)[1]
    try:
        x = Kz.solve(rz)
    except ZeroDivisionError:
        rank = Kz.rank()
        if where is None and layer is not None:
            where = f"layer {layer}"
        named = f" ({where})" if where else ""
        raise SingularSystemError(
            f"Khatri–Rao system{named} is singular: exact rank {rank} < {m}",
            rank=rank, size=m, kernel=kernel_vector(Kz), layer=layer,
        ) from None
    # K = Kz/kden, rhs = rz/rden  ⇒  x = Kz⁻¹ rz · kden / rden
    x = cast(fmpq_mat, x)  # fmpz_mat.solve is fraction-free and returns fmpq_mat
    if kden != 1 or rden != 1:
        return x * fmpq(int(kden), int(rden))
    return x


def is_prime(p: int) -> bool:
    """Deterministic primality (FLINT's ``fmpz_is_prime``, a proof, not a probable-prime test)."""
    return p > 1 and bool(fmpz(p).is_prime())


def random_prime(bits: int, rng: np.random.Generator) -> int:
    """A uniformly drawn odd ``bits``-bit prime (checked with :func:`is_prime`)."""
    if not 3 <= bits <= 62:
        raise InputError(f"prime size must be between 3 and 62 bits, got {bits}")
    while True:
        cand = int(rng.integers(2 ** (bits - 1), 2**bits, dtype=np.uint64)) | 1
        if is_prime(cand):
            return cand


def rank_mod_prime(M: FlintMatrix, p: int) -> int:
    """Rank of ``M`` reduced modulo the prime ``p``.

    A rank mod ``p`` is a lower bound for the rank over Q (a nonzero minor mod p is nonzero), so
    full rank mod ``p`` proves full rank. ``p`` is checked to be prime *before* FLINT sees it:
    composite moduli can abort the interpreter in FLINT's modular elimination (docs/model.md).
    ``M`` must have integer entries or denominators prime to ``p``.
    """
    if not isinstance(p, int) or isinstance(p, bool):
        raise InputError(f"modulus must be an integer, got {type(p).__name__}")
    if not (2 <= p < _MAX_MODULUS) or not is_prime(p):
        raise InputError(f"modulus {p} is not a prime below 2^63; refusing modular elimination")
    Mz, den = clear_denominators(M)
    if den % p == 0:
        raise InputError(f"prime {p} divides a denominator of the matrix")
    if Mz.nrows() == 0 or Mz.ncols() == 0:
        return 0
    # reduce in C (fmpz_mat → nmod_mat), not through a Python list of m² fmpz objects
    return nmod_mat(Mz, p).rank()


def max_bits(M: FlintMatrix) -> int:
    """Largest bit size of a numerator or denominator among the entries."""
    best = 0
    for e in M.entries():
        if isinstance(e, fmpq):
            best = max(best, int(e.numer()).bit_length(), int(e.denom()).bit_length())
        else:
            best = max(best, int(e).bit_length())
    return best


# ---------------------------------------------------------------- conversions


def _to_fmpq(x: Any, where: str) -> fmpq:
    if isinstance(x, bool):
        raise NumberFormatError(f"boolean at {where} is not a number")
    if isinstance(x, (int, fmpz)):
        return fmpq(x)
    if isinstance(x, fmpq):
        return x
    if isinstance(x, Fraction):
        return fmpq(x.numerator, x.denominator)
    if isinstance(x, (float, np.floating)):
        raise NumberFormatError(f"float at {where}; convert with from_numpy_exact or write p/q")
    if isinstance(x, np.integer):
        return fmpq(int(x))
    # a SymPy Rational can only exist once SymPy is imported: never import it (a second) for this
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(x, sympy.Rational):
        return fmpq(int(x.p), int(x.q))
    raise NumberFormatError(f"not an exact rational at {where}: {type(x).__name__}")


def _check_rect(rows: Sequence[Sequence[Any]], what: str) -> tuple[int, int]:
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)):
        raise ShapeError(f"{what} must be a list of rows")
    nrows = len(rows)
    ncols = None
    for i, row in enumerate(rows):
        if not isinstance(row, Sequence) or isinstance(row, (str, bytes)):
            raise ShapeError(f"{what} row {i} is not a list")
        if ncols is None:
            ncols = len(row)
        elif len(row) != ncols:
            raise ShapeError(f"{what} is ragged: row 0 has {ncols} entries, row {i} has {len(row)}")
    return nrows, ncols or 0


def to_fmpq_mat(rows: Sequence[Sequence[Any]] | FlintMatrix, what: str = "matrix") -> fmpq_mat:
    """Rows of exact numbers (int, Fraction, fmpz, fmpq, SymPy Rational) → ``fmpq_mat``."""
    if isinstance(rows, fmpq_mat):
        return rows
    if isinstance(rows, fmpz_mat):
        return fmpq_mat(rows)
    nrows, ncols = _check_rect(rows, what)
    data = [[_to_fmpq(x, f"{what}[{i}][{j}]") for j, x in enumerate(r)] for i, r in enumerate(rows)]
    return _build(fmpq_mat, nrows, ncols, data)


def to_fraction(x: fmpz | fmpq | int | Fraction) -> Fraction:
    """One FLINT (or Python) exact number → :class:`fractions.Fraction`, exactly.

    >>> to_fraction(fmpq(-6, 4)), to_fraction(fmpz(3))
    (Fraction(-3, 2), Fraction(3, 1))
    """
    if isinstance(x, fmpq):
        return Fraction(int(x.numer()), int(x.denom()))
    return Fraction(int(x)) if isinstance(x, fmpz) else Fraction(x)


def to_fractions(M: FlintMatrix) -> list[list[Fraction]]:
    """``fmpz_mat``/``fmpq_mat`` → list of rows of :class:`fractions.Fraction`."""
    return [[to_fraction(e) for e in row] for row in M.tolist()]


def to_sympy(M: FlintMatrix) -> Any:
    """``fmpz_mat``/``fmpq_mat`` → ``sympy.Matrix`` of ``Rational`` (exact)."""
    import sympy

    return sympy.Matrix(M.nrows(), M.ncols(),
                        [sympy.Rational(f.numerator, f.denominator)
                         for row in to_fractions(M) for f in row])


def from_sympy(M: Any) -> fmpq_mat:
    """``sympy.Matrix`` of rationals → ``fmpq_mat``; refuses symbols and floats."""
    return to_fmpq_mat(M.tolist(), "sympy matrix")


def dyadic_numerators(a: np.ndarray) -> tuple[list[int], int]:
    """The finite IEEE floats of ``a`` (half, single or double; any shape, C order) as integers
    ``N`` over one power of two: ``a = N / 2**k``, each entry exactly, with ``k ≥ 0`` the least
    such exponent (0 when every entry is an integer).

    Every finite float is ``m·2**e`` with an integer ``m`` of at most 53 bits: ``frexp`` gives
    ``a = f·2**E`` with ``f`` in ``[0.5, 1)`` (subnormals normalised, ±0 giving 0), and ``f·2**53``
    is an integer, exactly, in float64. Trailing zero bits are moved into the exponent (so ``k``
    is least), and each ``m`` is shifted onto the common exponent, in int64 when every shifted
    value fits, else as a Python integer (a wild spread of exponents). Nothing is rounded.

    >>> dyadic_numerators(np.array([0.75, -2.0, 0.0], dtype=np.float32))
    ([3, -8, 0], 2)
    """
    flat = np.asarray(a).astype(np.float64).reshape(-1)  # exact for half, single, double
    fraction, exponent = np.frexp(flat)
    mantissa = (fraction * 2.0**53).astype(np.int64)  # exact: |f| < 1 has ≤ 53 bits
    nonzero = mantissa != 0
    if not nonzero.any():
        return [0] * len(flat), 0
    # trailing zeros of m into the exponent: the lowest set bit 2**t is a float exactly
    lowest = (mantissa & -mantissa).astype(np.float64)
    trailing = np.where(nonzero, np.frexp(lowest)[1] - 1, 0)
    mantissa = mantissa >> trailing
    power = exponent.astype(np.int64) - 53 + trailing  # a = mantissa · 2**power
    k = max(0, -int(power[nonzero].min()))
    shift = np.where(nonzero, power + k, 0)  # ≥ 0 at every nonzero entry
    if int(shift.max()) <= 62 - 53:  # |m| < 2**53: the shifted value stays below 2**62
        return (mantissa << shift).tolist(), k
    return [m << t for m, t in zip(mantissa.tolist(), shift.tolist())], k


def from_numpy_exact(a: np.ndarray, what: str = "array") -> fmpq_mat:
    """numpy array (integer or float, 1-D or 2-D) → ``fmpq_mat``, each float converted exactly.

    A float is a dyadic rational; this returns that rational, not a nearby "nice" one. A 1-D
    array becomes a column. The floats are converted all at once (:func:`dyadic_numerators`:
    integers over one power of two, then one division in FLINT, which reduces each entry), never
    one Python number per entry. A long double is refused: its extra bits are not IEEE double
    (``float`` of one would round it).
    """
    arr = np.asarray(a)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ShapeError(f"{what} must be 1-D or 2-D, got {arr.ndim}-D")
    rows, cols = arr.shape
    if arr.dtype.kind in "iu":
        num, k = arr.reshape(-1).tolist(), 0
    elif np.issubdtype(arr.dtype, np.floating):
        if arr.dtype.itemsize > 8:
            raise NumberFormatError(f"{what} has dtype {arr.dtype}; save it as float64 or "
                                    f"integers")
        if not np.all(np.isfinite(arr)):
            raise NumberFormatError(f"{what} contains NaN or infinity")
        num, k = dyadic_numerators(arr)
    elif np.issubdtype(arr.dtype, np.bool_):
        raise NumberFormatError(f"{what} is boolean, not numeric")
    else:
        raise NumberFormatError(f"{what} has unsupported dtype {arr.dtype}")
    if rows == 0 or cols == 0:
        return fmpq_mat(rows, cols)
    M = fmpq_mat(fmpz_mat(rows, cols, num))
    return M / fmpz(2) ** k if k else M


def to_numpy(M: FlintMatrix) -> np.ndarray:
    """``fmpz_mat``/``fmpq_mat`` → float64 array, each entry correctly rounded (Python's true
    division of integers is, as ``float(Fraction)`` is; going through ``Fraction`` objects
    took 73 s for the 2,304 kernels of a LeNet certificate).

    >>> from flint import fmpq_mat
    >>> to_numpy(fmpq_mat([[1, 2], [3, 4]]) / 3).tolist()
    [[0.3333333333333333, 0.6666666666666666], [1.0, 1.3333333333333333]]
    """
    entries = M.entries()
    if entries and isinstance(entries[0], fmpq):
        values = [int(x.p) / int(x.q) for x in entries]
    else:
        values = [float(int(x)) for x in entries]
    return np.array(values, dtype=np.float64).reshape(M.nrows(), M.ncols())
