"""One loader for every target file the CLI and the API read, whatever its layer kinds.

An ONNX graph with a spatial operator (a convolution or pooling) is read by the convolutional
reader (:mod:`~exactnorm.model.interop_cnn`), every other file by
:func:`~exactnorm.model.interop.load_target_any` (JSON, ``W1, b1, …`` npz, state dicts, ONNX
MLPs). This is a thin dispatch between the two existing ONNX walkers until they become one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from exactnorm.errors import InputError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.interop import load_target_any
from exactnorm.model.interop_cnn import load_cnn_target, onnx_is_cnn
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork

__all__ = ["load_target_file"]


def load_target_file(path: str | os.PathLike[str], *,
                     box: tuple[Fraction, Fraction] | None = None,
                     activations: str | Sequence[str] | None = None,
                     max_width: int = DEFAULT_MAX_WIDTH,
                     max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """The target of any supported file on the cube ``box`` when the file has no box of its own
    (parameters as in :func:`~exactnorm.model.interop.load_target_any`).

    Raises
    ------
    InputError
        As the format's reader; ``activations`` for a model that records its own.
    """
    p = Path(path)
    if p.suffix.lower() == ".onnx" and onnx_is_cnn(p):
        if activations is not None:
            raise InputError(f"activations apply to state dicts; {p} records its own",
                             parameter="activations")
        return load_cnn_target(p, box)
    return load_target_any(p, box=box, activations=activations, max_width=max_width,
                           max_digits=max_digits)
