"""Convolutional targets from ONNX graphs and PyTorch state dicts, converted exactly.

Every stored float is converted to the dyadic rational it denotes (as for MLPs,
:mod:`exactnorm.model.interop`). A ``BatchNormalization``/``BatchNorm2d`` of the target (eval
mode) is folded into the preceding convolution or linear layer: ``W' = s·W``,
``b' = s·(b − μ) + β`` per output channel (feature) with ``s = γ / √(var + ε)``. The square
root is the one rounding: ``s`` is the float64 value of that expression, converted exactly;
the products and sums of the fold are exact rational arithmetic, so the exact target is the
float64-folded network, nothing else rounded.

ONNX operators read (one chain from the input to the output, NCHW, batch 1 implied): ``Conv``
(symmetric ``pads``, ``strides``, ``dilations``, ``group = 1``), ``Relu``, ``AveragePool``
(``pads`` 0, ``ceil_mode`` 0), ``Flatten`` (``axis = 1``) and ``Reshape`` to ``[N, −1]`` (the
identity on C-order vectors), ``Gemm``, ``MatMul``, element-wise affine operators with stored
constants directly after a ``Conv`` (per channel) or a linear layer (per feature) —
``BatchNormalization``, ``Add`` (a bias), ``Sub``, ``Mul``, ``Div`` — folded exactly
(:mod:`exactnorm.model.onnx_common`), ``Identity`` and ``Constant``, and a final classifier head
(``Softmax``, ``LogSoftmax``, ``Sigmoid`` with post-processing after it; the logits are
certified, the head is recorded for the export). Anything else (``MaxPool`` included) is refused
with its op type, node name and what would work instead.

>>> onnx_is_cnn("model.json")
False
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import from_numpy_exact, to_fmpq_mat, to_fractions
from exactnorm.model.kinds import (
    ConvGeometry,
    ConvTargetLayer,
    PoolTargetLayer,
)
from exactnorm.model.network import TargetLayer, TargetNetwork
from exactnorm.model.onnx_common import (
    DTYPES,
    HEAD_OPS,
    affine_of,
    array,
    attributes,
    classifier_head,
    constants,
    fold_after,
    fold_batchnorm,
    head_note,
    interface,
    load_model,
    node_label,
    refuse,
)

__all__ = ["CNN_ONNX_OPS", "onnx_is_cnn", "target_from_onnx_cnn", "target_from_state_dict_cnn",
           "fold_batchnorm", "load_cnn_target", "parse_architecture"]

CNN_ONNX_OPS = ("Conv", "Relu", "AveragePool", "Flatten", "Reshape", "Gemm", "MatMul",
                "BatchNormalization", "Add", "Sub", "Mul", "Div", "Identity", "Constant",
                "a final Softmax/LogSoftmax/Sigmoid head")
#: operators that make a graph convolutional (so the CNN reader, not the MLP reader, answers)
_SPATIAL = {"Conv", "AveragePool", "MaxPool", "GlobalAveragePool", "BatchNormalization",
            "ConvTranspose", "Pad"}


def _exact(a: Any, what: str) -> list[Fraction]:
    arr = np.asarray(a)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        raise InputError(f"{what} has dtype {arr.dtype}; save it as float64 or integers")
    flat = arr.reshape(1, -1) if arr.size else np.zeros((1, 0))
    return to_fractions(from_numpy_exact(flat, what))[0] if arr.size else []


def onnx_is_cnn(path: str | os.PathLike[str]) -> bool:
    """Whether an ``.onnx`` file has a spatial operator (read without the ``onnx`` package's
    checker; ``False`` for any other file)."""
    p = Path(path)
    if p.suffix.lower() != ".onnx" or not p.is_file():
        return False
    try:
        import onnx
    except ImportError:
        return False
    try:
        model = onnx.load(os.fspath(p))
    except Exception:  # not ONNX: the MLP reader reports it
        return False
    return any(n.op_type in _SPATIAL for n in model.graph.node)


def _q(xs: Sequence[Any]) -> tuple[fmpq, ...]:
    return tuple(to_fmpq_mat([list(xs)]).entries()) if len(xs) else ()


def _conv_layer(shape: tuple[int, int, int], W4: np.ndarray, b: list[Fraction] | None,
                kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                dilation: Sequence[int], what: str) -> ConvTargetLayer:
    if W4.ndim != 4 or W4.shape[1] != shape[0]:
        raise ShapeError(f"{what}: kernel of shape {W4.shape} does not read {shape[0]} channels")
    g = ConvGeometry(shape, tuple(kernel), tuple(stride), tuple(padding),  # type: ignore[arg-type]
                     tuple(dilation))  # type: ignore[arg-type]
    rows = [_exact(W4[o], f"{what} weight") for o in range(W4.shape[0])]
    bias = b if b is not None else [Fraction(0)] * W4.shape[0]
    return ConvTargetLayer(g, to_fmpq_mat(rows), _q(bias), "identity")


class _Chain:
    """The layers read so far and the shape of the current value."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.layers: list[Any] = []
        self.shape = shape
        self.raw: list[Any] = []  # per layer: [W rows, bias] while BN may still fold

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def add(self, layer: Any) -> None:
        self.layers.append(layer)
        if isinstance(layer, TargetLayer):
            self.shape = (layer.weight.nrows(),)
        else:
            self.shape = layer.output_shape

    def relu(self, what: str) -> None:
        if not self.layers or isinstance(self.layers[-1], PoolTargetLayer) \
                or self.layers[-1].activation != "identity":
            raise InputError(f"{what} does not directly follow a convolution or linear layer")
        self.layers[-1] = dataclasses.replace(self.layers[-1], activation="relu")


def _affine_after(chain: _Chain, node: Any, consts: dict[str, Any]) -> None:
    """An element-wise affine operator after a convolution (per channel) or a linear layer (per
    feature) with identity activation, folded into its rows exactly (onnx_common)."""
    last = chain.layers[-1] if chain.layers else None
    if isinstance(last, PoolTargetLayer) or last is None or last.activation != "identity":
        raise InputError(f"{node_label(node)}: only an element-wise affine map directly after "
                         f"a Conv or a linear layer (before its Relu) is folded")
    conv = isinstance(last, ConvTargetLayer)
    affine = affine_of(node, consts, last.weight.nrows(), channels=conv)
    if affine is None:
        raise InputError(f"{node_label(node)} does not continue the chain with one stored "
                         f"constant")
    W, b = fold_after(to_fractions(last.weight), [Fraction(str(x)) for x in last.bias], affine)
    chain.layers[-1] = (ConvTargetLayer(last.geometry, to_fmpq_mat(W), _q(b), "identity")
                        if isinstance(last, ConvTargetLayer)
                        else TargetLayer(to_fmpq_mat(W), _q(b), "identity"))


def target_from_onnx_cnn(model: Any, lower: Any, upper: Any) -> TargetNetwork:
    """A convolutional ONNX model (``ModelProto`` or path) as an exact target on the cube
    ``[lower, upper]`` (scalars) of its input (module doc); a classifier head after the logits
    is recorded in ``source`` with the input's name, dtype and shape."""
    proto = load_model(model)
    graph = proto.graph
    consts = constants(graph)
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise InputError(f"the ONNX graph has {len(inputs)} data inputs; a target has one")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) not in (2, 4) or any(d < 1 for d in dims[1:]):
        raise ShapeError(f"ONNX input {inputs[0].name!r} has shape {dims}; expected [N, C, H, W] "
                         f"or [N, d] with known sizes")
    chain = _Chain(tuple(dims[1:]))
    current = inputs[0].name
    head: list[Any] = []
    dtype = None
    for index, node in enumerate(graph.node):
        if node.output and all(o in consts for o in node.output if o):
            continue  # a Constant, or an Identity of a constant
        what = node_label(node)
        op = node.op_type
        if op in HEAD_OPS and node.domain in ("", "ai.onnx") and list(node.input) == [current] \
                and chain.layers:
            head = classifier_head(graph, index, current, consts, CNN_ONNX_OPS)
            break
        if op not in CNN_ONNX_OPS or node.domain not in ("", "ai.onnx"):
            raise refuse(node, CNN_ONNX_OPS, "a convolutional target")
        attrs = attributes(node)
        data = [i for i in node.input if i and i not in consts]
        if data != [current] or len(node.output) != 1:
            raise InputError(f"{what} does not continue the chain from {current!r}; only a "
                             f"sequential network is supported")

        def const(k: int, node: Any = node, what: str = what) -> np.ndarray:
            if len(node.input) <= k or node.input[k] not in consts:
                raise InputError(f"{what}: input {k} must be a stored constant")
            return array(consts[node.input[k]])

        if op in ("Conv", "Gemm", "MatMul"):
            dtype = DTYPES.get(consts[node.input[1]].data_type) if node.input[1] in consts \
                else dtype
        if op == "Conv":
            if len(chain.shape) != 3:
                raise ShapeError(f"{what} reads a flat vector")
            if attrs.get("group", 1) != 1:
                raise InputError(f"{what}: group = {attrs['group']}; only group = 1")
            if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                raise InputError(f"{what}: auto_pad is not supported; give explicit pads")
            W4 = const(1)
            pads = list(attrs.get("pads", [0, 0, 0, 0]))
            if len(pads) != 4 or pads[0] != pads[2] or pads[1] != pads[3]:
                raise InputError(f"{what}: pads {pads} are not symmetric")
            b = _exact(const(2), f"{what} bias") if len(node.input) > 2 and node.input[2] \
                else None
            chain.add(_conv_layer(chain.shape, W4, b,
                                  attrs.get("kernel_shape", list(W4.shape[2:])),
                                  attrs.get("strides", [1, 1]), pads[:2],
                                  attrs.get("dilations", [1, 1]), what))
        elif op in ("BatchNormalization", "Add", "Sub", "Mul", "Div"):
            _affine_after(chain, node, consts)
        elif op == "Relu":
            chain.relu(what)
        elif op == "AveragePool":
            if len(chain.shape) != 3:
                raise ShapeError(f"{what} reads a flat vector")
            if attrs.get("ceil_mode", 0) or any(attrs.get("pads", [0])):
                raise InputError(f"{what}: only pads 0 and ceil_mode 0 are supported")
            if any(d != 1 for d in attrs.get("dilations", [1, 1])):
                raise InputError(f"{what}: dilated pooling is not supported")
            k = attrs["kernel_shape"]
            chain.add(PoolTargetLayer(ConvGeometry(chain.shape, tuple(k),
                                                   tuple(attrs.get("strides", [1, 1])))))
        elif op in ("Flatten", "Reshape"):
            if op == "Flatten" and attrs.get("axis", 1) != 1:
                raise InputError(f"{what}: only axis = 1 is supported")
            if op == "Reshape":
                to = [int(v) for v in const(1).reshape(-1)]
                if len(to) != 2 or to[1] not in (-1, chain.size):
                    raise InputError(f"{what}: only a reshape to [N, -1] (a flatten) is "
                                     f"supported, got {to}")
            chain.shape = (chain.size,)
        elif op == "Gemm":
            if attrs.get("transA", 0):
                raise InputError(f"{what}: transA = 1 is not supported")
            B = const(1)
            alpha = Fraction(float(np.float32(attrs.get("alpha", 1.0))))
            beta_ = Fraction(float(np.float32(attrs.get("beta", 1.0))))
            Wt = B if attrs.get("transB", 0) else B.T
            W = [[alpha * w for w in _exact(row, f"{what} weight")] for row in Wt]
            c = _exact(const(2), f"{what} bias") if len(node.input) > 2 and node.input[2] \
                else [Fraction(0)]
            c = c * len(W) if len(c) == 1 else c
            chain.add(TargetLayer(to_fmpq_mat(W), _q([beta_ * x for x in c]), "identity"))
        elif op == "MatMul":
            W = [_exact(row, f"{what} weight") for row in const(1).T]
            chain.add(TargetLayer(to_fmpq_mat(W), _q([0] * len(W)), "identity"))
        current = node.output[0]
    if not head and (len(graph.output) != 1 or current != graph.output[0].name):
        raise InputError(f"the ONNX graph outputs {[o.name for o in graph.output]} are not the "
                         f"end of the chain {current!r}")
    d0 = math.prod(dims[1:])
    target = TargetNetwork(tuple(chain.layers), _q([lower] * d0), _q([upper] * d0))
    source = interface(proto, inputs[0], current, head, consts, dtype)
    note = head_note(source)
    if note:
        warnings.warn(note, stacklevel=2)
    object.__setattr__(target, "source", source)  # metadata, not the function
    return target


_ENTRY = re.compile(r"^(conv|bn|batchnorm|relu|avgpool|flatten|linear)(?:\((.*)\))?$")


def parse_architecture(spec: str | Sequence[str]) -> list[tuple[str, dict[str, int]]]:
    """``"conv(padding=1),relu,avgpool(2),flatten,linear"`` → ``[(kind, options), …]``.

    Options are integers; ``conv`` takes ``stride``, ``padding``, ``dilation`` (default 1, 0, 1),
    ``avgpool`` its kernel size (positional or ``kernel``) and ``stride`` (default the kernel).

    >>> parse_architecture("conv(padding=1),relu,avgpool(2),flatten,linear")[2]
    ('avgpool', {'kernel': 2})
    """
    items = re.split(r",(?![^(]*\))", spec) if isinstance(spec, str) else list(spec)
    out = []
    for item in items:
        m = _ENTRY.match(item.strip())
        if m is None:
            raise InputError(f"unknown architecture entry {item!r}; use conv(...), bn, relu, "
                             f"avgpool(k), flatten, linear")
        opts: dict[str, int] = {}
        for part in filter(None, (m.group(2) or "").split(",")):
            key, _, val = part.partition("=")
            if not val:
                key, val = "kernel", key
            try:
                opts[key.strip()] = int(val)
            except ValueError:
                raise InputError(f"architecture entry {item!r}: {val!r} is not an "
                                 f"integer") from None
        out.append(("bn" if m.group(1) == "batchnorm" else m.group(1), opts))
    return out


def target_from_state_dict_cnn(arrays: Mapping[str, Any], architecture: str | Sequence[str],
                               input_shape: Sequence[int], lower: Any, upper: Any
                               ) -> TargetNetwork:
    """A PyTorch state dict (``nn.Sequential`` of ``Conv2d``, ``BatchNorm2d``, ``ReLU``,
    ``AvgPool2d``, ``Flatten``, ``Linear``) with its declared architecture: a state dict has no
    layer kinds, so ``architecture`` names them (:func:`parse_architecture`) and the modules
    with parameters take the state dict's prefixes in order (``0.weight``, ``3.weight``, …)."""
    prefixes: list[str] = []
    for key in arrays:
        prefix = key.rsplit(".", 1)[0]
        if prefix not in prefixes and not key.endswith("num_batches_tracked"):
            prefixes.append(prefix)
    chain = _Chain(tuple(int(v) for v in input_shape))
    spec = parse_architecture(architecture)
    needing = [k for k, _ in spec if k in ("conv", "bn", "linear")]
    if len(needing) != len(prefixes):
        raise InputError(f"the architecture has {len(needing)} modules with parameters, the "
                         f"state dict {len(prefixes)} ({', '.join(prefixes)})")
    it = iter(prefixes)
    for n, (kind, opts) in enumerate(spec, 1):
        what = f"architecture entry {n} ({kind})"
        if kind in ("conv", "bn", "linear"):
            pre = next(it)

            def arr(name: str, pre: str = pre, what: str = what) -> np.ndarray:
                if f"{pre}.{name}" not in arrays:
                    raise InputError(f"{what}: the state dict has no {pre}.{name}")
                return np.asarray(arrays[f"{pre}.{name}"])
        if kind == "conv":
            W4 = arr("weight")
            b = _exact(arr("bias"), f"{what} bias") if f"{pre}.bias" in arrays else None
            s, p, d = opts.get("stride", 1), opts.get("padding", 0), opts.get("dilation", 1)
            chain.add(_conv_layer(chain.shape, W4, b, W4.shape[2:],  # type: ignore[arg-type]
                                  (s, s), (p, p), (d, d), what))
        elif kind == "bn":
            last = chain.layers[-1] if chain.layers else None
            if not isinstance(last, ConvTargetLayer):
                raise InputError(f"{what}: only a BatchNorm2d directly after a Conv2d is folded")
            W, b2 = fold_batchnorm(to_fractions(last.weight),
                                   [Fraction(str(x)) for x in last.bias], arr("weight"),
                                   arr("bias"), arr("running_mean"), arr("running_var"),
                                   float(opts.get("eps", 0)) or 1e-5)
            chain.layers[-1] = ConvTargetLayer(last.geometry, to_fmpq_mat(W), _q(b2),
                                               "identity")
        elif kind == "linear":
            W = [_exact(row, f"{what} weight") for row in arr("weight")]
            b = _exact(arr("bias"), f"{what} bias") if f"{pre}.bias" in arrays \
                else [Fraction(0)] * len(W)
            chain.add(TargetLayer(to_fmpq_mat(W), _q(b), "identity"))
        elif kind == "relu":
            chain.relu(what)
        elif kind == "avgpool":
            k = opts.get("kernel", 2)
            st = opts.get("stride", k)
            chain.add(PoolTargetLayer(ConvGeometry(chain.shape, (k, k),  # type: ignore[arg-type]
                                                   (st, st))))
        else:  # flatten
            chain.shape = (chain.size,)
    d0 = math.prod(int(v) for v in input_shape)
    return TargetNetwork(tuple(chain.layers), _q([lower] * d0), _q([upper] * d0))


def load_cnn_target(path: str | os.PathLike[str], box: tuple[Any, Any] | None) -> \
        TargetNetwork:
    """A convolutional ``.onnx`` target on the cube ``box`` (``--box``; required)."""
    if box is None:
        raise InputError(f"an ONNX model has no input box; pass --box LO:HI for {path}")
    return target_from_onnx_cnn(path, box[0], box[1])
