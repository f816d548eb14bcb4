"""One loader for every target file the CLI and the API read, whatever its layer kinds.

JSON and ``W1, b1, …`` ``.npz`` files (:mod:`exactnorm.model.targets`), PyTorch ``nn.Sequential``
state dicts in ``.npz`` or ``.pt``/``.pth`` (:mod:`~exactnorm.model.interop.torch`; ``.pt`` files
are read with ``torch.load(weights_only=True)``, which only rebuilds tensors and plain
containers) — or any state dict that declares its ``architecture`` (a string of tokens, ResNet
``block`` tokens included) and ``input_shape`` (``C, H, W``) beside its parameters — and ONNX
models of every kind (:mod:`~exactnorm.model.interop.onnx`, the one walker). A pickled
scikit-learn model is **not** loaded from a file: unpickling runs arbitrary code.

Box precedence: a file that carries its own box (``lower``/``upper`` arrays, a JSON ``domain``)
together with an explicit ``box=`` (``--box``) is refused rather than one of them being ignored.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm.errors import InputError, LimitExceededError, require_extra
from exactnorm.exact.files import (
    npz_array,
    npz_box_arrays,
    npz_header,
    npz_strings,
    read_npz_archive,
    require_file,
)
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.interop.chain import exact_vector
from exactnorm.model.interop.onnx import target_from_onnx_box
from exactnorm.model.interop.torch import (
    state_dict_layers,
    target_from_state_dict,
)
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import load_target, npz_activations

__all__ = ["STATE_DICT_SUFFIXES", "load_target_any", "load_target_file"]

#: File suffixes read with ``torch.load(weights_only=True)``.
STATE_DICT_SUFFIXES = (".pt", ".pth")
# a parameter or buffer name of any torch module, e.g. "fc1.weight", "bn.running_mean"
_PARAMETER_KEY = re.compile(r"\.(weight|bias|running_mean|running_var|num_batches_tracked)$")


def _declared(in_file: Sequence[str] | None, option: str | Sequence[str] | None,
              path: Path) -> str | Sequence[str] | None:
    if in_file is not None and option is not None:
        raise InputError(f"{path} declares its activations and --activations was given too; "
                         f"remove one")
    return in_file if in_file is not None else option


def _file_box(arrays: Mapping[str, Any], box: tuple[Fraction, Fraction] | None,
              width: Callable[[], int], path: Path) -> tuple[list[Any], list[Any]]:
    """The box of a state dict file: its own ``lower``/``upper`` arrays (both or neither, and
    then no ``--box``), or the cube ``box`` over ``width()`` inputs."""
    has_lower = "lower" in arrays
    if has_lower != ("upper" in arrays):
        raise InputError(f"{path} has only one of lower/upper; give both or neither")
    if has_lower:
        if box is not None:
            raise InputError(f"{path} has its own box (lower/upper) and --box was given too; "
                             f"remove one")
        return exact_vector(arrays["lower"], "lower"), exact_vector(arrays["upper"], "upper")
    if box is None:
        raise InputError(f"{path} is a state dict without lower/upper arrays; pass --box LO:HI")
    d0 = width()
    return [box[0]] * d0, [box[1]] * d0


def _state_dict_target(arrays: Mapping[str, Any], path: Path, *,
                       box: tuple[Fraction, Fraction] | None,
                       activations: str | Sequence[str] | None,
                       file_acts: Sequence[str] | None, max_width: int) -> TargetNetwork:
    order = state_dict_layers(list(arrays.keys()))
    lower, upper = _file_box(arrays, box, lambda: int(np.asarray(arrays[f"{order[0]}.weight"])
                                                      .shape[-1]), path)
    return target_from_state_dict(arrays, lower, upper, _declared(file_acts, activations, path),
                                  max_width=max_width)


#: members of a state dict file that declare its architecture (not parameters)
DECLARED = ("architecture", "input_shape")
#: a declared module's parameter has at most this many dimensions (a Conv2d kernel)
_MAX_NDIM = 4


def _declared_target(arrays: Mapping[str, Any], architecture: str, input_shape: Sequence[int],
                     path: Path, *, box: tuple[Fraction, Fraction] | None,
                     activations: str | Sequence[str] | None,
                     max_width: int) -> TargetNetwork:
    """A state dict that declares its architecture (:func:`~exactnorm.model.interop.torch.
    parse_architecture`, ResNet blocks included) and its input's ``(C, H, W)``."""
    if activations is not None:
        raise InputError(f"{path} declares its architecture; --activations applies to "
                         f"nn.Sequential state dicts of Linear layers")
    shape = [int(v) for v in input_shape]
    lower, upper = _file_box(arrays, box, lambda: int(np.prod(shape)) if shape else 0, path)
    params = {k: v for k, v in arrays.items() if k not in ("lower", "upper")}
    return target_from_state_dict(params, lower, upper, architecture=architecture,
                                  input_shape=shape, max_width=max_width)


def _read_declared_npz(data: Any, path: Path, **kw: Any) -> TargetNetwork:
    """An ``.npz`` state dict with members ``architecture`` (one string) and ``input_shape``
    (``C, H, W``): every other member a parameter of at most four dimensions, each checked
    from its header against the width limit before it is loaded, in the file's order."""
    if not {"architecture", "input_shape"} <= set(data.files):
        raise InputError(f"{path}: a declared architecture needs both members "
                         f"'architecture' and 'input_shape'")
    architecture = npz_strings(data, "architecture", 1, "the declared modules")[0]
    shape = npz_array(data, "input_shape", kw["max_width"], matrix=False)
    arrays: dict[str, Any] = {}
    for key in data.files:
        if key in DECLARED or key.endswith("num_batches_tracked"):
            continue
        dims, dtype = npz_header(data, key)
        if len(dims) > _MAX_NDIM or dtype.kind not in "fiub":
            raise InputError(f"{path}: member {key!r} ({dtype}, shape {list(dims)}) is not a "
                             f"parameter of a declared module")
        if any(d > kw["max_width"] for d in dims):
            raise LimitExceededError(f"array {key} has shape {tuple(dims)}, above the width "
                                     f"limit {kw['max_width']} (raise max_width)",
                                     parameter="max_width")
        arrays[key] = data[key]
    return _declared_target(arrays, architecture, [int(v) for v in shape], path, **kw)


def _read_state_dict_npz(data: Any, path: Path, **kw: Any) -> TargetNetwork:
    keys = list(data.files)
    if any(k in DECLARED for k in keys):
        return _read_declared_npz(data, path, **kw)
    order = state_dict_layers(keys)  # names a foreign key before anything is loaded
    arrays: dict[str, Any] = {}
    for idx in order:
        # headers first (files.npz_array): a tiny compressed file may declare a huge array
        arrays[f"{idx}.weight"] = npz_array(data, f"{idx}.weight", kw["max_width"], matrix=True)
        arrays[f"{idx}.bias"] = npz_array(data, f"{idx}.bias", kw["max_width"], matrix=False)
    # the shape rules of the W1, b1 reader, shared (exact.files, model.targets)
    bounds = npz_box_arrays(data, kw["max_width"])
    if bounds is not None:
        arrays["lower"], arrays["upper"] = bounds
    file_acts = npz_activations(data, path, len(order))
    return _state_dict_target(arrays, path, file_acts=file_acts, **kw)


def _read_state_dict_pt(path: Path, **kw: Any) -> TargetNetwork:
    torch = require_extra("torch", f"reading {path.name}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, … for foreign files
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise InputError(f"{path} is not a weights-only state dict (save model.state_dict(), "
                         f"not the model): {first}") from None
    if not isinstance(obj, Mapping):
        raise InputError(f"{path} holds a {type(obj).__name__}, not a state dict")
    arrays: dict[str, Any] = {}
    file_acts = None
    declared: dict[str, Any] = {}
    for k, v in obj.items():
        if k in DECLARED:
            declared[k] = v
        elif k == "activations":
            if isinstance(v, str) or not isinstance(v, (list, tuple)) \
                    or not all(isinstance(a, str) for a in v):
                raise InputError(f"{path}: activations must be a list of strings")
            file_acts = list(v)
        elif isinstance(v, torch.Tensor):
            if v.dtype == torch.bfloat16:
                v = v.to(torch.float32)  # exact: bfloat16 is a truncated float32
            arrays[str(k)] = v.detach().cpu().numpy()
        else:
            raise InputError(f"{path}: entry {k!r} is a {type(v).__name__}, not a tensor")
    if declared:
        arch, shape = declared.get("architecture"), declared.get("input_shape")
        if not isinstance(arch, str) or not isinstance(shape, (list, tuple)) \
                or not all(type(d) is int for d in shape):
            raise InputError(f"{path}: a declared architecture is an 'architecture' string and "
                             f"an 'input_shape' list of integers (C, H, W)")
        arrays = {k: v for k, v in arrays.items() if not k.endswith("num_batches_tracked")}
        return _declared_target(arrays, arch, shape, path, **kw)
    return _state_dict_target(arrays, path, file_acts=file_acts, **kw)


# --------------------------------------------------------------------------- one loader


def _npz_keys(path: Path) -> list[str]:
    """Member names of an ``.npz`` without loading any array (``0.weight.npy`` → ``0.weight``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return [n[:-4] if n.endswith(".npy") else n for n in zf.namelist()]
    except (OSError, zipfile.BadZipFile, zlib.error):
        return []


def load_target_any(path: str | os.PathLike[str], *,
                    box: tuple[Fraction, Fraction] | None = None,
                    activations: str | Sequence[str] | None = None,
                    max_width: int = DEFAULT_MAX_WIDTH,
                    max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Load a target from any supported file; the one loader of the API and the CLI.

    Parameters
    ----------
    path
        ``.json`` (SPEC §3 sections), ``.npz`` with ``W1, b1, …`` (SPEC §7), ``.npz`` or
        ``.pt``/``.pth`` PyTorch ``nn.Sequential`` state dict, or ``.onnx`` model of any layer
        kinds (an MLP or a CNN).
    box
        ``(lo, hi)`` cube for a file without its own box (``--box``); refused when the file has
        one.
    activations
        Declared activations of a state dict (``--activations``); refused for formats that
        record their activations themselves and when the state dict declares them too.
    max_width, max_digits
        Refuse wider layers and longer numbers.

    Returns
    -------
    TargetNetwork
        The exact target (module docstring).

    Raises
    ------
    InputError
        Missing or unreadable file, unsupported structure or activation, missing or doubly
        given box or activations; :class:`~exactnorm.errors.MissingExtraError` when reading the
        format needs ``onnx`` or ``torch``.
    """
    p = require_file(path, "target file")
    kw = {"box": box, "activations": activations, "max_width": max_width}
    suffix = p.suffix.lower()
    if suffix in STATE_DICT_SUFFIXES:
        return _read_state_dict_pt(p, **kw)
    if suffix == ".npz" and zipfile.is_zipfile(p):
        keys = _npz_keys(p)
        # any module's state dict ("fc1.weight", BatchNorm statistics, …) goes to the
        # state-dict reader, which names the offending key instead of "no arrays W1, b1"
        if "W1" not in keys and any(_PARAMETER_KEY.search(k) for k in keys):
            return read_npz_archive(p, lambda data: _read_state_dict_npz(data, p, **kw))
    if activations is not None:
        raise InputError(f"--activations applies to state dicts (.npz/.pt); {p} records its "
                         f"activations itself")
    if suffix == ".onnx":
        if box is None:
            raise InputError(f"an ONNX model has no input box; pass --box LO:HI for {p}")
        return target_from_onnx_box(p, box, max_width=max_width)
    return load_target(p, max_digits=max_digits, max_width=max_width, box=box)


#: the one loader under the name the API and the CLI use
load_target_file = load_target_any
