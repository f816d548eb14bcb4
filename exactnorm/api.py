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
certify           :func:`certify`                             ``Construction``
check             :func:`check`, :func:`check_file`           ``Verdict``
tables            :func:`tables`                              :class:`TablesResult`
sparse-sweep      :func:`sparse_sweep`                        :class:`SweepResult`
detpoly           :func:`detpoly`, :func:`check_detpoly`      :class:`DetpolyResult`
realizable        :func:`realizable`                          ``RealizabilityStudy``
export            :func:`export`                              warning text or ``None``
report            :func:`report`                              ``{"paths", "verdict", "counts"}``
================  ==========================================  ===============================

Plus the objects the verbs pass around: :func:`load_target`, :func:`demo_target`,
:func:`certificate_document`, :func:`save_certificate`, :func:`load_certificate`.

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

import inspect
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exactnorm import checker, checker_flint
from exactnorm.analysis.realizability import RealizabilityStudy, realizability_study
from exactnorm.analysis.sweeps import (
    aggregate,
    make_tasks,
    parse_grid,
    run_sweep,
)
from exactnorm.certificate import (
    DEFAULT_MAX_CERTIFICATE_BYTES,
    certificate_document,
    load_certificate,
    read_certificate_bytes,
    save_certificate,
    write_certificate,
)
from exactnorm.constructions.common import Construction
from exactnorm.constructions.lowrank import certify_lowrank
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, parse_number
from exactnorm.model.interop import load_target_any
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import demo_target
from exactnorm.outputs.export import EXPORT_FORMATS, export_certificate
from exactnorm.outputs.report import report_markdown, write_report
from exactnorm.outputs.tables.sparse import PRESETS, write_sweep_outputs

if TYPE_CHECKING:
    from exactnorm.analysis.detpoly import DetPolyCheck
    from exactnorm.analysis.witnesses import (
        MatchingCertificate,
        StructuredSymbolicProof,
        StructuredWitness,
    )

__all__ = [
    "CONSTRUCTIONS",
    "certify",
    "certify_cnn",
    "check",
    "check_file",
    "tables",
    "TablesResult",
    "sparse_sweep",
    "SweepResult",
    "detpoly",
    "check_detpoly",
    "DetpolyResult",
    "realizable",
    "export",
    "report",
    "demo_target",
    "load_target",
    "certificate_document",
    "save_certificate",
    "write_certificate",
    "load_certificate",
]

#: name → callable(target, **options) → Construction
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    "theorem1": certify_theorem1,
    "lowrank": certify_lowrank,
    "tradeoff": certify_tradeoff,
}


def load_target(path: str | os.PathLike[str], *,
                box: tuple[Any, Any] | None = None,
                activations: str | Sequence[str] | None = None,
                max_width: int = DEFAULT_MAX_WIDTH,
                max_digits: int = DEFAULT_MAX_DIGITS) -> TargetNetwork:
    """Read a target network from any file the CLI reads: JSON, a ``W1, b1, …`` npz, a PyTorch
    ``nn.Sequential`` state dict (``.npz``/``.pt``) or an ONNX MLP (one loader,
    :func:`exactnorm.model.interop.load_target_any`).

    Parameters
    ----------
    path : path-like
        The target file (format in README "Target files").
    box : (lo, hi), optional
        Input cube ``[lo, hi]^{d_0}`` when the file has no domain; exact numbers. Refused when
        the file has its own box.
    activations : str or sequence of str, optional
        A state dict's activations (``"relu,relu,identity"``), which it does not record.
    max_width, max_digits : int
        Refuse wider layers and longer numbers.

    Returns
    -------
    TargetNetwork

    Raises
    ------
    InputError
        Unreadable file, a float in JSON, a shape mismatch, no box.

    See Also
    --------
    demo_target : the embedded 3-layer demo.

    Examples
    --------
    >>> import tempfile, os
    >>> from exactnorm.model.targets import save_target
    >>> path = os.path.join(tempfile.mkdtemp(), "t.json")
    >>> save_target(demo_target(), path)
    >>> load_target(path).widths == demo_target().widths
    True
    """
    exact_box = None
    if box is not None:
        exact_box = (parse_number(box[0], where="box lower end"),
                     parse_number(box[1], where="box upper end"))
    return load_target_any(path, box=exact_box, activations=activations, max_width=max_width,
                           max_digits=max_digits)


def certify(target: TargetNetwork, construction: str = "theorem1", **options: Any) -> Construction:
    """Build γ, β of a frozen random network that reproduces ``target`` exactly (``certify``).

    Parameters
    ----------
    target : TargetNetwork
    construction : {"theorem1", "lowrank", "tradeoff"}
        Theorem 1 of [1]_, its low-rank variant, or the width/depth trade-off (docs/constructions).
    **options
        Keyword arguments of the construction (``seed``, ``distribution``, ``retry``, ``block``,
        ``rank``, ``shift_mode``, ``sparsity``, ``jobs``, ``solver``, ``progress`` …).

    Returns
    -------
    Construction
        The frozen network with its tuned parameters and per-layer reports.

    Raises
    ------
    InputError
        Unknown construction or option; a bad option value names the option (``parameter``).
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
    >>> certify(demo_target(), seed=0).network.depth
    6
    """
    if construction not in CONSTRUCTIONS:
        raise InputError(f"unknown construction {construction!r}; "
                         f"choose one of {', '.join(sorted(CONSTRUCTIONS))}",
                         parameter="construction")
    build = CONSTRUCTIONS[construction]
    try:
        inspect.signature(build).bind(target, **options)
    except TypeError as exc:
        raise InputError(f"construction {construction!r}: {exc}") from None
    return build(target, **options)


def certify_cnn(target: Any, out: str | os.PathLike[str] | None = None, *,
                box: tuple[Any, Any] | None = None, frozen_weights: str = "reference",
                **options: Any) -> Any:
    """Certify a convolutional target (Theorem 1 over channels, docs/certificate-format.md
    "Convolutional layers") and write its certificate to ``out`` when given.

    ``target`` is a :class:`~exactnorm.model.conv.ConvTargetNetwork` or the path of a
    convolutional ``.onnx`` model (then ``box = (lo, hi)`` is its input cube); ``options`` go
    to :func:`~exactnorm.constructions.conv.certify_conv` (``seed``, ``distribution``,
    ``retry``, ``shift_mode``, ``jobs``, ``solver``, ``max_system``, ``scheduler``,
    ``progress``). Returns the :class:`~exactnorm.constructions.conv.ConvConstruction`.
    """
    from exactnorm.certificate_conv import write_conv_certificate
    from exactnorm.constructions.conv import certify_conv
    from exactnorm.model.interop_cnn import load_cnn_target

    if isinstance(target, (str, os.PathLike)):
        exact_box = None if box is None else (parse_number(box[0], where="box lower end"),
                                              parse_number(box[1], where="box upper end"))
        target = load_cnn_target(target, exact_box)
    try:
        inspect.signature(certify_conv).bind(target, **options)
    except TypeError as exc:
        raise InputError(f"certify_cnn: {exc}") from None
    c = certify_conv(target, **options)
    if out is not None:
        write_conv_certificate(c, out, frozen_weights=frozen_weights)
    return c


def check(doc: dict[str, Any], *, pure: bool = False,
          progress: Callable[[int, int], None] | None = None) -> Any:
    """Check a certificate document with an independent checker (``check``).

    Parameters
    ----------
    doc : dict
        A parsed ``exactnorm.certificate`` document.
    pure : bool
        Use the standard-library checker (``fractions`` only) instead of python-flint.
    progress : callable(done, total), optional
        Told the frozen layers checked so far (it cannot change the verdict).

    Returns
    -------
    Verdict
        ``ok``, ``rule``, ``message``, ``layer``, ``neuron``; an invalid certificate is a verdict,
        not an exception.

    See Also
    --------
    check_file : the same for a file, size-limited before parsing.

    Examples
    --------
    >>> doc = certificate_document(certify(demo_target()))
    >>> check(doc).ok == check(doc, pure=True).ok == True
    True
    """
    return (checker if pure else checker_flint).check_certificate(doc, progress=progress)


def check_file(path: str | os.PathLike[str], *, pure: bool = False,
               max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES,
               max_digits: int = DEFAULT_MAX_DIGITS,
               progress: Callable[[int, int], None] | None = None) -> Any:
    """Check a certificate file (``.json`` or ``.json.gz``), size-limited before parsing.

    Parameters
    ----------
    path : path-like
    pure : bool
        Standard-library checker instead of python-flint.
    max_bytes : int
        Refuse files (also their inflated size) larger than this.
    max_digits : int
        Refuse numbers with more digits.
    progress : callable(done, total), optional
        Told the frozen layers checked so far.

    Returns
    -------
    Verdict

    Raises
    ------
    InputError
        Unreadable or oversized file, or a non-positive limit (naming ``max_digits``).
    """
    require_integer(max_digits, "max_digits", minimum=1)
    raw = read_certificate_bytes(path, max_bytes=max_bytes)
    try:  # both checkers parse with the pure checker's strict reader
        doc = checker.parse_certificate_text(raw, max_digits=max_digits)
    except checker.CertificateError as exc:
        return checker.Verdict(False, exc.rule, str(exc))
    del raw  # parsed: the text need not stay in memory during the check
    return (checker if pure else checker_flint).check_certificate(doc, max_digits=max_digits,
                                                                  progress=progress)


@dataclass(frozen=True)
class TablesResult:
    """What :func:`tables` did: the files written, or the differences found with ``check``."""

    written: list[Path] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)


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
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemmas 5, 6: no
       cancellation in the determinant).
    """
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
    return SweepResult(rows, aggregate(rows), written, log, command)


@dataclass(frozen=True)
class DetpolyResult:
    """What :func:`detpoly` established.

    Expansion mode: ``document`` (the ``exactnorm.detpoly`` document), ``checked`` (its
    re-check) and ``written`` (bytes, with ``out``). Matching mode: ``matching``, ``structured``
    and, for sides ``≤ 3``, ``symbolic``.
    """

    d_in: int
    d_out: int
    document: dict[str, Any] | None = None
    checked: DetPolyCheck | None = None
    written: int | None = None
    matching: MatchingCertificate | None = None
    structured: StructuredWitness | None = None
    symbolic: StructuredSymbolicProof | None = None

    @property
    def verified(self) -> bool:
        """Every witness computed here checks (the expansion's check raises instead)."""
        if self.matching is None:
            return self.checked is not None
        return bool(self.matching.verified and self.structured is not None
                    and self.structured.verified
                    and (self.symbolic is None or self.symbolic.proved))


def detpoly(d_in: int, d_out: int, *, seed: int = 0, matching: bool = False,
            layout: str = "interleaved",
            out: str | os.PathLike[str] | None = None) -> DetpolyResult:
    """``det(Xᵀ ⊙ Y) ≢ 0``: expansion with its document, or the matching witnesses (``detpoly``).

    Parameters
    ----------
    d_in, d_out : int
        Target layer sizes; the expansion needs ``d_in·d_out ≤ 4``.
    seed : int
        Seed of the evaluation witness.
    matching : bool
        Any size: the matching certificate and the Theorem 5 structured witness (proved with
        symbols for sides ``≤ 3``) instead of the expansion.
    layout : {"blocked", "interleaved"}
        Neuron order of the structured witness.
    out : path-like, optional
        Write the expansion's document there (not with ``matching``).

    Returns
    -------
    DetpolyResult

    Raises
    ------
    InputError
        Non-positive sizes or seed, ``out`` with ``matching`` (naming the parameter).
    LimitExceededError
        Expansion beyond ``d_in·d_out = 4``.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemmas 5, 6; Theorem 5).

    See Also
    --------
    check_detpoly : re-check a written document.

    Examples
    --------
    >>> detpoly(2, 2).document["term_count"]
    24
    >>> detpoly(3, 3, matching=True).verified
    True
    """
    from exactnorm.analysis.detpoly import check_detpoly as check_detpoly_document
    from exactnorm.analysis.detpoly import detpoly_document, save_detpoly
    from exactnorm.analysis.witnesses import (
        SYMBOLIC_SIDE_LIMIT,
        matching_certificate,
        prove_structured_symbolic,
        structured_witness,
    )

    require_integer(d_in, "d_in", minimum=1)
    require_integer(d_out, "d_out", minimum=1)
    require_integer(seed, "seed")
    if matching:
        if out is not None:
            raise InputError("out writes the expanded polynomial; not with matching",
                             parameter="out")
        proof = (prove_structured_symbolic(d_in, d_out, layout)
                 if max(d_in, d_out) <= SYMBOLIC_SIDE_LIMIT else None)
        return DetpolyResult(d_in, d_out,
                             matching=matching_certificate(d_in, d_out, seed=seed),
                             structured=structured_witness(d_in, d_out, layout=layout, seed=seed),
                             symbolic=proof)
    doc = detpoly_document(d_in, d_out, seed=seed)
    checked = check_detpoly_document(doc)
    written = save_detpoly(doc, out) if out is not None else None
    return DetpolyResult(d_in, d_out, document=doc, checked=checked, written=written)


def check_detpoly(path: str | os.PathLike[str]) -> DetPolyCheck:
    """Re-check an ``exactnorm.detpoly`` file (``detpoly --check``).

    Raises
    ------
    InvalidCertificateError
        On the first failed rule (one line; nothing in the file is evaluated).
    """
    from exactnorm.analysis.detpoly import check_detpoly_file

    return check_detpoly_file(path)


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
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 7).

    Examples
    --------
    >>> r = realizable(2, d_in=2, d_out=2, w="reachable")
    >>> r.decision.reachable, r.decision.dimension
    (True, 2)
    """
    W = None
    if target is not None:
        g = target if isinstance(target, TargetNetwork) else load_target(target)
        if isinstance(layer, bool) or not isinstance(layer, int) \
                or not 1 <= layer <= len(g.layers):
            raise InputError(f"layer must lie in 1..{len(g.layers)}, got {layer!r}",
                             parameter="layer")
        W = g.layers[layer - 1].weight
    options: dict[str, Any] = {} if distribution is None else {"distribution": distribution}
    return realizability_study(W, width=width, seed=seed, d_in=d_in, d_out=d_out, w=w,
                               **options)


def export(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str], *, format: str = "json", mean: Any = 0, scale: Any = 1,
           eps: float | None = None, dtype: str | None = None,
           normalization: str | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS) -> str | None:
    """Write the tuned γ, β for a framework (``export``).

    Parameters
    ----------
    certificate : path-like or dict
        A certificate file or document (read strictly, not checked: use :func:`check`).
    out : path-like
        A file, or ``"-"`` for standard output.
    format : {"json", "npz", "onnx", "torch"}
        ``json`` is exact (BatchNorm-style ``"p/q"`` strings); the others are floats and not
        certified (``npz`` arrays, an ONNX model, a PyTorch state dict).
    mean, scale : exact number
        Frozen running mean μ and scale ``s > 0`` of every neuron.
    eps : float, optional
        Float formats: ``running_var = s² − eps``.
    dtype, normalization : str, optional
        ONNX only: ``float32``/``float64`` and ``batchnorm``/``muladd``.

    Returns
    -------
    str or None
        The not-certified warning of a float export, ``None`` for JSON.

    Raises
    ------
    InputError
        Naming ``format``, ``scale``, ``eps``, ``dtype`` or ``normalization``.
    MissingExtraError
        ``onnx`` or ``torch`` without the package.
    """
    if format not in EXPORT_FORMATS:
        raise InputError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}",
                         parameter="format")
    if format != "onnx" and (dtype or normalization):
        raise InputError("dtype and normalization apply to the onnx format only",
                         parameter="dtype" if dtype else "normalization")
    doc = (certificate if isinstance(certificate, dict)
           else load_certificate(certificate, max_digits=max_digits))
    options: dict[str, Any] = {"mean": mean, "scale": scale, "eps": eps}
    if format == "onnx":
        options.update(dtype=dtype or "float32", normalization=normalization or "batchnorm")
    result: str | None = export_certificate(doc, format, out, **options)
    return result


def report(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str] | None = "report", *,
           max_digits: int = DEFAULT_MAX_DIGITS) -> dict[str, Any]:
    """Write ``report.md``/``report.html`` and bit-size histograms for a certificate (``report``).

    Parameters
    ----------
    certificate : path-like or dict
    out : path-like or None
        Output folder; ``None``: write nothing and return the Markdown (without images).

    Returns
    -------
    dict
        ``paths`` (name → path), ``verdict`` (python-flint checker), ``counts`` (parameters);
        with ``out=None``: ``markdown`` and ``verdict``.

    Raises
    ------
    InputError
        Unreadable certificate, or matplotlib missing (``pip install exactnorm[plot]``).
    """
    doc = (certificate if isinstance(certificate, dict)
           else load_certificate(certificate, max_digits=max_digits))
    if out is None:
        verdict = checker_flint.check_certificate(doc)
        text = report_markdown(doc, verdict, plots=False,
                               no_plots="Histograms are written with --out DIR only.")
        return {"markdown": text, "verdict": verdict}
    return write_report(doc, out)
