"""A corpus of valid documents of every kind, for the closed-schema cases
(``test_closed_schema.py``) and the structural fuzzers (``test_fuzz_segments.py``): certificates
of versions 1 to 3 with every layer kind, residual targets and checkpoints, skips of every form,
draw records and masks, redraws, provenance and witnesses, and impossibility documents of every
witness kind. :func:`documents` returns fresh copies; every document is valid in both
arithmetics (``test_closed_schema.test_the_documents_are_valid``).
"""

from __future__ import annotations

import copy
import functools

import tests.checker.hostile_round3 as H
from exactnorm import api
from exactnorm.analysis.capacity import decide
from exactnorm.certificate import certificate_document
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.model.targets import demo_target, random_target

__all__ = ["documents"]


def _dense_skips_v2() -> dict:
    """Version 2: x ↦ x on [0, 1]² through a layer with an identity skip in the compact form, a
    selection skip in the compact form and a constant random skip given explicitly with its
    draw record; every layer weight declared fixed."""
    fixed = {"kind": "fixed", "why": "hand-made"}
    eye = [[1, 0], [0, 1]]
    zero_draw = {"generator": "exactnorm.shake256.v1", "seed": 0, "key": [9, 9],
                 "distribution": "set:0", "shape": [2, 2]}
    layers = [
        {"input": 0, "weight": eye, "source": fixed, "gamma": [1, 1], "beta": [0, 0],
         "activation": "relu"},
        {"input": 1, "weight": [[0, 0], [0, 0]], "source": fixed, "gamma": [1, 1],
         "beta": [0, 0], "activation": "identity",
         "skip": [{"from": 1, "kind": "identity", "weight": {"identity": 2}},
                  {"from": 1, "kind": "selection",
                   "weight": {"selection": [0, None], "columns": 2}},
                  {"from": 1, "kind": "random", "weight": [[0, 0], [0, 0]],
                   "source": zero_draw}]},
        {"input": 2, "weight": eye, "source": fixed, "gamma": ["1/2", 1], "beta": [0, 0],
         "activation": "identity"}]
    return H.document([0, 0], [1, 1], [{"weight": eye, "bias": [0, 0],
                                        "activation": "identity"}], layers, [3], version=2)


def _global_pooling() -> dict:
    pool = {"kind": "globalavgpool", "input_shape": [1, 2, 2], "activation": "identity"}
    return H.document([0] * 4, [1] * 4, [dict(pool)], [dict(pool, input=0)], [1], version=1)


def _impossibility_documents() -> dict[str, dict]:
    """A document of every witness kind; the aligned one with one column (the frozen row
    vanishes on the free coordinates, ``value``) as well as with two (``minor``)."""
    from exactnorm.model.network import TargetNetwork
    from tests.checker.test_checker_impossibility import CASES
    from tests.helpers import given

    out = {}
    for name, (make, scale) in sorted(CASES.items()):
        net, g = make()
        out[f"impossibility {name}"] = decide(net, g, output_scale=scale).document
    V = [[[0, 0], [3, -1], [2, 2]], [[1, 0, 2], [-1, 1, 1], [2, 1, -1]], [[1, 1, 1]]]
    g = TargetNetwork.from_lists([[[2, 4], [3, -1], [1, 1]], [[2, 0, 4], [-1, 1, 1],
                                                            [2, 2, -1]], [[1, 2, 3]]],
                                 [[1, 2, 3], [1, 1, 1], [0]], ["relu", "relu", "identity"],
                                 lower=[0, 0], upper=[1, 1])
    out["impossibility aligned, one column"] = decide(
        given(V, ["relu", "relu", "identity"]), g).document
    return out


@functools.cache
def _documents() -> dict[str, dict]:
    from tests.checker.test_checker_residual import block_doc, dense_residual_doc
    from tests.checker.test_format_details import conv_doc, dense_doc
    from tests.model.test_conv import lenet_like

    docs = {
        "version 1 dense": dense_doc(),
        "version 1 conv": conv_doc(1),
        "version 2 conv, fixed": conv_doc(2),
        "version 2 dense skips": _dense_skips_v2(),
        "version 1 global pooling": _global_pooling(),
        "version 3 theorem 1": certificate_document(api.certify(random_target((2, 2), seed=1))),
        "version 3 explicit": certificate_document(api.certify(demo_target(), seed=1),
                                                   frozen_weights="explicit"),
        "version 3 redraws": certificate_document(certify_theorem1(
            random_target([1, 3], seed=0), seed=4, distribution="int:1")),
        "version 3 masked": certificate_document(api.certify(
            random_target((2, 2), seed=3), "theorem1", sparsity="3/4", seed=2)),
        "version 3 lenet": certificate_document(api.certify(lenet_like())),
        "version 3 dense residual": dense_residual_doc(),
        "version 3 channel blocks": block_doc(),
    }
    for layer in docs["version 2 conv, fixed"]["network"]["layers"]:
        layer["source"] = {"kind": "fixed", "why": "hand-made"}
    docs.update(_impossibility_documents())
    return docs


def documents() -> dict[str, dict]:
    """Valid documents in which every level of Appendix A stands at least once (fresh copies,
    in a fixed order)."""
    return copy.deepcopy(_documents())
