"""Provenance that says what it is worth (docs/generator.md §8.4, docs/certificate-format.md §6):
the three ground documents of the fourth review, rebuilt, in both arithmetics with the same
message, and the rule ``redraw`` cross-checked against exact ranks.

(a) a ``{"columns": [0]}`` mask on the *second* matrix of a Khatri–Rao pair makes every attempt
    singular by construction, so a writer could redraw until the draw fit the target: refused,
    rule ``redraw``;
(b) the first seed rule ``target`` hashes the target's weights, so a weight on a pinned coordinate
    grinds the seed: under ``target.v2`` every ground variant has the seed of the original, a
    ground document declaring ``target.v2`` is refused, and one declaring ``target`` is valid
    but says that function-preserving edits change its seed;
(c) a by-reference draw replaced by a matrix declared ``fixed``: valid (the matrix is what it
    is), counted and named as not random; "derived from the target and box" is said of the
    drawn matrices only.
"""

from __future__ import annotations

import copy
import random
from fractions import Fraction
from typing import Any

import pytest
from flint import fmpz_mat

import tests.checker.hostile_round3 as H
from exactnorm import api
from exactnorm.certificate import certificate_document, seed_of_target
from exactnorm.checker.document import document_seed
from exactnorm.checker.provenance import structural_rank
from exactnorm.constructions.plan import construct
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.exact.generator import matrix_from_record, redraw_refusal
from exactnorm.exact.linalg import exact_rank, khatri_rao_system
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import demo_target, random_target
from tests.helpers import both, refused

# ------------------------------------------------------------------ (a) a mask on V_out


def masked_second_matrix(target_row: tuple[int, int] = (5, -7), seed: int = 0) -> dict:
    """The ground pair: V_in 2×2, V_out 1×2 with ``{"columns": [0]}``, so the system's second
    column is 0 at every attempt; the writer takes the first attempt whose first row of V_in is
    the target row (one attempt in 256), "proving" every earlier attempt singular with the kernel
    vector (0, 1)."""
    w0, w1 = target_row

    def keys(a: int) -> tuple[list[int], list[int]]:
        return [1, 1, 0, a], [1, 2, 0, a]

    attempt = 0
    while True:
        vin = H.nonzero_draw(seed, keys(attempt)[0], 2, 2)
        if vin[0] == [w0, w1]:
            break
        attempt += 1
    vout = H.nonzero_draw(seed, keys(attempt)[1], 1, 2)[0][0]
    g0 = Fraction(w0, vout * vin[0][0])  # γ_0 · V_out[0][0] · V_in[0, :] = the target row
    gamma = [g0, Fraction(1)]
    beta = [sum(max(Fraction(0), -g * v) for v in row) for g, row in zip(gamma, vin)]
    layers = [H._drawn_layer(0, keys(attempt)[0], [2, 2], [str(g) for g in gamma],
                             [str(b) for b in beta], "relu", seed=seed),
              H._drawn_layer(1, keys(attempt)[1], [1, 2], [1], [str(-vout * beta[0])],
                             "identity", seed=seed, mask={"columns": [0]})]
    doc = H.document([0, 0], [1, 1], [{"weight": [[w0, w1]], "bias": [0],
                                       "activation": "identity"}], layers, [2], version=3)
    doc["redraws"] = [{"key": keys(a)[0], "kernel": [0, 1]} for a in range(attempt)]
    return doc


def test_a_mask_on_the_second_matrix_of_a_pair_is_never_redrawn():
    doc = masked_second_matrix()
    assert doc["redraws"], "the ground attempt is not the first"
    refused(doc, "redraw", "the structural rank of its masked Khatri-Rao system of the pair is "
                           "1 < 2, so every attempt is singular")
    # the same draws at attempt 0 claim no redraw: valid whenever the target is what they draw
    first = copy.deepcopy(doc)
    del first["redraws"]
    for layer in first["network"]["layers"]:
        layer["weight"]["random"]["key"][3] = 0
    assert both(first).rule != "redraw"


def test_a_mask_on_either_matrix_of_a_pair_with_full_structural_rank_is_redrawn():
    """The writer's Bernoulli masks on both matrices of a pair keep the structural rank full:
    the redraws of the sparse certificate are verified, and moving a column mask onto its
    second matrix is refused before any arithmetic."""
    c = certify_theorem1(random_target((3, 3, 2), seed=5), seed=1, sparsity="3/4",
                         distribution="int:4")
    doc = certificate_document(c)
    assert doc["redraws"] and both(doc).ok
    entry = doc["redraws"][0]
    i, k = entry["key"][:2]
    second = next(L for L in doc["network"]["layers"]
                  if L["weight"]["random"]["key"][:2] == [i, k + 1])
    second["weight"]["random"]["mask"] = {"columns": list(range(
        second["weight"]["random"]["shape"][1] - 1))}
    refused(doc, "redraw", "singular by construction")


def test_a_square_unit_with_an_empty_column_is_never_redrawn():
    seed = next(s for s in range(10_000)  # a seed whose attempt 0 is singular
                if (lambda V: V[0][0] * V[1][1] == V[0][1] * V[1][0])(
                    H.nonzero_draw(s, [1, 1, 0, 0], 2, 2)))

    def square(columns: list[int]) -> dict:
        V = H.nonzero_draw(seed, [1, 1, 0, 1], 2, 2)
        kept = [[x if t in columns else 0 for t, x in enumerate(row)] for row in V]
        doc = H.document([0, 0], [1, 1], [{"weight": kept, "bias": [0, 0],
                                           "activation": "identity"}],
                         [H._drawn_layer(0, [1, 1, 0, 1], [2, 2], [1, 1], [0, 0], "identity",
                                         mask={"columns": columns}, seed=seed)],
                         [1], version=3)
        W = H.nonzero_draw(seed, [1, 1, 0, 0], 2, 2)
        v = [-W[0][1], W[0][0]] if columns == [0, 1] else [0, 1]
        doc["redraws"] = [{"key": [1, 1, 0, 0], "kernel": v}]
        return doc

    refused(square([0]), "redraw", "structural rank of its masked matrix is 1 < 2")
    # every column kept: full structural rank, and attempt 0 is shown singular: one redraw
    v = both(square([0, 1]))
    assert v.ok and v.facts["redraws"] == 1, v


# ------------------------------------------------------------------ structural rank


def _pattern(rng: random.Random, rows: int, cols: int) -> list[list[bool]]:
    p = rng.choice([0.3, 0.6, 0.9, 1.0])
    return [[rng.random() < p for _ in range(cols)] for _ in range(rows)]


def _values(rng: random.Random, pattern: list[list[bool]]) -> fmpz_mat:
    return fmpz_mat([[rng.randint(-2**40, 2**40) if keep else 0 for keep in row]
                     for row in pattern])


def test_structural_rank_is_the_rank_of_random_values_on_the_pattern():
    """Entrywise supports (more than the format's masks give) on square matrices and on
    Khatri–Rao pairs: the matching equals the exact rank of the system for values drawn from
    2^41 + 1 integers (Schwartz–Zippel: a smaller rank has probability below 2^-30 here)."""
    rng = random.Random(7)
    for trial in range(300):
        c, d = rng.randint(1, 3), rng.randint(1, 3)
        m = c * d
        pin, pout = _pattern(rng, m, d), _pattern(rng, c, m)
        V_in, V_out = _values(rng, pin), _values(rng, pout)
        # column k of K = vec(V_out[:, k] V_in[k, :]): a product of supports
        left = [(tuple(r for r in range(c) if pout[r][k]),
                 tuple(t for t in range(d) if pin[k][t])) for k in range(m)]
        K = khatri_rao_system(V_in, V_out)
        # K's rows are vec in column-major order, (t, r) -> t*c + r: same graph, transposed
        assert structural_rank(left, d) == exact_rank(K), (trial, pin, pout)
        n = rng.randint(1, 5)
        pat = _pattern(rng, n, n)
        cols = [(tuple(r for r in range(n) if pat[r][t]), (0,)) for t in range(n)]
        assert structural_rank(cols, 1) == exact_rank(_values(rng, pat)), (trial, pat)


def _augmenting_paths(adjacency: list[list[int]]) -> int:
    """A maximum matching by plain augmenting paths (Kuhn), for comparison."""
    match: dict[int, int] = {}

    def augment(k: int, seen: set[int]) -> bool:
        for v in adjacency[k]:
            if v not in seen:
                seen.add(v)
                if v not in match or augment(match[v], seen):
                    match[v] = k
                    return True
        return False

    return sum(augment(k, set()) for k in range(len(adjacency)))


def test_structural_rank_equals_plain_augmenting_paths_with_shared_neighbourhoods():
    """Left vertices sharing one neighbourhood object (the greedy start's shared position) mixed
    with others, against Kuhn's algorithm; the charged units cover every scanned edge."""
    rng = random.Random(2)

    def sample(R: int, width: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (tuple(sorted(rng.sample(range(R), rng.randint(0, R)))),
                tuple(sorted(rng.sample(range(width), rng.randint(0, width)))))

    for _ in range(2000):
        width, R = rng.randint(1, 3), rng.randint(1, 4)
        pool = [sample(R, width) for _ in range(rng.randint(1, 3))]
        left = [rng.choice(pool) if rng.random() < 0.6 else sample(R, width)
                for _ in range(rng.randint(0, 9))]
        spent = []
        rank = structural_rank(left, width, spent.append)
        assert rank == _augmenting_paths([[r * width + t for r in a for t in b]
                                          for a, b in left]), (left, width)
        assert sum(spent) >= rank


def test_the_writers_refusal_agrees_with_the_checkers_matching():
    """``exactnorm.exact.generator.redraw_refusal`` (the writer's closed form) against the
    checker's matching, on pairs with column masks on either matrix."""
    rng = random.Random(3)
    for _ in range(200):
        c, width = rng.randint(1, 3), rng.randint(1, 4)
        used = sorted(rng.sample(range(width), rng.randint(1, width)))
        d = len(used)
        m = c * d
        first = {"distribution": "nonzero:8", "shape": [m, width]}
        if rng.random() < 0.5 or d < width:
            first["mask"] = {"columns": used}
        second = {"distribution": "nonzero:8", "shape": [c, m]}
        if rng.random() < 0.5:
            second["mask"] = {"columns": sorted(rng.sample(range(m), rng.randint(0, m)))}
        out = set(second.get("mask", {}).get("columns", range(m)))
        left = [(tuple(range(c)) if k in out else (), tuple(range(d))) for k in range(m)]
        full = structural_rank(left, d) == m
        assert (redraw_refusal(first, second, used) is None) == full


def test_the_writer_refuses_to_redraw_a_unit_singular_by_construction():
    from exactnorm.errors import SingularSystemError

    with pytest.raises(SingularSystemError, match="no redraw can help"):
        certify_theorem1(random_target((2, 2), seed=0), seed=0, sparsity=0, retry=5)


# ------------------------------------------------------------------ (b) a ground seed


def pinned_target(k: int) -> TargetNetwork:
    """A 3-2-1 target whose box pins x2 = 1/2; variant ``k`` adds ``k`` to a weight on x2 and
    compensates the bias: the same function on the box."""
    W1 = [[1, -2, 3 + k], [2, 1, -1]]
    b1 = [Fraction(-1) - Fraction(k, 2), Fraction(1, 2)]
    return TargetNetwork.from_lists([W1, [[1, -1]]], [b1, [0]], ["relu", "identity"],
                                    lower=[0, 0, Fraction(1, 2)], upper=[1, 1, Fraction(1, 2)])


def _v1_document(target: TargetNetwork) -> dict:
    sections = api.certificate_document(construct(target, seed=0))
    seed = document_seed(sections, rule="target")
    doc = certificate_document(construct(target, seed=seed))
    doc["seed_rule"] = "target"
    return doc


def test_a_ground_target_seed_is_refused_or_the_same():
    """The writer grinds variants of the weight on the pinned coordinate until the draw suits
    them (here: the first entry of the first frozen matrix is 8, one seed in 16)."""
    ground = None
    for k in range(1, 400):
        doc = _v1_document(pinned_target(k))
        if doc["network"]["layers"][0]["weight"]["random"]["seed"] and matrix_from_record(
                doc["network"]["layers"][0]["weight"]["random"])[0, 0] == 8:
            ground = doc
            break
    assert ground is not None
    original = pinned_target(0)
    canonical = seed_of_target(original)
    assert seed_of_target(pinned_target(k)) == canonical  # the edit does not move the seed
    # declared with the first rule: refused by both arithmetics, the rule retired
    refused(ground, "provenance", "seed_rule target (the target's weights as written) is retired")
    # without a seed rule the same draws are the writer's, and the verdict says only that
    chosen = copy.deepcopy(ground)
    del chosen["seed_rule"]
    v = both(chosen)
    assert v.ok and v.facts["seed_rule"] == "chosen" and "chosen by the writer" in v.message, v
    # declared target.v2: the seed is not the canonical one
    declared = dict(copy.deepcopy(ground), seed_rule="target.v2")
    refused(declared, "provenance", f"the seed derived from the target and box is {canonical}")
    # re-certified by the writer, the ground variant has the original's seed and draws
    a = api.certificate_document(api.certify(original))
    b = api.certificate_document(api.certify(pinned_target(k)))
    assert a["seed_rule"] == b["seed_rule"] == "target.v2"
    assert [L["weight"] for L in a["network"]["layers"]] == \
        [L["weight"] for L in b["network"]["layers"]]
    assert both(a).facts["seed"] == both(b).facts["seed"] == canonical


# ------------------------------------------------------------------ (c) a fixed matrix


def _fixed(doc: dict, j: int, why: str = "the writer's own matrix") -> dict:
    out = copy.deepcopy(doc)
    layer = out["network"]["layers"][j - 1]
    M = matrix_from_record(layer["weight"]["random"])
    layer["weight"] = [[str(M[r, t]) for t in range(M.ncols())] for r in range(M.nrows())]
    layer["source"] = {"kind": "fixed", "why": why}
    return out


def test_a_fixed_matrix_is_counted_and_named_not_random():
    doc = api.certificate_document(api.certify(demo_target()))
    assert doc["seed_rule"] == "target.v2"
    v = both(doc)
    assert v.ok and v.facts["frozen_matrices"] == v.facts["regenerated"] == 6
    assert "6 frozen matrices drawn from seed" in v.message and "not random" not in v.message
    one = both(_fixed(doc, 2))
    assert one.ok and one.facts["frozen_matrices"] == 6 and one.facts["regenerated"] == 5
    assert one.facts["fixed_count"] == 1, one
    assert ("5 of the 6 frozen matrices drawn from seed "
            f"{v.facts['seed']} (derived from the canonical target and box, verified)"
            in one.message), one
    assert "1 declared fixed, not random (network layer 2: the writer's own matrix)" in \
        one.message, one
    every = doc
    for j in range(1, 7):
        every = _fixed(every, j, f"hand-made {j}")
    v = both(every)
    assert v.ok and v.facts["regenerated"] == 0 and v.facts["seed_rule"] is None, v
    assert "6 frozen matrices, none drawn from a seed; 6 declared fixed, not random" in \
        v.message and "and 3 more" in v.message and "derived" not in v.message, v


# ------------------------------------------------------------------ what the entropy is worth


@pytest.mark.parametrize("rule, words", [
    ("chosen", "2^8 seeds"),
    ("target.v2", "2^8 variants of what the rule does not pin"),
])
def test_below_128_bits_the_verdict_says_how_many_variants_a_writer_could_have_tried(rule,
                                                                                       words):
    """A 1-1 target: Theorem 1 draws two 1 x 1 nonzero:8 matrices, 8 bits in all."""
    g = random_target((1, 1), seed=2)
    doc = api.certificate_document(api.certify(g, **({"seed": 9} if rule == "chosen" else {})))
    v = both(doc)
    assert v.ok and v.facts["seed_rule"] == rule, v
    assert v.facts["entropy_bits"] == v.facts["grinding_bits"] == 8, v
    assert f"8 in total: below 128 bits, so a writer could have tried about {words}" in \
        v.message, v


def test_at_least_128_bits_no_search_could_have_chosen_the_draws():
    v = both(api.certificate_document(api.certify(demo_target())))
    assert v.facts["entropy_bits"] >= 128 and v.facts["grinding_bits"] is None
    assert "no search could have chosen these particular matrices" in v.message


def test_every_verdict_states_its_seed_rule():
    """A chosen seed, the canonical rule and an unbound version each say which holds, in both
    arithmetics; the retired first rule is refused."""
    g = random_target((2, 3, 1), seed=3)
    chosen = api.certificate_document(api.certify(g, seed=5))
    canonical = api.certificate_document(api.certify(g))
    first = _v1_document(g)
    unbound = api.certificate_document(api.certify(g, seed=5), version=2)
    said = {"chosen by the writer": chosen,
            "derived from the canonical target and box, verified": canonical,
            "not bound to positions": unbound}
    for words, doc in said.items():
        v = both(doc)
        assert v.ok and words in v.message, (words, v)
        assert "bits of min-entropy" in v.message and "in total:" in v.message
    refused(first, "provenance", "is retired")


# ------------------------------------------------------------------ one Provenance, every kind


def _frozen_by_provenance(doc: dict) -> tuple[Any, list[Any]]:
    """The frozen layers of an impossibility document read with the certificate's
    :class:`Provenance` (version 2: records or fixed declarations, keys distinct)."""
    from exactnorm.checker.budget import Budget
    from exactnorm.checker.provenance import ROLE_WEIGHT, Draw, Provenance, rule_provenance

    prov = Provenance(2, budget=Budget(10**12))
    width = len(doc["domain"]["lower"])
    out = []
    for j, layer in enumerate(doc["network"]["layers"], 1):
        M = rule_provenance(layer, layer["weight"], None, f"network layer {j}", j, ROLE_WEIGHT,
                            None, width, prov, 10**6)
        M = prov.materialize(M, j) if isinstance(M, Draw) else M
        out.append(M)
        width = M.nrows
    return prov, out


def test_one_provenance_reads_impossibility_documents_too():
    """The interface the impossibility reader needs (registering, regenerating every draw at
    once, counting): the same matrices and counts as its own reader, and one verdict text."""
    from exactnorm.analysis.capacity import decide
    from exactnorm.checker.budget import Budget
    from exactnorm.checker.impossibility_reading import read_impossibility, weight_of
    from exactnorm.checker.verdict import provenance_facts, provenance_text
    from exactnorm.outputs.tables.capacity import below_threshold_document, t11_target
    from tests.helpers import given

    drawn = below_threshold_document(t11_target(3), 6)
    net = given([[[1, 2], [3, -1]], [[1, 1]]], ["relu", "identity"])
    fixed = decide(net, random_target((2, 2, 1), seed=4)).document
    assert fixed is not None
    for doc in (drawn, fixed):
        prov, mats = _frozen_by_provenance(doc)
        theirs = read_impossibility(doc, 10**6, Budget(10**12), False)
        assert [(M.rows, M.den) for M in mats] == [
            (M.rows, M.den) for M in (weight_of(V, Budget(10**12), "frozen") for V, _ in
                                      theirs.frozen)]
        assert (prov.regenerated, prov.explicit, prov.fixed, prov.seeds) == \
            (theirs.prov.regenerated, theirs.prov.explicit, theirs.prov.fixed,
             theirs.prov.seeds)
        facts = provenance_facts(prov)
        assert facts["frozen_matrices"] == len(mats)
        assert provenance_text(facts).startswith(f"{len(mats)} frozen matri")
    assert _frozen_by_provenance(drawn)[0].draws and _frozen_by_provenance(fixed)[0].fixed
