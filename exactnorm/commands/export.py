"""``exactnorm export CERT --format json|npz|onnx|torch --out FILE``: normalization parameters out.

JSON is exact (``"p/q"`` strings); ``npz``, ``onnx`` and ``torch`` are float for frameworks and
are not certified (:mod:`exactnorm.outputs.export` documents every layout). ``--out -`` writes to
standard output. The certificate is read strictly but not checked here: run
``exactnorm check CERT`` for that.
"""

from __future__ import annotations

import argparse

from exactnorm.commands._common import console, err_console, output_path, progress_hook
from exactnorm.commands._defaults import DEFAULT_MAX_DIGITS, EXPORT_FORMATS

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export tuned γ, β as JSON, npz, ONNX or a PyTorch "
                                      "state dict")
    p.add_argument("certificate", metavar="CERT", help="certificate file (.json or .json.gz)")
    p.add_argument("--format", choices=EXPORT_FORMATS, required=True,
                   help="json: exact p/q strings; npz, onnx, torch: floats (not certified; "
                        "onnx needs exactnorm[onnx], torch needs torch)")
    p.add_argument("--out", metavar="FILE", required=True, help="output file, or - for stdout")
    p.add_argument("--mean", metavar="M", default="0",
                   help="frozen running mean μ for every neuron (exact number; default 0)")
    p.add_argument("--scale", metavar="S", default="1",
                   help="frozen scale s > 0 for every neuron (exact number; default 1)")
    p.add_argument("--eps", type=float, default=None,
                   help="float formats: running_var = s² − eps (default 1e-5)")
    p.add_argument("--dtype", choices=("float32", "float64"), default=None,
                   help="onnx only: tensor type (default float64; float32 can change "
                        "predictions, measure it with --verify)")
    p.add_argument("--normalization", choices=("batchnorm", "muladd"), default=None,
                   help="onnx only: BatchNormalization with frozen statistics (default) or "
                        "Mul(γ)+Add(β)")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                   help=f"refuse numbers with more than N digits (default {DEFAULT_MAX_DIGITS})")
    p.add_argument("--verify", type=int, default=0, metavar="N",
                   help="onnx: run the written model under onnxruntime at N seeded points of the "
                        "box and print its error against the exact target")
    p.add_argument("--allow-float32-error", action="store_true",
                   help="with --verify: keep a float32 model even if it changes a prediction")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import export

    path = output_path(args.out, stdout_ok=True)
    replaced = path is not None and path.exists()  # said after the write, naming the file
    with progress_hook(f"export {args.format}", "steps") as hook:
        warning = export(args.certificate, args.out, format=args.format, mean=args.mean,
                         scale=args.scale, eps=args.eps, dtype=args.dtype,
                         normalization=args.normalization, max_digits=args.max_digits,
                         verify=args.verify, allow_float32_error=args.allow_float32_error,
                         progress=hook)
    # with --out - the data owns stdout; the status line goes to stderr
    status = err_console if path is None else console
    what = "exact BatchNorm-style parameters" if warning is None else "floats, not certified"
    status.print(f"wrote {'standard output' if path is None else path} ({args.format}: {what})",
                 markup=False)
    if replaced:
        err_console.print(f"note: replaced the existing file {path}", markup=False)
    if warning is not None:
        err_console.print(f"warning: {warning}", markup=False)
    return 0
