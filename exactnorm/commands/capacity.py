"""``exactnorm capacity FROZEN --box LO:HI [--target TARGET] [--out C.json] [--best]``: what
re-tuning only the normalization of a given network reaches, decided exactly.

Without ``--target``: the capacity profile, one line per pair of consecutive frozen linear layers
(exact rank of its Khatri–Rao matrix against the size a universal pair needs, with the output
scale held and tuned). With ``--target``: one word first — ``REACHABLE``, ``UNREACHABLE`` (with
the class of tunings it covers) or ``UNDECIDED`` (with the class it could not settle) — and the
document either way (an ordinary certificate, or an ``exactnorm.impossibility`` document,
docs/certificate-format.md §9), checked by the independent checker and written to ``--out``.

Exit codes follow ``exactnorm realizable``: 0 REACHABLE (and a profile), 1 UNREACHABLE, 4
UNDECIDED, 2 bad input, 3 internal error. The mathematics is :func:`exactnorm.api.capacity`;
this module parses and prints.
"""

from __future__ import annotations

import argparse

from exactnorm.commands._common import (
    add_timeout_option,
    console,
    err_console,
    output_path,
    progress_hook,
    verdict_line,
)
from exactnorm.commands._defaults import (
    DEFAULT_MAX_DIGITS,
    DEFAULT_MAX_WIDTH,
    EXIT_UNDECIDED,
    OUTPUT_SCALES,
)
from exactnorm.commands._json import add_json_option, emit, verdict_fields
from exactnorm.errors import InputError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capacity",
                       help="decide exactly what re-tuning only the normalization of a given "
                            "network reaches (exit 0 reachable, 1 unreachable, 4 undecided)")
    p.add_argument("frozen", metavar="FROZEN",
                   help="the given ReLU network: ONNX MLP (with or without BatchNormalization "
                        "after its linear layers), nn.Sequential state dict (.npz/.pt, with "
                        "--activations), W1,b1,... .npz or JSON target file")
    p.add_argument("--box", metavar="LO:HI", help="input cube (needed with --target)")
    p.add_argument("--box-file", metavar="FILE",
                   help="per-feature input box: .json {lower, upper}, .npz or .npy (2, d)")
    p.add_argument("--box-from-data", metavar="DATA.npy",
                   help="per-feature input box: minimum and maximum of each feature of samples "
                        "(n, d) or images (n, c, h, w)")
    p.add_argument("--target", metavar="TARGET", default=None,
                   help="the target network (any format certify reads, ONNX with "
                        "BatchNormalization too); without it: the capacity profile")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the certificate or impossibility document (.json or .json.gz), "
                        "or without --target the profile as JSON; an existing file is kept "
                        "unless --force")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--best", action="store_true",
                   help="also the exact least-squares optimum in the stable class and its "
                        "achieved sup-norm error (affine target, one hidden frozen layer)")
    p.add_argument("--output-scale", choices=list(OUTPUT_SCALES), default="tuned",
                   help="tuned (default): the output layer's γ is tuned like every other; "
                        "fixed: decide the class with it held at 1")
    p.add_argument("--activations", metavar="A1,A2,...",
                   help="activations of a state-dict FROZEN (relu or identity per Linear)")
    p.add_argument("--target-activations", metavar="A1,A2,...",
                   help="activations of a state-dict TARGET")
    p.add_argument("--no-check", action="store_true",
                   help="do not run the independent checker on the document (by default the "
                        "written bytes are checked before the file gets its name)")
    p.add_argument("--pure", action="store_true", help="check with the standard-library checker")
    p.add_argument("--dry-run", action="store_true",
                   help="print the sizes of the work (each pair's Khatri–Rao matrix) and the "
                        "estimated time, memory and document size; exit 0 without computing")
    add_timeout_option(p)
    add_json_option(p)
    p.add_argument("--max-width", type=int, default=DEFAULT_MAX_WIDTH,
                   help=f"refuse wider layers (default {DEFAULT_MAX_WIDTH})")
    p.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS,
                   help=f"refuse longer numbers in inputs (default {DEFAULT_MAX_DIGITS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import capacity, plan_capacity
    from exactnorm.api._capacity_plan import rounding_hint

    if args.out is not None and not args.dry_run:
        out = output_path(args.out)
        if out is not None and out.exists() and not args.force:
            raise InputError(f"{args.out} exists; pass --force to overwrite it, or choose "
                             f"another --out FILE")
    inputs = {"box": args.box, "box_file": args.box_file, "box_from_data": args.box_from_data,
              "target": args.target, "activations": args.activations,
              "target_activations": args.target_activations, "max_width": args.max_width,
              "max_digits": args.max_digits}
    paths = {"frozen": args.frozen, "target": args.target}
    from exactnorm.api import is_transformer_file

    if is_transformer_file(args.frozen):  # its LayerNorms' γ, β (docs/capacity.md, Attention)
        return _transformer(args, paths)
    if args.dry_run:
        plan = plan_capacity(args.frozen, **inputs)
        for line in plan.lines():
            console.print(line, markup=False)
        return emit(args, "PLAN", 0, plan.lines()[-2], paths=paths,
                    details={"profile": [], "plan": plan.as_dict()})
    with progress_hook("capacity", "steps") as hook:
        r = capacity(args.frozen, out=args.out, best=args.best, output_scale=args.output_scale,
                     check=not args.no_check, pure=args.pure, progress=hook, **inputs)
    word = r.word
    hint = rounding_hint(r) if word in ("UNREACHABLE", "UNDECIDED") else None
    for line in r.lines():
        console.print(line)
    if r.verdict is not None:
        console.print(verdict_line(r.verdict, args.out or "(the serialized document, not "
                                                         "written)",
                                   "pure" if args.pure else "flint"))
    if r.path is not None:
        what = "profile" if word is None else "document"
        console.print(f"{what} written to {r.path} ({r.bytes} bytes)")
    elif word is not None:
        err_console.print("note: the document was not written; pass --out FILE to keep it",
                          markup=False)
    if hint is not None:
        err_console.print(f"hint: {hint}", markup=False)
    times = ", ".join(f"{k} {v:.2f} s" for k, v in r.seconds.items())
    err_console.print(f"time: {times}", markup=False)
    code = {None: 0, "REACHABLE": 0, "UNREACHABLE": 1}.get(word, EXIT_UNDECIDED)
    d = r.decision
    message = (r.lines() or [""])[0]
    return emit(args, word or "PROFILE", code, message,
                **verdict_fields(r.verdict if r.verdict is not None and not r.verdict.ok
                                 else None),
                seconds=r.seconds, paths={**paths, "document": r.path},
                bytes={"document": r.bytes},
                details={"class": None if d is None else d.cls,
                         "reason": None if d is None else d.reason,
                         "witness": None if d is None else d.witness,
                         "profile": [row.as_dict() for row in r.profile],
                         "check": None if r.verdict is None else r.verdict.to_json(),
                         "best": None if r.best is None else r.best.as_dict(),
                         "hint": hint, "plan": None})


def _transformer(args: argparse.Namespace, paths: dict) -> int:
    """``capacity`` of a transformer: every local question, one line each, or the profile."""
    from exactnorm.api._capacity_attention import capacity_transformer

    for name in ("box", "box_file", "box_from_data", "activations", "target_activations"):
        if getattr(args, name) is not None:
            raise InputError(f"--{name.replace('_', '-')} does not apply to a transformer: its "
                             f"LayerNorms act on normalized tokens", parameter=name)
    if args.best or args.output_scale != "tuned":
        raise InputError("--best and --output-scale do not apply to a transformer")
    if args.dry_run:
        raise InputError("--dry-run does not apply to a transformer's capacity: its local "
                         "questions are answered directly (seconds for the models of "
                         "docs/transformers.md)", parameter="dry_run")
    with progress_hook("capacity", "questions") as hook:
        r = capacity_transformer(args.frozen, args.target, out=args.out, progress=hook)
    for line in r.lines():
        console.print(line, markup=False)
    if r.path is not None:
        console.print(f"answers and witnesses written to {r.path} ({r.bytes} bytes), every "
                      f"witness checked as written", markup=False)
    err_console.print("time: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.seconds.items()),
                      markup=False)
    code = {None: 0, "REACHABLE": 0, "UNREACHABLE": 1}.get(r.word, EXIT_UNDECIDED)
    shown = r.as_dict()
    return emit(args, r.word or "PROFILE", code, (r.lines() or [""])[0],
                seconds=r.seconds, paths={**paths, "document": r.path},
                bytes={"document": r.bytes},
                details={"profile": [{"line": line} for line in shown["profile"]],
                         "questions": shown["questions"]})
