"""Float evaluation at real size: a masked kernel multiplies only its drawn columns, and the
batches of a float pass and of an onnxruntime run shrink with the widest layer (a ResNet's frozen
layers hold about 2·10⁵ values per sample)."""

from __future__ import annotations

import numpy as np
import pytest
from flint import fmpq

from exactnorm.model.layers import FloatLayer
from exactnorm.model.operators import Conv, ConvGeometry
from exactnorm.outputs import data_eval


def _layer(weight: np.ndarray) -> FloatLayer:
    g = ConvGeometry((3, 5, 5), (3, 3), stride=(1, 1), padding=(1, 1))
    c = weight.shape[0]
    return FloatLayer(0, Conv(g, weight), tuple(fmpq(k + 1, 3) for k in range(c)),
                      tuple(fmpq(-k, 7) for k in range(c)), "relu")


def _dense_reference(layer: FloatLayer, A: np.ndarray) -> np.ndarray:
    idx = layer.operator.geometry.patch_index
    padded = np.concatenate([A, np.zeros((len(A), 1))], axis=1)
    P = padded[:, np.where(idx >= 0, idx, A.shape[1])]  # every column, the zero ones included
    g = np.array([float(x) for x in layer.gamma])
    b = np.array([float(x) for x in layer.beta])
    return (np.einsum("od,ndp->nop", layer.weight, P) * g[:, None] + b[:, None]).reshape(
        len(A), -1)


@pytest.mark.parametrize("block", [[0], [1, 2], [0, 1, 2]])
def test_a_masked_kernel_equals_the_dense_product(block):
    rng = np.random.default_rng(5)
    W = np.zeros((4, 27))
    for c in block:
        W[:, c * 9:(c + 1) * 9] = rng.integers(-4, 5, size=(4, 9)) / 8
    layer = _layer(W)
    A = rng.integers(0, 9, size=(6, 75)) / 8  # dyadic: both sums are exact in float64
    assert np.array_equal(layer.pre_activation(A, np.float64), _dense_reference(layer, A))


def test_float_batches_shrink_with_the_widest_layer():
    class Net:
        def __init__(self, width: int) -> None:
            self.layers = [type("L", (), {"width": width})()]

    assert data_eval.float_chunk(Net(100)) == data_eval.CHUNK
    wide = data_eval.float_chunk(Net(225_792))
    assert 1 <= wide < data_eval.CHUNK
    assert wide * 10 * 8 * 225_792 <= data_eval.FLOAT_BATCH_BYTES


def test_an_onnx_model_with_a_wide_tensor_runs_in_smaller_batches(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from exactnorm.outputs.onnx_runs import Model

    def model(width: int) -> str:
        x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["N", 2])
        y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["N", 2])
        w1 = helper.make_tensor("w1", TensorProto.DOUBLE, [2, width], [1.0] * (2 * width))
        w2 = helper.make_tensor("w2", TensorProto.DOUBLE, [width, 2], [1.0] * (2 * width))
        nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
                 helper.make_node("MatMul", ["h", "w2"], ["y"])]
        g = helper.make_graph(nodes, "g", [x], [y], [w1, w2])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        path = tmp_path / f"m{width}.onnx"
        onnx.save(m, path)
        return str(path)

    narrow, wide = Model(model(4)), Model(model(200_000))
    assert narrow.batch == data_eval.CHUNK and wide.batch < data_eval.CHUNK
    X = np.arange(2 * (wide.batch + 3), dtype=np.float64).reshape(-1, 2) / 4
    out = wide.run(X)["y"]  # several batches, joined in order
    assert np.array_equal(out, np.repeat((X.sum(1) * 200_000)[:, None], 2, axis=1))


@pytest.mark.parametrize("block", [[], [0], [1, 2], [0, 1, 2]])
def test_the_im2col_export_reads_only_the_patch_rows_its_kernel_uses(block):
    """The float64 ONNX form of a masked kernel (``read_patch``) gathers and multiplies only
    the kernel's nonzero columns: no column of zeros is left, each kept column is the whole
    kernel's, and its product equals the whole patch's on dyadic inputs (sums exact)."""
    from exactnorm.outputs.export.kinds.conv import read_patch

    rng = np.random.default_rng(len(block))
    W = np.zeros((4, 27))
    for c in block:
        W[:, c * 9:(c + 1) * 9] = rng.integers(-4, 5, size=(4, 9)) / 8
    op = _layer(W).operator
    V, idx = read_patch(op)
    full = np.where(op.geometry.patch_index >= 0, op.geometry.patch_index, 75)
    if block:
        assert V.shape[1] == int(np.sum(np.any(W != 0, axis=0)))
        assert np.all(np.any(V != 0, axis=0))
    else:  # an all-zero kernel keeps one column: no empty tensor in the graph
        assert V.shape == (4, 1) and not V.any()
    for k in range(V.shape[1]):
        j = next(j for j in range(27) if np.array_equal(full[j], idx[k]))
        assert np.array_equal(W[:, j], V[:, k])
    A = rng.integers(0, 9, size=(6, 75)) / 8
    padded = np.concatenate([A, np.zeros((6, 1))], axis=1)
    assert np.array_equal(np.matmul(V, padded[:, idx]), np.matmul(W, padded[:, full]))
