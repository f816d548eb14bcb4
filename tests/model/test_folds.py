"""The exact folds of element-wise affine maps into a linear layer's exact matrix, against plain
``Fraction`` arithmetic written here from the identities (onnx_common's module doc):
``D ⊙ (W a + b) + c = (diag(D) W) a + (D ⊙ b + c)`` and ``W (D ⊙ v + c) + b = (W diag(D)) v +
(W c + b)``; and a model file's weights read into the layers exactly once, as the stored floats.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat

from exactnorm.model.interop import target_from_onnx
from exactnorm.model.onnx_common import fold_after, fold_batchnorm, fold_before


def _rows(M: fmpq_mat) -> list[list[Fraction]]:
    return [[Fraction(int(x.p), int(x.q)) for x in row] for row in M.tolist()]


def _random(rng: random.Random, n: int) -> list[Fraction]:
    # dyadic (float-like) and not (a division by a stored constant)
    return [Fraction(rng.randint(-40, 40), rng.choice([1, 2, 8, 3, 7, 2**40])) for _ in range(n)]


@pytest.mark.parametrize("seed", range(8))
def test_folds_on_exact_matrices_are_the_identities(seed):
    rng = random.Random(seed)
    r, c = rng.randint(1, 5), rng.randint(1, 6)
    W = [_random(rng, c) for _ in range(r)]
    b = _random(rng, r)
    M = fmpq_mat([[fmpq(x.numerator, x.denominator) for x in row] for row in W])
    D, s = _random(rng, r), _random(rng, r)
    if seed % 3 == 0:  # a length-1 map is broadcast
        D, s = D[:1], s[:1]
    Wa, ba = fold_after(M, b, (D, s))
    Db, sb = (D * r)[:r], (s * r)[:r]
    assert _rows(Wa) == [[Db[i] * w for w in W[i]] for i in range(r)]
    assert ba == [Db[i] * b[i] + sb[i] for i in range(r)]
    assert fold_after(W, b, (D, s)) == (Wa, ba)  # rows of exact numbers are read alike
    E, t = _random(rng, c), _random(rng, c)
    Wb, bb = fold_before(M, b, (E, t))
    assert _rows(Wb) == [[w * E[k] for k, w in enumerate(row)] for row in W]
    assert bb == [b[i] + sum((w * t[k] for k, w in enumerate(W[i])), Fraction(0))
                  for i in range(r)]


def test_batchnorm_folds_with_its_one_rounding():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    g, be, mu = (rng.normal(size=3).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2, 3).astype(np.float32)
    rows = [[Fraction(float(x)) for x in row] for row in W]
    M, bias = fold_batchnorm(rows, [Fraction(float(x)) for x in b], g, be, mu, var, 1e-5)
    scale = g.astype(np.float64) / np.sqrt(var.astype(np.float64) + 1e-5)  # rounded once
    s = [Fraction(float(x)) for x in scale]
    assert _rows(M) == [[s[i] * w for w in rows[i]] for i in range(3)]
    assert bias == [s[i] * (Fraction(float(b[i])) - Fraction(float(mu[i])))
                    + Fraction(float(be[i])) for i in range(3)]


def test_a_model_files_weights_are_the_stored_floats():
    from onnx import numpy_helper

    from tests.model.resnet_onnx import small_resnet_onnx

    model = small_resnet_onnx(seed=2, bn=False)
    t = target_from_onnx(model, 0, 1)
    stored = [numpy_helper.to_array(x) for x in model.graph.initializer if len(x.dims) == 4]
    kernels = [layer.weight for layer in t.layers if layer.kind == "conv"]
    assert len(kernels) == len(stored) > 0
    # each kernel matrix is one stored 4-d tensor, every float the dyadic rational it denotes
    for K in kernels:
        assert any((K.nrows(), K.ncols()) == (w.shape[0], int(np.prod(w.shape[1:])))
                   and K.entries() == [fmpq(*float(x).as_integer_ratio()) for x in w.ravel()]
                   for w in stored)
