"""The transformer oracle (:mod:`tests.checker.oracle_transformer`) is tested: its reading of the
architecture against the ONNX model the document was certified from (onnxruntime, float32: an
independent path, compared to float precision), its LayerNorm by hand, its interval test that
reports only enclosures wholly outside a bound, and its two claims on real documents — both hold,
and each can fail (a slot's box narrowed, a slot's β changed)."""

from __future__ import annotations

import copy
import functools
import random
from fractions import Fraction as Q

import numpy as np
import pytest
from mpmath import iv

from tests.checker import oracle, oracle_documents
from tests.checker import oracle_transformer as T


@functools.cache
def _models() -> list:
    from exactnorm.model.interop.transformer_build import onnx_transformer

    return [onnx_transformer(11, vocabulary=5, d_model=4, heads=2, d_mlp=6),
            onnx_transformer(12, vocabulary=4, d_model=4, heads=1, d_mlp=4, norm="post")]


@pytest.mark.parametrize("which", [0, 1])
def test_the_oracle_reads_the_architecture_as_onnxruntime_runs_the_model(which):
    ort = pytest.importorskip("onnxruntime")
    model, doc = _models()[which], oracle_documents.documents("transformer")[which]
    sess = ort.InferenceSession(model.SerializeToString())
    t = T.Transformer(doc)
    rng = random.Random(which)
    old, iv.prec = iv.prec, 200
    try:
        for _ in range(3):  # the models' input shape is [1, 3]
            tokens = [rng.randrange(t.vocabulary) for _ in range(3)]
            ours = [[float(v.mid) for v in row] for row in t.values(tokens)[t.output]]
            theirs = sess.run(None, {sess.get_inputs()[0].name:
                                     np.array([tokens], dtype=np.int64)})[0][0]
            assert np.abs(np.array(ours) - theirs).max() < 1e-4, (tokens, ours, theirs)
    finally:
        iv.prec = old


def test_layernorm_by_hand():
    """x = (1, 2, 3): mean 2, variance 2/3, so (x − 2)/√(2/3) = (−√(3/2), 0, √(3/2))."""
    node = {"gain": [1, 2, 1], "bias": [0, 0, "1/2"], "epsilon": 0}
    out = T._layernorm([iv.mpf(1), iv.mpf(2), iv.mpf(3)], node)
    lo, hi = (T._endpoint(e) for e in out[0]._mpi_)
    assert lo is not None and hi is not None and lo <= hi < 0 and lo * lo >= Q(3, 2) >= hi * hi
    assert T._endpoint(out[1]._mpi_[0]) == T._endpoint(out[1]._mpi_[1]) == 0
    lo, hi = (T._endpoint(e) for e in out[2]._mpi_)
    assert lo is not None and hi is not None
    assert (lo - Q(1, 2)) ** 2 <= Q(3, 2) <= (hi - Q(1, 2)) ** 2


def test_only_an_enclosure_wholly_outside_is_reported():
    third = iv.mpf(1) / 3  # an enclosure of 1/3 that straddles 1/3
    assert not T._outside(third, Q(1, 3), Q(1))
    assert not T._outside(third, Q(0), Q(1, 3))
    assert T._outside(third, Q(1, 3) + Q(1, 10**9), Q(1))
    assert T._outside(third, Q(-1), Q(1, 3) - Q(1, 10**9))


def test_both_claims_hold_on_the_real_documents_and_each_can_fail():
    doc = oracle_documents.documents("transformer")[0]
    assert T.transformer_claim_fails(doc) is None
    narrow = copy.deepcopy(doc)
    box = narrow["slots"]["block0.mlp"]["domain"]
    mid = [(a + b) / 2 for a, b in zip(oracle.vector(box["lower"]), oracle.vector(box["upper"]))]
    box["lower"] = box["upper"] = [str(m) for m in mid]
    said = T.transformer_claim_fails(narrow)
    assert said is not None and said.startswith("slot block0.mlp reads node")
    shifted = copy.deepcopy(doc)
    last = shifted["slots"]["unembed"]["network"]["layers"][-1]
    beta = oracle.vector(last["beta"])
    last["beta"] = [str(beta[0] + 1)] + [str(b) for b in beta[1:]]
    said = T.transformer_claim_fails(shifted)
    assert said is not None and said.startswith("slot unembed: f != g")
