"""Sparse Theorem 1 certificates (docs/sparse.md): matching ⇒ certified, dead neurons ⇒ diagnosed.

Each draw of ``certify_theorem1(..., sparsity=p)`` is reproduced with ``draw_pair`` and diagnosed
by :mod:`exactnorm.analysis.structural`; the independent checker must accept every certificate,
and every singular draw must carry the exact rank that FLINT computes on the same system.
"""

from __future__ import annotations

import json

import pytest

from exactnorm.analysis.structural import diagnose_draw
from exactnorm.api import certificate_document, certify, check, check_file, save_certificate
from exactnorm.certificate import target_document
from exactnorm.cli import main
from exactnorm.constructions.theorem1 import draw_pair
from exactnorm.errors import SingularSystemError
from exactnorm.exact.linalg import exact_rank, khatri_rao_system
from exactnorm.exact.sampling import parse_distribution
from exactnorm.model.targets import random_target


def _layer_diagnoses(target, seed, p, dist, side="both"):
    out = []
    for i, layer in enumerate(target.layers, 1):
        d_out, d_in = layer.weight.nrows(), layer.weight.ncols()
        V_in, V_out = draw_pair(seed, i, 0, d_in, d_out, d_in * d_out,
                                parse_distribution(dist), p, side)
        out.append((diagnose_draw(V_in, V_out, prime=2**61 - 1), V_in, V_out))
    return out


@pytest.mark.parametrize("dist,side", [("nonzero:8", "both"), ("int:8", "input"),
                                       ("bits:30", "output")])
def test_matching_draws_certify_and_others_fail_with_their_exact_rank(dist, side):
    target = random_target((2, 3, 2), seed=11, activations=["relu", "identity"])
    certified = singular = 0
    for seed in range(80):
        diags = _layer_diagnoses(target, seed, 0.7, dist, side)
        first_bad = next((i for i, (d, *_) in enumerate(diags, 1) if d.exact_rank < d.n), None)
        if first_bad is None:
            # every layer has a perfect matching (necessary for full exact rank)
            assert all(d.generically_full_rank for d, *_ in diags)
            c = certify(target, "theorem1", seed=seed, distribution=dist, sparsity=0.7,
                        mask_side=side, retry=0)
            doc = certificate_document(c)
            assert check(doc).ok and check(doc, pure=True).ok, seed
            ranks = [(w["rank"], w["rank_mod_prime"]) for w in doc["witnesses"]["layers"]]
            assert [r for r, _ in ranks] == [d.n for d, *_ in diags] == [6, 6]
            assert all(rm in (None, 6) for _, rm in ranks)
            certified += 1
        else:
            d, V_in, V_out = diags[first_bad - 1]
            with pytest.raises(SingularSystemError) as info:
                certify(target, "theorem1", seed=seed, distribution=dist, sparsity=0.7,
                        mask_side=side, retry=0)
            assert info.value.rank == d.exact_rank == exact_rank(khatri_rao_system(V_in, V_out))
            assert info.value.layer == first_bad
            assert d.rank_mod_prime <= d.exact_rank < d.n
            singular += 1
    assert certified >= 5 and singular >= 3, (certified, singular)


def test_dead_neuron_draw_is_named_by_the_diagnosis():
    target = random_target((3, 3), seed=2, activations=["identity"])
    found = 0
    for seed in range(60):
        ((d, V_in, V_out),) = _layer_diagnoses(target, seed, 0.35, "nonzero:8")
        if not d.dead:
            continue
        rows_in, cols_out = V_in.tolist(), V_out.transpose().tolist()
        expected = sorted({k for k, row in enumerate(rows_in) if all(x == 0 for x in row)}
                          | {k for k, col in enumerate(cols_out) if all(x == 0 for x in col)})
        assert d.dead == expected and d.cause == "dead_neurons"
        assert all(str(k) in d.message() for k in expected[:12])
        with pytest.raises(SingularSystemError) as info:
            certify(target, "theorem1", seed=seed, distribution="nonzero:8", sparsity=0.35,
                    retry=0)
        assert info.value.rank == d.exact_rank <= d.n - len(expected)
        kernel = info.value.kernel
        assert kernel is not None and any(kernel)
        found += 1
        if found == 3:
            break
    assert found == 3


def test_cli_certify_sparse(tmp_path, capsys):
    target = random_target((2, 2), seed=4, activations=["identity"])
    tfile = tmp_path / "t.json"
    tfile.write_text(json.dumps(target_document(target)))
    good = bad = None
    for seed in range(60):
        ((d, *_),) = _layer_diagnoses(target, seed, 0.6, "nonzero:8")
        if d.exact_rank == d.n and good is None:
            good = seed
        if d.dead and bad is None:
            bad = (seed, d)
    assert good is not None and bad is not None
    base = ["certify", "--target", str(tfile), "--sparsity", "0.6", "--distribution",
            "nonzero:8"]
    assert main([*base, "--seed", str(good), "--out", str(tmp_path / "c.json")]) == 0
    assert "VALID" in capsys.readouterr().out
    # redraws are the default now: --retry 0 asks for the strict verdict on this very draw
    assert main([*base, "--seed", str(bad[0]), "--retry", "0", "--out",
                 str(tmp_path / "d.json")]) == 2
    err = capsys.readouterr().err
    assert f"exact rank {bad[1].exact_rank}" in err and "Traceback" not in err
    # by default the singular draw is redrawn, and the redraw is recorded
    assert main([*base, "--seed", str(bad[0]), "--out", str(tmp_path / "e.json")]) == 0
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["witnesses"]["layers"][0]["singular_draws"][0]["rank"] == bad[1].exact_rank


def test_sparse_certificate_file_round_trip(tmp_path):
    target = random_target((2, 2), seed=4, activations=["identity"])
    for seed in range(40):
        ((d, *_),) = _layer_diagnoses(target, seed, 0.9, "nonzero:8")
        if d.exact_rank == d.n:
            break
    c = certify(target, "theorem1", seed=seed, distribution="nonzero:8", sparsity=0.9)
    path = tmp_path / "sparse.json"
    save_certificate(certificate_document(c), path)
    assert check_file(path).ok and check_file(path, pure=True).ok
