"""``exactnorm certify [TARGET]``: build a construction, write its certificate, check it.

Every choice is :func:`exactnorm.api.plan_certify`'s, so that ``exactnorm.certify(target)``
writes the same bytes: without ``--construction`` the construction and block size come from the
measured cost model of :mod:`exactnorm.constructions.choice` (Theorem 1 for small layers, the
width/depth trade-off beyond it) and the summary says which and why. Without TARGET the embedded
demo is certified, with a note unless ``--demo`` asked for it; an existing ``--out`` file is
kept unless ``--force``. Progress: a rich bar on a terminal, otherwise a plain line on stderr at
most every :data:`PLAIN_PROGRESS_SECONDS` (done/total, elapsed, ETA; also during one long step),
so logs of long runs show that work goes on.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from exactnorm.commands._common import (
    PLAIN_PROGRESS_SECONDS,
    PlainProgress,
    add_target_options,
    add_timeout_option,
    console,
    err_console,
    human_duration,
    output_path,
    progress_hook,
    set_interrupt_note,
    target_arguments,
    verdict_line,
    write_checked_certificate,
)
from exactnorm.commands._defaults import (
    CONSTRUCTIONS,
    DEFAULT_DISTRIBUTION,
    DEFAULT_FROZEN_WEIGHTS,
    DEFAULT_RETRY,
    DEFAULT_VERSION,
    FROZEN_WEIGHTS,
    SHIFT_MODES,
    THEOREM1_MAX_SYSTEM,
    WIDE_DISTRIBUTION,
)
from exactnorm.commands._json import add_json_option, emit, json_ready, verdict_fields
from exactnorm.errors import (
    InputError,
    InvalidCertificateError,
    SingularSystemError,
    require_integer,
)

__all__ = ["register", "PlainProgress", "PLAIN_PROGRESS_SECONDS", "summary_table", "LEGEND",
           "plan_facts", "plan_lines"]

#: estimated seconds from which the plan and its estimate are printed before the work
ESTIMATE_SECONDS = 1.0
#: what the columns of the summary table mean (printed under it)
LEGEND = ("systems: Khatri–Rao systems solved (m: size; exact rank: rank/m); γ, β bits: largest "
          "numerator or denominator; draws: frozen draws incl. redraws of a singular system; "
          "solve s: wall time of each layer in its worker (parallel layers overlap; build is "
          "the wall clock)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("certify", help="certify an exact reconstruction of a target network")
    add_target_options(p)
    p.add_argument("--construction", default="auto", choices=["auto", *CONSTRUCTIONS],
                   help="which construction (default auto: Theorem 1 while every Khatri–Rao "
                        "system is small enough, else the trade-off with a block size from the "
                        "measured cost model)")
    p.add_argument("--seed", type=_seed, default="target", metavar="N|target",
                   help="seed of the frozen weights: target (default) derives it from a hash "
                        "of the target and box, which the checker verifies (the verdict says "
                        "the random network was fixed by the target itself); an integer N is a "
                        "seed you choose (the verdict says so)")
    p.add_argument("--distribution", default=None,
                   help=f"frozen weight entries, e.g. int:8, bits:30, set:-1,1, gauss:16 "
                        f"(default {DEFAULT_DISTRIBUTION}; {WIDE_DISTRIBUTION} when the automatic "
                        f"choice needs block size 1)")
    p.add_argument("--block", type=int, default=None, metavar="K",
                   help="input block size of --construction tradeoff (K ≥ d_in: Theorem 1), "
                        "or input channels per block of every convolution of a CNN (K ≥ "
                        "channels: one pair; default: from the cost model)")
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
                   help="versions 2 and 3: frozen random matrices by reference (draw records the "
                        "checker regenerates) or explicit with their records "
                        f"(default {DEFAULT_FROZEN_WEIGHTS})")
    p.add_argument("--out", default="certificate.json",
                   help="certificate path; .json.gz compresses (default certificate.json; an "
                        "existing file is kept unless --force)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--format-version", type=int, choices=[1, 2, 3], default=DEFAULT_VERSION,
                   help="certificate version: 3 (default) records every frozen matrix's draw "
                        "under the stream key of its position and shares one denominator per "
                        "vector (docs/certificate-format.md); 2 the same with keys the checker "
                        "does not bind to positions; 1 writes plain lists")
    p.add_argument("--no-check", action="store_true",
                   help="do not run the independent checker on the written certificate (by "
                        "default the written bytes are checked before the file gets its name, "
                        "and a refused certificate is not kept)")
    p.add_argument("--pure", action="store_true", help="check with the standard-library checker")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and its estimates (construction, widths, time, peak "
                        "memory, certificate size) and exit 0 without building anything")
    add_timeout_option(p)
    add_json_option(p)
    p.set_defaults(func=run)


def _seed(text: str) -> int | str:
    """``--seed``: a non-negative integer or ``target``."""
    if text == "target":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer or target, got "
                                         f"{text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is non-negative, got {value}")
    return value


def _jobs(text: str) -> int | str:
    """``--jobs``: a positive integer or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto, got {text!r}"
                                         ) from None


def summary_table(c: Any, seconds: float, chosen: str | None = None) -> Any:
    """The per-layer table of a construction, with the build's wall time and the choice."""
    from rich.table import Table

    t = Table(title=f"exactnorm certify: {c.name}, target widths {list(c.target.widths)}")
    for col in ("layer", "d_in→d_out", "frozen widths", "systems", "m", "exact rank",
                "γ bits", "β bits", "draws", "solve s"):
        t.add_column(col, justify="right")
    for r in c.reports:
        t.add_row(str(r.layer), f"{r.d_in}→{r.d_out}", ",".join(map(str, r.widths)),
                  str(r.systems), str(r.system_size), r.rank_text(),
                  str(r.gamma_bits), str(r.beta_bits), str(r.attempts), f"{r.seconds:.3f}")
    t.caption = (f"frozen depth {c.network.depth}, tuned parameters {c.network.tuned_parameters}, "
                 f"frozen parameters {c.network.frozen_parameters}, build {seconds:.2f} s wall"
                 + (f"\n{chosen}" if chosen else ""))
    return t


def _flags(text: str | None) -> str | None:
    """A plan's note in the words of the command line (``jobs auto`` → ``--jobs auto``)."""
    return None if text is None else text.replace("jobs auto:", "--jobs auto:")


def _layer_rows(c: Any) -> list[dict[str, Any]]:
    return [{"layer": r.layer, "d_in": r.d_in, "d_out": r.d_out, "widths": list(r.widths),
             "systems": r.systems, "system_size": r.system_size, "rank": r.rank_text(),
             "gamma_bits": r.gamma_bits, "beta_bits": r.beta_bits, "draws": r.attempts,
             "seconds": round(r.seconds, 4)} for r in c.reports]


def _target_facts(target: Any) -> dict[str, Any]:
    return {"widths": list(target.widths), "kinds": [layer.kind for layer in target.layers],
            "dimension": len(target.lower), "depth": target.depth}


def run(args: argparse.Namespace) -> int:
    from exactnorm.api import (
        certify_target,
        demo_target,
        factors_of,
        is_transformer_file,
        load_target,
        plan_certify,
        require_version,
    )
    seconds: dict[str, float] = {}
    out = output_path(args.out)  # a mistyped folder fails now, not after the construction
    if out is not None and out.exists() and not args.force and not args.dry_run:
        raise InputError(f"{args.out} exists; pass --force to overwrite it, or choose another "
                         f"--out FILE")
    t0 = time.perf_counter()
    path, box = target_arguments(args)
    if path is not None and is_transformer_file(path):  # token ids in: a transformer (§11)
        from exactnorm.commands._transformer import run_transformer
        return run_transformer(args, path)
    if path is None:
        require_integer(args.max_width, "max_width", minimum=1)  # as load_target would
        require_integer(args.max_digits, "max_digits", minimum=1)
        target = demo_target()
    else:
        target = load_target(path, activations=args.activations, max_width=args.max_width,
                             max_digits=args.max_digits, **box)
    seconds["read"] = time.perf_counter() - t0
    # before any work, not after it
    require_version(target.layers, args.format_version, parameter="format_version")
    factors = factors_of(path) if path is not None and args.construction == "lowrank" else None
    t0 = time.perf_counter()
    # a dry run does not hash the target for its seed (a third of its time on a ResNet): the
    # plan is the same, and the seed is derived when the plan is built
    derive_later = args.dry_run and args.seed == "target"
    plan = plan_certify(target, args.construction, seed=0 if derive_later else args.seed,
                        distribution=args.distribution, block=args.block, routing=args.routing,
                        max_system=args.max_system, rank=args.rank, retry=args.retry,
                        shift_mode=args.shift_mode, sparsity=args.sparsity,
                        mask_side=args.mask_side, jobs=args.jobs, scheduler=args.scheduler,
                        solver=args.solver, factors=factors)
    seconds["plan"] = time.perf_counter() - t0
    if derive_later:
        plan = dataclasses.replace(plan, seed_rule="target", options={
            **plan.options, "seed": "derived from the target and box when built"})
    chosen = _flags(plan.summary)
    paths = {"target": path} if path is not None else {}
    if args.dry_run:
        for line in plan_lines(plan, target, path):
            console.print(line, markup=False)
        return emit(args, "PLAN", 0, chosen or plan.estimate.describe(), seconds=seconds,
                    paths=paths, details={"construction": plan.construction,
                                          "plan": plan_facts(plan), "layers": [],
                                          "version": args.format_version,
                                          "target": _target_facts(target)})
    if plan.estimate.seconds >= ESTIMATE_SECONDS or plan.construction == "tradeoff" \
            or plan.runs:
        # a long run: say at once what will be built and what it costs, before the work (the
        # summary repeats it); an explicit choice and a target of several kinds get it too
        err_console.print(chosen or f"{plan.construction}: {plan.estimate.describe()} "
                                    f"(estimated)", markup=False)
    set_interrupt_note("no certificate was written (a construction keeps no partial state); "
                       "run the same command again to start over"
                       + (f", with a larger --timeout (estimated "
                          f"{human_duration(plan.estimate.seconds)})"
                          if args.timeout is not None else ""))
    total = target.depth if plan.unit == "target layers" else None
    with progress_hook(plan.construction, plan.unit, total=total) as hook:
        try:
            c = certify_target(target, plan, hook)
        except SingularSystemError as exc:
            kernel = "" if exc.kernel is None else f"; kernel vector has {len(exc.kernel)} entries"
            raise InputError(f"{exc}{kernel}") from None
    seconds["build"] = c.seconds
    set_interrupt_note(None)
    console.print(summary_table(c, c.seconds, chosen))
    console.print(LEGEND, style="dim")
    if path is None and not args.demo:
        err_console.print("note: no target file was given, so this certified the embedded demo "
                          "target (3 → 4 → 3 → 2); pass a model file, or --demo to certify the "
                          "demo without this note", markup=False)
    rows, facts = _layer_rows(c), _target_facts(target)
    written = write_checked_certificate(c, args.out, version=args.format_version,
                                        frozen_weights=args.frozen_weights,
                                        check=not args.no_check, pure=args.pure)
    del c
    seconds["write"] = written.write_seconds
    if written.verdict is not None:
        seconds["check"] = written.check_seconds
    details = {"construction": plan.construction, "plan": plan_facts(plan), "layers": rows,
               "version": args.format_version, "target": facts,
               "check": None if written.verdict is None else written.verdict.to_json()}
    common = {"seconds": seconds, "paths": {**paths, "certificate": args.out},
              "bytes": {"certificate": written.bytes}}
    if written.verdict is None:
        console.print(f"certificate written to {args.out} ({written.bytes} bytes, version "
                      f"{args.format_version}, {written.write_seconds:.1f} s)")
        console.print("not checked (--no-check): run `exactnorm check` before relying on it")
        return emit(args, "UNCHECKED", 0, "not checked (--no-check)", **common, details=details)
    v = written.verdict
    console.print(verdict_line(v, args.out, "pure" if args.pure else "flint")
                  + f" [{written.check_seconds:.2f} s]")
    if not written.kept:
        if args.json:
            return emit(args, "INVALID", 1, v.message, **verdict_fields(v), **common,
                        details=details)
        raise InvalidCertificateError(f"the constructed certificate was rejected, so {args.out} "
                                      f"was not written: {v.message}")
    console.print(f"certificate written to {args.out} ({written.bytes} bytes, version "
                  f"{args.format_version}, {written.write_seconds:.1f} s; the written bytes "
                  f"checked)")
    return emit(args, "VALID", 0, v.message, **verdict_fields(v), **common, details=details)


def plan_facts(plan: Any) -> dict[str, Any]:
    """Every field of a :class:`~exactnorm.api.CertifyPlan` as JSON values (what ``--dry-run
    --json`` prints under ``details.plan``): whatever the plan holds, estimates included."""
    facts = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    facts["options"] = {k: v for k, v in plan.options.items()
                        if k not in ("factors", "scheduler") or v is not None}
    facts["summary"] = plan.summary
    return json_ready(facts)


def plan_lines(plan: Any, target: Any, path: str | None) -> list[str]:
    """What ``--dry-run`` prints: the target, the construction and why, the estimates (time,
    peak memory, certificate size, frozen depth), the runs of a target of several kinds and
    per-layer rows when the plan has them; nothing is built."""
    e = plan.estimate
    name = path if path is not None else "the embedded demo target"
    lines = [f"plan for {name}: target widths {list(target.widths)} "
             f"({', '.join(dict.fromkeys(layer.kind for layer in target.layers))}), box "
             f"dimension {len(target.lower)}",
             f"construction: {plan.construction}"
             + (f" ({_flags(plan.summary)})" if plan.summary else ""),
             f"estimated: {human_duration(e.seconds)}, peak memory ≈ "
             f"{e.peak_bytes / 2**30:.2f} GiB, certificate ≈ {e.certificate_bytes / 2**20:.1f} "
             f"MiB (gzip), frozen depth {e.depth}, {e.systems} Khatri–Rao system(s) of size ≤ "
             f"{e.system_size}"]
    for run in plan.runs:
        re = run.estimate
        lines.append(f"  target layers {run.first}–{run.last} ({run.kind}): "
                     f"{run.construction}, ≈ {human_duration(re.seconds)}, peak ≈ "
                     f"{re.peak_bytes / 2**30:.2f} GiB, frozen depth {re.depth}; {run.note}")
    for row in getattr(plan, "layers", None) or ():
        values = json_ready(row)
        lines.append("  " + ", ".join(f"{k} {v}" for k, v in values.items())
                     if isinstance(values, dict) else f"  {values}")
    options = {k: v for k, v in plan.options.items()
               if k in ("block", "routing", "distribution", "jobs", "shift_mode", "solver")
               and v is not None}
    lines.append("options: " + ", ".join(f"{k} {v}" for k, v in options.items())
                 + f"; seed rule {plan.seed_rule}")
    lines.append("nothing was built (--dry-run): the same command without --dry-run builds "
                 "this plan")
    return lines
