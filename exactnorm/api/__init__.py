"""The Python API: one function per command-line verb, and the CLI only parses, calls, prints.

Contract: every ``exactnorm <verb>`` of the command line is a call of the function of the same name
here (``sparse-sweep`` → :func:`sparse_sweep`) with the same defaults; the command modules in
:mod:`exactnorm.commands` translate flags into arguments and results into text, nothing more. So
whatever the CLI can do a program can do, with the same errors: :class:`~exactnorm.errors.
ExactnormError` subclasses whose messages name this module's *parameters* (``retry``, ``width``);
the CLI renders them as flags.

================  ==========================================  ===============================
verb              function                                    returns
================  ==========================================  ===============================
certify           :func:`certify`                             :class:`CertifyResult`
check             :func:`check`, :func:`check_file`           ``Verdict``
tables            :func:`tables`                              :class:`TablesResult`
sparse-sweep      :func:`sparse_sweep`                        :class:`SweepResult`
detpoly           :func:`detpoly`, :func:`check_detpoly`      :class:`DetpolyResult`
realizable        :func:`realizable`                          ``RealizabilityStudy``
capacity          :func:`capacity`                            :class:`CapacityResult`
export            :func:`export`                              :class:`ExportResult`
report            :func:`report`                              :class:`ReportResult`
================  ==========================================  ===============================

Plus the objects the verbs pass around: :func:`load_target` (the one loader of targets),
:func:`load_frozen` (the one loader of frozen networks), :class:`~exactnorm.model.box.Box` (the
input box), :func:`demo_target`, :func:`certificate_document`, :func:`save_certificate`,
:func:`load_certificate`.

Layering: this module sits above ``outputs``. The verbs that need SymPy (``tables``, ``detpoly``)
import it inside the function, so that ``exactnorm realizable`` or ``check`` never pay the second
SymPy costs at import; ``import exactnorm`` stays light because :mod:`exactnorm` resolves these
names lazily.

>>> from exactnorm import api
>>> c = api.certify(api.demo_target(), seed=1)
>>> api.check(api.certificate_document(c)).ok
True
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exactnorm.constructions.choice import THEOREM1_MAX_SYSTEM
from exactnorm.constructions.common import DEFAULT_RETRY
from exactnorm.errors import InputError
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.box import Box
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork

if TYPE_CHECKING:
    from exactnorm.analysis.realizability import RealizabilityStudy
    from exactnorm.api._capacity import CapacityResult, capacity
    from exactnorm.api._capacity_plan import CapacityPlan, plan_capacity
    from exactnorm.api._certify import (
        CONSTRUCTIONS,
        CertifyPlan,
        CertifyResult,
        certify_target,
        factors_of,
        plan_certify,
    )
    from exactnorm.api._check import check_bytes, check_file
    from exactnorm.api._detpoly import DetpolyResult, check_detpoly, detpoly
    from exactnorm.api._outputs import export, report
    from exactnorm.api._progress import Progress, progress_bar
    from exactnorm.api._results import ExportResult, ReportResult, Verdict
    from exactnorm.api._targets import (
        demo_target,
        frozen_of,
        is_transformer_file,
        load_frozen,
        load_target,
        target_of,
    )
    from exactnorm.api._transformer import (
        TransformerResult,
        certify_transformer,
        plan_transformer,
    )
    from exactnorm.api._written import save_certificate, write_certificate
    from exactnorm.certificate import certificate_document, load_certificate, require_version

#: where each name defined in a submodule lives: imported on first access (PEP 562), so that a
#: verb imports what it uses — ``certify --dry-run`` neither the checker's verbs, nor the
#: exports, the reports, capacity or the transformer constructions (a third of the package)
_LAZY: dict[str, str] = {
    **dict.fromkeys(("CONSTRUCTIONS", "CertifyPlan", "CertifyResult", "certify_target",
                     "factors_of", "plan_certify"), "exactnorm.api._certify"),
    **dict.fromkeys(("check_bytes", "check_document", "check_file"), "exactnorm.api._check"),
    **dict.fromkeys(("DetpolyResult", "check_detpoly", "detpoly"), "exactnorm.api._detpoly"),
    **dict.fromkeys(("Progress", "progress_bar", "progress_context"), "exactnorm.api._progress"),
    **dict.fromkeys(("ExportResult", "ReportResult", "Verdict"), "exactnorm.api._results"),
    **dict.fromkeys(("demo_target", "frozen_of", "is_transformer_file", "load_frozen",
                     "load_target", "target_of"), "exactnorm.api._targets"),
    **dict.fromkeys(("TransformerResult", "certify_transformer", "plan_transformer"),
                    "exactnorm.api._transformer"),
    **dict.fromkeys(("save_certificate", "write_certificate"), "exactnorm.api._written"),
    **dict.fromkeys(("certificate_document", "load_certificate", "require_version"),
                    "exactnorm.certificate"),
    **dict.fromkeys(("CapacityResult", "capacity"), "exactnorm.api._capacity"),
    **dict.fromkeys(("CapacityPlan", "plan_capacity"), "exactnorm.api._capacity_plan"),
    **dict.fromkeys(("export", "report"), "exactnorm.api._outputs"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'exactnorm.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CONSTRUCTIONS",
    "certify",
    "plan_certify",
    "certify_target",
    "factors_of",
    "CertifyPlan",
    "CertifyResult",
    "Verdict",
    "ReportResult",
    "ExportResult",
    "progress_bar",
    "target_of",
    "require_version",
    "check",
    "check_file",
    "check_bytes",
    "tables",
    "TablesResult",
    "sparse_sweep",
    "SweepResult",
    "detpoly",
    "check_detpoly",
    "DetpolyResult",
    "realizable",
    "capacity",
    "CapacityResult",
    "plan_capacity",
    "CapacityPlan",
    "export",
    "report",
    "demo_target",
    "load_target",
    "load_frozen",
    "frozen_of",
    "Box",
    "certificate_document",
    "save_certificate",
    "write_certificate",
    "load_certificate",
    "plan_transformer",
    "certify_transformer",
    "is_transformer_file",
    "TransformerResult",
]

def certify(target: Any, construction: str = "auto", *,
            seed: int | str = "target", distribution: str | None = None,
            block: int | None = None,
            routing: str | None = None, max_system: int = THEOREM1_MAX_SYSTEM,
            rank: int | None = None, retry: int = DEFAULT_RETRY, shift_mode: str | None = None,
            sparsity: Any = None, mask_side: str = "both", jobs: int | str = "auto",
            scheduler: Any = None, solver: str = "auto", factors: Sequence[Any] | None = None,
            box: Any = None, box_file: str | os.PathLike[str] | None = None,
            box_from_data: str | os.PathLike[str] | None = None,
            activations: str | Sequence[str] | None = None,
            max_width: int = DEFAULT_MAX_WIDTH, max_digits: int = DEFAULT_MAX_DIGITS,
            progress: Progress = None) -> CertifyResult:
    """Build γ, β of a frozen random network that reproduces ``target`` exactly (``certify``).

    The same code and defaults as ``exactnorm certify``, for a target of any layer kinds (dense,
    convolution, average pooling): every choice is settled by
    :func:`~exactnorm.constructions.plan.plan_certify` (the measured cost model) before any
    work, and the certificate written from the result is byte-identical to the command line's.

    Parameters
    ----------
    target : TargetNetwork, path-like, scikit-learn model or state dict
        The network; a target file (JSON, ``.npz``, ``.pt``, MLP or CNN ``.onnx``; read by
        :func:`load_target` with ``box``, ``activations``, ``max_width``, ``max_digits``; a
        ``.json`` file's low-rank factors are used by ``construction="lowrank"``); a fitted
        scikit-learn MLP or pipeline, or a ``nn.Sequential`` state dict of arrays (both with
        ``box``; the state dict with ``activations``).
    construction : {"auto", "theorem1", "lowrank", "tradeoff"}
        ``auto`` (default): for dense layers, Theorem 1 (References) while every Khatri–Rao
        system is at most ``max_system``, else the width/depth trade-off with the block size of
        the cost model; a target with convolutions or poolings is realized run by run (Theorem
        1 over channels, fixed poolings, the automatic choice for each run of dense layers), and
        takes ``auto`` only.
    seed : int or "target"
        Seed of the frozen weights. ``"target"`` (default): derived from a hash of the target
        and its box (docs/generator.md §8), declared in the certificate (``seed_rule``) and
        verified by the checker, so the certificate shows that the random network was fixed by
        the target itself, not chosen after seeing it; an integer is a seed chosen by the
        caller (the verdict says so). The same for every layer kind.
    distribution : str, optional
        Frozen weight entries (``int:8``, ``nonzero:8`` …); default ``nonzero:8``, and
        ``nonzero:8`` too when the automatic choice needs block size 1.
    block : int, optional
        Trade-off block size of a dense target; for a target with convolutions, the input
        channels per block of every convolution (docs/convolutions.md, "Channel blocks"; a
        dense run after the flatten keeps its automatic choice). Default: from the cost model.
    routing : {"selection", "mask"}, optional
        Trade-off routing of the blocks.
    max_system : int
        Budget: the largest Khatri–Rao system Theorem 1 may solve (refused beyond it, at once).
    rank : int, optional
        Low-rank: promised bound on every layer's rank.
    retry : int
        Redraw a singular layer up to ``retry`` times (each recorded in the certificate).
    shift_mode : {"neuron", "layer", "integer"}, optional
        Activating shifts (default: the construction's own).
    sparsity : exact number, optional
        Theorem 1: keep probability of Bernoulli masks on the frozen weights.
    mask_side : {"input", "output", "both"}
        Theorem 1: which frozen matrices the masks thin.
    jobs : int or "auto"
        Processes (the result is identical for every value); ``auto``: every core when the
        estimated work is 5 s or more, else 1.
    scheduler : str, optional
        Trade-off: a Dask scheduler address.
    solver : {"auto", "padic", "flint"}
        Theorem 1: exact solver of the Khatri–Rao systems (same result).
    factors : sequence, optional
        Low-rank: given factors per layer (``None`` entries are computed).
    box, box_file, box_from_data, activations, max_width, max_digits
        When ``target`` is a file or a model in memory: as in :func:`load_target` (a box is a
        :class:`~exactnorm.model.box.Box`, ``"LO:HI"``, a pair of numbers — ints, floats taken
        exactly, fractions, strings — or a pair of arrays; converted into a ``Box`` here, at the
        edge).
    progress : callable(done, total) or True, optional
        Told the blocks (trade-off) or target layers done so far, for every kind; ``True`` shows
        a bar in a notebook or terminal (:func:`progress_bar`).

    Returns
    -------
    CertifyResult
        A ``Construction`` (frozen network, tuned parameters, per-layer reports) with the
        ``plan`` that chose it and the build time in ``seconds``.

    Raises
    ------
    InputError
        An unknown construction or option value, or an option of another construction (naming
        the parameter).
    LimitExceededError
        ``construction="theorem1"`` beyond ``max_system``, at once, with the estimate.
    SingularSystemError
        A singular draw after ``retry`` redraws, with its exact rank and a kernel vector.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937.

    See Also
    --------
    check, certificate_document, save_certificate

    Examples
    --------
    >>> c = certify(demo_target(), seed=0)
    >>> c.name, c.network.depth
    ('theorem1', 6)
    """
    from exactnorm.api._certify import certify_target, factors_of, plan_certify
    from exactnorm.api._progress import progress_context
    from exactnorm.api._targets import is_transformer_file, target_of
    from exactnorm.api._transformer import certify_transformer, plan_transformer

    if is_transformer_file(target):  # token ids in: one document of slots (docs §11)
        if any(x is not None for x in (box, box_file, box_from_data, activations, rank,
                                       sparsity, factors)) or construction != "auto":
            raise InputError("a transformer's boxes are derived from its architecture and its "
                             "slots realized by the automatic choice; box, activations and "
                             "whole-target options do not apply")
        tplan = plan_transformer(target, seed=seed, jobs=jobs, distribution=distribution,
                                 block=block, routing=routing,
                                 max_system=None if max_system == THEOREM1_MAX_SYSTEM
                                 else max_system,
                                 retry=retry, shift_mode=shift_mode, solver=solver)
        with progress_context(progress, "transformer", "slots") as hook:
            return certify_transformer(tplan, scheduler=scheduler, progress=hook)  # type: ignore[return-value]
    g = target_of(target, box=box, box_file=box_file, box_from_data=box_from_data,
                  activations=activations, max_width=max_width, max_digits=max_digits)
    if isinstance(target, (str, os.PathLike)) and construction == "lowrank" and factors is None:
        factors = factors_of(target)
    plan = plan_certify(g, construction, seed=seed, distribution=distribution, block=block,
                        routing=routing, max_system=max_system, rank=rank, retry=retry,
                        shift_mode=shift_mode, sparsity=sparsity, mask_side=mask_side,
                        jobs=jobs, scheduler=scheduler, solver=solver, factors=factors)
    with progress_context(progress, plan.construction, plan.unit) as hook:
        return certify_target(g, plan, hook)


def check(doc: dict[str, Any] | str | os.PathLike[str], *, pure: bool = False,
          progress: Progress = None) -> Verdict:
    """Check a certificate with an independent checker (``check``): a parsed document or a file.

    Parameters
    ----------
    doc : dict or path-like
        A parsed ``exactnorm.certificate`` (or impossibility) document, or the path of a
        certificate file (``.json`` or ``.json.gz``), read as :func:`check_file` reads it with
        its default limits.
    pure : bool
        Use the standard-library checker (``fractions`` only) instead of python-flint.
    progress : callable(done, total), optional
        Told the frozen layers checked so far (it cannot change the verdict).

    Returns
    -------
    Verdict
        ``ok``, ``rule``, ``message``, ``layer``, ``neuron``; an invalid certificate is a verdict,
        not an exception.

    Raises
    ------
    InputError
        ``doc`` is neither a document nor a path, or the file cannot be read (as
        :func:`check_file`).

    See Also
    --------
    check_file : the same for a file with its limits as parameters.

    Examples
    --------
    >>> from exactnorm.api import certificate_document, certify, demo_target
    >>> doc = certificate_document(certify(demo_target()))
    >>> check(doc).ok == check(doc, pure=True).ok == True
    True
    """
    from exactnorm.api._check import check_document, check_file

    if isinstance(doc, (str, os.PathLike)):
        return check_file(doc, pure=pure, progress=progress)
    if not isinstance(doc, dict):
        raise InputError(f"doc must be a certificate document (a dict) or the path of a "
                         f"certificate file, got {type(doc).__name__}", parameter="doc")
    return check_document(doc, pure=pure, progress=progress)


@dataclass(frozen=True)
class TablesResult:
    """What :func:`tables` did: the files written, or the differences found with ``check``."""

    written: list[Path] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"TablesResult(written={len(self.written)} files, "
                f"differences={len(self.differences)})")


def tables(out: str | os.PathLike[str] = "proofs", only: Sequence[str] | None = None, *,
           check: bool = False, progress: Callable[[str], None] | None = None) -> TablesResult:
    """Regenerate the proof tables T1–T7 into ``out``, or compare them with it (``tables``).

    Parameters
    ----------
    out : path-like
        Folder of the tables (``proofs`` in the repository).
    only : sequence of str, optional
        Table keys, e.g. ``["T1", "T5"]``; all by default.
    check : bool
        Regenerate into a temporary folder and list the files of ``out`` that differ.
    progress : callable(str), optional
        Called with each table key before it is generated.

    Returns
    -------
    TablesResult

    Raises
    ------
    InputError
        An unknown table key.
    """
    # T5/T6 need SymPy (about a second to import); only this verb and detpoly pay for it
    from exactnorm.outputs.tables.registry import compare_tables, generate_tables

    keys = list(only) if only else None
    if check:
        return TablesResult(differences=compare_tables(out, keys))
    return TablesResult(written=generate_tables(out, keys, progress=progress))


@dataclass(frozen=True)
class SweepResult:
    """What :func:`sparse_sweep` did: its rows, the aggregated cells, the files and the command."""

    rows: list[dict[str, Any]]
    cells: list[Any]
    written: list[Path]
    log: Path
    command: str
    thresholds: Any = None  #: the threshold table p*(d) (a ProofTable) of the aggregated cells

    def __repr__(self) -> str:
        # short at any size: a sweep holds thousands of rows
        return (f"SweepResult(rows={len(self.rows)}, cells={len(self.cells)}, "
                f"files={len(self.written)}, log={str(self.log)!r})")


def _sweep_command(preset: str, sizes: Sequence[int], factors: Sequence[str],
                   ps: Sequence[str], draws: int, seed: int, mask_side: str,
                   values: str | None) -> str:
    """The reproducing command line, without backend options (they never change results)."""
    parts = ["exactnorm sparse-sweep", f"--preset {preset}",
             f"--sizes {','.join(map(str, sizes))}", f"--factors {','.join(factors)}",
             f"--p-grid {','.join(ps)}" if len(ps) <= 6 else f"--p-grid {ps[0]}…{ps[-1]} "
             f"({len(ps)} points)", f"--draws {draws}", f"--seed {seed}",
             f"--mask-side {mask_side}"]
    if values:
        parts.append(f"--values {values}")
    return " ".join(parts)


def sparse_sweep(*, preset: str = "ci", sizes: Sequence[int] | None = None,
                 factors: Sequence[str] | None = None, p_grid: str | None = None,
                 draws: int | None = None, chunk: int | None = None, seed: int | None = None,
                 mask_side: str | None = None, values: str | None = None, jobs: int = 1,
                 scheduler: Any = None, resume: str | os.PathLike[str] | None = None,
                 out: str | os.PathLike[str] = "sparse-sweep", plot: bool = True,
                 progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Generic invertibility of sparse Theorem 1 patterns over a grid (``sparse-sweep``).

    Parameters
    ----------
    preset : {"ci", "large"}
        Grid to start from; every other grid argument overrides it.
    sizes, factors, p_grid, draws, chunk, seed, mask_side, values
        The grid (see ``exactnorm sparse-sweep --help``); ``p_grid`` is a list ``"0.1,0.2"`` or
        an inclusive range ``"start:stop:step"``.
    jobs, scheduler
        Local processes or a Dask scheduler address; results are identical for every backend.
    resume : path-like, optional
        Task log of an interrupted run: its finished tasks are skipped.
    out : path-like
        Output folder (cells, thresholds, plot, ``tasks.jsonl``).
    plot : bool
        Write ``transitions.png``.
    progress : callable(done, total), optional

    Returns
    -------
    SweepResult

    Raises
    ------
    InputError
        A bad grid or backend option, naming the parameter.

    References
    ----------
    A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
    Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemmas 5, 6: no
    cancellation in the determinant).
    """
    # the sweep machinery (NetworkX, SciPy's sparse graphs) is for this verb only
    from exactnorm.analysis.sweeps import aggregate, make_tasks, parse_grid, run_sweep
    from exactnorm.outputs.tables.sparse import PRESETS, thresholds_table, write_sweep_outputs

    if preset not in PRESETS:
        raise InputError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}",
                         parameter="preset")
    p = PRESETS[preset]
    size_list = list(sizes) if sizes is not None else list(p.sizes)
    factor_list = list(factors) if factors is not None else list(p.factors)
    ps = parse_grid(p_grid if p_grid else p.p_grid)
    draws = p.draws if draws is None else draws
    chunk = p.chunk if chunk is None else chunk
    seed = p.seed if seed is None else seed
    mask_side = mask_side or p.mask_side
    tasks = make_tasks(sizes=size_list, factors=factor_list, ps=ps, draws=draws, chunk=chunk,
                       seed=seed, mask_side=mask_side, values=values)
    outdir = Path(out)
    log = Path(resume) if resume else outdir / "tasks.jsonl"
    rows = run_sweep(tasks, jobs=jobs, scheduler=scheduler, log=log, resume=resume is not None,
                     progress=progress)
    command = _sweep_command(preset, size_list, factor_list, ps, draws, seed, mask_side, values)
    written = write_sweep_outputs(rows, outdir, command, plot=plot)
    cells = aggregate(rows)
    return SweepResult(rows, cells, written, log, command, thresholds_table(cells, command))


def realizable(width: int, *, d_in: int | None = None, d_out: int | None = None,
               seed: int = 0, distribution: str | None = None,
               target: str | os.PathLike[str] | TargetNetwork | None = None, layer: int = 1,
               w: str = "random") -> RealizabilityStudy:
    """Is a target weight reachable at frozen width ``width``? (``realizable``, Theorem 7).

    Parameters
    ----------
    width : int
        Frozen width ``m`` (below ``d_in·d_out`` not every ``W`` is reachable).
    d_in, d_out : int, optional
        Sizes of a drawn ``W`` (required without ``target``).
    seed : int
        Seed of the frozen weights.
    distribution : str, optional
        Frozen-weight entries (default that of ``certify``).
    target : path-like or TargetNetwork, optional
        Take ``W`` from layer ``layer`` (1-based) of this target.
    w : {"random", "reachable"}
        Without ``target``: a random ``W`` or one reachable by construction.

    Returns
    -------
    RealizabilityStudy
        The decision at ``width`` with its witness, and ``rank K`` for every width.

    Raises
    ------
    InputError
        Naming the parameter (``width``, ``layer``, ``d_in`` …).

    References
    ----------
    A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
    Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 7).

    Examples
    --------
    >>> r = realizable(2, d_in=2, d_out=2, w="reachable")
    >>> r.decision.reachable, r.decision.dimension
    (True, 2)
    """
    from exactnorm.analysis.realizability import realizability_study
    from exactnorm.api._targets import load_target
    from exactnorm.model.operators.dense import dense_layers

    W = None
    if target is not None:
        g = target if isinstance(target, TargetNetwork) else load_target(target)
        if isinstance(layer, bool) or not isinstance(layer, int) \
                or not 1 <= layer <= len(g.layers):
            raise InputError(f"layer must lie in 1..{len(g.layers)}, got {layer!r}",
                             parameter="layer")
        W = dense_layers(g.layers, "realizable")[layer - 1].weight
    options: dict[str, Any] = {} if distribution is None else {"distribution": distribution}
    return realizability_study(W, width=width, seed=seed, d_in=d_in, d_out=d_out, w=w,
                               **options)

