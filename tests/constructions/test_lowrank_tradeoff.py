"""Low-rank and trade-off constructions: certify → check round trips, exact f = g, mutations."""

from __future__ import annotations

import copy
import json
import re
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq_mat

from exactnorm import api
from exactnorm.certificate import save_target
from exactnorm.cli import main
from exactnorm.constructions.lowrank import (
    certify_lowrank,
    factors_from_target_file,
    rank_factorization,
)
from exactnorm.constructions.tradeoff import certify_tradeoff, input_blocks
from exactnorm.errors import InputError
from exactnorm.exact.linalg import exact_rank
from exactnorm.exact.rationals import format_number, parse_number
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import random_target
from tests.helpers import both, case_target, sample_points


def low_rank_target(i: int, rank: int) -> TargetNetwork:
    """A one- or two-layer target whose first weight matrix has exactly the given rank."""
    rng = np.random.default_rng(500 + i)
    d_in, d_out = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    rank = min(rank, d_in, d_out)
    U = rng.integers(-3, 4, size=(d_out, rank))
    P = rng.integers(-3, 4, size=(rank, d_in))
    W = (U @ P).tolist() if rank else [[0] * d_in for _ in range(d_out)]
    b = [Fraction(int(x), 2) for x in rng.integers(-3, 4, size=d_out)]
    return TargetNetwork.from_lists([W, [[1] * d_out]], [b, [0]], ["relu", "identity"],
                                    lower=[-1] * d_in, upper=[Fraction(3, 2)] * d_in)


@pytest.mark.parametrize("i", range(16))
def test_lowrank_round_trip(i):
    g = case_target(i) if i % 2 else low_rank_target(i, rank=i % 4)
    c = certify_lowrank(g, seed=i, retry=20)
    assert both(api.certificate_document(c)).ok
    for layer, rep in zip(g.layers, c.reports):
        r = max(exact_rank(layer.weight), 1)
        assert rep.rank == r
        d_out, d_in = layer.shape
        assert rep.widths == (r * d_in, r, r * d_out, d_out)
    for x in sample_points(g, 5, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_rank_factorization_exact(rank):
    g = low_rank_target(rank, rank)
    W = g.layers[0].weight
    U, P = rank_factorization(W)
    assert U * P == W
    assert P.nrows() == max(exact_rank(W), 1)


def test_lowrank_uses_given_factors(tmp_path):
    U = [[1], [2], [-1]]
    P = [[2, 0, "1/2", 1]]
    W = [[Fraction(u[0]) * parse_number(p) for p in P[0]] for u in U]
    doc = {"domain": {"lower": [-1] * 4, "upper": [1] * 4},
           "target": {"layers": [{"weight": [[format_number(x) for x in row] for row in W],
                                  "bias": [0, 1, 0], "activation": "identity",
                                  "factors": {"U": U, "P": P}}]}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    factors = factors_from_target_file(path)
    assert factors[0][1] == fmpq_mat([[2, 0, parse_number_q("1/2"), 1]])
    out = tmp_path / "c.json"
    assert main(["certify", "--force",
                 "--construction", "lowrank", "--target", str(path), "--retry", "20",
                 "--out", str(out)]) == 0
    cert = json.loads(out.read_text())
    assert cert["witnesses"]["layers"][0]["factors"] == "given"
    bad = copy.deepcopy(doc)
    bad["target"]["layers"][0]["factors"]["U"] = [[1], [2], [1]]
    path.write_text(json.dumps(bad))
    assert main(["certify", "--force", "--construction", "lowrank", "--target", str(path),
                 "--out", str(out)]) == 2


def parse_number_q(text):
    from flint import fmpq

    f = parse_number(text)
    return fmpq(f.numerator, f.denominator)


@pytest.mark.parametrize("i", range(16))
@pytest.mark.parametrize("k", [1, 2, 3, 100])
def test_tradeoff_round_trip(i, k):
    g = case_target(i)
    c = certify_tradeoff(g, block=k, seed=i, retry=30)
    doc = api.certificate_document(c)
    assert both(doc).ok
    for layer, rep in zip(g.layers, c.reports):
        d_out, d_in = layer.shape
        blocks = input_blocks(d_in, k)
        if len(blocks) == 1:  # reduces to Theorem 1
            assert rep.widths == (d_in * d_out, d_out)
        else:
            assert max(rep.widths) == max(d_out * min(k, d_in), d_out, k)
            assert len(rep.widths) == 3 * len(blocks) + 1
    for x in sample_points(g, 4, seed=i):
        assert c.network.evaluate(x) == g.evaluate(x)


def test_tradeoff_uses_declared_skips_only():
    g = case_target(3)
    c = certify_tradeoff(g, block=1, seed=0, retry=30)
    kinds = {s.kind for layer in c.network.layers for s in layer.skips}
    assert kinds <= {"selection", "identity"} and "selection" in kinds


def test_input_blocks_cover_and_reject():
    assert input_blocks(7, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert sum(input_blocks(9, 4), []) == list(range(9))
    with pytest.raises(InputError):
        input_blocks(3, 0)
    with pytest.raises(InputError):
        api.certify(case_target(0), "tradeoff", block=0)


@pytest.mark.parametrize("construction,opts", [("lowrank", {}), ("tradeoff", {"block": 2})])
def test_mutations_rejected_or_harmless(construction, opts):
    g = case_target(5)
    doc = api.certificate_document(api.certify(g, construction, seed=1, retry=30, **opts),
                                   version=1)
    rng = np.random.default_rng(0)
    rejected = 0
    for _ in range(40):
        mut = copy.deepcopy(doc)
        L = mut["network"]["layers"][int(rng.integers(0, len(mut["network"]["layers"])))]
        field = str(rng.choice(["gamma", "beta"]))
        k = int(rng.integers(0, len(L[field])))
        L[field][k] = format_number(parse_number(L[field][k]) + 1)
        verdict = both(mut)
        if verdict.ok:
            from exactnorm.certificate import read_frozen, read_target

            f, gg = read_frozen(mut), read_target(mut)
            assert all(f.evaluate(x) == gg.evaluate(x) for x in sample_points(gg, 6, seed=1))
        else:
            rejected += 1
    assert rejected >= 30


def test_cli_options(tmp_path, capsys):
    out = tmp_path / "c.json"
    # without --block the cost model picks the block size (tests/constructions/test_scale.py)
    assert main(["certify", "--force", "--construction", "tradeoff", "--out", str(out)]) == 0
    assert re.search(r"block size \d+ from the cost model", capsys.readouterr().err)
    assert main(["certify", "--force", "--construction", "theorem1", "--block", "2", "--out",
                 str(out)]) == 2
    assert main(["certify", "--force",
                 "--construction", "tradeoff", "--block", "1", "--retry", "30",
                 "--out", str(out)]) == 0
    assert main(["check", str(out), "--both"]) == 0


# ----------------------------------------------------------------------------- parameter counts


def _documented_tradeoff_counts(d_in: int, d_out: int, k: int, routing: str) -> tuple[int, int]:
    """The formulas of docs/constructions.md (k < d_in), written out independently of the code."""
    T = -(-d_in // k)
    r = d_in - (T - 1) * k
    tuned = 2 * (d_out * d_in + T * d_out + d_out)
    frozen = d_out * ((T - 1) * k * k + r * r) + d_out * d_out * d_in + d_out * d_out
    if routing == "selection":
        tuned += 2 * d_in
        frozen += d_in * d_in
    return tuned, frozen


@pytest.mark.parametrize("routing", ["selection", "mask"])
@pytest.mark.parametrize("d_in,d_out,k", [(4, 4, 2), (4, 4, 3), (5, 2, 2), (7, 3, 3), (8, 8, 3),
                                          (6, 1, 4)])
def test_tradeoff_parameter_counts_match_the_documented_formulas(d_in, d_out, k, routing):
    """Regression: the doc's ``2·(T·d_out·k + …)`` was wrong when k does not divide d_in, and
    ``--routing mask`` counted the structural zeros of its block masks as frozen parameters."""
    g = random_target((d_in, d_out), seed=d_in + d_out, activations=["identity"])
    c = certify_tradeoff(g, block=k, seed=0, retry=50, routing=routing)
    assert (c.network.tuned_parameters, c.network.frozen_parameters) == \
        _documented_tradeoff_counts(d_in, d_out, k, routing)


def test_masked_routing_frozen_count_excludes_exactly_the_structural_zeros():
    """Independent count: every entry of every V, minus the entries outside each block's columns
    (read from the witnesses), equals the network's frozen count; selection routing has none."""
    g = random_target((7, 3), seed=1, activations=["identity"])
    masked = certify_tradeoff(g, block=3, seed=0, retry=50, routing="mask")
    every_entry = sum(L.weight.nrows() * L.weight.ncols() for L in masked.network.layers)
    witness = masked.reports[0].witness
    outside = sum(3 * len(S) * (7 - len(S)) for S in witness["blocks"])  # m_t = d_out·|S_t| rows
    assert outside == witness["structural_zeros"] > 0
    assert masked.network.frozen_parameters == every_entry - outside


def test_certify_summary_and_t3_count_the_same_frozen_parameters(tmp_path, capsys):
    """The CLI summary prints the count T3 uses (1,088 vs 752 before for d = 8, k = 3, mask)."""
    g = random_target((8, 8), seed=8, activations=["identity"])
    path = tmp_path / "t.json"
    save_target(g, path)
    code = main(["certify", "--force",
                 "--target", str(path), "--construction", "tradeoff", "--block", "3",
                 "--routing", "mask", "--retry", "50", "--seed", "0", "--out",
                 str(tmp_path / "c.json"), "--no-check"])
    out = capsys.readouterr().out
    assert code == 0
    assert "frozen parameters 752," in " ".join(out.split())
    assert _documented_tradeoff_counts(8, 8, 3, "mask")[1] == 752


def test_drawn_columns_must_hold_every_nonzero_entry():
    from flint import fmpz_mat

    from exactnorm.errors import ShapeError
    from exactnorm.model.network import FrozenLayer

    V = fmpz_mat([[1, 0, 2], [3, 0, 4]])
    assert FrozenLayer(0, V, (0, 0), (0, 0), "relu", drawn_columns=(0, 2)).frozen_parameters == 4
    assert FrozenLayer(0, V, (0, 0), (0, 0), "relu").frozen_parameters == 6
    with pytest.raises(ShapeError):
        FrozenLayer(0, V, (0, 0), (0, 0), "relu", drawn_columns=(0, 1))
    with pytest.raises(ShapeError):
        FrozenLayer(0, V, (0, 0), (0, 0), "relu", drawn_columns=(0, 0, 2))


# ----------------------------------------------------------------------------- summary ranks


@pytest.mark.parametrize("construction,opts,expected", [
    # d_out = 2, blocks of 2, 2, 1 inputs: systems of 4, 4 and 2 unknowns
    ("tradeoff", {"block": 2}, "4/4 ×2, 2/2"),
    # rank 1, W = U P (2×5): a ↦ P a has a system of 1·5 unknowns, z ↦ U z one of 2·1
    ("lowrank", {}, "5/5, 2/2"),
    ("theorem1", {}, "10/10"),
])
def test_summary_shows_exact_rank_per_system(construction, opts, expected):
    """Regression: lowrank printed rank(W)/Σ sizes (``2/32``) and tradeoff Σ ranks/max size
    (``100352/1024``); each system's exact rank over its own size is what was proven."""
    from rich.console import Console

    from exactnorm.commands.certify import summary_table

    U = [[1], [2]]
    P = [[1, -1, 2, 0, 1]]
    W = [[Fraction(u[0] * p) for p in P[0]] for u in U]
    g = TargetNetwork.from_lists([W], [[0, 0]], ["identity"], lower=[-1] * 5, upper=[1] * 5)
    c = api.certify(g, construction, seed=0, retry=50, **opts)
    console = Console(width=200, record=True)
    console.print(summary_table(c, 0.0))
    text = console.export_text()
    assert f" {expected} " in text, text
    for r in c.reports:
        assert all(rank == size for rank, size in r.per_system)
        assert len(r.per_system) == r.systems
