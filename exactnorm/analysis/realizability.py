"""Which targets a narrow frozen pair reaches: Rouché–Capelli for ``K γ = vec W`` (Theorem 7).

Contract: below width ``m = d_in·d_out`` the map ``γ ↦ V_out diag(γ) V_in`` is not onto;
:func:`decide_realizable` decides exactly whether a given rational ``W`` is reached, and returns a
checked witness either way: ``γ`` with ``K γ = vec W``, or a left-kernel vector ``y`` with
``yᵀK = 0`` and ``yᵀ vec W ≠ 0`` (Fredholm alternative). The reachable ``W`` form a linear
subspace of dimension ``rank K``.

Correctness: ``K γ = vec W`` is solvable iff ``rank K = rank [K | vec W]`` (Rouché–Capelli, the
content of Theorem 7 of [1]_); both ranks are exact (FLINT over ``Q``) and each witness is
multiplied back before it is returned. FLINT only: no SymPy is imported, so ``exactnorm
realizable`` starts fast.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpq_mat, fmpz_mat

from exactnorm.constructions.theorem1 import draw_pair
from exactnorm.errors import (
    InputError,
    InvariantError,
    LimitExceededError,
    ShapeError,
    require_integer,
)
from exactnorm.exact.linalg import (
    FlintMatrix,
    diag,
    exact_rank,
    khatri_rao,
    to_fmpq_mat,
    to_fraction,
    vec,
)
from exactnorm.exact.sampling import (
    DEFAULT_DISTRIBUTION,
    layer_rng,
    parse_distribution,
    sample_matrix,
)

__all__ = ["MAX_PRODUCT", "Realizability", "RealizabilityStudy", "decide_realizable",
           "reachable_target", "realizability_study"]


@dataclass(frozen=True)
class Realizability:
    """Theorem 7 (Rouché–Capelli) for ``K γ = vec W`` with ``K = V_inᵀ ⊙ V_out``.

    ``reachable`` iff ``rank_K == rank_augmented``. A reachable answer carries ``gamma`` with
    ``K γ = vec W``; an unreachable one carries ``separator`` ``y`` with ``yᵀK = 0`` and
    ``yᵀ vec W ≠ 0`` (Fredholm alternative). The reachable W form a linear subspace of
    ``Q^{d_out×d_in}`` of dimension ``rank_K``.
    """

    d_in: int
    d_out: int
    m: int
    rank_K: int
    rank_augmented: int
    gamma: tuple[Fraction, ...] | None
    separator: tuple[int, ...] | None

    @property
    def reachable(self) -> bool:
        return self.rank_K == self.rank_augmented

    @property
    def dimension(self) -> int:
        """Dimension of the reachable set ``{V_out diag(γ) V_in}`` (= rank K)."""
        return self.rank_K

    @property
    def codimension(self) -> int:
        return self.d_in * self.d_out - self.rank_K


def decide_realizable(V_in: FlintMatrix, V_out: FlintMatrix, W: FlintMatrix | Sequence[Any]
                      ) -> Realizability:
    """Decide exactly whether ``W = V_out diag(γ) V_in`` has a solution γ (Theorem 7).

    Parameters
    ----------
    V_in : fmpz_mat, fmpq_mat or rows of exact numbers, m×d_in
    V_out : fmpz_mat, fmpq_mat or rows of exact numbers, d_out×m
    W : fmpz_mat, fmpq_mat or rows of exact numbers, d_out×d_in

    Returns
    -------
    Realizability
        With exact ranks and a witness that was multiplied back: ``γ`` or a separating ``y``.

    Raises
    ------
    ShapeError
        Inconsistent or empty shapes.
    InvariantError
        A witness fails its own check (a bug, never a wrong answer).

    Notes
    -----
    Rouché–Capelli: ``K γ = vec W`` is solvable iff ``rank K = rank [K | vec W]``; otherwise the
    Fredholm alternative gives ``y`` with ``yᵀK = 0``, ``yᵀ vec W ≠ 0`` (Theorem 7 of [1]_).

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937.

    See Also
    --------
    realizability_study : the decision at every width.

    Examples
    --------
    >>> from flint import fmpz_mat
    >>> r = decide_realizable(fmpz_mat([[1, 0]]), fmpz_mat([[1], [0]]), [[3, 0], [0, 0]])
    >>> r.reachable, r.dimension, r.gamma
    (True, 1, (Fraction(3, 1),))
    >>> decide_realizable(fmpz_mat([[1, 0]]), fmpz_mat([[1], [0]]), [[0, 0], [0, 1]]).separator
    (0, 0, 0, -1)
    """
    V_in, V_out = to_fmpq_mat(V_in, "V_in"), to_fmpq_mat(V_out, "V_out")
    Wm = to_fmpq_mat(W, "W")
    m, d_in = V_in.nrows(), V_in.ncols()
    d_out = V_out.nrows()
    if m < 1 or d_in < 1 or d_out < 1:
        raise ShapeError("V_in, V_out and W must be nonempty")
    if V_out.ncols() != m:
        raise ShapeError(f"V_in is {m}×{d_in} but V_out has {V_out.ncols()} columns")
    if (Wm.nrows(), Wm.ncols()) != (d_out, d_in):
        raise ShapeError(f"W must be {d_out}×{d_in}, got {Wm.nrows()}×{Wm.ncols()}")
    K = khatri_rao(V_in.transpose(), V_out)
    w = vec(Wm, "F")
    n = d_in * d_out
    K_rows = K.tolist()
    aug = fmpq_mat([K_rows[i] + [w[i, 0]] for i in range(n)])
    rank_K, rank_aug = exact_rank(K), exact_rank(aug)
    gamma = separator = None
    if rank_K == rank_aug:
        R, _ = aug.rref()
        sol = [fmpq(0)] * m
        for i in range(rank_K):
            pivot = next(j for j in range(m) if R[i, j] != 0)
            sol[pivot] = R[i, m] / R[i, pivot]
        gam = fmpq_mat([[x] for x in sol])
        if K * gam != w:  # the witness checks itself
            raise InvariantError("reduced row echelon solution does not solve K γ = vec W")
        gamma = tuple(to_fraction(x) for x in sol)
    else:
        Kz = K.numer_denom()[0]
        N, nullity = Kz.transpose().nullspace()
        for c in range(nullity):
            y = fmpz_mat([[N[i, c]] for i in range(n)])
            if (y.transpose() * w)[0, 0] != 0:
                if y.transpose() * Kz != fmpz_mat(1, m):
                    raise InvariantError("left kernel vector does not annihilate K")
                separator = tuple(int(y[i, 0]) for i in range(n))
                break
        if separator is None:
            raise InvariantError("ranks differ but no separating left kernel vector")
    return Realizability(d_in, d_out, m, rank_K, rank_aug, gamma, separator)


def reachable_target(V_in: FlintMatrix, V_out: FlintMatrix, gamma: Sequence[Any]) -> fmpq_mat:
    """``V_out diag(γ) V_in``: a target that is reachable by construction.

    >>> from flint import fmpz_mat
    >>> reachable_target(fmpz_mat([[1, 2]]), fmpz_mat([[3]]), [2]).tolist()
    [[6, 12]]
    """
    g = to_fmpq_mat([[x] for x in gamma], "gamma")
    return to_fmpq_mat(V_out) * diag(g) * to_fmpq_mat(V_in)


#: refuse d_in·d_out or a width beyond this (exact ranks of (d_in·d_out)×m systems, one per width)
MAX_PRODUCT = 1024


@dataclass(frozen=True)
class RealizabilityStudy:
    """One target ``W`` against the frozen pairs of Theorem 1 at every width ``1..max(width, n)``.

    ``decision`` is :func:`decide_realizable` at ``width``; ``profile`` lists ``(m, rank K, W
    reachable at m)`` for each width ``m``, so that the reachable dimension ``min(m, n)`` (for a
    generic draw) can be read off.
    """

    W: fmpq_mat
    width: int
    seed: int
    distribution: str
    decision: Realizability
    profile: tuple[tuple[int, int, bool], ...]

    def __repr__(self) -> str:
        # short: W and the profile grow with the sizes
        return (f"RealizabilityStudy(W {self.W.nrows()}×{self.W.ncols()}, width={self.width}, "
                f"reachable={self.decision.reachable}, dimension={self.decision.dimension})")


def realizability_study(W: FlintMatrix | Sequence[Any] | None, *, width: int, seed: int = 0,
                        distribution: str = DEFAULT_DISTRIBUTION, d_in: int | None = None,
                        d_out: int | None = None, w: str = "random") -> RealizabilityStudy:
    """Decide reachability of ``W`` at ``width`` and profile the reachable dimension by width.

    The frozen pair at width ``m`` is drawn exactly as Theorem 1 draws layer 1
    (``draw_pair(seed, 1, 0, d_in, d_out, m, distribution)``), so the answer is about the very
    weights ``exactnorm certify`` would use.

    Parameters
    ----------
    W : d_out×d_in exact matrix, or None
        The target weight. ``None`` draws it from ``layer_rng(seed, 0)``: with ``w="random"`` an
        ``int:8`` matrix, with ``w="reachable"`` the reachable ``V_out diag(γ) V_in`` for a seeded
        ``int:8`` γ (``d_in`` and ``d_out`` are then required).
    width : int
        The frozen width ``m`` to decide at.
    seed : int
        Seed of the frozen weights (and of the drawn ``W``).
    distribution : str
        Frozen-weight distribution (:func:`~exactnorm.exact.sampling.parse_distribution`).
    d_in, d_out : int, optional
        Sizes of ``W``; checked against ``W`` when both are given.
    w : {"random", "reachable"}
        How ``W`` is drawn when it is ``None``.

    Returns
    -------
    RealizabilityStudy

    Raises
    ------
    InputError
        Naming the offending parameter (``width``, ``seed``, ``d_in``, ``d_out``, ``w``).

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 7).

    See Also
    --------
    decide_realizable : the decision at one width.

    Examples
    --------
    >>> s = realizability_study(None, width=3, d_in=2, d_out=2)
    >>> s.decision.dimension, [rank for _, rank, _ in s.profile]
    (3, [1, 2, 3, 4])
    """
    require_integer(width, "width", minimum=1)
    require_integer(seed, "seed")
    if w not in ("random", "reachable"):
        raise InputError(f"w must be 'random' or 'reachable', got {w!r}", parameter="w")
    if W is not None:
        if w != "random":
            raise InputError("w applies only when W is drawn (no target given)", parameter="w")
        Wm = to_fmpq_mat(W, "W")
        if (d_in or Wm.ncols()) != Wm.ncols() or (d_out or Wm.nrows()) != Wm.nrows():
            raise ShapeError(f"W is {Wm.nrows()}×{Wm.ncols()}, not {d_out}×{d_in} (d_out×d_in)")
        d_in, d_out = Wm.ncols(), Wm.nrows()
    if d_in is None or d_out is None:
        raise InputError("d_in and d_out are required when W is drawn", parameter="d_in")
    require_integer(d_in, "d_in", minimum=1)
    require_integer(d_out, "d_out", minimum=1)
    n = d_in * d_out
    if n > MAX_PRODUCT or width > MAX_PRODUCT:
        raise LimitExceededError(f"d_in·d_out and width are limited to {MAX_PRODUCT}",
                                 parameter="width" if width > MAX_PRODUCT else "d_in")
    dist = parse_distribution(distribution)
    V_in, V_out = draw_pair(seed, 1, 0, d_in, d_out, width, dist)
    if W is None and w == "random":
        Wm = to_fmpq_mat(sample_matrix(layer_rng(seed, 0), d_out, d_in, "int:8"))
    elif W is None:
        gamma = [int(x) for x in sample_matrix(layer_rng(seed, 0), width, 1, "int:8").entries()]
        Wm = reachable_target(V_in, V_out, gamma)
    decision = decide_realizable(V_in, V_out, Wm)
    profile = []
    for m in range(1, max(width, n) + 1):
        Vi, Vo = draw_pair(seed, 1, 0, d_in, d_out, m, dist)
        rm = decide_realizable(Vi, Vo, Wm) if m != width else decision
        profile.append((m, rm.rank_K, rm.reachable))
    return RealizabilityStudy(Wm, width, seed, dist.spec, decision, tuple(profile))
