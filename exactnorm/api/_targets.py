"""The networks the verbs read: one loader per role, and what the verbs accept in memory.

* :func:`load_target` — the one loader of a **target** file: a JSON target file or certificate
  (its ``domain`` and ``target`` sections, any layer kinds, read by the one reader of documents,
  :func:`exactnorm.certificate.read_target`), a ``W1, b1, …`` ``.npz``, a PyTorch state dict
  (``.npz``/``.pt``), an ONNX model of any kind (:func:`exactnorm.model.interop.
  target_from_file`).
* :func:`load_frozen` — the one loader of a **frozen** network: a certificate's (or an exact
  export's) frozen network, or a *given* network whose normalization is re-tuned
  (``exactnorm capacity``): an ONNX MLP with or without ``BatchNormalization``, an
  ``nn.Sequential`` state dict, a ``W1, b1, …`` ``.npz`` or a JSON target file
  (:mod:`exactnorm.model.interop.frozen`).
* :func:`target_of`, :func:`frozen_of` — what the verbs accept: a network object, a path, a
  fitted scikit-learn MLP or pipeline, or (a target) a state dict of arrays.

The box of a target is a :class:`~exactnorm.model.box.Box`; the forms a caller passes
(``"0:1"``, ``(0.0, 1.0)``, fractions, strings, arrays, ``box_file``, ``box_from_data``) are
converted into one here, at the edge (:meth:`Box.given <exactnorm.model.box.Box.given>`).

>>> g = target_of(demo_target())
>>> g.widths
(3, 4, 3, 2)
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

from exactnorm.certificate import read_document, read_frozen, read_target
from exactnorm.checker.vocabulary import FORMAT
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.files import require_file
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.box import Box
from exactnorm.model.interop import (
    MODEL_SUFFIXES,
    frozen_from_file,
    frozen_from_sklearn,
    frozen_from_target,
    target_from_file,
    target_from_sklearn,
    target_from_state_dict,
)
from exactnorm.model.network import DEFAULT_MAX_WIDTH, FrozenNetwork, TargetNetwork
from exactnorm.model.onnx_common import is_token_model
from exactnorm.model.targets import demo_target

__all__ = ["load_target", "load_frozen", "target_of", "frozen_of", "demo_target", "Box",
           "is_transformer_file"]


def is_transformer_file(path: Any) -> bool:
    """Whether ``path`` is an ONNX model that reads token ids (read as a transformer): asked of
    every model file before it is read, so answered from the graph's input alone, without the
    transformer reader (:mod:`exactnorm.api._transformer` imports it when it is one)."""
    return isinstance(path, (str, os.PathLike)) and str(path).endswith(".onnx") \
        and is_token_model(path)


def _box(box: Any, box_file: Any, box_from_data: Any, max_digits: int) -> Box | None:
    return Box.given(box=box, box_file=box_file, box_from_data=box_from_data,
                     max_digits=max_digits)


def _parameter(box_file: Any, box_from_data: Any) -> str:
    return "box_file" if box_file is not None else \
        "box_from_data" if box_from_data is not None else "box"


def load_target(path: str | os.PathLike[str], *, box: Any = None,
                box_file: str | os.PathLike[str] | None = None,
                box_from_data: Any = None,
                activations: str | Sequence[str] | None = None,
                max_width: int = DEFAULT_MAX_WIDTH,
                max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Read a target network from any file the command line reads: a JSON target file or
    certificate (layers of any kind), a ``W1, b1, …`` npz, a PyTorch ``nn.Sequential`` state
    dict (``.npz``/``.pt``), or an ONNX MLP, CNN or ResNet.

    Parameters
    ----------
    path : path-like
        The target file (format in docs/user-guide.md, "Models exactnorm reads").
    box : Box, str, (lo, hi) or (lower, upper), optional
        Input box when the file has none: a :class:`~exactnorm.model.box.Box`, the cube
        ``"LO:HI"`` or ``(lo, hi)`` (ints, floats — taken exactly —, fractions or strings), or
        per-feature ``(lower, upper)`` sequences or arrays. Refused when the file has its own.
    box_file : path-like, optional
        Per-feature bounds from ``.json`` (``{"lower": [...], "upper": [...]}``), ``.npz``
        (arrays ``lower``, ``upper``) or ``.npy`` (shape ``(2, d)``).
    box_from_data : path-like or array, optional
        Samples ``(n, d)`` (an ``.npy`` file or an array): the box is their per-feature minimum
        and maximum.
    activations : str or sequence of str, optional
        A state dict's activations (``"relu,relu,identity"``), which it does not record.
    max_width, max_digits : int
        Refuse wider layers and longer numbers.

    Returns
    -------
    TargetNetwork

    Raises
    ------
    InputError
        Unreadable file, a float in JSON, a shape mismatch, no box or two boxes.

    See Also
    --------
    demo_target : the embedded 3-layer demo.
    load_frozen : the loader of frozen networks.

    Examples
    --------
    >>> import tempfile, os
    >>> from exactnorm.certificate import save_target
    >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> save_target(demo_target(), path)
    >>> load_target(path) == demo_target()
    True
    """
    require_integer(max_width, "max_width", minimum=1)
    require_integer(max_digits, "max_digits", minimum=1)
    given = _box(box, box_file, box_from_data, max_digits)
    p = require_file(path, "target file")
    try:
        if p.suffix.lower() in MODEL_SUFFIXES:
            return target_from_file(p, box=given, activations=activations, max_width=max_width)
        if activations is not None:
            raise InputError(f"--activations applies to state dicts (.npz/.pt); {p} records its "
                             f"activations itself", parameter="activations")
        doc = read_document(p, max_digits=max_digits)
        return read_target(doc, box=given, max_digits=max_digits, max_width=max_width)
    except InputError as exc:
        if exc.parameter == "box" and given is not None and box is None:
            # the box came from box_file or box_from_data: in the words of that parameter
            name = _parameter(box_file, box_from_data)
            raise type(exc)(str(exc).replace(" box was given", f" {name} was given"),
                            parameter=name) from None
        raise


def load_frozen(path: str | os.PathLike[str], *,
                activations: str | Sequence[str] | None = None,
                max_width: int = DEFAULT_MAX_WIDTH,
                max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """Read a frozen network from a file: the frozen network of a certificate or of an exact
    export (``exactnorm.batchnorm``), or a *given* network whose normalization is re-tuned: an
    ONNX MLP with or without ``BatchNormalization`` after its linear layers (kept as each
    layer's BatchNorm record), an ``nn.Sequential`` state dict of ``Linear`` and ``BatchNorm1d``
    (``.npz``/``.pt``, with ``activations``), a ``W1, b1, …`` ``.npz`` or a JSON target file
    (its layers' wiring kept).

    Parameters
    ----------
    path : path-like
        The file.
    activations : str or sequence of str, optional
        A state dict's activations (one of relu/identity per ``Linear``).
    max_width, max_digits : int
        Refuse wider layers and longer numbers.

    Returns
    -------
    FrozenNetwork
        A given network has explicit frozen matrices (declared ``fixed`` with their source),
        its own γ, β and a BatchNorm record per layer (:mod:`exactnorm.model.batchnorm`).

    Examples
    --------
    >>> import tempfile, os
    >>> from exactnorm.certificate import save_target
    >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> save_target(demo_target(), path)
    >>> load_frozen(path).node_dims
    (3, 4, 3, 2)
    """
    require_integer(max_width, "max_width", minimum=1)
    require_integer(max_digits, "max_digits", minimum=1)
    p = require_file(path, "network file")
    if p.suffix.lower() in MODEL_SUFFIXES:
        return frozen_from_file(p, activations=activations, max_width=max_width)
    if activations is not None:
        raise InputError(f"--activations applies to state dicts (.npz/.pt); {p} records its "
                         f"activations itself", parameter="activations")
    # the exports (every format's writer) are imported by the verbs that read one, not by
    # every loader of a target
    from exactnorm.outputs.export import EXPORT_FORMAT, read_exported_json

    doc = read_document(p, "network file", max_digits=max_digits)
    declared = doc.get("format") if isinstance(doc, dict) else None
    if declared == EXPORT_FORMAT:
        return read_exported_json(p, max_digits=max_digits)
    if declared == FORMAT:
        return read_frozen(doc, max_digits=max_digits)
    if declared is not None:
        raise InputError(f"{p} is an {declared!r} document, not a network: a frozen network is "
                         f"read from a certificate, an exact export, a model file or a target "
                         f"file")
    # a target file as a given network: its box does not matter, only its layers
    g = read_target(doc, box=Box.of_cube(0, 0) if "domain" not in doc else None,
                    max_digits=max_digits, max_width=max_width)
    return frozen_from_target(g, str(p))


def _in_memory_box(box: Any, box_file: Any, box_from_data: Any, max_digits: int,
                   what: str) -> Box:
    given = _box(box, box_file, box_from_data, max_digits)
    if given is None:
        raise InputError(f"{what} has no input box; give box (e.g. \"0:1\" or (0, 1)), "
                         f"box_file or box_from_data",
                         parameter=("box", "box_file", "box_from_data"))
    return given


def target_of(target: Any, *, box: Any = None, box_file: str | os.PathLike[str] | None = None,
              box_from_data: Any = None,
              activations: str | Sequence[str] | None = None,
              max_width: int = DEFAULT_MAX_WIDTH,
              max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """The :class:`TargetNetwork` of anything :func:`exactnorm.certify` accepts (module doc).

    Raises
    ------
    InputError
        A box or activations for a :class:`TargetNetwork` (it has its own), no box for a model in
        memory, an object that is no supported model.
    """
    if isinstance(target, TargetNetwork):
        extra = [n for n, v in (("box", box), ("box_file", box_file),
                                ("box_from_data", box_from_data),
                                ("activations", activations)) if v is not None]
        if extra:
            raise InputError(f"{', '.join(extra)} describe a target file or model; target is a "
                             f"TargetNetwork", parameter=tuple(extra))
        return target
    if isinstance(target, (str, os.PathLike)):
        return load_target(target, box=box, box_file=box_file, box_from_data=box_from_data,
                           activations=activations, max_width=max_width, max_digits=max_digits)
    if isinstance(target, Mapping):
        region = _in_memory_box(box, box_file, box_from_data, max_digits, "a state dict")
        return target_from_state_dict(target, region, activations=activations,
                                      max_width=max_width)
    if hasattr(target, "predict") or hasattr(target, "steps"):  # scikit-learn (fitted or not)
        if activations is not None:
            raise InputError("activations apply to state dicts; a scikit-learn MLP records its "
                             "own", parameter="activations")
        region = _in_memory_box(box, box_file, box_from_data, max_digits,
                                "a scikit-learn model")
        return target_from_sklearn(target, region, max_width=max_width)
    raise InputError(f"target must be a TargetNetwork, a target file, a fitted scikit-learn "
                     f"MLP or pipeline, or a state dict of arrays; got {type(target).__name__}",
                     parameter="target")


def frozen_of(frozen: Any, *, activations: str | Sequence[str] | None = None,
              max_width: int = DEFAULT_MAX_WIDTH,
              max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """The :class:`FrozenNetwork` of anything :func:`exactnorm.capacity` accepts as the given
    network: a :class:`FrozenNetwork`, a :class:`TargetNetwork` (its layers as given ones), a
    file (:func:`load_frozen`), or a fitted scikit-learn MLP or pipeline."""
    if isinstance(frozen, FrozenNetwork):
        return frozen
    if isinstance(frozen, TargetNetwork):
        return frozen_from_target(frozen, "a TargetNetwork")
    if isinstance(frozen, (str, os.PathLike)):
        return load_frozen(frozen, activations=activations, max_width=max_width,
                           max_digits=max_digits)
    if hasattr(frozen, "coefs_") or hasattr(frozen, "steps"):
        return frozen_from_sklearn(frozen)
    raise InputError(f"frozen must be a model file, a fitted scikit-learn MLP, a TargetNetwork "
                     f"or a FrozenNetwork, got {type(frozen).__name__}", parameter="frozen")


def on_box(g: TargetNetwork, box: Box, *, parameter: str = "box") -> TargetNetwork:
    """``g`` on another box (its dimension checked against the network input)."""
    lower, upper = box.bounds(g.widths[0], parameter=parameter)
    return dataclasses.replace(g, lower=lower, upper=upper)

