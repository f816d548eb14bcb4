"""``exactnorm certify``: build a construction, write its certificate, check it independently."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from exactnorm.commands._common import (
    add_target_options,
    console,
    err_console,
    load_target_from_args,
    output_path,
    progress_enabled,
    verdict_line,
)
from exactnorm.errors import InputError, InvalidCertificateError, SingularSystemError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    from exactnorm.api import CONSTRUCTIONS

    p = sub.add_parser("certify", help="certify an exact reconstruction of a target network")
    add_target_options(p)
    p.add_argument("--construction", default="theorem1", choices=sorted(CONSTRUCTIONS),
                   help="which construction (default theorem1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the frozen weights (default 0)")
    p.add_argument("--distribution", default=DEFAULT_DISTRIBUTION,
                   help=f"frozen weight entries, e.g. int:8, bits:30, set:-1,1, gauss:16 "
                        f"(default {DEFAULT_DISTRIBUTION})")
    p.add_argument("--block", type=int, default=None, metavar="K",
                   help="input block size of --construction tradeoff (K ≥ d_in: Theorem 1)")
    p.add_argument("--routing", choices=["selection", "mask"], default=None,
                   help="tradeoff: route blocks by selection-skip layers (default, depth 3T+1) "
                        "or by block-masked frozen weights (depth 2T+1)")
    p.add_argument("--rank", type=int, default=None, metavar="R",
                   help="lowrank: promised bound on every layer's rank (error if exceeded)")
    p.add_argument("--retry", type=int, default=0,
                   help="redraw a singular layer up to N times (recorded in the certificate)")
    p.add_argument("--shift-mode", choices=["neuron", "layer"], default="neuron",
                   help="per-neuron smallest shifts (default) or one shift per layer")
    p.add_argument("--sparsity", type=float, default=None, metavar="P",
                   help="keep probability of Bernoulli masks on the frozen weights")
    p.add_argument("--mask-side", choices=["input", "output", "both"], default="both")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="processes: target layers are solved in parallel; a single layer splits "
                        "its p-adic lifting over 2 (result identical for every N; default 1)")
    p.add_argument("--solver", choices=["auto", "padic", "flint"], default="auto",
                   help="exact solver of the Khatri–Rao systems (same result; default auto)")
    p.add_argument("--out", default="certificate.json",
                   help="certificate path; .json.gz compresses (default certificate.json)")
    p.add_argument("--no-check", action="store_true",
                   help="do not run the independent checker on the written certificate")
    p.add_argument("--pure", action="store_true", help="check with the standard-library checker")
    p.set_defaults(func=run)


def construction_options(args: argparse.Namespace) -> dict[str, Any]:
    """Options of the chosen construction taken from the command line."""
    opts: dict[str, Any] = {"seed": args.seed, "distribution": args.distribution}
    if args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    if args.construction == "theorem1":
        opts.update(retry=args.retry, shift_mode=args.shift_mode, sparsity=args.sparsity,
                    mask_side=args.mask_side, jobs=args.jobs, solver=args.solver)
    else:
        if args.sparsity is not None:
            raise InputError("--sparsity is supported by --construction theorem1 only")
        if args.retry < 0:
            raise InputError("--retry must be non-negative")
        opts.update(retry=args.retry, shift_mode=args.shift_mode)
    if args.construction == "tradeoff":
        if args.block is None:
            raise InputError("--construction tradeoff needs --block K")
        opts["block"] = args.block
    elif args.block is not None:
        raise InputError("--block applies to --construction tradeoff only")
    if args.routing is not None:
        if args.construction != "tradeoff":
            raise InputError("--routing applies to --construction tradeoff only")
        opts["routing"] = args.routing
    if args.rank is not None:
        if args.construction != "lowrank":
            raise InputError("--rank applies to --construction lowrank only")
        opts["rank"] = args.rank
    if args.construction == "lowrank" and args.target is not None \
            and str(args.target).endswith(".json"):
        from exactnorm.constructions.lowrank import factors_from_target_file

        factors = factors_from_target_file(args.target)
        if any(f is not None for f in factors):
            opts["factors"] = factors
    return opts


def summary_table(c: Any, seconds: float) -> Table:
    t = Table(title=f"exactnorm certify: {c.name}, target widths {list(c.target.widths)}")
    for col in ("layer", "d_in→d_out", "frozen widths", "systems", "m", "exact rank",
                "γ bits", "β bits", "draws", "time [s]"):
        t.add_column(col, justify="right")
    for r in c.reports:
        t.add_row(str(r.layer), f"{r.d_in}→{r.d_out}", ",".join(map(str, r.widths)),
                  str(r.systems), str(r.system_size), f"{r.rank}/{r.system_size}",
                  str(r.gamma_bits), str(r.beta_bits), str(r.attempts), f"{r.seconds:.3f}")
    t.caption = (f"frozen depth {c.network.depth}, tuned parameters {c.network.tuned_parameters}, "
                 f"frozen parameters {c.network.frozen_parameters}, total {seconds:.2f} s")
    return t


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import certificate_document, certify, check, save_certificate

    if args.seed < 0:
        raise InputError("--seed must be non-negative")
    if args.max_width < 1 or args.max_digits < 1:
        raise InputError("--max-width and --max-digits must be positive")
    output_path(args.out)  # a mistyped folder fails now, not after the construction
    target = load_target_from_args(args)
    opts = construction_options(args)
    t0 = time.perf_counter()
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} target layers"),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=not progress_enabled()) as progress:
        task = progress.add_task(f"{args.construction}", total=target.depth)

        def hook(done: int, total: int) -> None:
            progress.update(task, completed=done)

        try:
            c = certify(target, args.construction, progress=hook, **opts)
        except SingularSystemError as exc:
            kernel = "" if exc.kernel is None else f"; kernel vector has {len(exc.kernel)} entries"
            raise InputError(f"{exc}{kernel}") from None
    doc = certificate_document(c)
    size = save_certificate(doc, args.out)
    seconds = time.perf_counter() - t0
    console.print(summary_table(c, seconds))
    console.print(f"certificate written to {args.out} ({size} bytes)")
    if args.no_check:
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return 0
    t1 = time.perf_counter()
    verdict = check(doc, pure=args.pure)
    console.print(verdict_line(verdict, args.out, "pure" if args.pure else "flint")
                  + f" [{time.perf_counter() - t1:.2f} s]")
    if not verdict.ok:
        raise InvalidCertificateError(f"the constructed certificate was rejected: "
                                      f"{verdict.message}")
    return 0
