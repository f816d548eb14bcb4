"""The sparse proof chain (docs/sparse.md, issue 19): each step checked against an independent path.

Exact laws are recomputed by brute force over bit vectors, the exhaustive singularity counts
against SciPy structural rank and FLINT exact rank per pattern, thresholds against the exact
failure probability just below them, and threshold searches against a full recount and across
backends.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from flint import fmpz_mat

from exactnorm.analysis.sparse_theory import (
    chain_density_required,
    chain_threshold,
    column_ones_law,
    counts_to_probability,
    dead_neuron_lower_bound,
    dead_neuron_threshold,
    entry_probability,
    enumerate_iid_square,
    enumerate_square_patterns,
    hull_class_law,
    iid_ones_law,
    least_squares,
    one_sided_no_matching_counts,
    rectangle_class_law,
    replacement_flow,
    source_chain_threshold,
    zero_column_probability,
    zero_row_lower_bound,
    zero_row_probability,
    zero_row_threshold,
)
from exactnorm.analysis.structural import (
    boolean_determinant,
    khatri_rao_pattern,
    structural_rank_networkx,
    structural_rank_scipy,
)
from exactnorm.analysis.sweeps import (
    ThresholdSearch,
    allowed_failures,
    run_searches,
    run_task,
    search_threshold,
)
from exactnorm.errors import InputError

PS = [Fraction(1, 5), Fraction(1, 2), Fraction(4, 5)]


def _bits(n):
    return list(itertools.product((0, 1), repeat=n))


def _weight(bits, p):
    k = sum(bits)
    return p**k * (1 - p) ** (len(bits) - k)


# ------------------------------------------------------------------ step 1–2: Boolean determinant


def test_boolean_determinant_is_structural_rank_and_generic_rank():
    """Perfect matching ⇔ structural rank n (SciPy and NetworkX) ⇔ a generic integer draw on the
    support has full exact rank; the 0/1 matrix nonsingular only implies it."""
    rng = np.random.default_rng(19)
    seen = {True: 0, False: 0}
    strictly_weaker = 0
    for trial in range(300):
        d = 2 + trial % 2
        p = (0.35, 0.55, 0.8)[trial % 3]
        mi, mo = rng.random((d * d, d)) < p, rng.random((d, d * d)) < p
        P = khatri_rao_pattern(mi, mo)
        det_bool = boolean_determinant(P)
        n = d * d
        assert det_bool == (structural_rank_scipy(P) == n) == (structural_rank_networkx(P) == n)
        vi = rng.integers(1, 2**40, size=mi.shape) * mi
        vo = rng.integers(1, 2**40, size=mo.shape) * mo
        K = [[int(vi[k, a]) * int(vo[b, k]) for k in range(n)] for a in range(d) for b in range(d)]
        # a wrong claim here has probability ≤ 2n/2^40 per draw (Schwartz–Zippel)
        assert (fmpz_mat(K).rank() == n) == det_bool
        dense = P.toarray().astype(int).tolist()
        if fmpz_mat(dense).rank() == n:
            assert det_bool
        elif det_bool:
            strictly_weaker += 1
        seen[det_bool] += 1
    assert seen[True] > 30 and seen[False] > 30 and strictly_weaker > 10
    # at p = 1 the 0/1 matrix has rank 1, yet the pattern has a perfect matching
    full = khatri_rao_pattern(np.ones((4, 2), bool), np.ones((2, 4), bool))
    assert boolean_determinant(full) and fmpz_mat(full.toarray().astype(int).tolist()).rank() == 1


# ------------------------------------------------------------------ step 3: the column law


@pytest.mark.parametrize("side", ["both", "input", "output"])
def test_column_law_matches_brute_force_and_is_not_iid(side):
    d_in, d_out = 2, 3
    for p in PS:
        law = column_ones_law(d_in, d_out, p, side)
        brute: dict[int, Fraction] = {}
        for r in _bits(d_in):
            for c in _bits(d_out):
                rr = r if side != "output" else (1,) * d_in
                cc = c if side != "input" else (1,) * d_out
                w = (_weight(r, p) if side != "output" else 1) * (
                    _weight(c, p) if side != "input" else 1)
                ones = sum(a * b for a in rr for b in cc)
                brute[ones] = brute.get(ones, 0) + w
        # an unmasked side contributes weight 1 once per pattern of the masked side only
        if side == "output":
            brute = {k: v / 2**d_in for k, v in brute.items()}
        if side == "input":
            brute = {k: v / 2**d_out for k, v in brute.items()}
        assert law == {k: v for k, v in brute.items() if v}
        q = entry_probability(p, side)
        assert sum(t * v for t, v in law.items()) == d_in * d_out * q     # every entry is Bern(q)
        assert law != {k: v for k, v in iid_ones_law(d_in * d_out, q).items() if v}


def test_zero_column_harris_inequality_and_exact_rows():
    """P_exact(column zero) ≥ P_iid, strictly inside (0, 1); a row's law is exactly i.i.d."""
    p = sp.Symbol("p")
    for d in (2, 3, 5):
        exact, iid = zero_column_probability(d, d, p, "both")
        for v in (Fraction(k, 20) for k in range(1, 20)):
            e, i = exact.subs(p, v), iid.subs(p, v)
            assert e > i
        # brute force for d = 2: all 16 (r, c) pairs
        if d == 2:
            for v in PS:
                brute = sum(_weight(r, v) * _weight(c, v) for r in _bits(2) for c in _bits(2)
                            if not any(a * b for a in r for b in c))
                assert brute == zero_column_probability(2, 2, v)[0]
    for m in (1, 2, 3):
        for v in PS:
            # row (a, b): entries M_in[k, a]·M_out[b, k], k < m, from 2m independent bits
            brute = sum(_weight(bits, v) for bits in _bits(2 * m)
                        if not any(bits[2 * k] * bits[2 * k + 1] for k in range(m)))
            assert brute == zero_row_probability(m, v) == (1 - v * v) ** m


# ------------------------------------------------------------------ exhaustive small cases


def _classify_independently(columns01):
    n = len(columns01)
    A = np.array(columns01, dtype=int).T
    rank01 = fmpz_mat(A.tolist()).rank()
    return {"no_matching": structural_rank_scipy(A.astype(bool)) < n,
            "singular_01": rank01 < n, "zero_column": not A.any(axis=0).all(),
            "zero_row": not A.any(axis=1).all()}


def test_iid_enumeration_n3_agrees_with_structural_and_exact_rank():
    counts = enumerate_iid_square(3)
    expected = {e: [0] * 10 for e in counts.counts}
    for bits in _bits(9):
        cols = [bits[3 * k:3 * k + 3] for k in range(3)]
        for e, hit in _classify_independently(cols).items():
            expected[e][sum(bits)] += hit
    assert counts.counts == expected
    # total probability mass is right and the singular matrices contain the unmatchable ones
    for t in range(10):
        assert counts.counts["no_matching"][t] <= counts.counts["singular_01"][t]
    assert counts_to_probability([math.comb(9, t) for t in range(10)], Fraction(1, 3)) == 1


def test_one_sided_enumeration_agrees_with_brute_force_d2():
    counts = one_sided_no_matching_counts(2)
    expected = [0] * 9
    for bits in _bits(8):
        mi = np.array(bits, bool).reshape(4, 2)
        P = khatri_rao_pattern(mi, np.ones((2, 4), bool))
        expected[sum(bits)] += structural_rank_scipy(P) < 4
    assert counts.counts["no_matching"] == expected
    assert counts.counts["singular_01"] == [math.comb(8, t) for t in range(9)]


@pytest.mark.slow
def test_square_enumeration_d2_against_independent_paths():
    """All 2^16 mask pairs at d = 2 (about 10 s): dead-neuron law in closed form, events nested,
    and a sample of patterns re-classified by SciPy / FLINT."""
    ex, iid = enumerate_square_patterns(2), enumerate_iid_square(4)
    x = sp.Symbol("p")
    z = zero_column_probability(2, 2, x)[0]
    assert sp.expand(counts_to_probability(ex.counts["zero_column"], x) - (1 - (1 - z) ** 4)) == 0
    zi = zero_column_probability(2, 2, x)[1]
    assert sp.expand(counts_to_probability(iid.counts["zero_column"], x**2)
                     - (1 - (1 - zi) ** 4)) == 0
    for t in range(17):
        assert ex.counts["zero_column"][t] <= ex.counts["no_matching"][t] \
            <= ex.counts["singular_01"][t]
    rng = np.random.default_rng(2)
    sample = [0] * 17
    hits = [0] * 17
    for _ in range(400):
        mi, mo = rng.random((4, 2)) < 0.6, rng.random((2, 4)) < 0.6
        ones = int(mi.sum() + mo.sum())
        sample[ones] += 1
        hits[ones] += structural_rank_scipy(khatri_rao_pattern(mi, mo)) < 4
    for t in range(17):
        if sample[t]:
            frac = Fraction(ex.counts["no_matching"][t], math.comb(16, t))
            assert (hits[t] == 0) <= (frac < 1) and (hits[t] == sample[t]) <= (frac > 0)
    # the i.i.d. replacement underestimates the generic failure probability here
    for v in PS[1:]:
        assert counts_to_probability(ex.counts["no_matching"], v) > \
            counts_to_probability(iid.counts["no_matching"], v * v)


def test_enumeration_refuses_big_cases():
    with pytest.raises(InputError):
        enumerate_square_patterns(3)
    with pytest.raises(InputError):
        enumerate_iid_square(5)


# ------------------------------------------------------------------ thresholds, union bound


def test_dead_neuron_threshold_is_a_valid_necessary_condition():
    delta = Fraction(1, 100)
    for d in (3, 4, 6):
        m = d * d
        p = dead_neuron_threshold(d, m, delta, step=Fraction(1, 1000))
        below = p - Fraction(1, 1000)
        z = zero_column_probability(d, d, below)[0]
        assert 1 - (1 - z) ** m > delta                    # exact failure probability below it
        assert dead_neuron_lower_bound(d, m, below) > delta
        assert dead_neuron_lower_bound(d, m, p) <= delta
    # the union bound over L layers asks for a larger p
    assert dead_neuron_threshold(8, 64, delta, layers=10) > dead_neuron_threshold(8, 64, delta)
    assert chain_threshold(8, delta, layers=10) > chain_threshold(8, delta)
    # the source's chain (q ≤ p²/(2d)) is a sufficient condition: where it says anything (d ≥ 32
    # at δ = 1 %) it lies above the dead-neuron necessary bound; below that it exceeds 1
    assert source_chain_threshold(16, delta) is None
    for d in (32, 64):
        chain = source_chain_threshold(d, delta)
        assert chain is not None and chain > dead_neuron_threshold(d, d * d, delta)
        assert chain * chain >= 2 * d * chain_density_required(d, delta)
        assert (chain - Fraction(1, 10**4)) ** 2 < 2 * d * chain_density_required(d, delta)


def _brute_force_domination_witness(d: int, p: Fraction, q: Fraction) -> bool:
    """Strassen's condition on the one up-set "the column is nonzero", from all 2^(2d) mask
    pairs and the closed i.i.d. law: True when it is violated (the replacement has more mass)."""
    real_nonzero = Fraction(0)
    for bits in range(1 << (2 * d)):
        r, c = bits & ((1 << d) - 1), bits >> d
        weight = Fraction(1)
        for t in range(2 * d):
            weight *= p if bits >> t & 1 else 1 - p
        if r and c:
            real_nonzero += weight
    return 1 - (1 - q) ** (d * d) > real_nonzero


@pytest.mark.parametrize("d", [2, 3, 4])
def test_real_column_dominates_the_replacement_at_the_sources_density(d):
    """Step 3: at q = p²/(2d) an exact monotone coupling carries all the mass (domination, the
    source's condition p ≥ √(2qd)); at q = p² it does not, and the up-set "column nonzero",
    counted by brute force over every mask pair, violates Strassen's condition."""
    for p in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(9, 10)):
        assert sum(hull_class_law(d, p * p).values()) == 1
        assert sum(rectangle_class_law(d, p).values()) == 1
        assert replacement_flow(d, p, p * p / (2 * d)) == 1
        assert replacement_flow(d, p, p * p / d) == 1      # the factor 1/(2d) is not sharp
        # at p²/2 the flow is 1 for d = 2, 3 and below 1 at d = 4 for p ≤ 3/4 (docs/sparse.md)
        assert (replacement_flow(d, p, p * p / 2) == 1) == (d < 4 or p > Fraction(3, 4))
        deficient = replacement_flow(d, p, p * p)
        assert deficient < 1
        assert _brute_force_domination_witness(d, p, p * p)
        assert not _brute_force_domination_witness(d, p, p * p / (2 * d))


def test_hull_class_law_matches_enumeration():
    """The hull law of an i.i.d. pattern, from inclusion–exclusion, against all 2^9 patterns."""
    d, q = 3, Fraction(1, 3)
    counts: dict[tuple[int, int], Fraction] = {}
    for bits in range(1 << 9):
        rows = {t // 3 for t in range(9) if bits >> t & 1}
        cols = {t % 3 for t in range(9) if bits >> t & 1}
        k = bin(bits).count("1")
        key = (len(rows), len(cols))
        counts[key] = counts.get(key, Fraction(0)) + q**k * (1 - q) ** (9 - k)
    assert counts == hull_class_law(d, q)


# ------------------------------------------------------------------ step 3: domination, unlumped
#
# Independent of replacement_flow's reduction to hull-size classes: the real column's law and the
# i.i.d. law are built from bit vectors, the coupling is a max-flow on the full space {0,1}^{d²}
# (d = 2, 3) or on hulls (d = 4), checked by a plain-Python coupling checker, and a deficient
# flow is turned into an up-set whose violation of Strassen's condition equals the missing mass.


def _rectangle(rows, cols, d):
    return sum(1 << (a * d + b) for a in range(d) if rows >> a & 1
               for b in range(d) if cols >> b & 1)


def _real_column_law(d, p):
    """Law of the column r ⊗ c as a bitmask of {0,1}^{d²} (bit a·d + b), from all mask pairs."""
    law = {}
    for r in range(1 << d):
        for c in range(1 << d):
            x = _rectangle(r, c, d)
            k = bin(r).count("1") + bin(c).count("1")
            law[x] = law.get(x, Fraction(0)) + p**k * (1 - p) ** (2 * d - k)
    return law


def _iid_law(n, q):
    return {x: q ** bin(x).count("1") * (1 - q) ** (n - bin(x).count("1")) for x in range(1 << n)}


def _hull(x, d):
    rows = sum(1 << a for a in range(d) if x >> (a * d) & ((1 << d) - 1))
    cols = sum(1 << b for b in range(d) if any(x >> (a * d + b) & 1 for a in range(d)))
    return rows, cols


def _below(x, y):
    return x & ~y == 0


def _coupling_flow(nu, mu, below):
    """Max-flow from ν to μ along ``below`` in exact Fractions; (value, flow on middle edges,
    source-side sinks of a minimum cut)."""
    import networkx as nx
    from networkx.algorithms.flow import edmonds_karp

    G = nx.DiGraph()
    for x, m in nu.items():
        G.add_edge("s", ("x", x), capacity=m)
    for y, m in mu.items():
        G.add_edge(("y", y), "t", capacity=m)
    for x in nu:
        for y in mu:
            if below(x, y):
                G.add_edge(("x", x), ("y", y), capacity=Fraction(2))
    R = edmonds_karp(G, "s", "t")
    flow = {(u[1], v[1]): Fraction(R[u][v]["flow"]) for u, v in G.edges
            if u != "s" and v != "t" and R[u][v]["flow"] > 0}
    cut, (side, _) = nx.minimum_cut(G, "s", "t", flow_func=edmonds_karp)
    assert Fraction(cut) == Fraction(R.graph["flow_value"])
    return Fraction(R.graph["flow_value"]), flow, {u[1] for u in side if u != "s" and u[0] == "x"}


def _is_coupling(flow, nu, mu, below):
    """A monotone coupling of ν (first marginal) and μ: non-negative masses on pairs x ≤ y with
    exactly the two marginals."""
    out, into = dict.fromkeys(nu, Fraction(0)), dict.fromkeys(mu, Fraction(0))
    for (x, y), m in flow.items():
        if m < 0 or x not in nu or y not in mu or not below(x, y):
            return False
        out[x] += m
        into[y] += m
    return out == nu and into == mu


@pytest.mark.parametrize("d", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_domination_by_coupling_on_the_full_space(d):
    """On all of {0,1}^{d²}: at q = p²/(2d) the max-flow is a monotone coupling (checked by
    marginals and order, and rejected once mutated); at q = p² the minimum cut gives an up-set U
    with P_iid(U) − P_real(U) = 1 − flow > 0 (Strassen's condition fails), and the flow over
    hull classes (replacement_flow) has the same value."""
    n = d * d
    for p in (Fraction(1, 4), Fraction(3, 4)):
        mu = _real_column_law(d, p)
        assert sum(mu.values()) == 1
        for q in (p * p / (2 * d), p * p):
            nu = _iid_law(n, q)
            value, flow, sources = _coupling_flow(nu, mu, _below)
            assert value == replacement_flow(d, p, q)
            if q == p * p / (2 * d):
                assert value == 1 and _is_coupling(flow, nu, mu, _below)
                (x, y), m = next(iter(flow.items()))
                bad = [z for z in mu if not _below(x, z)]
                if bad:                                  # move mass to an incomparable target
                    mutated = dict(flow)
                    mutated[(x, y)] = m / 2
                    mutated[(x, bad[0])] = mutated.get((x, bad[0]), Fraction(0)) + m / 2
                    assert not _is_coupling(mutated, nu, mu, _below)
                assert not _is_coupling({**flow, (x, y): m / 2}, nu, mu, _below)
                continue
            assert value < 1
            up = {z for z in range(1 << n) if any(_below(x, z) for x in sources)}
            assert all(z | 1 << t in up for z in up for t in range(n))     # an up-set
            violation = sum(nu[z] for z in up) - sum(mu.get(z, 0) for z in up)
            assert violation == 1 - value


def test_domination_on_hulls_d4():
    """d = 4 (2¹⁶ patterns): the i.i.d. hull law by counting every pattern, the real law on the
    rectangles supp(r) × supp(c), and the max-flow between them (x ≤ R iff hull(x) ⊆ R), without
    the reduction to size classes: a coupling at q = p²/(2d), the same deficit as
    replacement_flow at q = p²."""
    d, n = 4, 16
    counts = {}
    for x in range(1 << n):
        key = (_rectangle(*_hull(x, d), d), bin(x).count("1"))
        counts[key] = counts.get(key, 0) + 1
    p = Fraction(1, 2)
    mu = _real_column_law(d, p)
    for q in (p * p / (2 * d), p * p):
        nu = {}
        for (h, k), c in counts.items():
            nu[h] = nu.get(h, Fraction(0)) + c * q**k * (1 - q) ** (n - k)
        assert sum(nu.values()) == 1 and set(nu) == set(mu)
        value, flow, _ = _coupling_flow(nu, mu, _below)
        assert value == replacement_flow(d, p, q)
        assert (value == 1 and _is_coupling(flow, nu, mu, _below)) == (q < p * p)


def _up_sets(n):
    """Every up-set of {0,1}^n (n ≤ 4: 168 of them), built top-down."""
    order = sorted(range(1 << n), key=lambda x: -bin(x).count("1"))
    found = []

    def grow(i, chosen):
        if i == len(order):
            found.append(frozenset(chosen))
            return
        x = order[i]
        grow(i + 1, chosen)
        if all(x | 1 << t in chosen for t in range(n) if not x >> t & 1):
            grow(i + 1, chosen | {x})

    grow(0, frozenset())
    return found


def test_strassen_deficit_over_every_up_set_d2():
    """d = 2, no flow at all: the largest violation max_U P_iid(U) − P_real(U) over all 168
    up-sets of {0,1}^4 equals 1 − replacement_flow: zero at q = p²/(2d) (and at p²/d, so the
    source's factor is not sharp), positive at q = p²."""
    ups = _up_sets(4)
    assert len(ups) == 168                               # the Dedekind number M(4)
    for p in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(9, 10)):
        mu = _real_column_law(2, p)
        for q in (p * p / 4, p * p / 2, p * p):
            nu = _iid_law(4, q)
            deficit = max(sum(nu[x] for x in U) - sum(mu.get(x, 0) for x in U) for U in ups)
            assert deficit == 1 - replacement_flow(2, p, q)
            assert (deficit == 0) == (q < p * p)      # p²/(2d) = p²/4 and p²/d = p²/2: 0


def test_zero_row_bound_is_below_the_exact_probability():
    """Brute force over all 2^(4m) mask pairs at d = 2 (m = 2, 3): the second-moment bound never
    exceeds the exact probability of an unreachable entry of W."""
    for m in (2, 3):
        exact = {p: Fraction(0) for p in PS}
        for bits in _bits(4 * m):
            mi = np.array(bits[:2 * m], bool).reshape(m, 2)
            mo = np.array(bits[2 * m:], bool).reshape(2, m)
            if (mo.astype(int) @ mi.astype(int) == 0).any():
                for p in PS:
                    exact[p] += _weight(bits, p)
        for p in PS:
            assert zero_row_lower_bound(2, m, p) <= exact[p]
            assert exact[p] >= zero_row_probability(m, p)       # one fixed row is zero
    delta = Fraction(1, 100)
    for d, m in ((4, 24), (6, 72)):
        p = zero_row_threshold(d, m, delta, step=Fraction(1, 1000))
        assert zero_row_lower_bound(d, m, p - Fraction(1, 1000)) > delta
        assert zero_row_lower_bound(d, m, p) <= delta


def test_least_squares_matches_numpy_polyfit():
    xs = [math.log(d) for d in (4, 8, 16, 32, 64)]
    ys = [2.1 + 2.9 * x + (0.1 if i % 2 else -0.07) for i, x in enumerate(xs)]
    fit = least_squares(xs, ys)
    slope, intercept = np.polyfit(xs, ys, 1)
    assert abs(fit.slope - slope) < 1e-12 and abs(fit.intercept - intercept) < 1e-12
    resid = np.array(ys) - (intercept + slope * np.array(xs))
    s2 = float(resid @ resid) / 3
    assert abs(fit.slope_se - math.sqrt(s2 / np.sum((np.array(xs) - np.mean(xs)) ** 2))) < 1e-12
    with pytest.raises(InputError):
        least_squares([1.0, 2.0], [1.0, 2.0])


# ------------------------------------------------------------------ threshold search


def test_threshold_search_brackets_and_recounts():
    search = ThresholdSearch(4, "1", 100, seed=3, coarse="0.1", fine="0.025")
    row = search_threshold(search)
    assert allowed_failures(100) == 1
    star, below = row["star_row"], row["below_row"]
    assert Fraction(row["p_star"]) - Fraction(row["below"]) == Fraction(1, 40)
    assert star["draws"] == below["draws"] == 100
    assert star["draws"] - star["invertible"] <= 1 < below["draws"] - below["invertible"]
    # the reported cells are the full cells of a plain run
    assert star == run_task(search.cell_task(int(Fraction(row["p_star"]) * 40)))
    assert below == run_task(search.cell_task(int(Fraction(row["below"]) * 40)))
    # every visited failing point really fails, every passing one passes
    for p, ok, draws in row["visited"]:
        full = run_task(search.cell_task(int(Fraction(p) * 40)))
        assert ok == (full["draws"] - full["invertible"] <= 1)
        assert draws == 100 or not ok


def test_threshold_searches_do_not_depend_on_the_backend():
    searches = [ThresholdSearch(d, f, 40, seed=1, coarse="0.1", fine="0.025")
                for d in (3, 4) for f in ("1", "2")]
    serial = run_searches(searches)
    assert run_searches(searches, jobs=2) == serial
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        assert run_searches(searches, scheduler=cluster.scheduler_address) == serial
    assert [(r["d"], r["factor"]) for r in serial] == [(3, "1"), (3, "2"), (4, "1"), (4, "2")]
    with pytest.raises(InputError):
        search_threshold(ThresholdSearch(4, "1", 10, coarse="0.03", fine="0.02"))


def test_threshold_fits_and_plot_are_deterministic(tmp_path):
    from exactnorm.outputs.tables.registry import TABLES
    from exactnorm.outputs.tables.sparse import plot_thresholds, threshold_fits
    from exactnorm.outputs.tables.sparse_chain import table_t8

    assert TABLES["T8"] is table_t8
    searches = run_searches([ThresholdSearch(d, f, 40, seed=2, coarse="0.1", fine="0.025")
                             for d in (3, 4, 5) for f in ("1", "2")])
    fits = threshold_fits(searches)
    assert sorted(fits) == ["1", "2"] and all(len(v) == 3 for v in fits.values())
    xs = [math.log(d) for d in (3, 4, 5)]
    ys = [float(Fraction(r["p_star"])) * r["d"] for r in searches if r["factor"] == "2"]
    assert abs(fits["2"]["log d/d"].slope - np.polyfit(xs, ys, 1)[0]) < 1e-12
    zero_row = {(r["d"], r["factor"]): zero_row_threshold(r["d"], r["star_row"]["m"],
                                                          Fraction(1, 100)) for r in searches}
    plot_thresholds(searches, fits, zero_row, tmp_path / "a.png")
    plot_thresholds(searches, fits, zero_row, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
