"""``exactnorm export CERT --format json|npz|onnx|torch --out FILE``: normalization parameters out.

JSON is exact (``"p/q"`` strings); ``npz``, ``onnx`` and ``torch`` are float for frameworks and
are not certified (:mod:`exactnorm.outputs.export` documents every layout). ``--out -`` writes to
standard output. The independent checker runs first and an INVALID certificate is refused
(exit 1, the checker's reason; ``--no-check`` skips it and says so); the exact JSON export is
read back from the file it wrote and compared with the certificate's network before it gets its
name. ``--source`` is checked against what certify recorded before anything is written. An ONNX
export takes the
source model's input and gives its outputs (``--interface``); it prints its size and latency
beside the source's (``--source``) and its error on the box (``--verify N``) and on data
(``--data X.npy --labels y.npy``).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from exactnorm.commands._common import (
    add_timeout_option,
    console,
    err_console,
    output_path,
    progress_hook,
    verdict_line,
)
from exactnorm.commands._defaults import DEFAULT_MAX_DIGITS, EXPORT_FORMATS
from exactnorm.commands._json import add_json_option, emit, verdict_fields
from exactnorm.errors import InputError

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
                        "box and print its error against the exact target (and against --source); "
                        "a transformer: N seeded token sequences, every one when there are at "
                        "most N")
    p.add_argument("--source", metavar="MODEL.onnx", default=None,
                   help="onnx: the model the certificate was made from, checked first (input "
                        "name, dtype and shape, output names as certify recorded them, and its "
                        "outputs at points of the box: a mismatch is exit 2 and nothing is "
                        "written); run beside the export on the same inputs, outputs compared, "
                        "size and latency shown")
    p.add_argument("--data", metavar="X.npy", default=None,
                   help="onnx: samples (n, d) or images: the export's (and --source's) error "
                        "against the exact target and the predictions that change on them; a "
                        "transformer: token sequences (m, n)")
    p.add_argument("--labels", metavar="y.npy", default=None,
                   help="with --data: integer labels, for the accuracy of the exact target "
                        "and of the export")
    p.add_argument("--interface", choices=("source", "plain"), default="source",
                   help="onnx: the source model's input (name, dtype, shape) and outputs "
                        "(names, classifier head) as certify recorded them (default), or plain "
                        "x and y (the logits) in the arithmetic dtype")
    p.add_argument("--no-check", action="store_true",
                   help="export without running the checker first (by default an INVALID "
                        "certificate is refused with exit code 1)")
    p.add_argument("--allow-float32-error", action="store_true",
                   help="with --verify or --data: keep a float32 model even if it changes a "
                        "prediction")
    add_timeout_option(p)
    add_json_option(p)
    p.set_defaults(func=run)


def human_bytes(n: int) -> str:
    """``178.6 kB``, ``83.0 MB`` (decimal units).

    >>> human_bytes(178553), human_bytes(83043590), human_bytes(512)
    ('178.6 kB', '83.0 MB', '512 B')
    """
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def human_seconds(t: float) -> str:
    """``0.084 ms``, ``120 ms``, ``1.5 s``.

    >>> human_seconds(8.4e-5), human_seconds(0.12), human_seconds(1.5)
    ('0.084 ms', '120 ms', '1.5 s')
    """
    if t >= 1:
        return f"{t:.1f} s"
    ms = t * 1000
    return f"{ms:.3g} ms" if ms < 1 else f"{ms:.0f} ms"


def _study_lines(name: str, study: dict[str, Any]) -> list[str]:
    n = study["samples"]
    e = study["export"]
    head = (f"{name}: {n} samples" + (f", {study['outside']} outside the certified box "
                                      f"(nothing is claimed there)" if study["outside"] else ""))
    lines = [head,
             f"  export vs exact target: max abs error {e['max_abs']:.3g}, max rel error "
             f"{e['max_rel']:.3g}, predictions changed {e['changed']}/{n}"
             + (f", accuracy {e['accuracy']:.2%}" if "accuracy" in e else "")]
    if "exact_accuracy" in study:
        lines.append(f"  exact target (the source's function): accuracy "
                     f"{study['exact_accuracy']:.2%}")
    if "source" in study:
        s = study["source"]
        lines.append(f"  source vs exact target: max abs error {s['max_abs']:.3g}, predictions "
                     f"changed {s['changed']}/{n}"
                     + (f", accuracy {s['accuracy']:.2%}" if "accuracy" in s else ""))
        if not study.get("outputs"):
            lines.append("  outputs: no name in common with the source (the certificate "
                         "records no source interface: certify the model again to record it)")
        for out, a in study.get("outputs", {}).items():
            if a["kind"] == "labels":
                lines.append(f"  output {out!r}: equal in {a['equal']}/{a['of']}")
            elif a["kind"] == "values":
                lines.append(f"  output {out!r}: largest difference {a['max_abs_diff']:.3g}")
            else:
                lines.append(f"  output {out!r}: shapes differ {a['shapes']}")
    return lines


def measurement_lines(result: Any, source: str | None) -> list[str]:
    """What an export measured, one fact per line: the studies, size, latency, why larger."""
    m = result.verification or {}
    if m.get("transformer"):
        from exactnorm.api._transformer_outputs import measurement_lines as transformer_lines

        return transformer_lines(m, result.bytes)
    out: list[str] = []
    if "box" in m:
        out += _study_lines("verified on the box", m["box"])
    if "data" in m:
        out += _study_lines(f"on {m['data']['data']}", m["data"])
    size = f"size {human_bytes(result.bytes)}"
    if "source_bytes" in m:
        size += f" (the source: {human_bytes(m['source_bytes'])})"
    out.append(size)
    if "latency" in m:
        lat = f"latency {human_seconds(m['latency'])} per sample (batch 1, onnxruntime)"
        if "source_latency" in m:
            lat += f"; the source: {human_seconds(m['source_latency'])}"
        out.append(lat)
    if "numbers" in m and result.depth:
        theirs = (f" against the source's {m['source_numbers']:,}"
                  if "source_numbers" in m else "")
        out.append(f"why larger: the frozen network is wide and deep (Theorem 1 realises a "
                   f"target layer d_in → d_out through a frozen layer of width d_in·d_out): "
                   f"{result.depth:,} frozen layers storing {m['numbers']:,} numbers{theirs}")
    return out


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import export

    path = output_path(args.out, stdout_ok=True)
    if path is None and args.json:
        raise InputError("--json prints its object on standard output, which --out - gives to "
                         "the export: write the export to a file")
    replaced = path is not None and path.exists()  # said after the write, naming the file
    t0 = time.perf_counter()
    with progress_hook(f"export {args.format}", "steps") as hook:
        result = export(args.certificate, args.out, format=args.format, mean=args.mean,
                        scale=args.scale, eps=args.eps, dtype=args.dtype,
                        normalization=args.normalization, max_digits=args.max_digits,
                        verify=args.verify, source=args.source, data=args.data,
                        labels=args.labels, check=not args.no_check,
                        interface=args.interface if args.format == "onnx" else "source",
                        allow_float32_error=args.allow_float32_error, progress=hook)
    seconds = {"export": time.perf_counter() - t0}
    if result.check_seconds is not None:
        seconds["check"] = result.check_seconds
    # with --out - the data owns stdout; the status lines go to stderr
    status = err_console if path is None else console
    if result.verdict is None:
        status.print("not checked (--no-check): run `exactnorm check` before relying on the "
                     "export", markup=False)
    else:
        took = "" if result.check_seconds is None else f" [{result.check_seconds:.2f} s]"
        status.print(verdict_line(result.verdict, str(args.certificate), "flint") + took,
                     markup=False)
    what = "exact BatchNorm-style parameters" if result.warning is None \
        else "floats, not certified"
    status.print(f"wrote {'standard output' if path is None else path} ({args.format}: {what})",
                 markup=False)
    if result.read_back is not None:
        status.print(f"read back: {result.read_back}", markup=False)
    if path is not None:
        for line in measurement_lines(result, args.source):
            status.print(line, markup=False)
    if replaced:
        err_console.print(f"note: replaced the existing file {path}", markup=False)
    if result.warning is not None:
        err_console.print(f"warning: {result.warning}", markup=False)
    v = result.verdict
    return emit(args, "UNCHECKED" if v is None else "VALID", 0,
                "not checked (--no-check)" if v is None else v.message, **verdict_fields(v),
                seconds=seconds,
                paths={"certificate": args.certificate, "output": path, "source": args.source,
                       "data": args.data},
                bytes={"certificate": os.path.getsize(args.certificate), "output": result.bytes},
                details={"format": args.format, "certified": result.warning is None,
                         "check": None if v is None else v.to_json(),
                         "read_back": result.read_back, "verification": result.verification,
                         "warning": result.warning})
