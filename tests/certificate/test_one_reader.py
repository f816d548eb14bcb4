"""The package's one exact reader (exactnorm.certificate.read_kinds) is the checker's reader plus
a change of representation: every edit of a document either reads back or is refused with an
``InputError`` naming one of the checker's rules, never a traceback; what the checker's reader
refuses, the package refuses with the same rule; and a document that reads back gives the
networks the writer wrote (evaluated exactly at points of the box).
"""

from __future__ import annotations

import copy
import re

import pytest
from flint import fmpq

from exactnorm.certificate import certificate_document, read_networks, read_target
from exactnorm.checker.document import read_certificate
from exactnorm.checker.numbers import CertificateError
from exactnorm.constructions.plan import construct
from exactnorm.errors import ExactnormError, InputError
from tests.model.test_conv import lenet_like


@pytest.fixture(scope="module")
def small():
    c = construct(lenet_like(), seed=0)
    return c, certificate_document(c)


def _edits(doc):
    """Every document with one key of one layer deleted, or its value replaced by a string."""
    for section in ("target", "network"):
        for n, layer in enumerate(doc[section]["layers"]):
            for key in list(layer):
                for how in ("drop", "text"):
                    bad = copy.deepcopy(doc)
                    if how == "drop":
                        del bad[section]["layers"][n][key]
                    else:
                        bad[section]["layers"][n][key] = "x"
                    yield f"{section} {n} {key} {how}", bad


def test_the_reader_gives_back_the_construction(small):
    c, doc = small
    g, f = read_networks(doc)
    assert g == c.target and read_target(doc) == c.target
    assert f.checkpoints == c.network.checkpoints
    x = [fmpq(k % 3, 2) for k in range(len(g.lower))]
    assert f.evaluate_checkpoints(x) == c.network.evaluate_checkpoints(x)


def test_every_edit_reads_back_or_is_refused_with_the_checkers_rule(small):
    _, doc = small
    refused = 0
    for what, bad in _edits(doc):
        try:
            read_certificate(copy.deepcopy(bad), 1000)
            checker_rule = None
        except CertificateError as exc:
            checker_rule = exc.rule
        try:
            read_networks(bad)
        except InputError as exc:
            refused += 1
            rule = re.match(r"certificate is malformed \(rule (\w+)\)", str(exc))
            assert rule is not None and rule.group(1) == checker_rule, (what, str(exc))
            continue
        except ExactnormError as exc:  # a model-level refusal of a document the rules accept
            assert checker_rule is None, (what, exc)
            continue
        assert checker_rule is None, what
    assert refused > 10


def test_not_a_document_is_an_input_error():
    for bad in (None, [], {"format": "exactnorm.certificate"}, {"format": "other"}):
        with pytest.raises(InputError, match="rule format"):
            read_networks(bad)
        with pytest.raises(InputError, match="rule format"):
            read_target(bad)


def test_a_convolutional_document_written_out_reads_back_the_same(small):
    """expand_document writes a kernel given by reference ([c, C, kh, kw]) as its explicit
    c × C·kh·kw matrix with the record as its source; the checker's reader compares the two, and
    the networks are the same."""
    from exactnorm.certificate import expand_document

    c, doc = small
    full = expand_document(doc)
    conv = next(L for L in full["network"]["layers"] if L.get("kind") == "conv")
    assert isinstance(conv["weight"], list) and len(conv["source"]["shape"]) == 4
    g, f = read_networks(full)
    assert g == c.target and f.layers == read_networks(doc)[1].layers
    edited = copy.deepcopy(full)
    edited["network"]["layers"][0]["weight"][0][0] = "12345"
    with pytest.raises(InputError, match="rule provenance"):
        read_networks(edited)
