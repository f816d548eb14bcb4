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
    network_from_dict,
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
        v1 = certificate_document(c)
        v2 = certificate_document(c, version=COMPACT_VERSION)
        assert v2 != v1 and "den" in json.dumps(v2["network"]["layers"][0]["gamma"])
        # what a version-1-only reader is given: numbers decoded, by-reference weights
        # regenerated from their records; equal to the document the version-1 writer made
        plain = api._readable_by(object(), v2)
        assert plain["provenance"].pop("frozen_weights") == "reference"
        assert plain == v1


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
        assert network_from_dict(doc).layers == c.network.layers


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
