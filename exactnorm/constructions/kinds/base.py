"""What a layer kind's construction must implement: a :class:`Realizer`.

The plan (:mod:`exactnorm.constructions.plan`) walks the target from its first layer. At layer
``i`` the realizer of that layer's kind *claims* a run of layers (a convolution one layer, the
dense kind every dense layer up to the next other kind), *plans* it (the construction and its
estimated cost, settled before any work so that ``jobs="auto"`` and the printed estimate come
from it) and *realizes* it at the frozen node where the run starts: frozen layers reading
absolute nodes, the checkpoint of each target layer, reports, witnesses, and its part of the
provenance. Nothing in the plan names a kind.

A realizer may also offer constructions of a *whole* target made of its kind only (the dense kind:
Theorem 1, low rank, the width/depth trade-off, with their own options): :meth:`plan_whole`
returns ``None`` where it does not.

Stream keys: a realizer draws its frozen matrices from the seed and the target layer numbers of
its run (``first``), and receives ``start``, the frozen node its run reads, so that keys can name
frozen positions too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from exactnorm.constructions.choice import Estimate
from exactnorm.constructions.common import Construction, LayerReport
from exactnorm.model.layers import FrozenLayer, TargetLayer
from exactnorm.model.network import TargetNetwork
from exactnorm.model.values import Vector

__all__ = ["Options", "RunPlan", "Realized", "Realizer", "WholePlan", "ProgressHook"]

ProgressHook = Callable[[int, int], None]
Box = tuple[Vector, Vector]


@dataclass(frozen=True)
class Options:
    """Every option of ``certify``, validated by the plan (as in :func:`exactnorm.certify`)."""

    construction: str = "auto"
    seed: int = 0
    distribution: str | None = None
    block: int | None = None
    routing: str | None = None
    max_system: int = 4096
    rank: int | None = None
    retry: int = 8
    shift_mode: str | None = None
    sparsity: Any = None
    mask_side: str = "both"
    jobs: int | str = "auto"
    scheduler: Any = None
    solver: str = "auto"
    factors: Sequence[Any] | None = None


@dataclass(frozen=True)
class RunPlan:
    """One run of target layers ``first … first + count − 1`` and how its kind realizes it."""

    kind: str
    first: int
    count: int
    construction: str
    estimate: Estimate
    note: str
    #: kind-specific choices settled by the plan (e.g. the dense run's block size and why)
    choice: dict[str, Any] = field(default_factory=dict)

    @property
    def last(self) -> int:
        return self.first + self.count - 1


@dataclass(frozen=True)
class WholePlan:
    """A whole target realized by one of its kind's own constructions."""

    construction: str
    options: dict[str, Any]
    note: str | None
    estimate: Estimate
    #: whether the construction also takes ``jobs`` (settled by the plan from the estimate)
    takes_jobs: bool = True
    #: what its progress counts
    unit: str = "target layers"


@dataclass
class Realized:
    """What a realizer built for one run, positioned in the whole frozen network."""

    layers: list[FrozenLayer]
    checkpoints: list[int]
    reports: list[LayerReport]
    witnesses: list[Any]
    #: this run's part of the provenance of a construction of several runs (merged by key:
    #: lists are concatenated)
    provenance: dict[str, Any] = field(default_factory=dict)


class Realizer(Protocol):
    """A kind's construction: claim, plan and realize a run of its layers."""

    @property
    def kind(self) -> str: ...

    #: options that only the kind's whole-target constructions take (refused for a target of
    #: several kinds, naming the parameter)
    @property
    def whole_options(self) -> tuple[str, ...]: ...

    #: options of :class:`Options` the kind also takes in a run of a target of several kinds
    #: (the ``conv`` kind: ``block``, input channels per block); optional, none by default

    #: name → callable(target, **options) of its whole-target constructions (empty: none)
    @property
    def constructions(self) -> dict[str, Callable[..., Construction]]: ...

    def claim(self, layers: Sequence[TargetLayer], i: int) -> int: ...   # layers from index i

    def plan(self, run: Sequence[TargetLayer], box: Box, first: int, options: Options,
             distribution: str) -> RunPlan: ...

    def realize(self, run: Sequence[TargetLayer], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized: ...

    def provenance_defaults(self) -> dict[str, Any]: ...   # keys of a plan of several runs

    def plan_whole(self, target: TargetNetwork, options: Options) -> WholePlan | None: ...
