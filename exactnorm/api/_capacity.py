"""``capacity``: what re-tuning only the normalization of a given network reaches (the API verb).

The command line ``exactnorm capacity`` is this function with the same defaults; it parses its
flags, calls :func:`capacity` and prints :meth:`CapacityResult.lines`. The mathematics is in
:mod:`exactnorm.analysis.capacity` (decision and profile), :mod:`exactnorm.analysis.
capacity_witness` (witnesses and documents) and :mod:`exactnorm.analysis.capacity_best`
(``best``); the documents are checked here by the independent checker before they are returned.
The given network is read by the one loader of frozen networks (:func:`~exactnorm.api._targets.
frozen_of`, :func:`~exactnorm.api.load_frozen`), the target by the one loader of targets
(:func:`~exactnorm.api._targets.target_of`), and the box is a :class:`~exactnorm.model.box.Box`
converted here, at the edge.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactnorm.analysis.capacity import (
    OUTPUT_SCALES,
    Decision,
    ProfileRow,
    capacity_profile,
    decide,
    linked_pairs,
)
from exactnorm.analysis.capacity_best import BestResult, best_affine
from exactnorm.api._progress import Progress, progress_context
from exactnorm.api._results import Verdict
from exactnorm.api._targets import frozen_of, target_of
from exactnorm.api._written import check_document_bytes, claim_accepted, write_checked
from exactnorm.certificate import certificate_bytes, save_certificate
from exactnorm.checker.impossibility import CLASSES
from exactnorm.errors import InputError, InvariantError
from exactnorm.exact.files import atomic_write
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.model.batchnorm import as_target
from exactnorm.model.box import Box
from exactnorm.model.network import DEFAULT_MAX_WIDTH, FrozenNetwork, TargetNetwork
from exactnorm.outputs.stages import Stages

__all__ = ["CapacityResult", "capacity", "EXIT_UNDECIDED", "PROFILE_FORMAT"]

#: exit code of ``exactnorm capacity`` for UNDECIDED (0 REACHABLE, 1 UNREACHABLE, as
#: ``exactnorm realizable``; 2 bad input; 3 internal error)
EXIT_UNDECIDED = 4
#: ``format`` of the profile written by ``--out`` without a target (a measurement with its
#: witnesses, not a certificate)
PROFILE_FORMAT = "exactnorm.capacity-profile"


@dataclass
class CapacityResult:
    """What :func:`capacity` found: the given ``network``, its ``profile`` (one
    :class:`~exactnorm.analysis.capacity.ProfileRow` per pair of consecutive linear layers), and
    with a target the ``decision`` (verdict, class, document), the checker's ``verdict`` on the
    document, the ``best`` stable-class approximation, the file written and the time of each
    stage in seconds."""

    network: FrozenNetwork
    profile: list[ProfileRow]
    target: TargetNetwork | None = None
    decision: Decision | None = None
    verdict: Verdict | None = None
    best: BestResult | None = None
    path: Path | None = None
    bytes: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def word(self) -> str | None:
        """``REACHABLE``, ``UNREACHABLE``, ``UNDECIDED``, or ``None`` for a profile."""
        return self.decision.verdict if self.decision is not None else None

    @property
    def document(self) -> dict[str, Any] | None:
        return self.decision.document if self.decision is not None else None

    def lines(self) -> list[str]:
        """The text the command line prints: the verdict first, then the profile."""
        out = []
        d = self.decision
        if d is not None:
            if d.verdict == "REACHABLE":
                out.append(f"REACHABLE: {d.reason}; an ordinary certificate (frozen matrices "
                           f"the given ones, declared fixed)")
            elif d.verdict == "UNREACHABLE":
                out.append(f"UNREACHABLE {CLASSES[d.cls or 'every']}: {d.reason} (witness "
                           f"{d.witness})")
            else:
                out.append(f"UNDECIDED: not settled for {d.cls}")
        for row in self.profile:
            w = "universal" if row.universal else "not universal"
            out.append(f"pair {row.pair}-{row.pair + 1} ({row.c0} → {row.c1} → {row.c2}): "
                       f"rank K = {row.rank} of {row.needed} needed: {w} (output scale held); "
                       f"{row.tuned} (output scale tuned, Burkholz's c2·c0 − c2 + 1 = "
                       f"{row.needed_tuned})")
        if self.best is not None:
            b = self.best
            out.append(f"best (stable class): mean squared error {_short(b.mse)}, optimal in "
                       f"the class by the exact stationarity identity; achieved sup error "
                       f"{_short(b.sup_error)}, an upper bound over every tuning (exact values "
                       f"in the document's provenance.best)")
        return out

    def __repr__(self) -> str:
        return (f"CapacityResult(verdict={self.word}, network={self.network!r}, "
                f"pairs={len(self.profile)})")


def _short(x: Any) -> str:
    """An exact rational for a line of text: itself when short, else its value to 6 digits and
    its size."""
    text = str(x)
    if len(text) <= 24:
        return text
    bits = max(int(x.numer()).bit_length(), int(x.denom()).bit_length())
    return f"≈ {float(x):.6g} (exact: a rational of {bits} bits)"


def _target(target: Any, region: Box | None, activations: str | Sequence[str] | None,
            max_width: int, max_digits: int) -> TargetNetwork:
    """The target through the one loader of targets; a given network (a
    :class:`FrozenNetwork`) as its own function on the box."""
    if isinstance(target, FrozenNetwork):
        if region is None:
            raise InputError("box is needed with this target (the claim is about a box)",
                             parameter="box")
        return as_target(target, region)
    if isinstance(target, TargetNetwork):
        if region is not None:
            raise InputError("box describes a target file or model; target is a TargetNetwork "
                             "with its own box", parameter="box")
        return target
    try:
        return target_of(target, box=region, activations=activations, max_width=max_width,
                         max_digits=max_digits)
    except InputError as exc:
        if region is None and exc.parameter is not None and "box" in (
                exc.parameter if isinstance(exc.parameter, tuple) else (exc.parameter,)):
            raise InputError("box is needed with this target (the claim is about a box)",
                             parameter="box") from None
        raise


def capacity(frozen: Any, *, box: Any = None, box_file: str | os.PathLike[str] | None = None,
             box_from_data: str | os.PathLike[str] | None = None, target: Any = None,
             out: str | os.PathLike[str] | None = None, best: bool = False,
             activations: str | Sequence[str] | None = None,
             target_activations: str | Sequence[str] | None = None,
             output_scale: str = "tuned", check: bool = True, pure: bool = False,
             max_width: int = DEFAULT_MAX_WIDTH, max_digits: int = DEFAULT_MAX_DIGITS,
             progress: Progress = None) -> CapacityResult:
    """What tuning only the normalization of a given network can reach (``capacity``).

    Parameters
    ----------
    frozen : path-like, scikit-learn model, TargetNetwork or FrozenNetwork
        The given ReLU network (read by :func:`~exactnorm.api.load_frozen`): an ONNX MLP with
        or without ``BatchNormalization`` after its linear layers, an ``nn.Sequential`` state
        dict (``.npz``/``.pt``, with ``activations``), a ``W1, b1, …`` ``.npz``, a JSON target
        file or a certificate, or a fitted scikit-learn MLP. Its tuned parameters are one γ and
        one β per neuron after each linear layer (a BatchNorm's own scale and bias; its running
        statistics only reparametrize them, :mod:`exactnorm.model.batchnorm`).
    box, box_file, box_from_data
        The input box (as for ``certify``); needed with ``target``, not for the profile (which
        holds on any box).
    target : path-like, scikit-learn model, TargetNetwork or FrozenNetwork, optional
        Without it: the capacity profile only. With it: the verdict REACHABLE, UNREACHABLE or
        UNDECIDED and a document either way.
    out : path-like, optional
        Write the document (``.json`` or ``.json.gz``; a certificate or an
        ``exactnorm.impossibility`` document), or, without a target, the profile as JSON.
    best : bool
        Also the exact least-squares optimum in the stable class and its achieved sup-norm
        error (an affine target and one hidden frozen layer).
    activations, target_activations : str or sequence, optional
        Declared activations of a state dict (the given network's, the target's).
    output_scale : {"tuned", "fixed"}
        ``fixed`` decides the class with the output layer's γ held at 1.
    check : bool
        Check the document with the independent checker (python-flint; ``pure``: the
        standard-library arithmetic).
    max_width, max_digits : int
        Refuse wider layers and longer numbers in the inputs.
    progress : callable(done, total) or True, optional

    Returns
    -------
    CapacityResult

    Raises
    ------
    InputError
        A bad file, option or box (naming the parameter).
    InvariantError
        The checker refused a document exactnorm wrote (a bug, never a verdict).

    Examples
    --------
    >>> from exactnorm.model.network import TargetNetwork
    >>> frozen = TargetNetwork.from_lists([[[1, 0], [0, 1], [1, 1]], [[1, 1, 1]]],
    ...                                   [[0, 0, 0], [0]], lower=[0, 0], upper=[1, 1])
    >>> r = capacity(frozen, target=TargetNetwork.from_lists([[[2, 3]]], [[1]], ["identity"],
    ...                                                      lower=[0, 0], upper=[1, 1]))
    >>> r.word, r.verdict.ok
    ('REACHABLE', True)
    """
    if output_scale not in OUTPUT_SCALES:
        raise InputError(f"output_scale must be one of {', '.join(OUTPUT_SCALES)}, got "
                         f"{output_scale!r}", parameter="output_scale")
    if best and target is None:
        raise InputError("best needs a target", parameter=("best", "target"))
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    net = frozen_of(frozen, activations=activations, max_width=max_width,
                    max_digits=max_digits)
    region = Box.given(box=box, box_file=box_file, box_from_data=box_from_data,
                       max_digits=max_digits)
    if region is not None:
        region = region.fit(net.input_dim, what="the given network's input")
    g = None if target is None else _target(target, region, target_activations, max_width,
                                            max_digits)
    seconds["read"] = time.perf_counter() - t0
    with progress_context(progress, "capacity", "steps") as hook:
        stages = Stages(hook, profile=len(linked_pairs(net)), decide=5 if g is not None else 0,
                        best=1 if best else 0, check=1 if g is not None and check else 0)
        t = time.perf_counter()
        profile = capacity_profile(net, progress=stages.hook("profile"))
        seconds["profile"] = time.perf_counter() - t
        result = CapacityResult(net, profile, g, seconds=seconds)
        if g is None:
            if out is not None:
                result.path, result.bytes = _write_profile(result, out)
            return result
        t = time.perf_counter()
        result.decision = decide(net, g, output_scale=output_scale,
                                 progress=stages.hook("decide"))
        stages.finish("decide")
        seconds["decide"] = time.perf_counter() - t
        if best:
            t = time.perf_counter()
            result.best = best_affine(net, g)
            stages.finish("best")
            seconds["best"] = time.perf_counter() - t
        doc = result.decision.document
        if doc is not None and result.best is not None:
            doc["provenance"]["best"] = result.best.as_dict()
        if doc is not None:
            _write_and_check(result, doc, out, check=check, pure=pure)
            stages.finish("check")
    return result


def _write_and_check(result: CapacityResult, doc: dict[str, Any],
                     out: str | os.PathLike[str] | None, *, check: bool, pure: bool) -> None:
    """The document's bytes, checked as written (:mod:`exactnorm.api._written`): with ``out``
    the file itself before it gets its name, without it the bytes it would have; the verdict
    must be valid and claim the decision's word, else nothing is written and it is a bug."""
    expected = result.decision.verdict if result.decision is not None else None
    if out is not None:
        written = write_checked(out, lambda p: save_certificate(doc, p), check=check,
                                pure=pure, accept=claim_accepted(expected))
        result.verdict, result.bytes = written.verdict, written.bytes
        result.path = Path(out) if written.kept else None
        result.seconds["write"] = written.write_seconds
        if written.verdict is not None:
            result.seconds["check"] = written.check_seconds
    elif check:
        t = time.perf_counter()
        result.verdict = check_document_bytes(doc, pure=pure)
        result.seconds["check"] = time.perf_counter() - t
    if result.verdict is not None and not claim_accepted(expected)(result.verdict):
        raise InvariantError(f"the checker refused the serialized {expected} document "
                             f"exactnorm wrote, so it was not kept: {result.verdict.message}")


def _write_profile(result: CapacityResult, out: str | os.PathLike[str]) -> tuple[Path, int]:
    doc = {"format": PROFILE_FORMAT, "version": 1,
           "network": result.network.name or "a given network",
           "widths": list(result.network.node_dims),
           "pairs": [row.as_dict() for row in result.profile],
           "note": "a measurement with its witnesses (exact ranks); not checked by exactnorm "
                   "check"}
    return Path(out), atomic_write(out, certificate_bytes(doc))


#: the target reader of :func:`capacity`, shared with its dry run (:mod:`exactnorm.api.
#: _capacity_plan`)
read_target = _target
