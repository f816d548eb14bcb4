"""Targets for the verbs: any file the CLI reads, or a model already in memory.

:func:`load_target` reads every target file (JSON, ``W1, b1, …`` npz, PyTorch state dicts, MLP and
CNN ONNX models; :func:`~exactnorm.model.interop.load_target_any`) on the box the caller gives.
:func:`target_of` is what :func:`exactnorm.certify` accepts: a :class:`TargetNetwork` (it has its
box), a path, a fitted scikit-learn MLP or pipeline, or a state dict of arrays (both need a box,
the state dict its activations too).

>>> g = target_of(demo_target())
>>> g.widths
(3, 4, 3, 2)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from exactnorm.api._boxes import Bounds, apply_box, is_cube, resolve_box
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.interop import load_target_file, target_from_sklearn, target_from_state_dict
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import demo_target

__all__ = ["load_target", "target_of", "demo_target"]


def load_target(path: str | os.PathLike[str], *, box: Any = None,
                box_file: str | os.PathLike[str] | None = None,
                box_from_data: str | os.PathLike[str] | None = None,
                activations: str | Sequence[str] | None = None,
                max_width: int = DEFAULT_MAX_WIDTH,
                max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Read a target network from any file the CLI reads: JSON, a ``W1, b1, …`` npz, a PyTorch
    ``nn.Sequential`` state dict (``.npz``/``.pt``), or an ONNX MLP or CNN (one loader,
    :func:`exactnorm.model.interop.load_target_any`).

    Parameters
    ----------
    path : path-like
        The target file (format in README "Target files").
    box : str, (lo, hi) or (lower, upper), optional
        Input box when the file has none: the cube ``"LO:HI"`` or ``(lo, hi)`` (ints, floats —
        taken exactly —, fractions or strings), or per-feature ``(lower, upper)`` sequences
        or arrays. Refused when the file has its own.
    box_file : path-like, optional
        Per-feature bounds from ``.json`` (``{"lower": [...], "upper": [...]}``), ``.npz``
        (arrays ``lower``, ``upper``) or ``.npy`` (shape ``(2, d)``).
    box_from_data : path-like, optional
        An ``.npy`` sample array ``(n, d)``: the box is its per-feature minimum and maximum.
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

    Examples
    --------
    >>> import tempfile, os
    >>> from exactnorm.model.targets import save_target
    >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> save_target(demo_target(), path)
    >>> load_target(path).widths == demo_target().widths
    True
    """
    require_integer(max_width, "max_width", minimum=1)
    require_integer(max_digits, "max_digits", minimum=1)
    given = resolve_box(box=box, box_file=box_file, box_from_data=box_from_data,
                        max_digits=max_digits)
    if given is None or is_cube(given):
        return load_target_file(path, box=given, activations=activations,  # type: ignore[arg-type]
                                max_width=max_width, max_digits=max_digits)
    # per-feature bounds: read the file as for a cube (which also refuses a file with its own
    # box), then put the bounds in place, their dimension checked against the network input
    bounds: Bounds = given  # type: ignore[assignment]
    parameter = ("box_file" if box_file is not None
                 else "box_from_data" if box_from_data is not None else "box")
    placeholder = (bounds[0][0], bounds[0][0])
    try:
        g = load_target_file(path, box=placeholder, activations=activations,
                             max_width=max_width, max_digits=max_digits)
    except InputError as exc:
        if "its own" in str(exc):  # the file's box and ours: in the words of our parameter
            raise InputError(f"{path} has its own box and {parameter} was given too; remove "
                             f"one", parameter=parameter) from None
        raise
    return apply_box(g, bounds, parameter=parameter)


def _in_memory_box(box: Any, box_file: Any, box_from_data: Any, max_digits: int,
                   what: str) -> tuple[Any, Any]:
    given = resolve_box(box=box, box_file=box_file, box_from_data=box_from_data,
                        max_digits=max_digits)
    if given is None:
        raise InputError(f"{what} has no input box; give box (e.g. \"0:1\" or (0, 1)), "
                         f"box_file or box_from_data",
                         parameter=("box", "box_file", "box_from_data"))
    return given


def target_of(target: Any, *, box: Any = None, box_file: str | os.PathLike[str] | None = None,
              box_from_data: str | os.PathLike[str] | None = None,
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
        lo, hi = _in_memory_box(box, box_file, box_from_data, max_digits, "a state dict")
        return target_from_state_dict(target, lo, hi, activations, max_width=max_width)
    if hasattr(target, "predict") or hasattr(target, "steps"):  # scikit-learn (fitted or not)
        if activations is not None:
            raise InputError("activations apply to state dicts; a scikit-learn MLP records its "
                             "own", parameter="activations")
        lo, hi = _in_memory_box(box, box_file, box_from_data, max_digits,
                                "a scikit-learn model")
        return target_from_sklearn(target, lo, hi, max_width=max_width)
    raise InputError(f"target must be a TargetNetwork, a target file, a fitted scikit-learn "
                     f"MLP or pipeline, or a state dict of arrays; got {type(target).__name__}",
                     parameter="target")
