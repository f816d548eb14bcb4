"""ONNX models in: one graph walker for every layer kind, MLPs, CNNs and ResNets alike.

The graph is walked once in its (topological) node order from its single data input to the
logits (or to the output): each node is handled by the table :data:`HANDLERS` — the kind-free
operators below, and every kind's own operators (:data:`exactnorm.model.interop.kinds.
KIND_ONNX_OPS`: ``Gemm``/``MatMul``, ``Conv``, ``AveragePool``, ``GlobalAveragePool``/
``ReduceMean``) — which extend a :class:`~exactnorm.model.interop.chain.Chain`. Every computed
tensor has a :class:`~exactnorm.model.interop.chain.State` (the layer that writes it, its shape,
a pending fold, a selection); a node's handler runs on the state of the one tensor it reads, so
a layer may read any earlier node. The ``Add`` of two computed tensors is a residual block's sum
(:meth:`Chain.residual <exactnorm.model.interop.chain.Chain.residual>`): the branch that ends in
an open linear layer takes the other branch as a skip before its activation. The width limit,
``Cast``, the classifier head and the recorded interface of the source model
(``provenance.source``) are the same for every kind.

Correctness argument
--------------------
A kind's handler reads its node's stored constants exactly (every float is the dyadic rational it
denotes) into the kind's layer (the kind's module states its map). The kind-free operators:
``Relu`` sets the activation of the linear layer it directly follows; ``Identity``, ``Flatten``
(``axis = 1``), a ``Reshape`` to ``[N, −1]``/``[N, d]`` and a ``Cast`` to float or double change no
value of a batch (a tensor is its C-order vector). Element-wise affine operators —
``Add``/``Sub``/``Mul``/``Div`` with one stored constant, ``BatchNormalization`` in inference form
and ``ai.onnx.ml`` ``Scaler`` — fold exactly into the layer before them (per neuron, or per
channel after a convolution) or, on a flat value, into the next linear layer
(:mod:`exactnorm.model.onnx_common`, :mod:`~exactnorm.model.interop.chain`). A final ``Softmax``,
``LogSoftmax`` or ``Sigmoid`` with only post-processing after it is a classifier head: the logits
before it are certified and the head is recorded for the export. Any other operator is refused
with its op type, node name and what would work instead. Residual graphs: the layer that takes
an ``Add`` computes ``σ(A a_p + b + a_q)`` exactly when the ``Add``'s two operands are its own
pre-activation (nothing folded after it yet, no other reader: a fold or a ``Relu`` on a tensor
another node also reads is refused) and the node ``a_q`` (or a ``Slice``/zero ``Pad`` of it: each
entry one entry of ``a_q`` or 0, a selection); after the sum only a ``Relu`` may follow (a fold
would scale the shortcut too), so the target's function is the graph's.

A caller may replace a handler (``hooks``): the given-network reader keeps a
``BatchNormalization`` as the tuned normalization of the layer before it instead of folding it
(:mod:`exactnorm.model.interop.frozen`), with the same walk.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.box import Box
from exactnorm.model.interop.chain import Chain, Constants
from exactnorm.model.interop.kinds import KIND_ONNX_OPS
from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork, Wiring
from exactnorm.model.onnx_common import (
    HEAD_OPS,
    ONNX_ML,
    attributes,
    classifier_head,
    constants,
    head_note,
    interface,
    load_model,
    node_label,
    refuse,
)

__all__ = ["ONNX_OPS", "HANDLERS", "OnnxGraph", "read_onnx", "target_from_onnx", "Handler"]

Handler = Callable[[Chain, Any, dict[str, Any], Constants], None]


def _relu(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    chain.relu(node_label(node))


def _affine(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    chain.affine(consts.affine(node), node_label(node))


def _flatten(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    if attrs.get("axis", 1) != 1:
        raise InputError(f"{node_label(node)}: only axis = 1 (flatten each sample) is supported")
    chain.flatten()


def _reshape(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    to = [int(x) for x in np.asarray(consts.get(node, 1, weight=False)).ravel()]
    size = chain.size
    if len(to) != 2 or to[1] not in (-1, size) and size is not None or to[1] == 0:
        raise InputError(f"{node_label(node)}: only a reshape to (batch, features) — a flatten "
                         f"— is supported, got shape {to}")
    chain.shape = (size,) if size is not None else (to[1],) if to[1] > 0 else None


def _cast(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    if attrs.get("to") not in (1, 11):  # FLOAT, DOUBLE
        raise InputError(f"{node_label(node)}: only a cast to float or double is a no-op on "
                         f"exact values")


def _identity(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    pass


def _ints(node: Any, attrs: dict[str, Any], consts: Constants, k: int, name: str,
          default: list[int] | None = None) -> list[int] | None:
    """An integer list given as input ``k`` (recent opsets) or attribute ``name`` (older)."""
    if name in attrs:
        return [int(v) for v in attrs[name]]
    if len(node.input) > k and node.input[k]:
        return [int(v) for v in np.asarray(consts.get(node, k, weight=False)).reshape(-1)]
    return default


def _slice(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    """``Slice`` of a node (an option-A shortcut's subsampling ``x[:, :, ::2, ::2]``): a
    selection, read only as a residual Add's shortcut."""
    starts = _ints(node, attrs, consts, 1, "starts")
    ends = _ints(node, attrs, consts, 2, "ends")
    if starts is None or ends is None or len(starts) != len(ends):
        raise InputError(f"{node_label(node)}: starts and ends must be stored constants")
    axes = _ints(node, attrs, consts, 3, "axes", list(range(len(starts))))
    steps = _ints(node, attrs, consts, 4, "steps", [1] * len(starts))
    if axes is None or steps is None or not len(axes) == len(steps) == len(starts) \
            or 0 in steps:
        raise InputError(f"{node_label(node)}: axes and steps must be stored constants, one "
                         f"per start, steps nonzero")

    def cut(a: np.ndarray) -> np.ndarray:
        index = [slice(None)] * a.ndim
        for axis, lo, hi, step in zip(axes, starts, ends, steps):
            index[axis % a.ndim] = slice(lo, hi, step)  # numpy clamps as ONNX does
        return a[tuple(index)]

    chain.select(cut, node_label(node))


def _pad(chain: Chain, node: Any, attrs: dict[str, Any], consts: Constants) -> None:
    """A constant ``Pad`` with zeros of a node (an option-A shortcut's new channels): a
    selection whose added entries are 0."""
    mode = attrs.get("mode", b"constant")
    pads = _ints(node, attrs, consts, 1, "pads")
    value = float(attrs.get("value", 0.0))
    if len(node.input) > 2 and node.input[2]:
        value = float(np.asarray(consts.get(node, 2, weight=False)).reshape(-1)[0])
    if mode not in (b"constant", "constant") or pads is None or value != 0 or \
            any(v < 0 for v in pads) or (len(node.input) > 3 and node.input[3]):
        raise InputError(f"{node_label(node)}: only a constant padding with zeros by stored, "
                         f"nonnegative pads of every axis is a selection")
    chain.width_limit(pads, f"{node_label(node)} pads")  # before any array of that size

    def pad(a: np.ndarray) -> np.ndarray:
        assert pads is not None
        if len(pads) != 2 * a.ndim:
            raise InputError(f"{node_label(node)}: {len(pads)} pads for a tensor of rank "
                             f"{a.ndim}")
        widths = list(zip(pads[:a.ndim], pads[a.ndim:]))
        return np.pad(a, widths, constant_values=-1)

    chain.select(pad, node_label(node))


#: the kind-free operators
_COMMON: dict[tuple[str, str], Handler] = {
    ("", "Relu"): _relu,
    ("", "Add"): _affine, ("", "Sub"): _affine, ("", "Mul"): _affine, ("", "Div"): _affine,
    ("", "BatchNormalization"): _affine, (ONNX_ML, "Scaler"): _affine,
    ("", "Identity"): _identity, ("", "Flatten"): _flatten, ("", "Reshape"): _reshape,
    ("", "Cast"): _cast, ("", "Slice"): _slice, ("", "Pad"): _pad,
}

#: (domain, op type) → handler(chain, node, attributes, constants): the walk's one table
HANDLERS: dict[tuple[str, str], Handler] = {**KIND_ONNX_OPS, **_COMMON}

#: operators a target graph may use (module docstring), as the refusals list them
ONNX_OPS = tuple(op if not domain else f"{domain} {op}" for domain, op in HANDLERS) + (
    "Constant", "a final Softmax/LogSoftmax/Sigmoid head")


@dataclass
class OnnxGraph:
    """What one walk of a graph gives: the chain of layers, the head's nodes, and the source
    model's interface (``provenance.source``; ``None`` unless asked for)."""

    chain: Chain
    head: list[Any]
    source: dict[str, Any] | None


def _input_shape(data_input: Any) -> tuple[int, ...] | None:
    """The tensor shape of one sample: ``(C, H, W)`` or ``(d,)`` when known, else ``None``."""
    t = data_input.type
    dims = [d.dim_value if d.HasField("dim_value") else 0
            for d in t.tensor_type.shape.dim] if t.HasField("tensor_type") else []
    sample = tuple(int(d) for d in dims[1:])
    if len(sample) in (1, 3) and all(d > 0 for d in sample):
        return sample
    if len(dims) == 4:
        raise ShapeError(f"ONNX input {data_input.name!r} has shape {dims}; expected [N, C, H, W] "
                         f"with known sizes")
    return None


def _uses(graph: Any, consts: dict[str, Any]) -> dict[str, int]:
    """How many nodes (and graph outputs) read each computed tensor."""
    uses: dict[str, int] = {}
    for node in graph.node:
        if node.output and all(o in consts for o in node.output if o):
            continue
        for name in node.input:
            if name and name not in consts:
                uses[name] = uses.get(name, 0) + 1
    for o in graph.output:
        uses[o.name] = uses.get(o.name, 0) + 1
    return uses


def read_onnx(model: Any, max_width: int = DEFAULT_MAX_WIDTH, *,
              hooks: Mapping[tuple[str, str], Handler] | None = None,
              source: bool = True) -> OnnxGraph:
    """Walk an ONNX model (``ModelProto`` or path) once (module docstring). ``hooks`` replace
    handlers by (domain, op type); ``source`` records the model's interface."""
    proto = load_model(model)
    graph = proto.graph
    consts = constants(graph)
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise InputError(f"the ONNX graph has {len(inputs)} data inputs; a network has one")
    chain = Chain(_input_shape(inputs[0]), max_width)
    table = {**HANDLERS, **(hooks or {})}
    reader = Constants(consts, chain)
    current = inputs[0].name
    states = {current: chain.state()}
    uses = _uses(graph, consts)
    head: list[Any] = []
    for index, node in enumerate(graph.node):
        if node.output and all(o in consts for o in node.output if o):
            continue  # a Constant, or an Identity of a constant
        domain = "" if node.domain == "ai.onnx" else node.domain
        data = [i for i in node.input if i and i not in consts]
        if node.op_type in HEAD_OPS and not domain and data == [current] \
                and chain.layers and chain.pending is None:
            head = classifier_head(graph, index, current, consts, ONNX_OPS)
            break
        handler = table.get((domain, node.op_type))
        if handler is None:
            raise refuse(node, ONNX_OPS)
        if len([o for o in node.output if o]) != 1:
            raise InputError(f"{node_label(node)} has {len(node.output)} outputs; a layer of "
                             f"a target writes one tensor")
        unknown = [i for i in data if i not in states]
        if unknown:
            raise InputError(f"{node_label(node)} reads {unknown[0]!r}, which no node before it "
                             f"writes (the graph must be in topological order)")
        if len(data) == 2 and node.op_type == "Add" and not domain:
            if hooks:
                raise InputError(f"{node_label(node)} adds two branches (a residual block); a "
                                 f"network read with replaced handlers (a given network) is "
                                 f"a chain")
            chain.residual(states[data[0]], states[data[1]],
                           (uses[data[0]] == 1, uses[data[1]] == 1), node_label(node))
        elif len(data) != 1:
            branches = (" of two branches: only Add sums two branches (a residual block)"
                        if len(data) == 2 and node.op_type in ("Sub", "Mul", "Div") else "")
            raise InputError(f"{node_label(node)} reads {len(data)} computed tensors{branches}; "
                             f"a target's operators read one value, besides the residual Add "
                             f"of two branches")
        else:
            chain.load(states[data[0]], uses.get(data[0], 0) <= 1)
            handler(chain, node, attributes(node), reader)
        current = node.output[0]
        states[current] = chain.state()
    outputs = [o.name for o in graph.output]
    if not head and (len(outputs) != 1 or current != outputs[0]):
        raise InputError(f"the ONNX graph outputs {outputs} are not the end of the chain "
                         f"{current!r}")
    face = interface(proto, inputs[0], current, head, consts, chain.dtype) if source else None
    return OnnxGraph(chain, head, face)


def _target(layers: Sequence[TargetLayer], box: Box, source: dict[str, Any] | None,
            wiring: tuple[Wiring, ...] | None = None) -> TargetNetwork:
    lower, upper = box.bounds(layers[0].input_size)
    target = TargetNetwork(tuple(layers), lower, upper, wiring=wiring)
    object.__setattr__(target, "source", source or None)  # metadata, not the function
    return target


def target_from_onnx(model: Any, box: Box | Any, upper: Any = None, *,
                     max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """An ONNX model (``ModelProto`` or path) of any layer kinds as an exact target network.

    Parameters
    ----------
    model
        An ``onnx.ModelProto`` or the path of an ``.onnx`` file: a chain of the operators of
        :data:`ONNX_OPS` from one input to the output or to a classifier head (``Softmax``,
        ``LogSoftmax``, ``Sigmoid`` and post-processing), every weight stored.
    box, upper
        The input box ``D``: a :class:`~exactnorm.model.box.Box`, or (converted by
        :meth:`Box.of <exactnorm.model.box.Box.of>`) its lower and upper sides: sequences, or
        one number each for a cube.
    max_width
        Refuse a stored weight with a larger dimension.

    Returns
    -------
    TargetNetwork
        The graph's function (its logits, for a classifier), exactly (module docstring), with
        the model's interface in ``source``.

    Raises
    ------
    InputError
        Any other operator (named with its op type and node name and what would work instead),
        a graph that is not a chain, a weight that is computed rather than stored, a ``Relu``
        that follows no linear layer.
    MissingExtraError
        Without the ``onnx`` package (``pip install 'exactnorm[onnx]'``).
    """
    region = Box.of(box, upper)
    walked = read_onnx(model, max_width)
    layers = walked.chain.finish()
    source = walked.source or {}
    note = head_note(source)
    if note:
        warnings.warn(note, stacklevel=2)
    shape = _sample_shape(source)
    if shape is not None and layers[0].input_size != math.prod(shape):
        raise ShapeError(f"the ONNX input has {math.prod(shape)} values per sample, the first "
                         f"layer reads {layers[0].input_size}")
    return _target(layers, region, source, walked.chain.wiring())


def _sample_shape(source: dict[str, Any]) -> list[int] | None:
    shape = source.get("input", {}).get("shape") or []
    sample = shape[1:]
    return sample if sample and all(isinstance(d, int) and d > 0 for d in sample) else None
