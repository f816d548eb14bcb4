"""The plan of a construction: every choice settled before any work, for a target of any kinds.

:func:`plan_certify` walks the target from its first layer; at each layer the realizer of its
kind (:data:`~exactnorm.constructions.kinds.REALIZERS`) claims a run of layers and plans it (the
construction and its estimated cost). A target that is one run of a kind with whole-target
constructions (a network of dense layers) is planned by that kind with the caller's construction
and options; any other target is realized run by run. :func:`certify_target` then builds exactly
that plan into one :class:`~exactnorm.constructions.common.Construction`: each realizer places
its frozen layers at the node where its run starts, the checkpoints follow, and reports,
witnesses and provenance parts are assembled in target order. Nothing here names a kind.

The command line ``exactnorm certify`` and :func:`exactnorm.certify` run exactly this code with
the same defaults, so both give byte-identical certificates (tested). An explicit Theorem 1
beyond ``max_system`` is refused at once with its estimate, never after minutes of work; options
that only a whole-target construction takes are refused for a target of several kinds, naming the
parameter. ``jobs="auto"`` uses every core when the estimated work is 5 s or more; the result
never depends on ``jobs``.

>>> from exactnorm.model.targets import demo_target, random_target
>>> plan_certify(demo_target()).construction
'theorem1'
>>> p = plan_certify(random_target((80, 64, 2), seed=0))
>>> p.construction, p.options["block"], p.options["distribution"]
('tradeoff', 1, 'nonzero:8')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from exactnorm.constructions.choice import (
    THEOREM1_MAX_SYSTEM,
    Estimate,
    combined_estimate,
    require_checker,
)
from exactnorm.constructions.common import DEFAULT_RETRY, SHIFT_MODES, Construction, provenance
from exactnorm.constructions.costs import short_seconds
from exactnorm.constructions.kinds import COMPOSITE, COMPOSITE_SHIFT_MODE, REALIZERS
from exactnorm.constructions.kinds.base import Options, RunPlan
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.parallel import auto_jobs
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, parse_distribution
from exactnorm.model.network import FrozenNetwork, TargetNetwork
from exactnorm.model.routes import Skip

__all__ = ["CONSTRUCTIONS", "CertifyPlan", "plan_certify", "certify_target", "construct",
           "ProgressHook"]

ProgressHook = Callable[[int, int], None]

#: name → callable(target, **options) → Construction: every whole-target construction
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    name: fn for realizer in REALIZERS.values() for name, fn in realizer.constructions.items()}

ROUTINGS = ("selection", "mask")
MASK_SIDES = ("input", "output", "both")
SOLVERS = ("auto", "padic", "flint")


@dataclass(frozen=True)
class CertifyPlan:
    """What :func:`plan_certify` settled: the construction, its options, and why.

    ``note`` is the sentence of an automatic choice (``None`` when the caller chose everything),
    ``jobs_note`` that of ``jobs="auto"``, ``estimate`` the cost model's estimate (a planning aid,
    not certified). ``runs`` is empty when the whole target is realized by ``construction``,
    else the runs in target order; ``unit`` is what progress counts. ``seed_rule`` is
    ``"target"`` when ``options["seed"]`` was derived from the target and its box (the API's and
    the command line's default, :func:`exactnorm.api.plan_certify`; docs/generator.md §8), else
    ``"chosen"``; the construction's provenance records it and a version-3 certificate declares
    the rule ``target``, which the checker verifies.
    """

    construction: str
    options: dict[str, Any]
    note: str | None
    jobs_note: str | None
    estimate: Estimate
    runs: tuple[RunPlan, ...] = ()
    unit: str = "target layers"
    seed_rule: str = "chosen"

    @property
    def jobs(self) -> int:
        """Processes the construction will use (1 unless it takes ``jobs``)."""
        value = self.options.get("jobs", 1)
        return value if isinstance(value, int) else 1

    @property
    def wall_seconds(self) -> float:
        """The estimated seconds of building, writing and checking with :attr:`jobs`
        processes (``estimate.seconds`` is for one)."""
        return self.estimate.wall(self.jobs)

    def estimates(self) -> dict[str, Any]:
        """The estimate as plain numbers (a ``--json`` or ``--dry-run`` report): seconds for
        :attr:`jobs` processes and for one, per phase, peak bytes, certificate bytes, the largest
        predicted Γ and the checker forecast."""
        return self.estimate.as_dict(self.jobs)

    @property
    def summary(self) -> str | None:
        """The note and the jobs note, as one line (``None`` if neither)."""
        parts = [p for p in (self.note, self.jobs_note) if p]
        return "; ".join(parts) or None


def _choice(value: Any, allowed: Sequence[str], parameter: str) -> None:
    if value not in allowed:
        raise InputError(f"{parameter} must be one of {', '.join(allowed)}, got {value!r}",
                         parameter=parameter)


def _chain_end(target: TargetNetwork, i: int) -> int:
    """The end (exclusive, 0-based) of the longest chain starting at layer index ``i``: a run
    may read any node first, then every layer reads the one before, and only its last layer adds
    a skip (a realizer computes the boxes inside its run as a chain's)."""
    k = i
    while True:
        if target.wire(k + 1).skip is not None or k + 1 >= target.depth:
            return k + 1
        if target.wire(k + 2).input != k + 1:
            return k + 1
        k += 1


def _claims(target: TargetNetwork) -> list[tuple[str, int, int]]:
    """``(kind, first, count)`` of each run, in target order (``first`` counts from 1); runs
    follow the topology (:func:`_chain_end`)."""
    runs = []
    i = 0
    while i < target.depth:
        kind = target.layers[i].kind
        if kind not in REALIZERS:
            raise InputError(f"target layer {i + 1} has kind {kind!r}, which no construction "
                             f"realizes; available: {', '.join(REALIZERS)}")
        n = REALIZERS[kind].claim(target.layers[:_chain_end(target, i)], i)
        if n < 1:
            raise InputError(f"the {kind} construction claims no layer at target layer {i + 1}")
        runs.append((kind, i + 1, n))
        i += n
    return runs


def _settle_jobs(jobs: int | str, estimate: Estimate) -> tuple[int, str | None]:
    if jobs != "auto":
        return int(jobs), None
    n = auto_jobs(estimate.seconds)
    note = (f"jobs auto: {n} processes, ≈ {short_seconds(estimate.wall(n))} in all"
            if n > 1 else None)
    return n, note


def plan_certify(target: TargetNetwork, construction: str = "auto", *, seed: int = 0,
                 distribution: str | None = None, block: int | None = None,
                 routing: str | None = None, max_system: int = THEOREM1_MAX_SYSTEM,
                 rank: int | None = None, retry: int = DEFAULT_RETRY,
                 shift_mode: str | None = None, sparsity: Any = None, mask_side: str = "both",
                 jobs: int | str = "auto", scheduler: Any = None, solver: str = "auto",
                 factors: Sequence[Any] | None = None) -> CertifyPlan:
    """Settle every choice of :func:`exactnorm.api.certify` without building anything.

    Parameters are those of :func:`exactnorm.api.certify`.

    Returns
    -------
    CertifyPlan

    Raises
    ------
    InputError
        An unknown construction or option value, an option of another construction, or an
        option of a whole-target construction for a target of several kinds, naming the
        parameter.
    LimitExceededError
        ``construction="theorem1"`` with a Khatri–Rao system larger than ``max_system``, with the
        estimated time, memory and certificate size (at once, before any work).

    Examples
    --------
    >>> from exactnorm.model.targets import random_target
    >>> plan_certify(random_target((80, 64, 2), seed=0), "theorem1")
    Traceback (most recent call last):
    ...
    exactnorm.errors.LimitExceededError: construction theorem1 would solve a Khatri–Rao system of size 5120 (> max_system = 4096): ...
    """  # noqa: E501
    _choice(construction, ["auto", *sorted(CONSTRUCTIONS)], "construction")
    require_integer(seed, "seed")
    require_integer(max_system, "max_system", minimum=1)
    require_integer(retry, "retry")
    if jobs != "auto":
        require_integer(jobs, "jobs", minimum=1)
    if block is not None:
        require_integer(block, "block", minimum=1)
    if rank is not None:
        require_integer(rank, "rank", minimum=1)
    if routing is not None:
        _choice(routing, ROUTINGS, "routing")
    if shift_mode is not None:
        _choice(shift_mode, SHIFT_MODES, "shift_mode")
    _choice(mask_side, MASK_SIDES, "mask_side")
    _choice(solver, SOLVERS, "solver")
    if distribution is not None:
        parse_distribution(distribution)  # a bad name fails here, before any estimate
    options = Options(construction, seed, distribution, block, routing, max_system, rank, retry,
                      shift_mode, sparsity, mask_side, jobs, scheduler, solver, factors)

    claims = _claims(target)
    if len(claims) == 1 and target.is_chain:
        whole = REALIZERS[claims[0][0]].plan_whole(target, options)
        if whole is not None:
            if whole.construction in ("theorem1", "tradeoff"):  # the ones the model knows
                require_checker(whole.estimate, f"construction {whole.construction}",
                                "a smaller --block, or the trade-off")
            settled, jobs_note = _settle_jobs(jobs, whole.estimate)
            opts = dict(whole.options, jobs=settled) if whole.takes_jobs else dict(whole.options)
            return CertifyPlan(whole.construction, opts, whole.note, jobs_note, whole.estimate,
                               unit=whole.unit)

    kinds = ", ".join(dict.fromkeys(kind for kind, _, _ in claims))
    if construction != "auto":
        raise InputError(f"construction {construction} realizes a whole target of one kind; "
                         f"this target has {kinds} layers, realized run by run by their kinds",
                         parameter="construction")
    in_runs = {name for realizer in REALIZERS.values()
               for name in getattr(realizer, "run_options", ())}
    for realizer in REALIZERS.values():
        for name in realizer.whole_options:
            if getattr(options, name) is not None and name not in in_runs:
                raise InputError(f"{name} applies to a whole-target construction only; this "
                                 f"target has {kinds} layers, realized run by run by their "
                                 f"kinds", parameter=name)
    dist = parse_distribution(distribution or DEFAULT_DISTRIBUTION).spec
    boxes = target.interval_boxes()
    runs = tuple(REALIZERS[kind].plan(target.layers[first - 1:first - 1 + n],
                                      boxes[target.wire(first).input], first, options, dist)
                 for kind, first, n in claims)
    estimate = combined_estimate([run.estimate for run in runs])
    require_checker(estimate, "this realization", "a smaller --block or --max-system")
    settled, jobs_note = _settle_jobs(jobs, estimate)
    opts = {"seed": seed, "distribution": dist, "retry": retry,
            "shift_mode": shift_mode or COMPOSITE_SHIFT_MODE, "jobs": settled, "solver": solver,
            "scheduler": scheduler, "max_system": max_system}
    note = (f"{COMPOSITE} (run by run): " + "; ".join(run.note for run in runs)
            + f"; {estimate.describe()}")
    return CertifyPlan(COMPOSITE, opts, note, jobs_note, estimate, runs)


def _merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    for key, value in part.items():
        if isinstance(value, list) and isinstance(into.get(key), list):
            into[key] = into[key] + value
        else:
            into[key] = value


def certify_target(target: TargetNetwork, plan: CertifyPlan,
                   progress: ProgressHook | None = None) -> Construction:
    """Build the construction of ``plan`` (``progress(done, total)`` in ``plan.unit``)."""
    if not plan.runs:
        c = CONSTRUCTIONS[plan.construction](target, progress=progress, **plan.options)
    else:
        c = _realize_runs(target, plan, progress)
    c.provenance["seed_rule"] = plan.seed_rule
    if target.source is not None:
        # where the target came from (names and input shape of the model file): the ONNX
        # export reuses them; descriptive only, the checker ignores provenance
        c.provenance["source"] = target.source
    return c


def _realize_runs(target: TargetNetwork, plan: CertifyPlan,
                  progress: ProgressHook | None) -> Construction:
    opts = plan.options
    require_integer(opts["jobs"], "jobs", minimum=1)
    boxes = target.interval_boxes()
    layers: list[Any] = []
    checkpoints: list[int] = []
    reports: list[Any] = []
    witnesses: list[Any] = []
    parts: dict[str, Any] = {}
    for realizer in REALIZERS.values():
        _merge(parts, realizer.provenance_defaults())
    if progress is not None:
        progress(0, target.depth)  # the total from the start, before the first long run
    residuals: list[tuple[int, Skip]] = []
    for run in plan.runs:
        # the run is built as if it read the node before it, then re-wired to the checkpoint of
        # the target node it reads (a residual target's block input)
        start, reads = len(layers), _node_of(checkpoints, target.wire(run.first).input)
        done = REALIZERS[run.kind].realize(target.layers[run.first - 1:run.last],
                                           boxes[target.wire(run.first).input], run, start=start,
                                           options=opts)
        layers.extend(_reads(layer, start, reads) for layer in done.layers)
        checkpoints.extend(done.checkpoints)
        for i in range(run.first, run.last + 1):
            skip = target.wire(i).skip
            if skip is not None:  # added before the checkpoint's activation, as in the target
                residuals.append((checkpoints[i - 1], Skip(
                    _node_of(checkpoints, skip.source), skip.weight, skip.kind)))
        reports.extend(done.reports)
        witnesses.extend(done.witnesses)
        _merge(parts, done.provenance)
        if progress is not None:
            progress(run.last, target.depth)
    network = FrozenNetwork(len(target.lower), tuple(layers), tuple(checkpoints),
                            residuals=tuple(residuals))
    return Construction(
        name=plan.construction, target=target, network=network, reports=reports,
        provenance=provenance(plan.construction, opts["seed"], opts["distribution"],
                              shift_mode=opts["shift_mode"], retry=opts["retry"], **parts),
        witnesses={"layers": witnesses})


def _node_of(checkpoints: Sequence[int], target_node: int) -> int:
    """The frozen node equal to target node ``target_node`` (0: the input)."""
    return 0 if target_node == 0 else checkpoints[target_node - 1]


def _reads(layer: Any, start: int, reads: int) -> Any:
    """``layer`` with every read of node ``start`` moved to node ``reads``."""
    if start == reads:
        return layer
    changes: dict[str, Any] = {}
    if layer.input == start:
        changes["input"] = reads
    if any(s.source == start for s in layer.skips):
        changes["skips"] = tuple(dataclasses.replace(s, source=reads) if s.source == start
                                 else s for s in layer.skips)
    return dataclasses.replace(layer, **changes) if changes else layer


def construct(target: TargetNetwork, construction: str = "auto", *,
              progress: ProgressHook | None = None, **options: Any) -> Construction:
    """:func:`plan_certify` and :func:`certify_target` in one call (the library's shortcut;
    :func:`exactnorm.certify` adds target files, boxes and a timed result).

    >>> from exactnorm.model.targets import demo_target
    >>> construct(demo_target(), seed=0).network.depth
    6
    """
    return certify_target(target, plan_certify(target, construction, **options), progress)
