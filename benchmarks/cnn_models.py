"""A LeNet-5-shaped CNN trained with plain NumPy on scikit-learn's digits upsampled to 28×28.

conv 1→6 5×5, ReLU, avgpool 2, conv 6→16 5×5, ReLU, avgpool 2, flatten 256, linear 120, ReLU,
linear 84, ReLU, linear 10. Mini-batch SGD with momentum on the softmax cross-entropy; the
convolutions use exactnorm's own patch indices (``ConvGeometry.patch_index``) for im2col and its
transpose, so no deep-learning framework is needed. The trained parameters are a PyTorch-style
state dict (float32) with the architecture string :data:`ARCHITECTURE`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from exactnorm.model.operators import ConvGeometry

__all__ = ["ARCHITECTURE", "INPUT_SHAPE", "train_lenet", "write_lenet_npz", "lenet_accuracy"]

ARCHITECTURE = ("conv,relu,avgpool(2),conv,relu,avgpool(2),flatten,linear,relu,linear,relu,"
                "linear")
INPUT_SHAPE = (1, 28, 28)
_G1 = ConvGeometry((1, 28, 28), (5, 5))
_G2 = ConvGeometry((6, 12, 12), (5, 5))


def _pool_index(C: int, H: int) -> np.ndarray:
    return ConvGeometry((C, H, H), (2, 2), (2, 2)).patch_index.reshape(C, 4, -1)


_P1, _P2 = _pool_index(6, 24), _pool_index(16, 8)


def _conv(X: np.ndarray, W: np.ndarray, b: np.ndarray, g: ConvGeometry) -> tuple[Any, Any]:
    padded = np.concatenate([np.asarray(X, dtype=np.float64), np.zeros((len(X), 1))], axis=1)
    P = padded[:, g.patch_index]  # (n, patch, positions); −1 reads the appended zero
    return (np.einsum("od,ndp->nop", W.reshape(W.shape[0], -1), P) + b[None, :, None]
            ).reshape(len(X), -1), P


def _conv_back(dout: np.ndarray, P: np.ndarray, W: np.ndarray, g: ConvGeometry,
               need_input: bool) -> tuple[Any, Any, Any]:
    n, c = len(dout), W.shape[0]
    d = dout.reshape(n, c, -1)
    dW = np.einsum("nop,ndp->od", d, P).reshape(W.shape)
    db = d.sum(axis=(0, 2))
    if not need_input:
        return dW, db, None
    dP = np.einsum("od,nop->ndp", W.reshape(c, -1), d)
    idx = g.patch_index
    dX = np.zeros((n, g.input_size + 1))
    flat = np.where(idx >= 0, idx, g.input_size)
    for k in range(n):
        np.add.at(dX[k], flat, dP[k])
    return dW, db, dX[:, :-1]


def _pool(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return X[:, idx].mean(axis=2).reshape(len(X), -1)


def _pool_back(d: np.ndarray, idx: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((len(d), size))
    C, k, Pn = idx.shape
    g = d.reshape(len(d), C, 1, Pn) / k
    for u in range(k):
        out[:, idx[:, u, :].reshape(-1)] += g[:, :, 0, :].reshape(len(d), -1)
    return out


def _forward(params: dict[str, np.ndarray], X: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    c1, P1 = _conv(X, params["0.weight"], params["0.bias"], _G1)
    r1 = np.maximum(c1, 0)
    p1 = _pool(r1, _P1)
    c2, P2 = _conv(p1, params["3.weight"], params["3.bias"], _G2)
    r2 = np.maximum(c2, 0)
    p2 = _pool(r2, _P2)
    h1 = np.maximum(p2 @ params["7.weight"].T + params["7.bias"], 0)
    h2 = np.maximum(h1 @ params["9.weight"].T + params["9.bias"], 0)
    out = h2 @ params["11.weight"].T + params["11.bias"]
    return out, dict(P1=P1, c1=c1, p1=p1, P2=P2, c2=c2, p2=p2, h1=h1, h2=h2)


def train_lenet(X: np.ndarray, y: np.ndarray, *, epochs: int = 12, seed: int = 0,
                lr: float = 0.05, batch: int = 32) -> dict[str, np.ndarray]:
    """Trained float32 parameters (PyTorch ``nn.Sequential`` keys)."""
    rng = np.random.default_rng(seed)

    def init(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)

    params = {"0.weight": init(6, 1, 5, 5), "0.bias": np.zeros(6),
              "3.weight": init(16, 6, 5, 5), "3.bias": np.zeros(16),
              "7.weight": init(120, 256), "7.bias": np.zeros(120),
              "9.weight": init(84, 120), "9.bias": np.zeros(84),
              "11.weight": init(10, 84), "11.bias": np.zeros(10)}
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    for _ in range(epochs):
        order = rng.permutation(len(X))
        for s in range(0, len(X), batch):
            idx = order[s:s + batch]
            xb, yb = X[idx], y[idx]
            out, c = _forward(params, xb)
            p = np.exp(out - out.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            d = p
            d[np.arange(len(idx)), yb] -= 1
            d /= len(idx)
            grads = {"11.weight": d.T @ c["h2"], "11.bias": d.sum(0)}
            d = (d @ params["11.weight"]) * (c["h2"] > 0)
            grads.update({"9.weight": d.T @ c["h1"], "9.bias": d.sum(0)})
            d = (d @ params["9.weight"]) * (c["h1"] > 0)
            grads.update({"7.weight": d.T @ c["p2"], "7.bias": d.sum(0)})
            d = d @ params["7.weight"]
            d = _pool_back(d, _P2, 16 * 64) * (c["c2"] > 0)
            dW, db, d = _conv_back(d, c["P2"], params["3.weight"], _G2, True)
            grads.update({"3.weight": dW, "3.bias": db})
            d = _pool_back(d, _P1, 6 * 576) * (c["c1"] > 0)
            dW, db, _ = _conv_back(d, c["P1"], params["0.weight"], _G1, False)
            grads.update({"0.weight": dW, "0.bias": db})
            for k in params:
                velocity[k] = 0.9 * velocity[k] - lr * grads[k]
                params[k] += velocity[k]
    return {k: v.astype(np.float32) for k, v in params.items()}


def lenet_accuracy(params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray) -> float:
    out, _ = _forward({k: v.astype(np.float64) for k, v in params.items()}, X)
    return float((out.argmax(axis=1) == y).mean())


def write_lenet_npz(path: str | os.PathLike[str], *, epochs: int = 12, seed: int = 0
                    ) -> tuple[float, float]:
    """Train on 1,500 digits, save the state dict; returns (train, held-out) accuracy."""
    from mlp_models import digits_images

    X, y = digits_images(28)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(X))
    tr, te = order[:1500], order[1500:]
    params = train_lenet(X[tr], y[tr], epochs=epochs, seed=seed)
    np.savez(path, **params)
    return lenet_accuracy(params, X[tr], y[tr]), lenet_accuracy(params, X[te], y[te])


def onnx_of_lenet(params: dict[str, np.ndarray], path: str | os.PathLike[str]) -> None:
    """The trained network as an ONNX graph (Conv, Relu, AveragePool, Flatten, Gemm; float32)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in params.items()]
    n = []
    for i, (w, b) in enumerate((("0.weight", "0.bias"), ("3.weight", "3.bias")), 1):
        src = "x" if i == 1 else "p1"
        n += [helper.make_node("Conv", [src, w, b], [f"c{i}"], name=f"conv{i}",
                               kernel_shape=[5, 5]),
              helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
              helper.make_node("AveragePool", [f"r{i}"], [f"p{i}"], name=f"pool{i}",
                               kernel_shape=[2, 2], strides=[2, 2])]
    n.append(helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1))
    src = "f"
    for i, k in enumerate(("7", "9", "11")):
        n.append(helper.make_node("Gemm", [src, f"{k}.weight", f"{k}.bias"], [f"g{i}"],
                                  name=f"fc{i}", transB=1))
        src = f"g{i}"
        if k != "11":
            n.append(helper.make_node("Relu", [src], [f"h{i}"], name=f"fc{i}_relu"))
            src = f"h{i}"
    graph = helper.make_graph(
        n, "lenet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info(src, TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.fspath(path))
