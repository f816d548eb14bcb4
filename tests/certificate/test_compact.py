"""Version-2 compact certificates and the streaming writer (docs/certificate-format.md §1.1).

Independent paths: the compact document is decoded back and must equal the version-1 document
written by the per-entry formatter (a different code path); the streamed file must equal the
one-shot serialization byte for byte; both checkers must accept it; mutated compact objects must
be rejected.
"""

from __future__ import annotations

import copy
import gzip
import json

import pytest

from exactnorm import api
from exactnorm.certificate import (
    COMPACT_VERSION,
    certificate_bytes,
    certificate_document,
    decode_compact,
    load_certificate,
    read_frozen,
    save_certificate,
    write_certificate,
)
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InvalidCertificateError
from exactnorm.model.targets import demo_target, random_target


@pytest.fixture(scope="module")
def constructions():
    g = random_target((5, 3, 2), seed=3)
    return [certify_theorem1(demo_target(), seed=0),
            certify_tradeoff(g, block=2, seed=1, distribution="nonzero:8")]


def test_compact_decodes_to_the_version1_document(constructions):
    for c in constructions:
        v1 = certificate_document(c, version=1)
        v2 = certificate_document(c, version=COMPACT_VERSION, frozen_weights="explicit")
        assert v2 != v1 and "den" in json.dumps(v2["network"]["layers"][0]["gamma"])
        plain = decode_compact(v2)
        # what version 2 adds besides the encoding: the draw records and the weights mode
        for layer in plain["network"]["layers"]:
            layer.pop("source")
        plain["provenance"].pop("frozen_weights")
        assert {**plain, "version": 1} == v1


def test_streamed_file_equals_one_shot_bytes(constructions, tmp_path):
    for c in constructions:
        for version in (1, COMPACT_VERSION):
            doc = certificate_document(c, version=version)
            plain = tmp_path / "c.json"
            write_certificate(c, plain, version=version)
            assert plain.read_bytes() == certificate_bytes(doc)
            gz = tmp_path / "c.json.gz"
            n = write_certificate(c, gz, version=version)
            assert n == gz.stat().st_size
            assert gzip.decompress(gz.read_bytes()) == certificate_bytes(doc)
            first = gz.read_bytes()
            save_certificate(doc, gz)
            assert gz.read_bytes() == first  # deterministic, same bytes from both writers
            assert load_certificate(gz) == doc


def test_compact_certificate_is_valid_for_both_checkers(constructions, tmp_path):
    for c in constructions:
        path = tmp_path / "c.json.gz"
        write_certificate(c, path)
        assert api.check_file(path).ok and api.check_file(path, pure=True).ok
        doc = load_certificate(path)
        assert api.check(doc).ok
        # the network rebuilt from compact numbers is the constructed one
        assert read_frozen(doc).layers == c.network.layers


def test_compact_values_are_what_the_checker_sees(constructions):
    doc = certificate_document(constructions[0], version=COMPACT_VERSION)
    bad = copy.deepcopy(doc)
    gamma = bad["network"]["layers"][0]["gamma"]
    gamma["den"] = str(int(gamma["den"]) + 1)  # every γ of the block changes
    assert not api.check(bad).ok
    bad = copy.deepcopy(doc)
    beta = bad["network"]["layers"][1]["beta"]
    beta["num"][0] = str(int(beta["num"][0]) + 1)
    assert not api.check(bad, pure=True).ok


@pytest.mark.parametrize("compact", [
    {"den": 0, "num": [1]}, {"den": -2, "num": [1]}, {"den": "1/2", "num": [1]},
    {"den": True, "num": [1]}, {"den": 2, "num": [1.5]}, {"den": 2, "num": "12"},
    {"den": 2, "num": ["0x1"]},
])
def test_malformed_compact_numbers_are_refused(compact):
    with pytest.raises(InvalidCertificateError):
        decode_compact({"gamma": compact})


@pytest.mark.parametrize("weight, error", [
    ({"identity": -1}, "InvalidCertificateError"),
    ({"identity": True}, "InvalidCertificateError"),
    ({"selection": [3], "columns": 3}, "InvalidCertificateError"),
    ({"selection": [0, "1"], "columns": 3}, "InvalidCertificateError"),
    ({"selection": "01", "columns": 3}, "InvalidCertificateError"),
    # a few bytes that denote 10^12 entries are refused before anything is allocated
    ({"identity": 10**6}, "LimitExceededError"),
    ({"selection": [None] * 10, "columns": 10**9}, "LimitExceededError"),
])
def test_expand_skip_refuses_malformed_and_huge_compact_skips(weight, error):
    from exactnorm import certificate, errors

    with pytest.raises(getattr(errors, error)):
        certificate.expand_skip(weight)
    with pytest.raises(getattr(errors, error)):
        certificate.decode_compact({"from": 0, "kind": "selection", "weight": weight})


def test_compact_skips_round_trip():
    from flint import fmpz_mat

    from exactnorm.certificate import compact_skip, expand_skip

    for M, kind in [(fmpz_mat([[1, 0], [0, 1]]), "identity"),
                    (fmpz_mat([[0, 0, 1], [0, 0, 0], [1, 0, 0]]), "selection")]:
        assert expand_skip(compact_skip(M, kind)) == [[int(x) for x in r] for r in M.tolist()]
    # not of its declared kind: no compact form, the writer keeps the rows
    assert compact_skip(fmpz_mat([[0, 1], [1, 0]]), "identity") is None
    assert compact_skip(fmpz_mat([[1, 1]]), "selection") is None
    assert compact_skip(fmpz_mat([[2]]), "selection") is None
