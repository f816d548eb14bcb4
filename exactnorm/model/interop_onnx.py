"""ONNX MLPs in: the chain of a fully connected graph as an exact target, walked by a table of
operator handlers (:data:`HANDLERS`). Part of :mod:`exactnorm.model.interop`, which re-exports
:func:`target_from_onnx` and :data:`ONNX_OPS`.

Correctness argument
--------------------
The graph is walked as a chain from its single data input to the logits. ``Gemm(A, B, C)``
computes ``α·A·op(B) + β·C`` with ``op(B) = Bᵀ`` iff ``transB = 1``; in our ``(out, in)``
convention that is ``W = α·op(B)ᵀ``, ``b = β·C``, both exact (``α, β`` are float32 attributes,
converted exactly). ``MatMul(X, B)`` is ``W = Bᵀ``, ``b = 0``. ``Relu`` sets the activation of
the linear layer it follows; ``Identity``, ``Flatten(axis = 1)``, a ``Reshape`` to
``(batch, features)`` and a ``Cast`` to float or double change no value of a batch of vectors.
Element-wise affine operators — ``Add``/``Sub``/``Mul``/``Div`` with a stored constant (a
MatMul's bias is the first of them), ``BatchNormalization`` and ``ai.onnx.ml`` ``Scaler`` — fold
exactly into the linear layer before them (when no ``Relu`` came in between) or into the next
one (:mod:`exactnorm.model.onnx_common`). A final ``Softmax``, ``LogSoftmax`` or ``Sigmoid``
with only post-processing after it is a classifier head: the logits before it are certified and
the head is recorded for the export. Any other operator is refused with its op type, node name
and what would work instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from exactnorm.errors import InputError, LimitExceededError, ShapeError
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.onnx_common import (
    DTYPES,
    HEAD_OPS,
    ONNX_ML,
    Affine,
    affine_of,
    array,
    attributes,
    classifier_head,
    compose,
    constants,
    exact_values,
    fold_after,
    fold_before,
    head_note,
    interface,
    load_model,
    node_label,
    refuse,
)
from exactnorm.model.targets import box_bounds

__all__ = ["ONNX_OPS", "HANDLERS", "target_from_onnx", "onnx_layers", "with_source"]

#: operators a target graph may use (module docstring), as the refusals list them
ONNX_OPS = ("Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "BatchNormalization",
            f"{ONNX_ML} Scaler", "Relu", "Identity", "Flatten", "Reshape", "Cast", "Constant",
            "a final Softmax/LogSoftmax/Sigmoid head")

Layers = tuple[list[list[list[Fraction]]], list[list[Fraction]], list[str]]


class _Walk:
    """The layers read so far, the name of the current value and an element-wise affine map
    still to be folded into the next linear layer (``pending``, from node ``pending_node``)."""

    def __init__(self, graph: Any, consts: dict[str, Any], current: str, max_width: int):
        self.graph, self.consts, self.current, self.max_width = graph, consts, current, max_width
        self.weights: list[list[list[Fraction]]] = []
        self.biases: list[list[Fraction]] = []
        self.acts: list[str] = []
        self.pending: Affine | None = None
        self.pending_node: Any = None
        self.dtype: str | None = None  # element type of the last linear layer's weights

    def const(self, name: str, node: Any) -> np.ndarray:
        if name not in self.consts:
            raise InputError(f"{node_label(node)}: input {name!r} is not an initializer; weights "
                             f"must be stored constants")
        t = self.consts[name]
        if any(d > self.max_width for d in t.dims):
            raise LimitExceededError(f"ONNX initializer {name!r} has shape {tuple(t.dims)}, "
                                     f"above the width limit {self.max_width} (raise it with "
                                     f"--max-width)")
        self.dtype = DTYPES.get(t.data_type, self.dtype)
        return array(t)

    @property
    def open(self) -> bool:
        """The last layer is linear with nothing but affine maps after it (no Relu yet)."""
        return bool(self.acts) and self.acts[-1] == "identity"

    def add_layer(self, W: list[list[Fraction]], b: list[Fraction]) -> None:
        if self.pending is not None:
            W, b = fold_before(W, b, self.pending)
            self.pending = self.pending_node = None
        self.weights.append(W)
        self.biases.append(b)
        self.acts.append("identity")


def _matrix(B: np.ndarray, label: str) -> list[list[Fraction]]:
    if B.ndim != 2:
        raise ShapeError(f"{label}: weight has shape {B.shape}, expected 2-D")
    cols = B.shape[1]
    flat = exact_values(B, f"{label} weight")
    return [flat[r * cols:(r + 1) * cols] for r in range(B.shape[0])]


def _gemm(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    label = node_label(node)
    if a.get("transA", 0):
        raise InputError(f"{label}: transA = 1 is not an MLP layer on a batch")
    B = w.const(node.input[1], node)
    alpha = Fraction(float(np.float32(a.get("alpha", 1.0))))
    beta = Fraction(float(np.float32(a.get("beta", 1.0))))
    W = [[alpha * x for x in row] for row in _matrix(B if a.get("transB", 0) else B.T, label)]
    if len(node.input) > 2 and node.input[2]:
        c = exact_values(w.const(node.input[2], node), f"{label} bias")
        c = c * len(W) if len(c) == 1 else c  # ONNX broadcasts a scalar C
        if len(c) != len(W):
            raise ShapeError(f"{label}: bias has {len(c)} entries for {len(W)} outputs")
        b = [beta * x for x in c]
    else:
        b = [Fraction(0)] * len(W)
    w.add_layer(W, b)


def _matmul(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    W = _matrix(w.const(node.input[1], node).T, node_label(node))
    w.add_layer(W, [Fraction(0)] * len(W))


def _relu(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    if not w.open or w.pending is not None:
        raise InputError(f"{node_label(node)} does not directly follow a linear layer")
    w.acts[-1] = "relu"


def _affine(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    n = len(w.weights[-1]) if w.weights else None
    affine = affine_of(node, w.consts, n)
    if affine is None:
        raise InputError(f"{node_label(node)} does not continue the chain from "
                         f"{w.current!r} with one stored constant")
    if w.open and w.pending is None:
        w.weights[-1], w.biases[-1] = fold_after(w.weights[-1], w.biases[-1], affine)
    else:  # on the input or after a Relu: folded into the next linear layer
        w.pending = affine if w.pending is None else compose(w.pending, affine)
        w.pending_node = w.pending_node or node


def _flatten(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    if a.get("axis", 1) != 1:
        raise InputError(f"{node_label(node)}: only axis = 1 (flatten each sample) is supported")


def _reshape(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    shape = [int(x) for x in np.asarray(w.const(node.input[1], node)).ravel()]
    if len(shape) != 2 or shape[0] not in (-1, 0, 1) and shape[1] != -1:
        raise InputError(f"{node_label(node)}: only a reshape to (batch, features) — a flatten "
                         f"— is supported, got shape {shape}")


def _cast(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    if a.get("to") not in (1, 11):  # FLOAT, DOUBLE
        raise InputError(f"{node_label(node)}: only a cast to float or double is a no-op on "
                         f"exact values")


def _identity(w: _Walk, node: Any, a: dict[str, Any]) -> None:
    pass


#: (domain, op type) → handler(walk, node, attributes); the walk's one table of operators
HANDLERS: dict[tuple[str, str], Callable[[_Walk, Any, dict[str, Any]], None]] = {
    ("", "Gemm"): _gemm, ("", "MatMul"): _matmul, ("", "Relu"): _relu,
    ("", "Add"): _affine, ("", "Sub"): _affine, ("", "Mul"): _affine, ("", "Div"): _affine,
    ("", "BatchNormalization"): _affine, (ONNX_ML, "Scaler"): _affine,
    ("", "Identity"): _identity, ("", "Flatten"): _flatten, ("", "Reshape"): _reshape,
    ("", "Cast"): _cast,
}


def onnx_layers(model: Any, max_width: int = DEFAULT_MAX_WIDTH,
                source: dict[str, Any] | None = None) -> Layers:
    """Walk the chain of an ONNX MLP: exact weights, biases and activations (module docstring).

    ``source``, when given, receives the model's interface (:func:`~exactnorm.model.
    onnx_common.interface`): input name, dtype and shape, the certified logits and the outputs
    and head of a classifier."""
    proto = load_model(model)
    graph = proto.graph
    consts = constants(graph)
    inputs = [i for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise InputError(f"the ONNX graph has {len(inputs)} data inputs; an MLP has one")
    w = _Walk(graph, consts, inputs[0].name, max_width)
    head: list[Any] = []
    for index, node in enumerate(graph.node):
        if node.output and all(o in consts for o in node.output if o):
            continue  # a Constant, or an Identity of a constant
        domain = "" if node.domain == "ai.onnx" else node.domain
        if node.op_type in HEAD_OPS and not domain and list(node.input) == [w.current] \
                and w.weights and w.pending is None:
            head = classifier_head(graph, index, w.current, consts, ONNX_OPS)
            break
        handler = HANDLERS.get((domain, node.op_type))
        if handler is None:
            raise refuse(node, ONNX_OPS)
        data = [i for i in node.input if i and i not in consts]
        if data != [w.current] or len([o for o in node.output if o]) != 1:
            raise InputError(f"{node_label(node)} does not continue the chain from "
                             f"{w.current!r}; only a sequential MLP (one path from input to "
                             f"output) is supported")
        handler(w, node, attributes(node))
        w.current = node.output[0]
    if w.pending is not None:
        raise InputError(f"{node_label(w.pending_node)} is not followed by a linear layer to "
                         f"fold into")
    if not w.weights:
        raise InputError("the ONNX graph has no Gemm or MatMul layer")
    outputs = [o.name for o in graph.output]
    if not head and (len(outputs) != 1 or w.current != outputs[0]):
        raise InputError(f"the ONNX graph outputs {outputs} are not the end of the chain "
                         f"{w.current!r}")
    if source is not None:
        source.update(interface(proto, inputs[0], w.current, head, consts, w.dtype))
        note = head_note(source)
        if note:
            warnings.warn(note, stacklevel=3)
    elif head:
        warnings.warn(f"the ONNX graph ends in {head[0].op_type}: exactnorm certifies the logits "
                      f"{w.current!r} before it", stacklevel=3)
    return w.weights, w.biases, w.acts


def with_source(target: Any, source: dict[str, Any] | None) -> Any:
    """``target`` with its ``source`` description set (metadata, not the function: the layers
    are not validated again)."""
    object.__setattr__(target, "source", source or None)
    return target


def target_from_onnx(model: Any, lower: Sequence[Any], upper: Sequence[Any], *,
                     max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """An ONNX MLP (``ModelProto`` or path) as an exact target network.

    Parameters
    ----------
    model
        An ``onnx.ModelProto`` or the path of an ``.onnx`` file: a chain of ``Gemm`` (any
        ``alpha``, ``beta``, ``transB``; ``transA = 0``), ``MatMul``, element-wise affine
        operators with stored constants (``Add``, ``Sub``, ``Mul``, ``Div``,
        ``BatchNormalization``, ``ai.onnx.ml`` ``Scaler``), ``Relu``, ``Identity``, ``Cast`` and
        ``Flatten``/``Reshape`` from one input to the output or to a classifier head
        (``Softmax``, ``LogSoftmax``, ``Sigmoid`` and post-processing), with every weight stored.
    lower, upper
        The input box ``D``: sequences, or one number each for a cube.

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
    source: dict[str, Any] = {}
    weights, biases, acts = onnx_layers(model, max_width, source)
    d = len(weights[0][0])
    return with_source(TargetNetwork.from_lists(weights, biases, acts,
                                                lower=box_bounds(lower, "lower", d),
                                                upper=box_bounds(upper, "upper", d),
                                                max_width=max_width),
                       source)
