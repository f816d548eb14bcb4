"""The model files of a target network, whatever its layer kinds: ``W1, b1, …`` ``.npz`` arrays
(:mod:`exactnorm.model.targets`), PyTorch state dicts in ``.npz`` or ``.pt``/``.pth``
(:mod:`~exactnorm.model.interop.torch`; ``.pt`` files are read with
``torch.load(weights_only=True)``, which only rebuilds tensors and plain containers) — an
``nn.Sequential`` of ``Linear`` layers with declared activations, or any state dict that declares
its ``architecture`` (a string of tokens, ResNet ``block`` tokens included) and ``input_shape``
(``C, H, W``) beside its parameters — and ONNX models of every kind
(:mod:`~exactnorm.model.interop.onnx`, the one walker). JSON target files are documents, read by
the one reader of documents (:func:`exactnorm.certificate.read_target`); the one loader of every
target file, which chooses between the two, is :func:`exactnorm.api.load_target`. A pickled
scikit-learn model is **not** loaded from a file: unpickling runs arbitrary code.

Box precedence: a file that carries its own box (``lower``/``upper`` arrays) together with an
explicit ``box`` is refused rather than one of them being ignored.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
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
from exactnorm.model.box import Box
from exactnorm.model.interop.onnx import target_from_onnx
from exactnorm.model.interop.torch import (
    state_dict_layers,
    target_from_state_dict,
)
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import (
    PICKLE_SUFFIXES,
    npz_activations,
    pickle_refusal,
    target_from_npz,
)

__all__ = ["STATE_DICT_SUFFIXES", "MODEL_SUFFIXES", "target_from_file"]

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


def _file_box(arrays: Mapping[str, Any], box: Box | None, path: Path) -> Box:
    """The box of a state dict file: its own ``lower``/``upper`` arrays (both or neither, and
    then no ``box``), or ``box``."""
    has_lower = "lower" in arrays
    if has_lower != ("upper" in arrays):
        raise InputError(f"{path} has only one of lower/upper; give both or neither")
    if has_lower:
        if box is not None:
            raise InputError(f"{path} has its own bounds (lower/upper) and box was given too; "
                             f"remove one", parameter="box")
        return Box.per_feature(np.asarray(arrays["lower"]).reshape(-1),
                               np.asarray(arrays["upper"]).reshape(-1), what=str(path),
                               parameter=None)
    if box is None:
        raise InputError(f"{path} is a state dict without lower/upper arrays; it needs box "
                         f"LO:HI", parameter="box")
    return box


def _state_dict_target(arrays: Mapping[str, Any], path: Path, *, box: Box | None,
                       activations: str | Sequence[str] | None,
                       file_acts: Sequence[str] | None, max_width: int) -> TargetNetwork:
    state_dict_layers(list(arrays.keys()))  # names a foreign key first
    return target_from_state_dict(arrays, _file_box(arrays, box, path),
                                  activations=_declared(file_acts, activations, path),
                                  max_width=max_width)


#: members of a state dict file that declare its architecture (not parameters)
DECLARED = ("architecture", "input_shape")
#: a declared module's parameter has at most this many dimensions (a Conv2d kernel)
_MAX_NDIM = 4


def _declared_target(arrays: Mapping[str, Any], architecture: str, input_shape: Sequence[int],
                     path: Path, *, box: Box | None,
                     activations: str | Sequence[str] | None,
                     max_width: int) -> TargetNetwork:
    """A state dict that declares its architecture (:func:`~exactnorm.model.interop.torch.
    parse_architecture`, ResNet blocks included) and its input's ``(C, H, W)``."""
    if activations is not None:
        raise InputError(f"{path} declares its architecture; --activations applies to "
                         f"nn.Sequential state dicts of Linear layers")
    shape = [int(v) for v in input_shape]
    region = _file_box(arrays, box, path)
    params = {k: v for k, v in arrays.items() if k not in ("lower", "upper")}
    return target_from_state_dict(params, region, architecture=architecture,
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


#: the model files of a target (JSON documents are read by the one reader of documents)
MODEL_SUFFIXES = (".onnx", ".npz") + STATE_DICT_SUFFIXES


def target_from_file(path: str | os.PathLike[str], *, box: Box | None = None,
                     activations: str | Sequence[str] | None = None,
                     max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """The target of a model file (module docstring): ``.npz`` with ``W1, b1, …``, ``.npz`` or
    ``.pt``/``.pth`` PyTorch state dict, or ``.onnx`` model of any layer kinds.

    Parameters
    ----------
    path
        The model file.
    box
        The input box for a file without its own (every ONNX model, a state dict or ``.npz``
        without ``lower``/``upper``); refused when the file has one.
    activations
        Declared activations of a state dict; refused for formats that record their activations
        themselves and when the state dict declares them too.
    max_width
        Refuse wider layers.

    Raises
    ------
    InputError
        Missing or unreadable file, unsupported structure or activation, missing or doubly
        given box or activations, a pickle; :class:`~exactnorm.errors.MissingExtraError` when
        reading the format needs ``onnx`` or ``torch``.
    """
    p = require_file(path, "target file")
    kw = {"box": box, "activations": activations, "max_width": max_width}
    suffix = p.suffix.lower()
    if suffix in PICKLE_SUFFIXES:
        raise pickle_refusal(p)
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
                         f"activations itself", parameter="activations")
    if suffix == ".onnx":
        if box is None:
            raise InputError(f"an ONNX model has no input box; pass --box LO:HI for {p}",
                             parameter="box")
        return target_from_onnx(p, box, max_width=max_width)
    if suffix == ".npz":
        return target_from_npz(p, box=box, max_width=max_width)
    raise InputError(f"{p}: a model file of a target is .onnx, .npz, .pt or .pth; a JSON "
                     f"target file is read with exactnorm.load_target")
