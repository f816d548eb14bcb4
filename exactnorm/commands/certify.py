"""``exactnorm certify``: build a construction, write its certificate, check it independently.

Without ``--construction`` the construction and block size come from the measured cost model of
:mod:`exactnorm.constructions.choice` (Theorem 1 for small layers, the width/depth trade-off
beyond it) and the summary says which and why. Progress: a rich bar on a terminal, otherwise a
plain line on stderr at most every :data:`PLAIN_PROGRESS_SECONDS` (done/total, elapsed, ETA), so
logs of long runs show that work goes on.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rich.table import Table

from exactnorm.certificate import DEFAULT_FROZEN_WEIGHTS, DEFAULT_VERSION, FROZEN_WEIGHTS
from exactnorm.commands._common import (
    PLAIN_PROGRESS_SECONDS,
    PlainProgress,
    add_target_options,
    console,
    err_console,
    load_target_from_args,
    output_path,
    progress_enabled,
    progress_hook,
    verdict_line,
)
from exactnorm.constructions.choice import THEOREM1_MAX_SYSTEM
from exactnorm.constructions.common import DEFAULT_RETRY, SHIFT_MODES
from exactnorm.errors import InputError, InvalidCertificateError, SingularSystemError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, parse_distribution

__all__ = ["register", "PlainProgress", "PLAIN_PROGRESS_SECONDS"]

#: distribution used for wide layers when none is given: no zero entries, so block size 1 is
#: never structurally singular (see exactnorm.constructions.choice)
WIDE_DISTRIBUTION = "nonzero:8"


def register(sub: argparse._SubParsersAction) -> None:
    from exactnorm.api import CONSTRUCTIONS

    p = sub.add_parser("certify", help="certify an exact reconstruction of a target network")
    add_target_options(p)
    p.add_argument("--construction", default="auto", choices=["auto", *sorted(CONSTRUCTIONS)],
                   help="which construction (default auto: Theorem 1 while every Khatri–Rao "
                        "system is small enough, else the trade-off with a block size from the "
                        "measured cost model)")
    p.add_argument("--seed", type=int, default=0, help="seed of the frozen weights (default 0)")
    p.add_argument("--distribution", default=None,
                   help=f"frozen weight entries, e.g. int:8, bits:30, set:-1,1, gauss:16 "
                        f"(default {DEFAULT_DISTRIBUTION}; {WIDE_DISTRIBUTION} when the automatic "
                        f"choice needs block size 1)")
    p.add_argument("--block", type=int, default=None, metavar="K",
                   help="input block size of --construction tradeoff (K ≥ d_in: Theorem 1; "
                        "default: from the cost model)")
    p.add_argument("--routing", choices=["selection", "mask"], default=None,
                   help="tradeoff: route blocks by selection-skip layers (default, depth 3T+1) "
                        "or by block-masked frozen weights (depth 2T+1)")
    p.add_argument("--max-system", type=int, default=THEOREM1_MAX_SYSTEM, metavar="M",
                   help=f"budget: largest Khatri–Rao system (d_in·d_out) Theorem 1 may solve; "
                        f"beyond it the automatic choice takes the trade-off and an explicit "
                        f"--construction theorem1 is refused (default {THEOREM1_MAX_SYSTEM}, "
                        f"about 3 minutes and 3 GiB)")
    p.add_argument("--rank", type=int, default=None, metavar="R",
                   help="lowrank: promised bound on every layer's rank (error if exceeded)")
    p.add_argument("--retry", type=int, default=DEFAULT_RETRY,
                   help=f"redraw a singular layer up to N times, each recorded in the certificate "
                        f"(default {DEFAULT_RETRY}; 0: a singular draw is an error)")
    p.add_argument("--shift-mode", choices=list(SHIFT_MODES), default=None,
                   help="activating shifts: per-neuron smallest (default of theorem1 and "
                        "lowrank), one per layer, or per-neuron rounded up to integers (default "
                        "of tradeoff: a third of the certificate bytes at real size)")
    p.add_argument("--sparsity", default=None, metavar="P",
                   help="exact keep probability of Bernoulli masks on the frozen weights "
                        "(0.7 or 7/10)")
    p.add_argument("--mask-side", choices=["input", "output", "both"], default="both")
    p.add_argument("--jobs", type=_jobs, default="auto", metavar="N",
                   help="processes: blocks and target layers are solved in parallel; a single "
                        "theorem1 layer splits its p-adic lifting over 2 (result identical for "
                        "every N; default auto: every available core when the estimated work "
                        "is 5 s or more, else 1)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="tradeoff: solve the blocks as Dask tasks on this scheduler (needs the "
                        "dask extra; result identical to --jobs)")
    p.add_argument("--solver", choices=["auto", "padic", "flint"], default="auto",
                   help="exact solver of the Khatri–Rao systems (same result; default auto)")
    p.add_argument("--frozen-weights", choices=list(FROZEN_WEIGHTS),
                   default=DEFAULT_FROZEN_WEIGHTS,
                   help="version 2: frozen random matrices by reference (draw records the "
                        "checker regenerates) or explicit with their records "
                        f"(default {DEFAULT_FROZEN_WEIGHTS})")
    p.add_argument("--out", default="certificate.json",
                   help="certificate path; .json.gz compresses (default certificate.json)")
    p.add_argument("--format-version", type=int, choices=[1, 2], default=DEFAULT_VERSION,
                   help="certificate version: 2 (default) records every frozen matrix's draw "
                        "and shares one denominator per vector (docs/certificate-format.md); 1 "
                        "writes plain lists")
    p.add_argument("--no-check", action="store_true",
                   help="do not run the independent checker on the written certificate")
    p.add_argument("--pure", action="store_true", help="check with the standard-library checker")
    p.set_defaults(func=run)


def _jobs(text: str) -> int | str:
    """``--jobs``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto, got {text!r}"
                                         ) from None


def resolve_jobs(args: argparse.Namespace, target: Any) -> str | None:
    """Settle ``--jobs auto`` from the estimated work of the chosen construction; returns the
    note for the summary (``None`` when the user gave a number)."""
    from exactnorm.constructions.choice import estimate_theorem1, estimate_tradeoff, human_seconds
    from exactnorm.constructions.parallel import auto_jobs

    if args.jobs != "auto":
        return None
    if args.construction == "tradeoff":
        est = estimate_tradeoff(target, args.block or 1, routing=args.routing or "selection")
    else:
        est = estimate_theorem1(target)
    args.jobs = auto_jobs(est.seconds)
    return (f"--jobs auto: {args.jobs} process{'es' if args.jobs > 1 else ''}, "
            f"≈ {human_seconds(est.seconds / args.jobs)}")


def resolve_construction(args: argparse.Namespace, target: Any) -> str | None:
    """Settle ``auto`` (and a missing ``--block``/``--distribution``) from the cost model.

    Returns the sentence for the summary, or ``None`` when the user chose everything. An explicit
    Theorem 1 beyond the budget is refused here, at once, with its estimate.
    """
    from exactnorm.constructions.choice import (
        best_block,
        choose_construction,
        require_theorem1_budget,
        zero_probability,
    )

    if args.max_system < 1:
        raise InputError("--max-system must be positive")
    jobs = 1 if args.jobs == "auto" else args.jobs  # estimates for one process until settled
    if args.construction == "theorem1":
        require_theorem1_budget(target, jobs, args.max_system)
    explicit_dist = args.distribution is not None
    if args.distribution is None:
        args.distribution = DEFAULT_DISTRIBUTION
    if args.construction not in ("auto", "tradeoff") or (
            args.construction == "tradeoff" and args.block is not None):
        return None
    if args.construction == "auto" and args.block is not None:
        raise InputError("--block applies to --construction tradeoff only")
    choice = choose_construction(target, args.distribution, jobs=jobs,
                                 max_system=args.max_system)
    if choice.name == "tradeoff" and not explicit_dist and zero_probability(args.distribution):
        # block size 1 needs zero-free frozen entries; the user left the distribution to us
        args.distribution = WIDE_DISTRIBUTION
        choice = choose_construction(target, args.distribution, jobs=jobs,
                                 max_system=args.max_system)
    if args.construction == "tradeoff":
        args.block, est, _, _ = best_block(target, args.distribution, jobs=jobs)
        return f"tradeoff: block size {args.block} from the cost model; {est.describe()}"
    args.construction = choice.name
    if choice.block is not None:
        args.block = choice.block
    dist_note = "" if explicit_dist else f", frozen entries {args.distribution}"
    return f"{choice.name} chosen: {choice.reason}{dist_note}; {choice.estimate.describe()}"


def construction_options(args: argparse.Namespace) -> dict[str, Any]:
    """Options of the chosen construction taken from the command line."""
    if args.distribution is None:
        args.distribution = DEFAULT_DISTRIBUTION
    opts: dict[str, Any] = {"seed": args.seed, "distribution": args.distribution}
    if args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    if args.scheduler is not None and args.construction != "tradeoff":
        raise InputError("--scheduler applies to --construction tradeoff only")
    if args.shift_mode is not None:
        opts["shift_mode"] = args.shift_mode  # else the construction's own default
    if args.construction == "theorem1":
        opts.update(retry=args.retry, sparsity=args.sparsity,
                    mask_side=args.mask_side, jobs=args.jobs, solver=args.solver)
    else:
        if args.sparsity is not None:
            raise InputError("--sparsity is supported by --construction theorem1 only")
        if args.retry < 0:
            raise InputError("--retry must be non-negative")
        opts["retry"] = args.retry
    if args.construction == "tradeoff":
        if args.block is None:
            raise InputError("--construction tradeoff needs --block K")
        opts.update(block=args.block, jobs=args.jobs, scheduler=args.scheduler)
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


def summary_table(c: Any, seconds: float, chosen: str | None = None) -> Table:
    t = Table(title=f"exactnorm certify: {c.name}, target widths {list(c.target.widths)}")
    for col in ("layer", "d_in→d_out", "frozen widths", "systems", "m", "exact rank",
                "γ bits", "β bits", "draws", "time [s]"):
        t.add_column(col, justify="right")
    for r in c.reports:
        t.add_row(str(r.layer), f"{r.d_in}→{r.d_out}", ",".join(map(str, r.widths)),
                  str(r.systems), str(r.system_size), r.rank_text(),
                  str(r.gamma_bits), str(r.beta_bits), str(r.attempts), f"{r.seconds:.3f}")
    t.caption = (f"frozen depth {c.network.depth}, tuned parameters {c.network.tuned_parameters}, "
                 f"frozen parameters {c.network.frozen_parameters}, build {seconds:.2f} s"
                 + (f"\n{chosen}" if chosen else ""))
    return t


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import certify, check_file, write_certificate

    if args.seed < 0:
        raise InputError("--seed must be non-negative")
    if args.max_width < 1 or args.max_digits < 1:
        raise InputError("--max-width and --max-digits must be positive")
    if args.jobs != "auto" and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    output_path(args.out)  # a mistyped folder fails now, not after the construction
    from exactnorm.model.interop_cnn import onnx_is_cnn

    if args.target is not None and onnx_is_cnn(args.target):
        from exactnorm.commands.certify_cnn import run_cnn

        return run_cnn(args, summary_table)
    target = load_target_from_args(args)
    chosen = resolve_construction(args, target)
    jobs_note = resolve_jobs(args, target)
    if jobs_note is not None and args.jobs > 1:
        chosen = f"{chosen}; {jobs_note}" if chosen else jobs_note
    opts = construction_options(args)
    parse_distribution(args.distribution)  # a bad name fails here, before any announcement
    if chosen is not None and args.construction == "tradeoff":
        # a long run: say at once what will be built (the summary repeats it)
        err_console.print(chosen, markup=False)
    unit = "blocks" if args.construction == "tradeoff" else "target layers"
    t0 = time.perf_counter()
    with progress_hook(args.construction, unit) as hook:
        try:
            c = certify(target, args.construction, progress=hook, **opts)
        except SingularSystemError as exc:
            kernel = "" if exc.kernel is None else f"; kernel vector has {len(exc.kernel)} entries"
            raise InputError(f"{exc}{kernel}") from None
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    size = write_certificate(c, args.out, version=args.format_version,
                             frozen_weights=args.frozen_weights)
    written = time.perf_counter() - t1
    console.print(summary_table(c, build, chosen))
    console.print(f"certificate written to {args.out} ({size} bytes, version "
                  f"{args.format_version}, {written:.1f} s)")
    if args.no_check:
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return 0
    del c
    if not progress_enabled():
        print(f"checking {args.out} ({'pure' if args.pure else 'flint'} checker)",
              file=sys.stderr, flush=True)
    t2 = time.perf_counter()
    with progress_hook("check", "frozen layers") as hook:
        verdict = check_file(args.out, pure=args.pure, progress=hook)
    console.print(verdict_line(verdict, args.out, "pure" if args.pure else "flint")
                  + f" [{time.perf_counter() - t2:.2f} s]")
    if not verdict.ok:
        raise InvalidCertificateError(f"the constructed certificate was rejected: "
                                      f"{verdict.message}")
    return 0
