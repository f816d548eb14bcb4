"""The oracle's exact evaluation (:mod:`tests.checker.oracle`) is itself tested: against values
computed by hand here (numbers, draws of docs/generator.md's test vectors, convolutions with
padding, stride and dilation, poolings, residual wiring of targets and frozen networks), and
against the package's own exact evaluation of every real document of the campaigns (two paths
written independently must agree at box vertices and random points). It must also be able to
say "no": a certificate with one changed β is caught."""

from __future__ import annotations

import copy
from fractions import Fraction as Q

import pytest
from flint import fmpq

from exactnorm.certificate import read_networks
from tests.checker import oracle, oracle_documents

# ------------------------------------------------------------------------- numbers and draws


def test_numbers_of_every_written_form():
    assert [oracle.number(x) for x in (3, "-4", "3/4", "-0.25", "2/4")] == \
        [Q(3), Q(-4), Q(3, 4), Q(-1, 4), Q(1, 2)]
    assert oracle.vector({"den": 4, "num": [1, "-6", 8]}) == [Q(1, 4), Q(-3, 2), Q(2)]
    assert oracle.matrix({"den": 3, "num": [[1, 2], [0, -3]]}) == [[Q(1, 3), Q(2, 3)],
                                                                    [Q(0), Q(-1)]]
    for bad in (1.5, True, "1e3", "1/0", "0x10", " 1", None):
        with pytest.raises(oracle.Unreadable):
            oracle.number(bad)


# docs/generator.md §6: first three words of a few streams
WORDS = [(0, [], "c33f8e23e6bdf5b3 edd030f17f7ce280 3d4eda770e5b5a1d"),
         (0, [1, 0, 0, 0], "90a4235344beeca0 1fec6d3e6c577dab 861de4b8e8a8acc1"),
         (1, [1, 0, 0, 0], "d0960e514dfc2d9e 20c6f7ea392860ee de2175125e0e0e55"),
         (42, [2, 3, 1, 0], "69f146096fb521a3 924ec951847a92b7 bd645a23e34cdbbd"),
         (18446744073709551616, [7], "c7ecc217699faa82 04ba8fcdacb62f27 456f9c2396fceef7")]

# docs/generator.md §6: whole records and their matrices
RECORDS = [
    ({"seed": 0, "key": [1, 0, 0, 0], "distribution": "nonzero:8", "shape": [2, 3]},
     [["-8", "4", "-7"], ["6", "2", "7"]]),
    ({"seed": 0, "key": [1, 0, 0, 0], "distribution": "int:8", "shape": [2, 3]},
     [["1", "3", "6"], ["5", "1", "-1"]]),
    ({"seed": 7, "key": [2], "distribution": "rational:5", "shape": [1, 3]},
     [["-1", "1/5", "-1"]]),
    ({"seed": 7, "key": [2], "distribution": "gauss:4", "shape": [1, 2]},
     [["-13/16", "-5/16"]]),
    ({"seed": 0, "key": [1, 0, 0, 0], "distribution": "nonzero:8", "shape": [2, 3],
      "mask": {"p": "1/2", "key": [1, 0, 2, 0]}}, [["0", "0", "0"], ["6", "2", "7"]]),
    ({"seed": 3, "key": [5], "distribution": "set:-1,1", "shape": [2, 4],
      "mask": {"columns": [1, 2]}}, [["0", "-1", "1", "0"], ["0", "-1", "1", "0"]]),
]


@pytest.mark.parametrize("seed,key,words", WORDS)
def test_the_stream_words_of_the_generator_document(seed, key, words):
    assert oracle.stream_words(seed, key, 3) == [int(w, 16) for w in words.split()]


@pytest.mark.parametrize("record,expected", RECORDS)
def test_the_records_of_the_generator_document(record, expected):
    record = {"generator": "exactnorm.shake256.v1", **record}
    assert oracle.draw(record) == [[Q(x) for x in row] for row in expected]
    four = dict(record, shape=[record["shape"][0], record["shape"][1], 1, 1])
    if "mask" not in record:  # a 4-d shape [c1, C, kh, kw] draws the same words
        assert oracle.draw(four) == oracle.draw(record)


# ------------------------------------------------------------------------- layer kinds by hand

X9 = [Q(v) for v in range(1, 10)]  # the 3×3 image 1 … 9, row-major


def _conv(**window):
    layer = {"kind": "conv", "input_shape": [1, 3, 3], "kernel_shape": [2, 2], "stride": [1, 1],
             "padding": [0, 0], "dilation": [1, 1], "weight": [[1, 0, 0, 1]], "bias": [1],
             "activation": "identity"}
    layer.update(window)
    return oracle.target_graph([layer], 9)


@pytest.mark.parametrize("window,expected", [
    ({}, [7, 9, 13, 15]),                                  # a[y][x] + a[y+1][x+1] + 1
    ({"padding": [1, 1], "stride": [2, 2]}, [2, 4, 8, 15]),  # padding pixels are 0
    ({"dilation": [2, 2]}, [11]),                           # a[0][0] + a[2][2] + 1
])
def test_a_convolution_unfolded_by_hand(window, expected):
    assert oracle.output(_conv(**window), X9) == [Q(v) for v in expected]


def test_poolings_by_hand():
    avg = oracle.target_graph([{"kind": "avgpool", "input_shape": [1, 3, 3],
                                "kernel_shape": [2, 2], "stride": [1, 1], "padding": [0, 0],
                                "activation": "identity"}], 9)
    assert oracle.output(avg, X9) == [Q(3), Q(4), Q(6), Q(7)]
    two = X9 + [Q(0)] * 8 + [Q(1)]  # a second channel: eight zeros and a one
    gap = oracle.target_graph([{"kind": "globalavgpool", "input_shape": [2, 3, 3],
                                "activation": "identity"}], 18)
    assert oracle.output(gap, two) == [Q(5), Q(1, 9)]


def test_a_residual_target_by_hand():
    """a1 = relu([[1, −1], [2, 0]] x + [0, −1]); a2 = x0 + x1 + 1/2 + a1[1] (reads x, adds a
    selection of node 1)."""
    g = oracle.target_graph([
        {"weight": [[1, -1], [2, 0]], "bias": [0, -1], "activation": "relu"},
        {"input": 0, "weight": [[1, 1]], "bias": ["1/2"], "activation": "identity",
         "skip": {"from": 1, "kind": "selection", "weight": {"selection": [1], "columns": 2}}},
    ], 2)
    assert oracle.output(g, [Q(1, 2), Q(3, 4)]) == [Q(7, 4)]
    assert oracle.output(g, [Q(1), Q(0)]) == [Q(5, 2)]


def test_a_frozen_network_with_skips_and_a_residual_by_hand():
    """h1 = relu(diag(2, 3) x + (−1, 0)) + x; h2 = (h1_0 + h1_1)/2 + x0 (a residual before
    the identity activation); the first weight by reference (docs/generator.md's first record)."""
    record = {"generator": "exactnorm.shake256.v1", "seed": 0, "key": [1, 0, 0, 0],
              "distribution": "nonzero:8", "shape": [2, 3]}
    f = oracle.frozen_graph([
        {"input": 0, "weight": [[1, 0], [0, 1]], "gamma": {"den": 1, "num": [2, 3]},
         "beta": [-1, 0], "activation": "relu",
         "skip": [{"from": 0, "kind": "identity", "weight": {"identity": 2}}]},
        {"input": 1, "weight": [[1, 1]], "gamma": ["1/2"], "beta": [0],
         "activation": "identity",
         "residual": {"from": 0, "kind": "selection",
                      "weight": {"selection": [0], "columns": 2}}},
        {"input": 0, "weight": {"random": dict(record, shape=[2, 2])}, "gamma": [1, 1],
         "beta": [0, 0], "activation": "identity"},
    ], 2)
    nodes = oracle.values(f, [Q(1), Q(1, 3)])
    assert nodes[1] == [Q(2), Q(4, 3)] and nodes[2] == [Q(8, 3)]
    # the 2 × 2 draw is the first four words of that stream: −8, 4 / −7, 6
    assert nodes[3] == [Q(-8) + Q(4, 3), Q(-7) + Q(6, 3)]


def test_unreadable_documents_are_said_so():
    with pytest.raises(oracle.Unreadable):
        oracle.target_graph([{"weight": [[1, 2, 3]], "bias": [0], "activation": "relu"}], 2)
    with pytest.raises(oracle.Unreadable):
        oracle.target_graph([{"kind": "avgpool", "input_shape": [1, 3, 3], "kernel_shape": [2, 2],
                              "stride": [1, 1], "padding": [1, 1], "activation": "identity"}], 9)


# ------------------------------------------------------------- against the package's evaluation


def _fractions(values: list[fmpq]) -> list[Q]:
    return [Q(int(v.numer()), int(v.denom())) for v in values]


def _real_documents() -> list[tuple[str, dict]]:
    return [(k, d) for k in oracle_documents.CERTIFICATE_KINDS if k != oracle_documents.RESNET_KIND
            for d in oracle_documents.documents(k)]


@pytest.mark.parametrize("kind,doc", _real_documents(), ids=lambda v: v if isinstance(v, str)
                         else "")
def test_the_oracle_and_the_package_evaluate_alike(kind, doc):
    """Independent paths agree: the package's reader and exact evaluation (``read_networks``,
    FLINT) and the oracle (Fractions, its own reading and draws), node for node at the output,
    at box vertices and random points; and the oracle finds ``f = g`` on a real certificate."""
    target, frozen = read_networks(doc)
    cert = oracle.read_certificate(doc)
    for x in oracle.points(cert.box, randoms=3, seed=5, max_vertices=4):
        xq = [fmpq(v.numerator, v.denominator) for v in x]
        assert oracle.output(cert.network, x) == _fractions(frozen.evaluate(xq)), (kind, x)
        assert oracle.output(cert.target, x) == _fractions(target.evaluate(xq)), (kind, x)
    assert oracle.claim_fails(doc, randoms=3, max_vertices=8) is None


@pytest.mark.parametrize("kind", ["dense v3", "residual conv v3", "channel blocks v3"])
def test_the_oracle_catches_a_changed_output_shift(kind):
    doc = copy.deepcopy(oracle_documents.documents(kind)[-1])
    last = doc["network"]["layers"][-1]
    beta = oracle.vector(last["beta"])
    last["beta"] = [str(beta[0] + Q(1, 7))] + [str(b) for b in beta[1:]]
    said = oracle.claim_fails(doc, randoms=1, max_vertices=2)
    assert said is not None and said.startswith("f != g at")
