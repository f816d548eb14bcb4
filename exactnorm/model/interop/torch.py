"""PyTorch state dicts in: one reader for ``nn.Sequential`` models of every layer kind.

A state dict holds parameters only: which modules exist and which activations sit between them
is not in it, so it is *declared*. Either as ``activations`` (one of ``relu``/``identity`` per
``Linear`` layer of an ``nn.Sequential`` of ``Linear`` layers and parameter-free activations, the
keys ``"<index>.weight"``, ``"<index>.bias"``), or as an ``architecture`` of tokens
(:func:`parse_architecture`): every kind's own tokens (:data:`exactnorm.model.interop.kinds.
KIND_TORCH_TOKENS`: ``linear``, ``conv(stride=, padding=, dilation=)``, ``avgpool(k)``,
``globalavgpool``) and the kind-free ``bn`` (a ``BatchNorm1d``/``BatchNorm2d`` folded into the
layer before it), ``relu`` and ``flatten``; the modules with parameters take the state dict's
prefixes in order. Both build the same :class:`~exactnorm.model.interop.chain.Chain` as the ONNX
walker, so a state dict and the ONNX file of the same model give the same target (tested).

Correctness argument: every stored float is converted to the dyadic rational it denotes; a
batch normalization in eval mode is ``s ⊙ (v − μ) + β`` with ``s = γ/√(var + ε)`` rounded once to
float64 (:func:`~exactnorm.model.onnx_common.fold_batchnorm`), folded exactly into the rows before
it; what the declaration does not name is refused.

>>> parse_architecture("conv(padding=1),relu,avgpool(2),flatten,linear")[2]
('avgpool', {'kernel': 2})
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.model.box import Box
from exactnorm.model.interop.chain import Chain, Entry
from exactnorm.model.interop.kinds import KIND_TORCH_TOKENS
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork

__all__ = ["STATE_DICT_KEY", "STATE_DICT_RESERVED", "TOKENS", "parse_activations",
           "parse_architecture", "is_state_dict_keys", "state_dict_layers", "read_state_dict",
           "target_from_state_dict"]

#: ``"<module index>.weight"`` / ``"<module index>.bias"`` of an ``nn.Sequential`` state dict.
STATE_DICT_KEY = re.compile(r"^(\d+)\.(weight|bias)$")
#: Keys of a state dict that are not parameters: the box and the activations
#: (docs/user-guide.md, target files).
STATE_DICT_RESERVED = ("lower", "upper", "activations")

DECLARE_HINT = ("declare them with an 'activations' array in the file (one of relu/identity per "
                "Linear layer) or --activations relu,...,identity")


def _relu(chain: Chain, entry: Entry) -> None:
    chain.relu(entry.label)


def _flatten(chain: Chain, entry: Entry) -> None:
    chain.flatten()


def _batchnorm(chain: Chain, entry: Entry) -> None:
    chain.batchnorm(entry)


#: architecture token → (handler(chain, entry), whether the module has parameters: a bool,
#: or the number of modules from the token's options)
TOKENS: dict[str, tuple[Any, Any]] = {
    **KIND_TORCH_TOKENS, "bn": (_batchnorm, True), "relu": (_relu, False),
    "flatten": (_flatten, False)}
_ALIASES = {"batchnorm": "bn"}
#: options of a token written as a bare word (``block(16,stride=2,proj)``)
_FLAGS = {"block": ("proj", "identity")}
_ENTRY = re.compile(r"^(" + "|".join(sorted(set(TOKENS) | set(_ALIASES), key=len, reverse=True))
                    + r")(?:\((.*)\))?$")


def parse_activations(declared: str | Sequence[str], n_layers: int | None = None) -> list[str]:
    """Validate declared activations: ``"relu,relu,identity"`` or a sequence of names.

    Parameters
    ----------
    declared
        Comma-separated text (the ``--activations`` option) or a sequence of names; names are
        case-insensitive (``ReLU`` is ``relu``).
    n_layers
        The number of ``Linear`` layers the declaration must cover, if known.

    Returns
    -------
    list of str
        ``relu``/``identity`` names, one per layer.

    Raises
    ------
    InputError
        For a name that is not piecewise linear (``tanh``, ``gelu``, …) or a wrong count.

    Examples
    --------
    >>> parse_activations("ReLU, relu ,identity", 3)
    ['relu', 'relu', 'identity']
    """
    names = declared.split(",") if isinstance(declared, str) else list(declared)
    acts = [str(a).strip().lower() for a in names]
    for i, a in enumerate(acts, 1):
        if a not in ACTIVATIONS:
            raise InputError(f"activation {a!r} of Linear layer {i} is not piecewise linear; "
                             f"use relu or identity")
    if n_layers is not None and len(acts) != n_layers:
        raise InputError(f"{len(acts)} activations declared for {n_layers} Linear layers")
    return acts


def parse_architecture(spec: str | Sequence[str]) -> list[tuple[str, dict[str, int]]]:
    """``"conv(padding=1),relu,avgpool(2),flatten,linear"`` → ``[(token, options), …]``.

    Options are integers; ``conv`` takes ``stride``, ``padding``, ``dilation`` (default 1, 0, 1),
    ``avgpool`` its kernel size (positional or ``kernel``) and ``stride`` (default the kernel),
    ``bn`` its ``eps`` (default 10⁻⁵, PyTorch's).
    """
    items = re.split(r",(?![^(]*\))", spec) if isinstance(spec, str) else list(spec)
    out = []
    for item in items:
        m = _ENTRY.match(item.strip())
        if m is None:
            raise InputError(f"unknown architecture entry {item!r}; use "
                             f"{', '.join(sorted(TOKENS))}")
        opts: dict[str, int] = {}
        token = _ALIASES.get(m.group(1), m.group(1))
        for part in filter(None, (m.group(2) or "").split(",")):
            key, _, val = part.partition("=")
            if not val and key.strip() in _FLAGS.get(token, ()):
                opts[key.strip()] = 1
                continue
            if not val:
                key, val = ("channels" if token == "block" else "kernel"), key
            try:
                opts[key.strip()] = int(val)
            except ValueError:
                raise InputError(f"architecture entry {item!r}: {val!r} is not an "
                                 f"integer") from None
        out.append((token, opts))
    return out


def is_state_dict_keys(keys: Sequence[str]) -> bool:
    """``True`` when every key is ``"<int>.weight"``, ``"<int>.bias"`` or reserved, and at least
    one is a parameter.

    >>> is_state_dict_keys(["0.weight", "0.bias", "lower", "upper"]), is_state_dict_keys(["W1"])
    (True, False)
    """
    params = [k for k in keys if k not in STATE_DICT_RESERVED]
    return bool(params) and all(STATE_DICT_KEY.match(k) for k in params)


def state_dict_layers(keys: Sequence[str]) -> list[int]:
    """The module indices of an ``nn.Sequential`` of ``Linear`` layers, in numeric order
    (``"10.weight"`` after ``"2.weight"``); a key outside the scheme is refused by name."""
    modules: dict[int, set[str]] = {}
    for k in keys:
        if k in STATE_DICT_RESERVED:
            continue
        m = STATE_DICT_KEY.match(k)
        if m is None:
            raise InputError(f"state dict key {k!r} is not '<index>.weight' or '<index>.bias' "
                             f"(only nn.Sequential of Linear layers and parameter-free "
                             f"activations is supported; save a custom module's Linear layers "
                             f"as an nn.Sequential state dict)")
        modules.setdefault(int(m.group(1)), set()).add(m.group(2))
    if not modules:
        raise InputError("the state dict has no Linear layers")
    for idx, kinds in modules.items():
        if kinds != {"weight", "bias"}:
            missing = ({"weight", "bias"} - kinds).pop()
            raise InputError(f"state dict module {idx} has no {missing!r} "
                             f"(Linear layers need weight and bias)")
    return sorted(modules)


def _prefixes(arrays: Mapping[str, Any]) -> list[str]:
    """Module prefixes in the order of the keys (``0.weight``, ``1.running_mean``, …)."""
    out: list[str] = []
    for key in arrays:
        if key in STATE_DICT_RESERVED or key.endswith("num_batches_tracked"):
            continue
        prefix = key.rsplit(".", 1)[0]
        if prefix not in out:
            out.append(prefix)
    return out


def read_state_dict(arrays: Mapping[str, Any], spec: Sequence[tuple[str, dict[str, int]]],
                    prefixes: Sequence[str], input_shape: Sequence[int] | None,
                    max_width: int = DEFAULT_MAX_WIDTH) -> Chain:
    """The chain of a declared architecture (:func:`parse_architecture`) over a state dict,
    the modules with parameters taking ``prefixes`` in order."""
    counts = [int(has(opts) if callable(has) else has)
              for has, opts in ((TOKENS[token][1], opts) for token, opts in spec)]
    if sum(counts) != len(prefixes):
        raise InputError(f"the architecture has {sum(counts)} modules with parameters, the "
                         f"state dict {len(prefixes)} ({', '.join(prefixes)})")
    shape = None if input_shape is None else tuple(int(v) for v in input_shape)
    chain = Chain(shape, max_width)
    at = 0
    for n, ((token, opts), count) in enumerate(zip(spec, counts), 1):
        handler = TOKENS[token][0]
        label = f"architecture entry {n} ({token})"
        mine = tuple(prefixes[at:at + count])
        at += count
        handler(chain, Entry(token, opts, label, arrays, mine[0] if mine else None, chain,
                             mine))
    return chain


def target_from_state_dict(arrays: Mapping[str, Any], box: Box | Any, upper: Any = None,
                           activations: str | Sequence[str] | None = None, *,
                           architecture: str | Sequence[str] | None = None,
                           input_shape: Sequence[int] | None = None,
                           max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """A PyTorch ``nn.Sequential`` state dict as an exact target (module docstring).

    Parameters
    ----------
    arrays
        Parameter name → array (numpy arrays or anything ``np.asarray`` accepts; the reserved
        keys ``lower``, ``upper``, ``activations`` are ignored here). Every float converts
        exactly.
    box, upper
        The input box ``D``: a :class:`~exactnorm.model.box.Box`, or (converted by
        :meth:`Box.of <exactnorm.model.box.Box.of>`) its lower and upper sides: sequences, or
        one number each for a cube.
    activations
        One of ``relu``/``identity`` per ``Linear`` layer, in module order, for a state dict of
        ``Linear`` layers (keys ``"<index>.weight"``, ``"<index>.bias"``).
    architecture, input_shape
        Instead of ``activations``: the declared modules (:func:`parse_architecture`, e.g.
        ``"conv(padding=1),relu,avgpool(2),flatten,linear"``) and the input's ``(C, H, W)``.

    Returns
    -------
    TargetNetwork
        The network exactly as stored.

    Raises
    ------
    InputError
        No or an unsupported declaration, a key outside the scheme, a missing parameter, a
        long-double array; :class:`~exactnorm.errors.LimitExceededError` above ``max_width``.
    """
    if architecture is not None:
        if activations is not None:
            raise InputError("declare either the activations or the architecture, not both",
                             parameter="activations")
        chain = read_state_dict(arrays, parse_architecture(architecture), _prefixes(arrays),
                                input_shape, max_width)
    else:
        order = state_dict_layers(list(arrays.keys()))
        if activations is None:
            raise InputError(f"a state dict does not record its activations; {DECLARE_HINT}")
        acts = parse_activations(activations, len(order))
        spec: list[tuple[str, dict[str, int]]] = []
        for act in acts:
            spec += [("linear", {})] + ([("relu", {})] if act == "relu" else [])
        chain = read_state_dict(arrays, spec, [str(i) for i in order], input_shape, max_width)
    layers = chain.finish("the state dict")
    d = layers[0].input_size
    if input_shape is not None and int(np.prod(input_shape)) != d:
        raise ShapeError(f"input_shape {list(input_shape)} has {int(np.prod(input_shape))} "
                         f"values, the first layer reads {d}")
    lower, upper_ = Box.of(box, upper).bounds(d)
    return TargetNetwork(tuple(layers), lower, upper_, wiring=chain.wiring())
