"""Export of convolutional certificates: ONNX (``Conv`` + ``BatchNormalization`` on NCHW) and
PyTorch-style parameters (``Conv2d`` + ``BatchNorm2d``). Floats, not certified: the exact
objects are the certificate's; these are what a framework runs.

Each frozen convolution becomes ``Conv`` (frozen kernel ``V`` as ``[c, C, kh, kw]``, no bias)
followed by ``BatchNormalization`` with ``scale = γ``, ``B = β``, ``mean = 0``, ``var = 1``,
``epsilon = 0`` (eval mode: ``γ·(x − 0)/√1 + β``), then ``Relu`` when declared; an average
pooling becomes ``AveragePool``; a dense layer reads its node flattened (C order, the
certificate's vector) through ``MatMul`` and a ``BatchNormalization`` on ``(N, d)``; skips are
``MatMul`` + ``Add``.

>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.model.kinds import ConvGeometry, ConvTargetLayer
>>> from exactnorm.model.network import TargetNetwork
>>> from flint import fmpq, fmpq_mat
>>> g = ConvGeometry((1, 3, 3), (2, 2))
>>> t = TargetNetwork((ConvTargetLayer(g, fmpq_mat([[1, -1, 2, 0]]), (fmpq(1),), "relu"),),
...                       (fmpq(0),) * 9, (fmpq(1),) * 9)
>>> sd, arch = torch_state_dict_cnn(construct(t, seed=0).network)
>>> sorted(sd)[:3], arch[:3]
(['0.weight', '1.bias', '1.running_mean'], ['conv(stride=1,padding=0,dilation=1)', 'bn', 'relu'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from exactnorm.certificate import read_networks
from exactnorm.errors import InputError, require_extra
from exactnorm.exact.linalg import to_numpy
from exactnorm.model.interop_cnn import parse_architecture
from exactnorm.model.kinds import ConvGeometry, FrozenConvLayer, FrozenPoolLayer, PoolTargetLayer
from exactnorm.model.network import FrozenLayer, FrozenNetwork
from exactnorm.model.routes import matrix_of

__all__ = ["onnx_model_cnn", "torch_state_dict_cnn", "evaluate_state_dict_cnn", "cnn_network"]


def cnn_network(source: Any) -> FrozenNetwork:
    """The frozen network of a construction, a network or a certificate document."""
    if isinstance(source, FrozenNetwork):
        return source
    if isinstance(getattr(source, "network", None), FrozenNetwork):
        return source.network
    if isinstance(source, dict):
        return read_networks(source)[1]
    raise InputError("expected a convolutional certificate, construction or network")


def _floats(v: Any) -> np.ndarray:
    return np.array([float(x) for x in v], dtype=np.float64)


def _kernel(layer: FrozenConvLayer) -> np.ndarray:
    C = layer.geometry.input_shape[0]
    kh, kw = layer.geometry.kernel_shape
    return to_numpy(layer.weight).reshape(layer.channels, C, kh, kw)


def onnx_model_cnn(source: Any, *, input_shape: tuple[int, int, int] | None = None,
                   dtype: str = "float64", conv_op: str | None = None,
                   interface: str = "source") -> Any:
    """The frozen network as an ``onnx.ModelProto``: input ``x`` of shape ``(N, C, H, W)`` (the
    first layer's ``input_shape``, or ``input_shape``), output ``y`` of shape ``(N, d_L)``; for
    a certificate document with a recorded source (and ``interface="source"``), the source
    model's input, outputs and classifier head around it
    (:mod:`exactnorm.outputs.onnx_interface`).

    ``conv_op="Conv"`` writes each convolution as ``Conv`` + ``BatchNormalization`` on NCHW
    and each pooling as ``AveragePool``; ``"im2col"`` as ``Gather`` of the patches (padding
    pixels read an appended zero), ``MatMul`` with the kernel matrix and
    ``BatchNormalization`` on ``(N, c, positions)``, pooling as ``Gather`` + ``ReduceMean``.
    Default: ``Conv`` for ``float32``; ``im2col`` for ``float64``, because onnxruntime has no
    double-precision ``Conv`` kernel. The construction's integer shifts cancel over thousands
    of channels, so float32 loses about 4 digits on a LeNet-sized network (benchmarks)."""
    require_extra("onnx", "the ONNX export")
    from onnx import TensorProto, helper, numpy_helper

    if dtype not in ("float32", "float64"):
        raise InputError(f"dtype must be float32 or float64, got {dtype!r}")
    np_dtype = np.float32 if dtype == "float32" else np.float64
    conv_op = conv_op or ("Conv" if dtype == "float32" else "im2col")
    if conv_op not in ("Conv", "im2col"):
        raise InputError(f"conv_op must be Conv or im2col, got {conv_op!r}")
    im2col = conv_op == "im2col"
    elem = TensorProto.FLOAT if dtype == "float32" else TensorProto.DOUBLE
    net = cnn_network(source)
    layers: list[Any] = list(net.layers)
    first = layers[0]
    shape = input_shape or (first.geometry.input_shape if not isinstance(first, FrozenLayer)
                            else None)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray, integer: bool = False) -> str:
        kind = np.int64 if integer else np_dtype
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=kind), name))
        return name

    names = ["x"]
    spatial = [shape is not None]
    flat: dict[int, str] = {}

    def flat_of(k: int) -> str:
        if not spatial[k]:
            return names[k]
        if k not in flat:
            flat[k] = f"flat{k}"
            nodes.append(helper.make_node("Flatten", [names[k]], [flat[k]], axis=1,
                                          name=f"flatten{k}"))
        return flat[k]

    def batchnorm(j: int, src: str, gamma: Any, beta: Any, n: int) -> str:
        out = f"u{j}"
        nodes.append(helper.make_node(
            "BatchNormalization", [src, const(f"gamma{j}", _floats(gamma)),
                                   const(f"beta{j}", _floats(beta)),
                                   const(f"mean{j}", np.zeros(n)), const(f"var{j}", np.ones(n))],
            [out], epsilon=0.0, name=f"layer{j}_bn"))
        return out

    for j, layer in enumerate(layers, 1):
        src = names[layer.input]
        if im2col and not isinstance(layer, FrozenLayer):
            h = _im2col_layer(j, layer, flat_of(layer.input), nodes, const, batchnorm, helper)
            is_spatial = False
        elif isinstance(layer, FrozenConvLayer):
            if not spatial[layer.input]:
                raise InputError(f"frozen convolution {j} reads a flat node")
            g = layer.geometry
            nodes.append(helper.make_node(
                "Conv", [src, const(f"V{j}", _kernel(layer))], [f"v{j}"],
                kernel_shape=list(g.kernel_shape), strides=list(g.stride),
                pads=[g.padding[0], g.padding[1], g.padding[0], g.padding[1]],
                dilations=list(g.dilation), group=1, name=f"layer{j}_conv"))
            h = batchnorm(j, f"v{j}", layer.gamma, layer.beta, layer.channels)
            is_spatial = True
        elif isinstance(layer, FrozenPoolLayer):
            g = layer.geometry
            h = f"u{j}"
            nodes.append(helper.make_node("AveragePool", [src], [h],
                                          kernel_shape=list(g.kernel_shape),
                                          strides=list(g.stride), name=f"layer{j}_pool"))
            is_spatial = True
        else:
            nodes.append(helper.make_node(
                "MatMul", [flat_of(layer.input), const(f"V{j}_T", to_numpy(layer.weight).T)],
                [f"v{j}"], name=f"layer{j}_matmul"))
            h = batchnorm(j, f"v{j}", layer.gamma, layer.beta, layer.width)
            is_spatial = False
        if layer.activation == "relu" and not (im2col and not isinstance(layer, FrozenLayer)):
            nodes.append(helper.make_node("Relu", [h], [f"r{j}"], name=f"layer{j}_relu"))
            h = f"r{j}"
        if isinstance(layer, FrozenLayer):
            for s in layer.skips:
                nodes.append(helper.make_node(
                    "MatMul", [flat_of(s.source), const(f"P{j}_{s.source}",
                                                        to_numpy(matrix_of(s.weight)).T)],
                    [f"s{j}_{s.source}"], name=f"layer{j}_skip{s.source}"))
                nodes.append(helper.make_node("Add", [h, f"s{j}_{s.source}"],
                                              [f"h{j}_{s.source}"],
                                              name=f"layer{j}_add{s.source}"))
                h = f"h{j}_{s.source}"
        names.append(h)
        spatial.append(is_spatial)
    last = flat_of(len(net.layers))
    nodes.append(helper.make_node("Identity", [last], ["y"], name="output"))
    in_dims: list[str | int | None] = ["N", *shape] if shape is not None \
        else ["N", net.input_dim]
    from exactnorm.outputs.onnx_interface import Interface, assemble, interface_of

    face = interface_of(source, net.input_dim) if interface == "source" \
        and isinstance(source, dict) else Interface()
    return assemble(nodes, inits, elem=elem, body_input=in_dims, width=net.node_dims[-1],
                    interface=face, opset=13, graph_name="exactnorm_cnn")


def _im2col_layer(j: int, layer: Any, src: str, nodes: list[Any], const: Any, batchnorm: Any,
                  helper: Any) -> str:
    """A convolution or pooling on a flat ``(N, C·H·W)`` value, as ``Gather`` of its patches."""
    g = layer.geometry
    padded = f"pad{j}"
    nodes.append(helper.make_node("Pad", [src, _int_const(const, f"pads{j}", [0, 0, 0, 1])],
                                  [padded], mode="constant", name=f"layer{j}_pad"))
    idx = np.where(g.patch_index >= 0, g.patch_index, g.input_size).astype(np.int64)
    if isinstance(layer, FrozenPoolLayer):
        C = g.input_shape[0]
        win = _int_const(const, f"win{j}", idx.reshape(C, -1, g.positions))
        nodes.append(helper.make_node("Gather", [padded, win], [f"w{j}"], axis=1,
                                      name=f"layer{j}_windows"))
        nodes.append(helper.make_node("ReduceMean", [f"w{j}"], [f"m{j}"], axes=[2],
                                      keepdims=0, name=f"layer{j}_mean"))
        out = f"m{j}"
    else:
        nodes.append(helper.make_node("Gather", [padded, _int_const(const, f"idx{j}", idx)],
                                      [f"patch{j}"], axis=1, name=f"layer{j}_patches"))
        nodes.append(helper.make_node("MatMul", [const(f"V{j}", to_numpy(layer.weight)),
                                                 f"patch{j}"], [f"v{j}"],
                                      name=f"layer{j}_matmul"))
        out = batchnorm(j, f"v{j}", layer.gamma, layer.beta, layer.channels)
        if layer.activation == "relu":
            nodes.append(helper.make_node("Relu", [out], [f"c{j}"], name=f"layer{j}_crelu"))
            out = f"c{j}"
    nodes.append(helper.make_node("Flatten", [out], [f"flat_out{j}"], axis=1,
                                  name=f"layer{j}_flatten"))
    return f"flat_out{j}"


def _int_const(const: Any, name: str, value: Any) -> str:
    return const(name, np.asarray(value, dtype=np.int64), integer=True)


def torch_state_dict_cnn(source: Any) -> tuple[dict[str, np.ndarray], list[str]]:
    """``nn.Sequential``-style parameters (``Conv2d`` without bias + ``BatchNorm2d`` with
    ``running_mean = 0``, ``running_var = 1``; ``eps`` is the caller's, 0 reproduces exactly up
    to float rounding) and the architecture (:func:`exactnorm.model.interop_cnn.parse_architecture`
    syntax). Only chain networks (every layer reads the previous node, no skips) have a
    Sequential form."""
    net = cnn_network(source)
    sd: dict[str, np.ndarray] = {}
    arch: list[str] = []
    k = 0
    spatial = not isinstance(net.layers[0], FrozenLayer)
    layers: list[Any] = list(net.layers)
    for j, layer in enumerate(layers, 1):
        if layer.input != j - 1 or (isinstance(layer, FrozenLayer) and layer.skips):
            raise InputError(f"frozen layer {j} is not a chain layer (it reads node "
                             f"{layer.input} or has skips): no nn.Sequential form; use the onnx "
                             f"format")
        if isinstance(layer, FrozenPoolLayer):
            arch.append(f"avgpool(kernel={layer.geometry.kernel_shape[0]},"
                        f"stride={layer.geometry.stride[0]})")
            k += 1
            continue
        if isinstance(layer, FrozenConvLayer):
            g = layer.geometry
            if g.stride[0] != g.stride[1] or g.padding[0] != g.padding[1] \
                    or g.dilation[0] != g.dilation[1]:
                raise InputError(f"frozen layer {j}: a non-square geometry")
            sd[f"{k}.weight"] = _kernel(layer)
            arch.append(f"conv(stride={g.stride[0]},padding={g.padding[0]},"
                        f"dilation={g.dilation[0]})")
        else:
            if spatial:
                arch.append("flatten")
                k += 1
                spatial = False
            sd[f"{k}.weight"] = to_numpy(layer.weight)
            arch.append("linear")
        n = len(layer.gamma)
        sd[f"{k + 1}.weight"] = _floats(layer.gamma)
        sd[f"{k + 1}.bias"] = _floats(layer.beta)
        sd[f"{k + 1}.running_mean"] = np.zeros(n)
        sd[f"{k + 1}.running_var"] = np.ones(n)
        arch.append("bn")
        k += 2
        if layer.activation == "relu":
            arch.append("relu")
            k += 1
    return sd, arch


def evaluate_state_dict_cnn(sd: dict[str, np.ndarray], arch: list[str],
                            input_shape: tuple[int, int, int], X: np.ndarray,
                            eps: float = 0.0) -> np.ndarray:
    """float64 forward pass of :func:`torch_state_dict_cnn`'s parameters with PyTorch's
    eval-mode semantics (``BatchNorm``: ``(x − μ)/√(var + eps)·w + b``), for tests."""
    A = np.asarray(X, dtype=np.float64)
    shape: tuple[int, ...] = tuple(input_shape)
    keys = sorted({key.split(".")[0] for key in sd}, key=int)
    it = iter(keys)
    for kind, opts in parse_architecture(arch):
        if kind == "conv":
            W4 = sd[f"{next(it)}.weight"]
            s, p, d = opts["stride"], opts["padding"], opts["dilation"]
            g = ConvGeometry(shape, W4.shape[2:], (s, s), (p, p), (d, d))  # type: ignore[arg-type]
            P = g.patches_float(A)
            A = np.einsum("od,ndp->nop", W4.reshape(W4.shape[0], -1), P).reshape(len(A), -1)
            shape = g.output_shape(W4.shape[0])
        elif kind == "bn":
            pre = next(it)
            n = len(sd[f"{pre}.weight"])
            rep = A.shape[1] // n
            mu = np.repeat(sd[f"{pre}.running_mean"], rep)
            var = np.repeat(sd[f"{pre}.running_var"], rep)
            A = (A - mu) / np.sqrt(var + eps) * np.repeat(sd[f"{pre}.weight"], rep) \
                + np.repeat(sd[f"{pre}.bias"], rep)
        elif kind == "linear":
            A = A @ sd[f"{next(it)}.weight"].T
            shape = (A.shape[1],)
        elif kind == "relu":
            A = np.maximum(A, 0.0)
        elif kind == "avgpool":
            pool = PoolTargetLayer(ConvGeometry(shape, (opts["kernel"],) * 2,  # type: ignore[arg-type]
                                                (opts.get("stride", opts["kernel"]),) * 2))
            A = pool.evaluate_float(A)
            shape = pool.output_shape
        else:
            shape = (int(np.prod(shape)),)
    return A
