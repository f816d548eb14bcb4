"""ONNX models in: one graph walker for every layer kind, MLPs and CNNs alike.

The graph is walked once as a chain from its single data input to the logits (or to the output):
each node is handled by the table :data:`HANDLERS` — the kind-free operators below, and every
kind's own operators (:data:`exactnorm.model.interop.kinds.KIND_ONNX_OPS`: ``Gemm``/``MatMul``,
``Conv``, ``AveragePool``, ``GlobalAveragePool``/``ReduceMean``) — which extend a
:class:`~exactnorm.model.interop.chain.Chain`. The width limit, ``Cast``, the classifier head and
the recorded interface of the source model (``provenance.source``) are the same for every kind.

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
with its op type, node name and what would work instead.

A caller may replace a handler (``hooks``): the given-network reader keeps a
``BatchNormalization`` as the tuned normalization of the layer before it instead of folding it
(:mod:`exactnorm.model.given`), with the same walk.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.interop.chain import Chain, Constants
from exactnorm.model.interop.kinds import KIND_ONNX_OPS
from exactnorm.model.kinds.base import TargetKind
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
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
from exactnorm.model.targets import box_bounds
from exactnorm.model.values import as_vector

__all__ = ["ONNX_OPS", "HANDLERS", "OnnxGraph", "read_onnx", "target_from_onnx",
           "target_from_onnx_box", "Handler"]

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


#: the kind-free operators
_COMMON: dict[tuple[str, str], Handler] = {
    ("", "Relu"): _relu,
    ("", "Add"): _affine, ("", "Sub"): _affine, ("", "Mul"): _affine, ("", "Div"): _affine,
    ("", "BatchNormalization"): _affine, (ONNX_ML, "Scaler"): _affine,
    ("", "Identity"): _identity, ("", "Flatten"): _flatten, ("", "Reshape"): _reshape,
    ("", "Cast"): _cast,
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
    head: list[Any] = []
    for index, node in enumerate(graph.node):
        if node.output and all(o in consts for o in node.output if o):
            continue  # a Constant, or an Identity of a constant
        domain = "" if node.domain == "ai.onnx" else node.domain
        if node.op_type in HEAD_OPS and not domain and list(node.input) == [current] \
                and chain.layers and chain.pending is None:
            head = classifier_head(graph, index, current, consts, ONNX_OPS)
            break
        handler = table.get((domain, node.op_type))
        if handler is None:
            raise refuse(node, ONNX_OPS)
        data = [i for i in node.input if i and i not in consts]
        if data != [current] or len([o for o in node.output if o]) != 1:
            residual = (" (a residual connection: the certificate format has no target-side "
                        "skips yet)" if node.op_type == "Add" and len(data) == 2 else "")
            raise InputError(f"{node_label(node)} does not continue the chain from "
                             f"{current!r}{residual}; only a sequential network (one path from "
                             f"input to output) is supported")
        handler(chain, node, attributes(node), reader)
        current = node.output[0]
    outputs = [o.name for o in graph.output]
    if not head and (len(outputs) != 1 or current != outputs[0]):
        raise InputError(f"the ONNX graph outputs {outputs} are not the end of the chain "
                         f"{current!r}")
    face = interface(proto, inputs[0], current, head, consts, chain.dtype) if source else None
    return OnnxGraph(chain, head, face)


def _target(layers: Sequence[TargetKind], lower: Any, upper: Any,
            source: dict[str, Any] | None) -> TargetNetwork:
    d = layers[0].input_size
    lo, hi = box_bounds(lower, "lower", d), box_bounds(upper, "upper", d)
    target = TargetNetwork(tuple(layers), as_vector(lo, len(lo), "domain lower"),
                           as_vector(hi, len(hi), "domain upper"))
    object.__setattr__(target, "source", source or None)  # metadata, not the function
    return target


def target_from_onnx(model: Any, lower: Any, upper: Any, *,
                     max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """An ONNX model (``ModelProto`` or path) of any layer kinds as an exact target network.

    Parameters
    ----------
    model
        An ``onnx.ModelProto`` or the path of an ``.onnx`` file: a chain of the operators of
        :data:`ONNX_OPS` from one input to the output or to a classifier head (``Softmax``,
        ``LogSoftmax``, ``Sigmoid`` and post-processing), every weight stored.
    lower, upper
        The input box ``D``: sequences, or one number each for a cube.
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
    return _target(layers, lower, upper, source)


def _sample_shape(source: dict[str, Any]) -> list[int] | None:
    shape = source.get("input", {}).get("shape") or []
    sample = shape[1:]
    return sample if sample and all(isinstance(d, int) and d > 0 for d in sample) else None


def target_from_onnx_box(path: Any, box: tuple[Any, Any] | None, *,
                         max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """An ``.onnx`` target file on the cube ``box`` (``--box``; required: a model has no box)."""
    if box is None:
        raise InputError(f"an ONNX model has no input box; pass --box LO:HI for {path}")
    return target_from_onnx(path, box[0], box[1], max_width=max_width)
