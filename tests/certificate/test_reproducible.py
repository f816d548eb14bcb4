"""Same results on every machine: the float64 baseline of T7 is fixed by IEEE-754 alone.

The float columns of T7 used to come from ``numpy.linalg.solve`` (LAPACK through whatever BLAS is
installed) and changed with the BLAS build and the thread count. These tests pin the replacement:
the vectorized elimination gives the same bits as the scalar reference loops, the solution is a
real solution, and T7 regenerated in fresh processes under different BLAS/OpenMP thread settings
is byte-identical.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactnorm.analysis import float64

ROOT = Path(__file__).resolve().parents[2]
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _random_matrix(n: int, seed: int) -> list[list[float]]:
    rnd = random.Random(seed)
    return [[rnd.uniform(-8, 8) for _ in range(n)] for _ in range(n)]


@pytest.mark.parametrize("n,seed", [(1, 0), (3, 1), (17, 2), (60, 3)])
def test_vectorized_elimination_has_the_bits_of_the_scalar_loops(n, seed):
    A = _random_matrix(n, seed)
    assert float64.lu_factor(A) == float64.lu_factor(A, vectorized=False)


def test_partial_pivoting_picks_the_largest_entry_and_the_first_on_ties():
    assert float64.lu_factor([[1.0, 2.0], [-3.0, 1.0]]).perm == [1, 0]
    ties = [[2.0, 1.0, 0.0], [-2.0, 0.0, 1.0], [2.0, 3.0, 3.0]]
    assert float64.lu_factor(ties).perm[0] == 0
    assert float64.lu_factor(ties, vectorized=False).perm[0] == 0


def test_float_solution_is_close_to_the_exact_one():
    """Independent path: the exact solution in Fractions, rounded, is within a few ulps·cond."""
    n = 12
    A = _random_matrix(n, 7)
    b = [float(i - 5) for i in range(n)]
    x = float64.solve(A, b)
    # Exact Gauss–Jordan over the rationals the floats denote.
    M = [[Fraction(v) for v in row] + [Fraction(bi)] for row, bi in zip(A, b)]
    for k in range(n):
        p = next(i for i in range(k, n) if M[i][k] != 0)
        M[k], M[p] = M[p], M[k]
        M[k] = [v / M[k][k] for v in M[k]]
        for i in range(n):
            if i != k and M[i][k] != 0:
                M[i] = [u - M[i][k] * v for u, v in zip(M[i], M[k])]
    exact = [row[-1] for row in M]
    cond = float64.condition_estimate_1(A)
    scale = max(abs(float(v)) for v in exact)
    assert max(abs(Fraction(xi) - e) for xi, e in zip(x, exact)) <= Fraction(cond * scale * 1e-13)
    # and it is not the exact solution by accident (a mutated solver must be caught)
    assert float64.solve(A, [v + 1.0 for v in b]) != x


def test_transposed_solve_and_condition_estimate_on_known_matrices():
    f = float64.lu_factor([[4.0, 1.0], [2.0, 3.0]])
    assert float64.lu_solve(f, [6.0, 8.0]) == [1.0, 2.0]
    # Aᵀ x = b with Aᵀ = [[4, 2], [1, 3]]: x = (1, 2) gives b = (8, 7)
    assert float64.lu_solve(f, [8.0, 7.0], transpose=True) == [1.0, 2.0]
    # cond₁ of diag(1, 1e-3) is exactly 1000 and the estimator attains it
    assert float64.condition_estimate_1([[1.0, 0.0], [0.0, 1e-3]]) == 1000.0


def test_zero_pivot_is_reported():
    with pytest.raises(float64.SingularFloatMatrix, match="column 1"):
        float64.lu_factor([[1.0, 2.0], [2.0, 4.0]])


_T7_SCRIPT = """
import sys
from exactnorm.outputs.tables import exact_vs_float
if len(sys.argv) > 1:
    exact_vs_float.T7_SIZES = tuple(int(s) for s in sys.argv[1].split(","))
t = exact_vs_float.table_t7()
sys.stdout.write(t.markdown() + t.csv() + t.latex())
"""


def _t7_bytes(threads: str | None, sizes: str | None) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if threads is not None:
        env.update(dict.fromkeys(THREAD_VARIABLES, threads))
    args = [sys.executable, "-c", _T7_SCRIPT] + ([sizes] if sizes else [])
    res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, check=False, timeout=600)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return res.stdout


@pytest.mark.parametrize("sizes", [pytest.param("2,4,8,12", id="small"),
                                   pytest.param(None, id="full", marks=pytest.mark.slow)])
def test_t7_is_byte_identical_whatever_the_thread_settings(sizes):
    outputs = {threads: _t7_bytes(threads, sizes) for threads in (None, "1", "2")}
    assert outputs[None], "T7 produced no output"
    assert outputs["1"] == outputs[None]
    assert outputs["2"] == outputs[None]


def test_t4_reference_scalings_are_exact_fractions_not_libm_floats():
    """math.log/sqrt may differ in the last bit between C libraries; decimal's are correctly
    rounded. The references must be exact fractions agreeing with ln/√ to far beyond float64."""
    from exactnorm.analysis.sweeps import Cell, estimate_thresholds

    (th,) = estimate_thresholds([Cell(0, 16, "1", "1", "both", "", 256, 256, draws=1,
                                      invertible=1)])
    sq, lg, lg2 = th.references
    assert all(isinstance(v, Fraction) for v in (sq, lg, lg2))
    # ln 16 / 16 = ln 2 / 4; ln 2 to 40 digits is a known constant (independent of this code)
    ln2 = Fraction("0.6931471805599453094172321214581765680755")
    assert abs(lg - ln2 / 4) < Fraction(1, 10**38)
    assert abs(sq * sq - lg) < Fraction(1, 10**38)
    assert lg2 == 2 * lg
    c = th.cell
    assert c is not None and isinstance(c.reference_nnz, Fraction)
    assert c.reference_nnz == 16 ** 2 * 4  # √16 = 4 exactly


def test_default_hypothesis_profile_is_derandomized():
    """README's test command sets no HYPOTHESIS_PROFILE (and no CI): it must run the same examples
    everywhere. Random exploration is opt-in through ``dev`` and ``thorough``."""
    from hypothesis import settings

    from tests.conftest import profile_name

    for environ in ({}, {"CI": ""}, {"HYPOTHESIS_PROFILE": ""}):
        default = settings.get_profile(profile_name(environ))
        assert default.derandomize and default.database is None
    for opt_in in ("dev", "thorough"):
        assert profile_name({"HYPOTHESIS_PROFILE": opt_in}) == opt_in
        assert not settings.get_profile(opt_in).derandomize


def test_profile_probe():
    """Run by the next test in a fresh pytest process; skipped in ordinary runs."""
    if not os.environ.get("EXACTNORM_PROFILE_PROBE"):
        pytest.skip("probe for test_default_pytest_run_loads_the_derandomized_profile")
    from hypothesis import settings

    assert settings.default.derandomize and settings.default.database is None


def test_default_pytest_run_loads_the_derandomized_profile():
    """End to end: a fresh pytest process without HYPOTHESIS_PROFILE or CI is derandomized."""
    env = {k: v for k, v in os.environ.items() if k not in ("HYPOTHESIS_PROFILE", "CI")}
    env["EXACTNORM_PROFILE_PROBE"] = "1"
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/certificate/test_reproducible.py::test_profile_probe"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                         timeout=300)
    assert res.returncode == 0 and "1 passed" in res.stdout, res.stdout[-2000:]
