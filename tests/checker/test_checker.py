"""The independent certificate checker (docs/certificate-format.md), pure and python-flint
modes, on hand-built certificates whose verdicts follow from reasoning written next to them.

Every call goes through :func:`both`, which runs both checkers and demands the *same* Verdict
(ok, rule, layer, neuron and message).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import gzip
import itertools
import json
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exactnorm import checker, checker_flint
from exactnorm.checker import CertificateError, Verdict
from tests.helpers import both

ROOT = Path(__file__).resolve().parents[2]

# ----------------------------------------------------------------------------- builders


def cert(lower, upper, target, layers, checkpoints):
    """A version-1 certificate; ``target`` is a list of (W, b, activation)."""
    return {"format": "exactnorm.certificate", "version": 1,
            "domain": {"lower": lower, "upper": upper},
            "target": {"layers": [{"weight": W, "bias": b, "activation": a}
                                  for W, b, a in target]},
            "network": {"layers": layers, "checkpoints": checkpoints},
            "provenance": {"construction": "by hand (tests/checker/test_checker.py)"}}


def layer(inp, V, gamma, beta, act, skip=None):
    out = {"input": inp, "weight": V, "gamma": gamma, "beta": beta, "activation": act}
    if skip is not None:
        out["skip"] = skip
    return out


# ----------------------------------------------------------------------------- valid certificates
# Each function returns a fresh dict; the comment derives the verdict.


def case_a():
    """g(x) = 2x + 1 on [0, 1]. Layer 1: u = 2x + 3 in [3, 5], ReLU stable (active), h1 = 2x + 3.
    Layer 2 (checkpoint): u = h1 - 2 = 2x + 1 = W x + b, identity = identity."""
    return cert([0], [1], [([[2]], [1], "identity")],
                [layer(0, [[1]], [2], [3], "relu"), layer(1, [[1]], [1], [-2], "identity")], [2])


def case_b():
    """g(x) = relu(3x) on [-1, 2], with an identity skip inside the segment.
    h1 = relu(x + 1) = x + 1 (min 0 >= 0); h2 = h1 + I·h1 = 2x + 2;
    checkpoint u3 = (3/2)·h2 - 3 = 3x, relu = relu."""
    return cert(["-1"], ["2"], [([[3]], [0], "relu")],
                [layer(0, [[1]], [1], [1], "relu"),
                 layer(1, [[1]], [1], [0], "identity",
                       skip=[{"from": 1, "weight": [[1]], "kind": "identity"}]),
                 layer(2, [[1]], ["3/2"], [-3], "relu")], [3])


def case_b2():
    """g(x) = x0 + 2 x1 + 5 on [0, 1]^2, with a selection skip (a zero row) and a random skip.
    h1 = relu(x) = x (min 0); h2 = h1 + S x + R h1 with S = [[0,0],[0,1]], R = [[1/2,0],[0,0]]:
    h2 = (3/2 x0, 2 x1); checkpoint u3 = (2/3)(3/2 x0) + 2 x1 + 5."""
    return cert([0, 0], [1, 1], [([[1, 2]], [5], "identity")],
                [layer(0, [[1, 0], [0, 1]], [1, 1], [0, 0], "relu"),
                 layer(1, [[1, 0], [0, 1]], [1, 1], [0, 0], "identity",
                       skip=[{"from": 0, "weight": [[0, 0], [0, 1]], "kind": "selection"},
                             {"from": 1, "weight": [["1/2", 0], [0, 0]], "kind": "random"}]),
                 layer(2, [["2/3", 1]], [1], [5], "identity")], [3])


def case_c():
    """g(x) = x on [0, 1] with a dead ReLU. Layer 1 neuron 0: u = x in [0, 1] (min 0, active);
    neuron 1: u = -x - 1 in [-2, -1] (max <= 0, constant 0). Checkpoint: x + 5·0 = x."""
    return cert([0], [1], [([[1]], [0], "identity")],
                [layer(0, [[1], [1]], [1, -1], [0, -1], "relu"),
                 layer(1, [[1, 5]], [1], [0], "identity")], [2])


def case_d():
    """g(x) = x0 + x1 on [0, 1] x [2, 2] (a degenerate coordinate). Layer 1 neuron 0:
    u = x0 - x1 + 2 = x0 in [0, 1], stable only because x1 = 2 exactly; neuron 1: u = x1 = 2.
    Checkpoint: (x0 - x1 + 2) + 2 x1 - 2 = x0 + x1."""
    return cert([0, 2], [1, 2], [([[1, 1]], [0], "identity")],
                [layer(0, [[1, -1], [0, 1]], [1, 1], [2, 0], "relu"),
                 layer(1, [[1, 2]], [1], [-2], "identity")], [2])


def case_e():
    """g(x) = relu(x) + relu(-x) = |x| on [-1, 1], target relu then identity.
    Layer 1 is checkpoint 1: u = (x, -x) = W1 x + b1, relu = relu. B1 = [0, 1]^2.
    Segment 2, a = h1: layer 2 u = a0 + a1 in [0, 2] on B1 (stable); checkpoint 3: a0 + a1."""
    return cert([-1], [1], [([[1], [-1]], [0, 0], "relu"), ([[1, 1]], [0], "identity")],
                [layer(0, [[1], [-1]], [1, 1], [0, 0], "relu"),
                 layer(1, [[1, 1]], [1], [0], "relu"),
                 layer(2, [[1]], [1], [0], "identity")], [1, 3])


def case_f():
    """Decimals and fractions: g(x) = x/2 - 1/4 on [-0.5, 1.25]. Layer 1: u = x/2 + 0.25 in
    [0, 7/8] (stable); checkpoint: u - 0.5 = x/2 - 1/4."""
    return cert(["-0.5"], ["1.25"], [([["0.5"]], ["-1/4"], "identity")],
                [layer(0, [[1]], ["1/2"], ["0.25"], "relu"),
                 layer(1, [[1]], [1], ["-0.5"], "identity")], [2])


def case_g():
    """Numbers with 5001 digits: case A with gamma1 = 10^5000, V2 = 2/10^5000 and
    beta2 = 1 - 6/10^5000: u2 = (2/10^5000)(10^5000 x + 3) + 1 - 6/10^5000 = 2x + 1."""
    ten = "1" + "0" * 5000  # 10^5000, written without int -> str (the interpreter's limit)
    return cert([0], [1], [([[2]], [1], "identity")],
                [layer(0, [[1]], [ten], [3], "relu"),
                 layer(1, [["2/" + ten]], [1], ["9" * 4999 + "4/" + ten], "identity")], [2])


def case_h():
    """A dead *target* neuron: g(x) = relu(x) + relu(x - 2) on [0, 1]. Target layer 1 gives
    pre-activations x in [0, 1] and x - 2 in [-2, -1]; relu clamps BOTH ends at 0, so
    B1 = [0, 1] x [0, 0]. Segment 2: u = a0 + a1 in [0, 1] (stable; with the lower end unclamped
    it would reach -2); checkpoint 3: a0 + a1."""
    return cert([0], [1], [([[1], [1]], [0, -2], "relu"), ([[1, 1]], [0], "identity")],
                [layer(0, [[1], [1]], [1, 1], [0, -2], "relu"),
                 layer(1, [[1, 1]], [1], [0], "relu"),
                 layer(2, [[1]], [1], [0], "identity")], [1, 3])


def case_i():
    """g(x) = x on [0, 1] through identity-activation layers, an identity skip and mixed
    denominators: h1 = x + 1; h2 = (1/3) h1 + I h1 = (4/3)(x + 1); checkpoint
    (1/4)(3 h2) - 1 = x."""
    return cert([0], [1], [([[1]], [0], "identity")],
                [layer(0, [[1]], [1], [1], "identity"),
                 layer(1, [[1]], ["1/3"], [0], "identity",
                       skip=[{"from": 1, "weight": [[1]], "kind": "identity"}]),
                 layer(2, [[3]], ["1/4"], [-1], "identity")], [3])


VALID = {"a": case_a, "b": case_b, "b2": case_b2, "c": case_c, "d": case_d, "e": case_e,
         "f": case_f, "g": case_g, "h": case_h, "i": case_i}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_certificates(name):
    v = both(VALID[name]())
    assert v.ok and v.rule == "valid" and v.layer is None and v.neuron is None, v
    n_target = len(VALID[name]()["target"]["layers"])
    n_layers = len(VALID[name]()["network"]["layers"])
    assert v.facts["segments"] == n_target and v.facts["frozen_layers"] == n_layers
    assert f"{n_target} segment(s), {n_layers} frozen layer(s)" in v.message


def test_valid_certificates_really_compute_the_target():
    """Independent evaluation (Fractions, no checker code) on a grid of each box."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # case G has 5001-digit numbers
    try:
        for name, make in VALID.items():
            assert all(f == g for f, g in evaluate_pairs(make())), name
    finally:
        sys.set_int_max_str_digits(old)


def test_unparsed_json_text_and_gzip_file(tmp_path):
    doc = case_b2()
    assert both(json.dumps(doc)).ok
    plain, packed = tmp_path / "c.json", tmp_path / "c.json.gz"
    plain.write_text(json.dumps(doc))
    packed.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    for path in (plain, packed):
        assert checker.check_file(str(path)) == checker_flint.check_file(str(path))
        assert checker.check_file(str(path)).ok
    missing = checker.check_file(str(tmp_path / "nope.json"))
    assert not missing.ok and missing.rule == "format"
    assert "no such certificate file" in missing.message
    assert missing == checker_flint.check_file(str(tmp_path / "nope.json"))
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b not gzip")
    assert checker.check_file(str(broken)).rule == "format"


# ----------------------------------------------------------------------------- failing certificates


def edit(make, fn):
    doc = make()
    fn(doc)
    return doc


def net(doc, j):
    return doc["network"]["layers"][j - 1]


def setitem(obj, key, value):
    obj[key] = value


# (id, document or text, rule, layer, neuron, a message fragment), each derived by hand.
FAILING = [
    # format
    ("not-an-object", [], "format", None, None, "JSON object"),
    ("text-not-object", "[1, 2]", "format", None, None, "JSON object"),
    ("bad-json", '{"format": ', "format", None, None, "not valid JSON"),
    ("duplicate-key", '{"format": "exactnorm.certificate", "format": 1}', "format", None, None,
     'duplicated key "format"'),
    ("format-name", edit(case_a, lambda d: setitem(d, "format", "other")), "format", None, None,
     "exactnorm.certificate"),
    ("version-4", edit(case_a, lambda d: setitem(d, "version", 4)), "format", None, None,
     "version 4"),
    ("version-bool", edit(case_a, lambda d: setitem(d, "version", True)), "format", None, None,
     "version true"),
    ("version-string", edit(case_a, lambda d: setitem(d, "version", "1")), "format", None, None,
     'version "1"'),
    ("no-network", edit(case_a, lambda d: d.pop("network")), "format", None, None,
     'certificate has no "network"'),
    ("no-gamma", edit(case_a, lambda d: net(d, 1).pop("gamma")), "format", 1, None,
     'network layer 1 has no "gamma"'),
    ("layer-not-dict", edit(case_a, lambda d: d["network"]["layers"].__setitem__(0, 7)),
     "format", 1, None, 'network layer 1 must be a JSON object, got 7'),
    ("tanh", edit(case_a, lambda d: setitem(net(d, 1), "activation", "tanh")), "format", None,
     None, 'activation "tanh" is not relu/identity'),
    ("input-bool", edit(case_a, lambda d: setitem(net(d, 2), "input", True)), "format", 2,
     None, 'network layer 2: "input" must be an integer, got true'),
    ("checkpoint-bool", edit(case_a, lambda d: setitem(d["network"], "checkpoints", [True])),
     "format", None, None, "checkpoint must be an integer"),
    # number (Python objects on the dict path; tokens on the text path)
    ("py-float", edit(case_a, lambda d: setitem(net(d, 1), "gamma", [2.0])), "number", None,
     None, "network layer 1 gamma[0]: 2.0 is not an exact number"),
    ("bool", edit(case_a, lambda d: setitem(net(d, 1), "beta", [True])), "number", None, None,
     "beta[0]: true"),
    ("null", edit(case_a, lambda d: setitem(d["domain"], "upper", [None])), "number", None,
     None, "domain.upper[0]: null"),
    ("zero-denominator", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["1/0"])), "number",
     None, None, "zero denominator"),
    ("exponent", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["1e999"])), "number", None,
     None, '"1e999" is not an exact number'),
    ("letters", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["abc"])), "number", None,
     None, '"abc"'),
    ("empty-string", edit(case_a, lambda d: setitem(net(d, 1), "beta", [""])), "number", None,
     None, '"" is not'),
    ("trailing-newline", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["3\n"])), "number",
     None, None, "is not an exact number"),
    ("blank", edit(case_a, lambda d: setitem(net(d, 1), "beta", [" 3"])), "number", None, None,
     "is not an exact number"),
    ("negative-denominator", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["1/-2"])),
     "number", None, None, '"1/-2"'),
    ("plus-sign", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["+3"])), "number", None,
     None, '"+3"'),
    ("lone-dot", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["-."])), "number", None,
     None, '"-."'),
    ("arabic-digit", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["\u0663"])), "number",
     None, None, "is not an exact number"),
    ("json-float", json.dumps(case_a()).replace('"gamma": [2]', '"gamma": [1.5]'), "number",
     None, None, 'JSON "1.5" is not an exact number'),
    ("json-exponent", json.dumps(case_a()).replace('"gamma": [2]', '"gamma": [1e3]'), "number",
     None, None, '"1e3"'),
    ("json-nan", json.dumps(case_a()).replace('"gamma": [2]', '"gamma": [NaN]'), "number",
     None, None, '"NaN"'),
    ("json-infinity", json.dumps(case_a()).replace('"gamma": [2]', '"gamma": [-Infinity]'),
     "number", None, None, '"-Infinity"'),
    ("too-many-digits", edit(case_a, lambda d: setitem(net(d, 1), "beta", ["7" * 200_001])),
     "number", None, None, "more than 200000 digits"),
    ("too-many-digits-q", edit(case_a, lambda d: setitem(net(d, 1), "beta",
                                                         ["1/" + "7" * 200_001])),
     "number", None, None, "more than 200000 digits"),
    # shape
    ("ragged", edit(case_b2, lambda d: setitem(net(d, 1), "weight", [[1, 0], [0]])), "shape",
     None, None, "network layer 1 weight row 1 has 1 entries, expected 2"),
    ("empty-row", edit(case_a, lambda d: setitem(net(d, 1), "weight", [[]])), "shape", None,
     None, "network layer 1 weight row 0 has 0 entries, expected 1"),
    ("empty-matrix", edit(case_a, lambda d: setitem(net(d, 1), "weight", [])), "shape", None,
     None, "must be a non-empty list of rows"),
    ("row-not-list", edit(case_a, lambda d: setitem(net(d, 1), "weight", [1])), "shape", None,
     None, "row 0 is not a list"),
    ("gamma-length", edit(case_a, lambda d: setitem(net(d, 1), "gamma", [2, 2])), "shape", None,
     None, "network layer 1 gamma has length 2, expected 1"),
    ("bias-length", edit(case_a, lambda d: setitem(d["target"]["layers"][0], "bias", [1, 1])),
     "shape", None, None, "target layer 1 bias has length 2, expected 1"),
    ("target-chain", edit(case_e, lambda d: setitem(d["target"]["layers"][1], "weight", [[1]])),
     "shape", None, None, "target layer 2 weight row 0 has 1 entries, expected 2"),
    ("network-chain", edit(case_e, lambda d: setitem(net(d, 2), "weight", [[1]])), "shape", None,
     None, "network layer 2 weight row 0 has 1 entries, expected 2"),
    ("domain-lengths", edit(case_d, lambda d: setitem(d["domain"], "upper", [1])), "shape", None,
     None, "domain.upper has length 1, expected 2"),
    ("no-target-layers", edit(case_a, lambda d: setitem(d["target"], "layers", [])), "shape",
     None, None, "target has no layers"),
    ("no-network-layers", edit(case_a, lambda d: setitem(d["network"], "layers", [])), "shape",
     None, None, "network has no layers"),
    ("skip-shape", edit(case_b, lambda d: setitem(net(d, 2)["skip"][0], "weight", [[1, 0]])),
     "shape", None, None, "network layer 2 skip 0 weight row 0 has 2 entries, expected 1"),
    # domain: lower > upper, exact numbers in the message
    ("box-inverted", edit(case_f, lambda d: setitem(d["domain"], "upper", ["-0.75"])), "domain",
     None, None, "domain: lower[0] = -1/2 > upper[0] = -3/4"),
    # checkpoints
    ("checkpoint-count", edit(case_a, lambda d: setitem(d["network"], "checkpoints", [1, 2])),
     "checkpoints", None, None, "2 checkpoints for 1 target layers"),
    ("checkpoint-last", edit(case_a, lambda d: setitem(d["network"], "checkpoints", [1])),
     "checkpoints", None, None, "last checkpoint 1 is not the last layer 2"),
    ("checkpoint-repeat", edit(case_e, lambda d: setitem(d["network"], "checkpoints", [3, 3])),
     "checkpoints", None, None, "strictly increase within 1..3"),
    ("checkpoint-zero", edit(case_e, lambda d: setitem(d["network"], "checkpoints", [0, 3])),
     "checkpoints", None, None, "strictly increase"),
    ("checkpoint-beyond", edit(case_e, lambda d: setitem(d["network"], "checkpoints", [1, 4])),
     "checkpoints", None, None, "strictly increase"),
    ("checkpoints-not-list", edit(case_a, lambda d: setitem(d["network"], "checkpoints", 2)),
     "format", None, None, '"checkpoints" must be an array, got 2'),
    # segment: layer 2 of case E lies in segment 2 = (1, 3]; it may read nodes 1 and 2 only
    ("reads-previous-segment",
     edit(case_e, lambda d: net(d, 2).update(input=0, weight=[[1]])), "segment", 2, None,
     "network layer 2 reads node 0, outside its segment [1, 2)"),
    ("skip-from-previous-segment",
     edit(case_e, lambda d: setitem(net(d, 2), "skip", [{"from": 0, "weight": [[1]],
                                                         "kind": "random"}])),
     "segment", 2, None, "network layer 2 reads node 0, outside its segment [1, 2)"),
    ("reads-forward", edit(case_a, lambda d: setitem(net(d, 2), "input", 2)), "segment", 2, None,
     "network layer 2 reads node 2, not an earlier node"),
    ("reads-negative", edit(case_a, lambda d: setitem(net(d, 1), "input", -1)), "segment", 1,
     None, "network layer 1 reads node -1"),
    ("skip-forward", edit(case_b, lambda d: setitem(net(d, 2)["skip"][0], "from", 3)),
     "segment", 2, None, "network layer 2 skip 0 reads node 3, not an earlier node"),
    # skip
    ("checkpoint-skip",
     edit(case_a, lambda d: setitem(net(d, 2), "skip", [{"from": 1, "weight": [[1]],
                                                         "kind": "identity"}])),
     "skip", 2, None, "checkpoint layer 2 has a skip connection"),
    ("unknown-kind", edit(case_b, lambda d: setitem(
        net(d, 2)["skip"][0], "kind", "learned")), "skip", 2, None,
     'kind "learned" is not one of'),
    ("identity-not-identity", edit(case_b, lambda d: setitem(net(d, 2)["skip"][0], "weight",
                                                             [[2]])),
     "skip", 2, None, "network layer 2 skip 0: kind identity but not an identity matrix"),
    ("identity-not-square", edit(case_b2, lambda d: setitem(net(d, 2)["skip"][1], "kind",
                                                            "identity")),
     "skip", 2, None, "skip 1: kind identity but not an identity matrix"),
    ("identity-wide", cert([0, 0], [1, 1], [([[1, 1]], [0], "identity")],
                           [layer(0, [[1, 1]], [1], [0], "identity",
                                  skip=[{"from": 0, "weight": [[1, 0]], "kind": "identity"}]),
                            layer(1, [[1]], [1], [0], "identity")], [2]),
     "skip", 1, None, "network layer 1 skip 0: kind identity but not an identity matrix"),
    ("selection-two-ones", edit(case_b2, lambda d: setitem(net(d, 2)["skip"][0], "weight",
                                                           [[1, 1], [0, 0]])),
     "skip", 2, None, "kind selection but row 0 is not a 0/1 row with at most one 1"),
    ("selection-two", edit(case_b2, lambda d: setitem(net(d, 2)["skip"][0], "weight",
                                                      [[0, 0], [0, 2]])),
     "skip", 2, None, "kind selection but row 1"),
    ("selection-half", edit(case_b2, lambda d: setitem(net(d, 2)["skip"][0], "weight",
                                                       [[0, 0], ["1/2", "1/2"]])),
     "skip", 2, None, "kind selection but row 1"),
    ("skip-not-list", edit(case_b, lambda d: setitem(net(d, 2), "skip", {"from": 1})),
     "format", 2, None, 'network layer 2: "skip" must be an array'),
    ("skip-no-kind", edit(case_b, lambda d: net(d, 2)["skip"][0].pop("kind")), "format", 2,
     None, 'network layer 2 skip[0] has no "kind"'),
    # stability: exact min and max in the message
    ("unstable", edit(case_a, lambda d: setitem(net(d, 1), "beta", [-1])), "stability", 1, 0,
     "network layer 1 neuron 0 is not stable on the box: min -1 < 0 < max 1"),
    ("unstable-second-neuron", edit(case_c, lambda d: setitem(net(d, 1), "beta", [0, "1/2"])),
     "stability", 1, 1, "neuron 1 is not stable on the box: min -1/2 < 0 < max 1/2"),
    ("degenerate-box-widened", edit(case_d, lambda d: setitem(d["domain"], "upper", [1, 3])),
     "stability", 1, 0, "neuron 0 is not stable on the box: min -1 < 0 < max 1"),
    # case E segment 2 uses B1 = [0,1]^2: u = a0 + a1 - 1 in [-1, 1]
    ("unstable-on-B1", edit(case_e, lambda d: setitem(net(d, 2), "beta", [-1])), "stability", 2,
     0, "network layer 2 neuron 0 is not stable on the box: min -1 < 0 < max 1"),
    # with target layer 1 (and network layer 1) identity, B1 = [-1,1]^2: u = a0 + a1 in [-2, 2]
    ("box-depends-on-sigma1",
     edit(case_e, lambda d: (setitem(d["target"]["layers"][0], "activation", "identity"),
                             setitem(net(d, 1), "activation", "identity"))),
     "stability", 2, 0, "min -2 < 0 < max 2"),
    # case H with beta2 = -1/2: u = a0 + a1 - 1/2 on B1 = [0, 1] x [0, 0] is in [-1/2, 1/2]; the
    # upper end of a1 is max(-1, 0) = 0 (unclamped, -1 would make the neuron look dead)
    ("unstable-after-dead-target-neuron", edit(case_h, lambda d: setitem(net(d, 2), "beta",
                                                                         ["-1/2"])),
     "stability", 2, 0, "network layer 2 neuron 0 is not stable on the box: min -1/2 < 0 < max "
                        "1/2"),
    # activation
    ("checkpoint-activation", edit(case_a, lambda d: setitem(net(d, 2), "activation", "relu")),
     "activation", 2, None, "checkpoint layer 2 has activation relu, target layer 1 has identity"),
    ("target-activation", edit(case_e, lambda d: setitem(d["target"]["layers"][0], "activation",
                                                         "identity")),
     "activation", 1, None, "checkpoint layer 1 has activation relu, target layer 1 has identity"),
    # width
    ("checkpoint-width", edit(case_a, lambda d: net(d, 2).update(weight=[[1], [1]], gamma=[1, 1],
                                                                 beta=[-2, -2])),
     "width", 2, None, "checkpoint layer 2 has width 2, target layer 1 has 1"),
    # identity: first differing entry, row-major, weights of a row before its bias
    ("identity-weight", edit(case_a, lambda d: setitem(d["target"]["layers"][0], "weight",
                                                       [[3]])),
     "identity", 2, 0, "checkpoint layer 2: pre-activation weight [0][0] is 2, target layer 1 "
                       "has 3"),
    ("identity-bias", edit(case_a, lambda d: setitem(d["target"]["layers"][0], "bias", ["1.5"])),
     "identity", 2, 0, "checkpoint layer 2: pre-activation bias [0] is 1, target layer 1 has 3/2"),
    ("identity-second-entry", edit(case_d, lambda d: setitem(d["target"]["layers"][0], "weight",
                                                             [[1, "1/3"]])),
     "identity", 2, 0, "pre-activation bias [0] (with the coordinates where lower = upper "
                       "folded in) is 2, target layer 1 has 2/3"),
    ("identity-dead-neuron-used", edit(case_c, lambda d: setitem(net(d, 1), "beta", [0, 2])),
     "identity", 2, 0, "pre-activation weight [0][0] is -4, target layer 1 has 1"),
    ("identity-segment-1", edit(case_e, lambda d: setitem(net(d, 1), "gamma", [1, 2])),
     "identity", 1, 1, "checkpoint layer 1: pre-activation weight [1][0] is -2, target layer 1 "
                       "has -1"),
    # bias 1 + 6/10^5000 = (5·10^4999 + 3)/(5·10^4999): 10001 characters, abbreviated
    ("identity-big", edit(case_g, lambda d: setitem(net(d, 2), "beta", [1])), "identity", 2, 0,
     "pre-activation bias [0] is (16609-bit integer)/(16609-bit integer), target layer 1 has 1"),
]


@pytest.mark.parametrize("name,doc,rule,layer_,neuron,fragment", FAILING,
                         ids=[c[0] for c in FAILING])
def test_failing_certificates(name, doc, rule, layer_, neuron, fragment):
    v = both(doc)
    assert not v.ok
    assert (v.rule, v.layer, v.neuron) == (rule, layer_, neuron), v
    assert fragment in v.message, v.message


def test_every_rule_is_exercised():
    rules = {c[2] for c in FAILING}
    assert rules == {"format", "number", "shape", "domain", "checkpoints", "segment", "skip",
                     "stability", "identity", "activation", "width"}


def test_structure_before_arithmetic():
    """Layer 2 of case E is unstable (segment 2) AND layer 3 reads node 0 (outside segment 2):
    the structural rule decides, although the unstable neuron comes first."""
    def fault(d):
        net(d, 2)["beta"] = [-1]
        net(d, 3).update(input=0, weight=[[1]])
    v = both(edit(case_e, fault))
    assert (v.rule, v.layer) == ("segment", 3)


def test_first_failing_neuron_and_layer():
    """Two unstable neurons in case C (both betas moved): the lower index is reported."""
    v = both(edit(case_c, lambda d: setitem(net(d, 1), "beta", ["-1/2", "1/2"])))
    assert (v.rule, v.layer, v.neuron) == ("stability", 1, 0)
    assert "min -1/2 < 0 < max 1/2" in v.message


def test_max_digits_parameter():
    """max_digits bounds string numbers and integer literals; the interpreter limit is restored."""
    text = json.dumps(edit(case_a, lambda d: setitem(net(d, 1), "beta", ["12345/2"])))
    assert both(text).rule == "identity"
    for module in (checker, checker_flint):
        assert module.check_certificate_text(text, max_digits=5).rule == "identity"
        assert module.check_certificate_text(text, max_digits=4).rule == "number"
        assert module.check_certificate_text(text.replace('"12345/2"', "3"), max_digits=4).ok
    literal = json.dumps(case_a()).replace('"beta": [3]', '"beta": [123456]')
    v = both(literal)
    assert v.rule == "identity"  # parsed, then wrong; with max_digits = 5 refused while parsing
    with pytest.raises(CertificateError) as err:
        checker.parse_certificate_text(literal, max_digits=5)
    assert err.value.rule == "number" and isinstance(err.value, ValueError)
    # provenance text is not a number: long words there are fine
    doc = case_a()
    doc["provenance"]["construction"] = "x" * 50
    assert checker.check_certificate_text(json.dumps(doc), max_digits=5).ok
    old = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(5000)
        assert both(json.dumps(case_g())).ok
        assert sys.get_int_max_str_digits() == 5000
        v = both(json.dumps(edit(case_g, lambda d: setitem(net(d, 2), "beta", [1]))))
        assert v.rule == "identity" and sys.get_int_max_str_digits() == 5000
    finally:
        sys.set_int_max_str_digits(old)


def test_parse_errors_are_certificate_errors():
    for text, rule in [("1.5", "number"), ('{"a": 1, "a": 2}', "format"), ("{", "format"),
                       ('{"a": NaN}', "number"), ("[]", "format")]:
        with pytest.raises(CertificateError) as err:
            checker.parse_certificate_text(text)
        assert err.value.rule == rule and "\n" not in str(err.value)
    assert checker.parse_certificate_text('{"n": "-7/3"}') == {"n": "-7/3"}


def test_numbers_are_exact():
    assert checker.number("-7/14", "x") == Fraction(-1, 2)
    assert checker.number("-1.25", "x") == Fraction(-5, 4)
    assert checker.number(".5", "x") == checker.number("0.5", "x") == Fraction(1, 2)
    assert checker.number("5.", "x") == 5
    assert checker.number("-0", "x") == 0
    assert checker.number(10**5000, "x") == 10**5000


def test_verdict_is_frozen():
    v = both(case_a())
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.ok = False  # type: ignore[misc]
    assert dataclasses.fields(Verdict)[0].name == "ok"


# ----------------------------------------------------------------------------- mutations


def numeric_slots(doc):
    """Paths of every numeric entry: domain, target W and b, network V, gamma, beta, skips."""
    out = [("domain", side, k) for side in ("lower", "upper")
           for k in range(len(doc["domain"][side]))]
    for i, L in enumerate(doc["target"]["layers"]):
        out += [("target", "layers", i, "weight", r, c) for r, row in enumerate(L["weight"])
                for c in range(len(row))]
        out += [("target", "layers", i, "bias", r) for r in range(len(L["bias"]))]
    for j, L in enumerate(doc["network"]["layers"]):
        base = ("network", "layers", j)
        out += [(*base, "weight", r, c) for r, row in enumerate(L["weight"])
                for c in range(len(row))]
        out += [(*base, key, r) for key in ("gamma", "beta") for r in range(len(L[key]))]
        for t, s in enumerate(L.get("skip", [])):
            out += [(*base, "skip", t, "weight", r, c) for r, row in enumerate(s["weight"])
                    for c in range(len(row))]
    return out


def bump(doc, path):
    """A copy of ``doc`` with the entry at ``path`` increased by 1 (written as "p/q")."""
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = str(Fraction(node[path[-1]]) + 1)
    return out


def short_path(path):
    """("network", "layers", 0, "beta", 1) -> "N1.beta[1]" (1-based layers, as in messages)."""
    if path[0] == "domain":
        return f"{path[1]}[{path[2]}]"
    head = ("T" if path[0] == "target" else "N") + str(path[2] + 1)
    return head + "." + path[3] + "".join(f"[{k}]" if isinstance(k, int) else f".{k}"
                                          for k in path[4:])


# Mutations by +1 that the checker must ACCEPT, with the reason; every other one is rejected.
#  * "box": a domain bound moved so that every ReLU stays stable on the new box; the affine maps
#    do not depend on the box, so the same exact identity holds there.
#  * "dead": the entry only touches case C's neuron 1 of layer 1, which stays constant 0
#    (u = -2x - 1, u = -1 or u = -x, max <= 0 on [0, 1]), or multiplies that zero (V2[0][1]).
HARMLESS = {
    "a": {"lower[0]": "box", "upper[0]": "box"},
    "b": {"lower[0]": "box", "upper[0]": "box"},
    "b2": {"lower[0]": "box", "lower[1]": "box", "upper[0]": "box", "upper[1]": "box"},
    "c": {"lower[0]": "box", "upper[0]": "box", "N1.weight[1][0]": "dead",
          "N1.gamma[1]": "dead", "N1.beta[1]": "dead", "N2.weight[0][1]": "dead"},
    # D: lower[1] 2 -> 3 > upper[1] (domain); upper[1] 2 -> 3 unstable neuron 0 (stability)
    "d": {"lower[0]": "box", "upper[0]": "box"},
    "e": {"lower[0]": "box", "upper[0]": "box"},
    "f": {"lower[0]": "box", "upper[0]": "box"},
    # H: N2.weight[0][1] 1 -> 2 gives a0 + 2 a1 and T2.weight[0][1] 1 -> 2 gives target a0 + 2 a1:
    # equal to the other side on the box B1 = [0, 1] x [0, 0] (a1 = 0 there), and the identity
    # rule compares maps on the box, so both true claims are accepted ("degenerate").
    "h": {"lower[0]": "box", "upper[0]": "box", "N2.weight[0][1]": "degenerate",
          "T2.weight[0][1]": "degenerate"},
    "i": {"lower[0]": "box", "upper[0]": "box"},
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_every_plus_one_mutation_rejected_or_proven_harmless(name):
    doc = VALID[name]()
    accepted = set()
    for path in numeric_slots(doc):
        mutant = bump(doc, path)
        v = both(mutant)
        if v.ok:
            accepted.add(short_path(path))
            # recompute independently: f = g exactly on a grid of the mutated box
            assert all(f == g for f, g in evaluate_pairs(mutant)), path
        else:
            assert v.rule in ("domain", "skip", "stability", "identity"), (path, v)
    assert accepted == set(HARMLESS[name]), name


def test_harmful_mutants_really_differ():
    """Spot check that rejections are not over-cautious where it is easy to see: the rejected
    gamma/beta mutants of case A change f at some grid point."""
    doc = case_a()
    for path in [("network", "layers", 0, "beta", 0), ("network", "layers", 1, "gamma", 0)]:
        mutant = bump(doc, path)
        assert not both(mutant).ok
        assert any(f != g for f, g in evaluate_pairs(mutant))


def test_structural_mutations():
    """Checkpoint moves and activation flips of case E (both modes agree on each)."""
    def with_checkpoints(cps):
        return edit(case_e, lambda d: setitem(d["network"], "checkpoints", cps))

    # [2, 3]: layer 1 is now inside segment 1, and relu of (x, -x) on [-1, 1] is unstable
    v = both(with_checkpoints([2, 3]))
    assert (v.rule, v.layer, v.neuron) == ("stability", 1, 0)
    for cps in ([1, 2], [0, 3], [1, 4], [3]):
        assert both(with_checkpoints(cps)).rule == "checkpoints"
    flips = []
    for j in (1, 2, 3):
        doc = case_e()
        net(doc, j)["activation"] = "identity" if j != 3 else "relu"
        flips.append(both(doc))
    # layers 1 and 3 are checkpoints: sigma must match the target's
    assert [(v.rule, v.layer) for v in (flips[0], flips[2])] == [("activation", 1),
                                                                 ("activation", 3)]
    # layer 2 relu -> identity: u = a0 + a1 >= 0 on B1 passes through unchanged; still valid
    assert flips[1].ok
    assert all(f == g for f, g in evaluate_pairs(edit(case_e, lambda d: setitem(
        net(d, 2), "activation", "identity"))))


# ------------------------------------------------------------------------ independent evaluation


def evaluate_pairs(doc):
    """(f(x), g(x)) on a grid of the box, computed directly from the document with Fractions."""
    lower = [Fraction(v) for v in doc["domain"]["lower"]]
    upper = [Fraction(v) for v in doc["domain"]["upper"]]
    ts = [Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(5, 7), Fraction(1)]
    for t in itertools.product(ts, repeat=len(lower)):
        x = [lo + s * (hi - lo) for lo, hi, s in zip(lower, upper, t)]
        yield run_network(doc, x), run_target(doc, x)


def affine(W, x, b):
    return [sum((Fraction(w) * v for w, v in zip(row, x)), Fraction(0)) + Fraction(c)
            for row, c in zip(W, b)]


def act(name, u):
    return [max(v, Fraction(0)) for v in u] if name == "relu" else u


def run_target(doc, x):
    a = x
    for L in doc["target"]["layers"]:
        a = act(L["activation"], affine(L["weight"], a, L["bias"]))
    return a


def run_network(doc, x):
    h = [x]
    for L in doc["network"]["layers"]:
        v = affine(L["weight"], h[L["input"]], [0] * len(L["weight"]))
        u = [Fraction(g) * t + Fraction(b) for g, t, b in zip(L["gamma"], v, L["beta"])]
        out = act(L["activation"], u)
        for s in L.get("skip", []):
            out = [p + q for p, q in zip(out, affine(s["weight"], h[s["from"]],
                                                     [0] * len(out)))]
        h.append(out)
    return h[-1]


# ----------------------------------------------------------------------------- command line, file


def test_main_exit_codes_and_one_line(tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json.gz"
    good.write_text(json.dumps(case_b()))
    bad.write_bytes(gzip.compress(json.dumps(edit(case_a, lambda d: setitem(
        net(d, 1), "beta", [-1]))).encode()))
    assert checker.main([str(good)]) == 0
    assert checker.main([str(good), "--pure"]) == 0
    assert checker.main([str(bad), "--pure"]) == 1
    assert checker.main([]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("VALID: f = g on [") and len(out) == 3
    assert out[2].startswith("INVALID [stability]: network layer 1 neuron 0")


def test_module_entry_point(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(case_c()))
    res = subprocess.run([sys.executable, "-m", "exactnorm.checker", str(path)], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout.startswith("VALID"), res.stderr


def test_checker_is_standalone(tmp_path):
    """The checker package imports only the standard library and itself, and runs as a copied
    folder with no exactnorm installed (``python -I -m checker CERT``)."""
    package = ROOT / "exactnorm" / "checker"
    imported = set()
    for path in package.rglob("*.py"):  # its kinds/ too
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "abc", "collections", "dataclasses", "fractions",
                        "functools", "gc", "hashlib", "json", "math", "operator", "os", "re",
                        "stat",
                        "struct", "sys", "typing", "zlib"}, imported
    shutil.copytree(package, tmp_path / "checker")
    (tmp_path / "c.json").write_text(json.dumps(case_d()))
    (tmp_path / "w.json").write_text(json.dumps(edit(case_d, lambda d: setitem(
        d["domain"], "upper", [1, 3]))))
    for name, code in (("c.json", 0), ("w.json", 1)):
        res = subprocess.run([sys.executable, "-I", "-c", "import runpy, sys; sys.path.insert"
                              "(0, '.'); sys.argv[1:] = [sys.argv[1]]; runpy.run_module("
                              "'checker', run_name='__main__')", name], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
        assert res.returncode == code, res.stderr
        assert len(res.stdout.splitlines()) == 1


DICT_CASES = [(c[0], c[1]) for c in FAILING if isinstance(c[1], dict)] + \
    [(name, make()) for name, make in VALID.items()]


@pytest.mark.parametrize("case", [c for _, c in DICT_CASES], ids=[n for n, _ in DICT_CASES])
def test_modes_agree_through_text(case):
    """The same documents as JSON text: both modes agree, and the text path reaches the same
    rule, layer and neuron as the dict path (messages may differ: JSON writes a Python float as
    a JSON float, refused by the parser; over-long numbers are refused while parsing)."""
    v_text, v_dict = both(json.dumps(case)), both(case)
    assert (v_text.ok, v_text.rule, v_text.layer, v_text.neuron) == \
        (v_dict.ok, v_dict.rule, v_dict.layer, v_dict.neuron)
