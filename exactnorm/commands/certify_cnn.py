"""``exactnorm certify`` for a convolutional target: the same verb, the same output.

A convolutional ``.onnx`` target (:func:`exactnorm.model.interop_cnn.onnx_is_cnn`) is certified
by Theorem 1 over channels with the dense head chosen automatically
(:func:`exactnorm.api.certify_cnn`); options that select a dense construction do not apply and
are refused. The certificate is checked by the independent checker as every certificate, and
cross-checked by exact evaluation of both networks at points of the box.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from exactnorm.commands._common import (
    check_written_certificate,
    console,
    progress_hook,
)
from exactnorm.errors import InputError

__all__ = ["run_cnn"]

#: dense-construction options refused for a convolutional target (flag, default)
_DENSE_ONLY = (("construction", "auto"), ("block", None), ("routing", None), ("rank", None),
               ("sparsity", None))


def run_cnn(args: argparse.Namespace, summary_table: Callable[..., Any]) -> int:
    """``exactnorm certify`` for a convolutional ``.onnx`` target (module doc)."""
    from exactnorm.api import certify_cnn
    from exactnorm.certificate import load_certificate
    from exactnorm.certificate_conv import exact_agreement
    from exactnorm.constructions.choice import system_seconds
    from exactnorm.constructions.parallel import auto_jobs
    from exactnorm.model.conv import ConvTargetLayer
    from exactnorm.model.interop_cnn import load_cnn_target
    from exactnorm.model.targets import parse_box

    for name, default in _DENSE_ONLY:
        if getattr(args, name, default) != default:
            raise InputError(f"--{name.replace('_', '-')} does not apply to a convolutional "
                             f"target (Theorem 1 over channels, dense head chosen automatically)")
    if args.activations:
        raise InputError("--activations applies to state dicts; an ONNX model records its own")
    if args.format_version != 3:
        raise InputError("convolutional certificates are written in version 3 only")
    box = parse_box(args.box) if args.box else None
    target = load_cnn_target(args.target, box)
    if args.jobs == "auto":
        # the convolutions' Khatri–Rao systems dominate (a LeNet's second one: m = 2400)
        work = sum(system_seconds(layer.weight.nrows() * layer.weight.ncols())
                   for layer in target.layers if isinstance(layer, ConvTargetLayer))
        jobs = auto_jobs(work)
    else:
        jobs = args.jobs
    opts = {"seed": args.seed, "retry": args.retry, "jobs": jobs, "solver": args.solver,
            "max_system": args.max_system, "scheduler": args.scheduler}
    if args.distribution is not None:
        opts["distribution"] = args.distribution
    if args.shift_mode is not None:
        opts["shift_mode"] = args.shift_mode
    t0 = time.perf_counter()
    with progress_hook("conv", "target layers") as hook:
        c = certify_cnn(target, args.out, frozen_weights=args.frozen_weights,
                        progress=hook, **opts)
    build = time.perf_counter() - t0
    console.print(summary_table(c, build, "convolutional target: Theorem 1 over channels"))
    console.print(f"certificate written to {args.out} ({os.path.getsize(args.out)} bytes, "
                  f"version 3)")
    del c
    points = exact_agreement(load_certificate(args.out), points=2)
    console.print(f"exact evaluation: every checkpoint equals its target layer at {points} "
                  f"points of the box (a cross-check, not the proof)")
    if args.no_check:
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return 0
    return check_written_certificate(args.out, pure=args.pure)
