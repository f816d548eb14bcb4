"""Defaults that just work (issue 13 item 3): singular draws are redrawn by default, the default
distribution has no structural zeros, narrow trade-off blocks certify without ``--retry``, and
version-2 certificates carry (and round-trip) the provenance of every frozen matrix."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from exactnorm import api, certificate
from exactnorm.certificate import target_document
from exactnorm.checker import regenerate as rg
from exactnorm.cli import main
from exactnorm.constructions.common import DEFAULT_RETRY
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError, LimitExceededError, SingularSystemError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, parse_distribution
from exactnorm.model.targets import demo_target, random_target


def test_default_distribution_has_no_zero():
    d = parse_distribution(DEFAULT_DISTRIBUTION)
    assert d.law == "nonzero" and d.support_size == 2 * d.param
    assert DEFAULT_RETRY > 0


@pytest.mark.parametrize("block", [1, 2])
@pytest.mark.parametrize("routing", ["selection", "mask"])
def test_narrow_tradeoff_blocks_certify_with_defaults(block, routing):
    for g in (demo_target(), random_target((4, 5, 3), seed=1, activations=["relu", "identity"])):
        c = certify_tradeoff(g, block=block, routing=routing)
        assert api.check(certificate.certificate_document(c)).ok


@pytest.mark.parametrize("block", ["1", "2"])
def test_cli_tradeoff_narrow_blocks_on_demo_without_retry(tmp_path, capsys, block):
    out = str(tmp_path / "c.json")
    assert main(["certify", "--force",
                 "--construction", "tradeoff", "--block", block, "--out", out]) == 0
    assert "VALID" in capsys.readouterr().out


def _first_singular_seed(g, dist):
    for seed in range(200):
        try:
            certify_theorem1(g, seed=seed, distribution=dist, retry=0)
        except SingularSystemError:
            return seed
    raise AssertionError("no singular draw found")


def test_singular_draw_is_redrawn_by_default_and_recorded():
    g = random_target((2, 2), seed=3, activations=["identity"])
    seed = _first_singular_seed(g, "int:2")
    c = certify_theorem1(g, seed=seed, distribution="int:2")  # default retry
    (w,) = c.witnesses["layers"]
    assert w["singular_draws"] and w["singular_draws"][0]["attempt"] == 0
    assert w["stream_key"][3] == len(w["singular_draws"]) <= DEFAULT_RETRY
    # the layers carry the record of the draw that worked, not of the singular one
    assert all(layer.record["key"][3] == w["stream_key"][3] for layer in c.network.layers)
    assert api.check(certificate.certificate_document(c)).ok


def test_retry_zero_is_strict_on_the_cli(tmp_path, capsys):
    g = random_target((2, 2), seed=3, activations=["identity"])
    seed = _first_singular_seed(g, "int:2")
    target = tmp_path / "t.json"
    target.write_text(json.dumps(target_document(g)))
    base = ["certify", "--target", str(target), "--distribution", "int:2", "--seed", str(seed),
            "--out", str(tmp_path / "c.json")]
    assert main([*base, "--retry", "0"]) == 2
    err = capsys.readouterr().err
    assert "singular" in err and "target layer 1" in err and "Traceback" not in err
    assert main(base) == 0


def test_gauss_62_is_refused_and_52_is_exact(tmp_path, capsys):
    with pytest.raises(InputError, match=r"\[1, 52\]"):
        parse_distribution("gauss:62")
    assert main(["certify", "--force",
                 "--distribution", "gauss:62", "--out", str(tmp_path / "c.json")]) == 2
    assert "gauss" in capsys.readouterr().err
    g = random_target((2, 1), seed=0, activations=["identity"])
    c = certify_theorem1(g, seed=0, distribution="gauss:52")
    for layer in c.network.layers:
        assert [[Fraction(int(x.p), int(x.q)) for x in row] for row in layer.weight.tolist()] == \
            rg.regenerate(layer.record)
        assert all(2**52 % int(x.q) == 0 and abs(x) <= 6 for x in layer.weight.entries())


# ------------------------------------------------------------------ version 2 writing


@pytest.mark.parametrize("mode", ["reference", "explicit"])
def test_version2_round_trip(mode):
    g = random_target((5, 3, 2), seed=0, activations=["relu", "identity"])
    c = certify_tradeoff(g, block=2, seed=0)
    doc = json.loads(certificate.certificate_bytes(
        certificate.certificate_document(c, version=2, frozen_weights=mode)))
    assert doc["version"] == 2 and doc["provenance"]["frozen_weights"] == mode
    for entry, layer in zip(doc["network"]["layers"], c.network.layers):
        if mode == "reference":
            assert set(entry["weight"]) == {"random"} and "source" not in entry
            record = entry["weight"]["random"]
        else:
            record = entry["source"]
            assert [[Fraction(x) for x in row] for row in entry["weight"]] == \
                rg.regenerate(record)
        assert record == layer.record
        for skip, s in zip(entry.get("skip", []), layer.skips, strict=True):
            # 0/1 skips in their compact forms, which expand to the construction's matrices
            assert set(skip["weight"]) == ({"identity"} if skip["kind"] == "identity"
                                           else {"selection", "columns"})
            assert certificate.expand_skip(skip["weight"]) == \
                [[int(x) for x in row] for row in s.weight.tolist()]
    net = certificate.read_frozen(doc)
    assert [(a.weight, a.record) for a in net.layers] == \
        [(b.weight, b.record) for b in c.network.layers]
    assert net.evaluate((1, 0, -1, 0, 1)) == c.network.evaluate((1, 0, -1, 0, 1))


def test_reference_certificate_is_smaller_at_size():
    g = random_target((64, 4), seed=0, activations=["identity"])
    c = certify_tradeoff(g, block=4, seed=0)
    docs = {m: certificate.certificate_document(c, version=2, frozen_weights=m)
            for m in ("reference", "explicit")}
    sizes = {m: len(certificate.certificate_bytes(d)) for m, d in docs.items()}
    weights = {m: len(json.dumps([e["weight"] for e in d["network"]["layers"]]))
               for m, d in docs.items()}
    assert sizes["reference"] < sizes["explicit"]
    assert 3 * weights["reference"] < weights["explicit"]


def test_version1_is_still_written_and_read():
    c = certify_theorem1(demo_target(), seed=0)
    doc = certificate.certificate_document(c, version=1)
    assert doc["version"] == 1
    assert all(isinstance(e["weight"], list) and "source" not in e
               for e in doc["network"]["layers"])
    net = certificate.read_frozen(doc)
    assert [a.weight for a in net.layers] == [b.weight for b in c.network.layers]


def test_version2_needs_a_record_for_every_matrix():
    import dataclasses

    c = certify_theorem1(demo_target(), seed=0)
    layers = list(c.network.layers)
    layers[2] = dataclasses.replace(layers[2], record=None)
    c.network = dataclasses.replace(c.network, layers=tuple(layers))
    with pytest.raises(InputError, match="frozen layer 3 has no draw record"):
        certificate.certificate_document(c, version=2)
    layers[2] = dataclasses.replace(layers[2], record={"kind": "fixed", "why": "test"})
    c.network = dataclasses.replace(c.network, layers=tuple(layers))
    doc = certificate.certificate_document(c, version=2)
    assert doc["network"]["layers"][2]["source"] == {"kind": "fixed", "why": "test"}
    assert isinstance(doc["network"]["layers"][2]["weight"], list)


def test_reader_refuses_bad_records_with_one_line():
    doc = certificate.certificate_document(certify_theorem1(demo_target(), seed=0), version=2)
    bad = json.loads(json.dumps(doc))
    bad["network"]["layers"][0]["weight"]["random"]["distribution"] = "gauss:62"
    with pytest.raises(InputError, match=r"layer 1: draw record: .*gauss"):
        certificate.read_frozen(bad)
    huge = json.loads(json.dumps(doc))
    huge["network"]["layers"][0]["weight"]["random"]["shape"] = [10**6, 10**6]
    with pytest.raises(LimitExceededError, match="above the limit"):
        certificate.read_frozen(huge)
    both = json.loads(json.dumps(doc))
    both["network"]["layers"][0]["source"] = both["network"]["layers"][0]["weight"]["random"]
    with pytest.raises(InputError, match="by reference carries no separate source"):
        certificate.read_frozen(both)


def test_cli_frozen_weights_writes_version3(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["certify", "--force", "--frozen-weights", "reference", "--no-check",
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == 3 and doc["seed_rule"] == "target.v2"
    assert all("random" in e["weight"] for e in doc["network"]["layers"])


def test_cli_sparsity_is_exact(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["certify", "--force", "--sparsity", "9/10", "--no-check", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["provenance"]["sparsity"] == "9/10"
    assert main(["certify", "--force", "--sparsity", "0.9", "--no-check", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["provenance"]["sparsity"] == "9/10"
    capsys.readouterr()
    assert main(["certify", "--force", "--sparsity", "half", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "keep probability" in err and "Traceback" not in err
