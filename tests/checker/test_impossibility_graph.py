"""Impossibility documents read by the certificate's reader (docs/certificate-format.md §9): a
target's ``input`` and ``skip`` are interpreted, so the two false impossibilities of issue 38 are
refused by both arithmetics, their targets are shown reachable by an exact tuning, genuine
witnesses over graph targets are valid, and every field of a frozen layer is interpreted or
refused with a named rule."""

from __future__ import annotations

import copy
import itertools
import random
from fractions import Fraction
from typing import Any

import pytest
import sympy

from exactnorm.outputs.tables.capacity import below_threshold_document, t11_target
from tests.checker import false_impossibility as F
from tests.helpers import both, refuse_every_mutation, refused

# ------------------------------------------------------------------ an independent evaluation


def _num(x: Any) -> Fraction:
    return Fraction(x) if not isinstance(x, str) else Fraction(x)


def target_value(doc: dict, x: list[Fraction]) -> list[Fraction]:
    """The target of a document at ``x``, written from §10 alone (each layer reads its
    ``input`` node, default the layer before, and adds its identity or selection skip)."""
    nodes = [list(x)]
    for i, layer in enumerate(doc["target"]["layers"], 1):
        a = nodes[layer.get("input", i - 1)]
        z = [sum(_num(w) * v for w, v in zip(row, a)) + _num(b)
             for row, b in zip(layer["weight"], layer["bias"])]
        skip = layer.get("skip")
        if skip is not None:
            q = nodes[skip["from"]]
            picks = list(range(skip["weight"]["identity"])) if "identity" in skip["weight"] \
                else skip["weight"]["selection"]
            z = [v + (0 if t is None else q[t]) for v, t in zip(z, picks)]
        nodes.append(z if layer["activation"] == "identity" else [max(v, Fraction(0)) for v in z])
    return nodes[-1]


def frozen_value(doc: dict, tuning: tuple, x: list[Fraction]) -> tuple[list[Fraction], list]:
    """The frozen network with the tuning ``(γ_1, β_1, γ_2, β_2)`` at ``x``, and its hidden
    pre-activations."""
    (V1, V2) = [L["weight"] for L in doc["network"]["layers"]]
    g1, b1, g2, b2 = tuning
    pre = [g * sum(v * t for v, t in zip(row, x)) + b for row, g, b in zip(V1, g1, b1)]
    h = [max(v, Fraction(0)) for v in pre]
    return [g * sum(v * t for v, t in zip(row, h)) + b for row, g, b in zip(V2, g2, b2)], pre


# ------------------------------------------------------------------ the two false impossibilities


@pytest.mark.parametrize("graph_values", [False, True])
@pytest.mark.parametrize("name", ["reads_input", "cancelling_skip"])
def test_the_false_impossibilities_are_refused_by_both_arithmetics(name, graph_values):
    """The documents issue 38 found UNREACHABLE VALID (the witness written for the plain chain
    of the target's layers), and the same with the values and gradients of the graph: refused
    by rule ``witness``, the same message from both arithmetics."""
    doc = getattr(F, name)(graph_values)
    v = refused(doc, "witness")
    assert ("equal" in v.message) if graph_values else ("is" in v.message), v.message


@pytest.mark.parametrize("name", ["reads_input", "cancelling_skip"])
def test_the_false_impossibilities_are_reachable(name):
    """Proof that each target is reached exactly by the tuning of :data:`F.TUNINGS`: the frozen
    hidden pre-activations are ≥ 0 at every vertex of the box, hence (affine) on the whole box,
    so the frozen network is affine on the box; the target is affine on the box too (layer 2
    reads x, or adds back what it subtracts); two affine maps equal at the vertices (which
    span the box affinely) are equal on the box. Random rational points check it again."""
    doc = getattr(F, name)()
    tuning = F.TUNINGS[name]
    vertices = [[Fraction(a), Fraction(b)] for a, b in itertools.product((0, 1), repeat=2)]
    for x in vertices:
        f, pre = frozen_value(doc, tuning, x)
        assert all(v >= 0 for v in pre)
        assert f == target_value(doc, x)
    rng = random.Random(0)
    for _ in range(50):
        x = [Fraction(rng.randint(0, 64), 64) for _ in range(2)]
        assert frozen_value(doc, tuning, x)[0] == target_value(doc, x)
    # and the target really is affine on the box: its value is that affine map at every point
    # of a grid (a kink of the plain chain reading would show here)
    grid = [[Fraction(a, 8), Fraction(b, 8)] for a in range(9) for b in range(9)]
    base, e0, e1 = (target_value(doc, p)[0] for p in ([0, 0], [1, 0], [0, 1]))
    for p in grid:
        assert target_value(doc, p)[0] == base + (e0 - base) * p[0] + (e1 - base) * p[1]


# ------------------------------------------------------------------ genuine graph witnesses


def _kink_doc(target: list[dict]) -> dict:
    """A kink witness of ``g = relu(x0 + x1 − 1) + x0`` at (1/2, 1/2), whatever graph writes
    it: the gradients are (2, 1) with the neuron on and (1, 0) with it off."""
    doc = F.cancelling_skip()
    doc["target"]["layers"] = target
    doc["witness"]["gradients"] = {"plus": [[2, 1]], "minus": [[1, 0]]}
    return doc


SKIP_FROM_X = [{"weight": [[1, 1]], "bias": [-1], "activation": "relu"},
               {"weight": [[1]], "bias": [0], "activation": "identity",
                "skip": {"from": 0, "kind": "selection",
                         "weight": {"selection": [0], "columns": 2}}}]
READS_X = [{"weight": [[1, 1]], "bias": [-1], "activation": "relu"},
           {"input": 0, "weight": [[1, 0]], "bias": [0], "activation": "identity"},
           {"input": 1, "weight": [[1]], "bias": [0], "activation": "identity",
            "skip": {"from": 2, "kind": "identity", "weight": {"identity": 1}}}]


@pytest.mark.parametrize("target", [SKIP_FROM_X, READS_X], ids=["skip from x", "reads x"])
def test_a_kink_that_survives_the_graph_is_valid(target):
    doc = _kink_doc(target)
    doc["witness"]["values"] = [["0"], ["1/2"]] if len(target) == 2 else \
        [["0"], ["1/2"], ["1/2"]]
    v = both(doc)
    assert v.ok and v.facts["claim"] == "UNREACHABLE" and v.facts["witness"] == "kink", v.message
    assert v.facts["target_widths"] == [2] + [1] * len(target)
    assert refuse_every_mutation(doc) >= 6


def test_a_rank_witness_over_a_graph_target():
    """``g = x0 + 2·x1 + relu(x0 − x1 + 5)`` (layer 2 reads x and adds layer 1 by a skip): its
    Jacobian (2, 1) is no multiple of the one frozen direction (1, 2), so one hidden unit cannot
    reach it; the 2 × 2 minor's determinant is computed here with SymPy."""
    doc = {"format": "exactnorm.impossibility", "version": 1,
           "domain": {"lower": [0, 0], "upper": [1, 1]},
           "target": {"layers": [
               {"weight": [[1, -1]], "bias": [5], "activation": "relu"},
               {"input": 0, "weight": [[1, 2]], "bias": [0], "activation": "identity",
                "skip": {"from": 1, "kind": "identity", "weight": {"identity": 1}}}]},
           "network": {"layers": [
               {"weight": [[1, 2]], "source": F.FIXED, "activation": "relu"},
               {"weight": [[3]], "source": F.FIXED, "activation": "identity"}]},
           "witness": {"kind": "rank", "point": ["1/2", "1/2"], "values": [[5], ["13/2"]],
                       "outputs": [0], "prime": 1000003, "rows": [0, 1], "determinant": 0}}
    J = [2, 1]  # independently: d/dx of x0 + 2·x1 + (x0 − x1 + 5)
    A = sympy.Matrix([[3 * 1, -J[0]], [3 * 2, -J[1]]])  # [K | −B], K = V_2·V_1[:, j]
    doc["witness"]["determinant"] = int(A.det()) % 1000003
    v = both(doc)
    assert v.ok and v.facts["witness"] == "rank", v.message
    chain = copy.deepcopy(doc)  # the same numbers read as a chain: another target, refused
    del chain["target"]["layers"][1]["input"], chain["target"]["layers"][1]["skip"]
    chain["target"]["layers"][1]["weight"] = [[1]]
    assert not both(chain).ok


def test_an_aligned_witness_needs_a_chain_target():
    doc = copy.deepcopy(F.reads_input())
    doc["network"]["layers"] = [
        {"weight": [[1, 1], [1, 0]], "source": F.FIXED, "activation": "relu"},
        {"weight": [[1, 1]], "source": F.FIXED, "activation": "identity"}]
    doc["witness"] = {"kind": "aligned", "layer": 1, "neuron": 1, "columns": [0, 1],
                      "minor": "1"}
    refused(doc, "witness", "reads node 0")
    del doc["target"]["layers"][1]["input"]
    assert both(doc).ok  # the chain: row 1 of W_1 = (1, −1) is no multiple of (1, 0)


# ------------------------------------------------------------------ every field interpreted


@pytest.fixture(scope="module")
def t11() -> dict:
    doc = below_threshold_document(t11_target(3), 6)
    assert both(doc).ok
    return doc


def test_kind_dense_is_the_same_as_no_kind_in_both_sections(t11):
    doc = copy.deepcopy(t11)
    for section in ("target", "network"):
        for layer in doc[section]["layers"]:
            layer["kind"] = "dense"
    assert both(doc) == both(t11)


@pytest.mark.parametrize("section", ["target", "network"])
def test_other_kinds_are_refused_by_rule_format(t11, section):
    doc = copy.deepcopy(t11)
    layer = doc[section]["layers"][0]
    # a well-formed 1×1 convolution over (3, 1, 1): the kind itself is what is refused
    layer.update(kind="conv", input_shape=[3, 1, 1], kernel_shape=[1, 1], stride=[1, 1],
                 padding=[0, 0], dilation=[1, 1])
    # a target layer's keys are its kind's (then the kind is refused); a frozen layer's table
    # is the impossibility frozen layer's, whose first unknown key is a convolution's
    refused(doc, "format", "dense" if section == "target" else 'unknown key "dilation"')


@pytest.mark.parametrize("key, value", [("input", 0), ("skip", []), ("gamma", [1] * 6),
                                        ("residual", None), ("extra", 1)])
def test_a_frozen_layer_refuses_every_key_it_does_not_interpret(t11, key, value):
    doc = copy.deepcopy(t11)
    doc["network"]["layers"][0][key] = value
    refused(doc, "format", f'unknown key "{key}"')


@pytest.mark.parametrize("shape", [[6, 3, 1, 1], [6, 1, 3, 1], [6, 1, 1, 3]])
def test_a_4d_draw_record_on_a_dense_layer_is_refused(t11, shape):
    """As in a certificate (§6, settled detail 8): a 4-d record shape belongs to a
    convolution's weight only."""
    doc = copy.deepcopy(t11)
    doc["network"]["layers"][0]["weight"]["random"]["shape"] = shape
    refused(doc, "shape", "draw record shape")


@pytest.mark.parametrize("where, key", [("domain", "extra"), ("network", "checkpoints"),
                                        ("top", "checkpoints")])
def test_unknown_keys_of_the_frame_are_named(t11, where, key):
    doc = copy.deepcopy(t11)
    (doc if where == "top" else doc[where])[key] = []
    refused(doc, "format", f'"{key}"')


def test_target_skip_and_input_are_read_as_in_a_certificate(t11):
    doc = copy.deepcopy(t11)
    doc["target"]["layers"][0]["input"] = 1  # not an earlier node
    refused(doc, "format", "not an earlier node")
    doc = copy.deepcopy(t11)
    doc["target"]["layers"][0]["skip"] = {"from": 0, "kind": "random",
                                          "weight": {"identity": 3}}
    refused(doc, "skip")
