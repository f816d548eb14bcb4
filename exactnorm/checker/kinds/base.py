"""The contract of a layer kind in the checker (docs/certificate-format.md §0, §8): the hooks the
kind-free reader (:mod:`..document`) and walk (:mod:`..walk`) call through ``RULES[kind]``.
Standard library only.

A kind is one module of this folder holding one subclass of :class:`Kind`, registered by one
line in :mod:`.__init__` under its word of ``vocabulary.LAYER_KINDS``. The reader and the walk
never name a kind: every rule that depends on one is a hook below, and every hook raises
:class:`~..numbers.CertificateError` with the rule's name, so a verdict names the rule whatever
the kind.

Records are the reader's typed records (:mod:`..records`): a :class:`~..records.TargetRecord`
(``W`` and ``b`` ``None`` for a fixed map; ``input`` and ``skip`` added by the reader) and a
:class:`~..records.FrozenRecord` (``V``, ``gamma``, ``beta`` ``None`` for a fixed map).

Two families of kinds exist. An *affine* kind (``dense``, ``conv``) is a map ``W a + b`` that the
frozen segment reproduces with tuned γ and β: the walk builds the segment's maps over the box
family :meth:`Kind.family` returns, applies rule ``stability`` on that family, and compares the
checkpoint's map with :meth:`Kind.identity`. A *fixed* kind (``avgpool``, ``globalavgpool``) is
a map determined by its fields alone: its segment is one frozen layer of the same kind,
:meth:`Kind.family` returns ``None`` and :meth:`Kind.identity` compares fields (two fixed maps
with the same fields are the same map).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..boxes import Box
from ..budget import Budget
from ..provenance import Provenance
from ..records import FrozenRecord, TargetRecord
from ..schema import Schema

__all__ = ["Kind", "Family"]

#: the box family of a segment input: lower and upper bounds of every coordinate (a row) at
#: every position (a column), the coordinates the first layer's matrix reads, and the window
#: (``None`` for a dense segment: one position)
Family = tuple[list[list[int]], list[list[int]], int, Any]


class Kind(ABC):
    """The rules of one layer kind; stateless, one instance in ``RULES``."""

    #: the certificate's word for the kind (a word of ``vocabulary.LAYER_KINDS``)
    name: str
    #: the keys of its target layer and of its frozen layer (rule ``format``, :mod:`..schema`;
    #: docs/certificate-format.md, Appendix A, one table each)
    target_schema: Schema
    frozen_schema: Schema

    @abstractmethod
    def read_target(self, layer: dict, where: str, width: int,
                    max_digits: int) -> TargetRecord:
        """Rules ``format``, ``number``, ``shape`` of a target layer reading a value of
        ``width`` entries: the target record without ``input`` and ``skip`` (the reader adds
        them), its ``width`` the width of its output. The reader calls it (and
        :meth:`read_frozen`) only for a layer that passed :attr:`target_schema`
        (:attr:`frozen_schema`): its required keys exist, every key has its JSON type."""

    @abstractmethod
    def read_frozen(self, layer: dict, where: str, j: int, src: int, dims: list[int],
                    prov: Provenance, max_digits: int) -> tuple[FrozenRecord, int]:
        """Rules ``format``, ``number``, ``shape``, ``provenance``, ``skip`` of frozen layer
        ``j`` reading node ``src`` (``dims`` the widths of nodes ``0 … j − 1``; its draws and
        explicit matrices are counted in ``prov``): the frozen record and the width of its
        output."""

    @abstractmethod
    def segment(self, layers: list[FrozenRecord], j: int, start: int, end: int, seg_in: int,
                tl: TargetRecord, i: int) -> None:
        """Rule ``segment`` for frozen layer ``j`` of the segment ``start < j ≤ end`` of target
        layer ``i`` (record ``tl``), whose input node is ``seg_in``: which kinds of layer may
        open and continue the segment and which nodes they read, before any arithmetic (the
        reader has already checked that every read is ``seg_in`` or a node inside the
        segment)."""

    @abstractmethod
    def family(self, layers: list[FrozenRecord], start: int, tl: TargetRecord, i: int, box: Box,
               budget: Budget) -> Family | None:
        """The box family on which rule ``stability`` is checked in the segment of target layer
        ``i`` whose input has the box ``box``, with the rules the segment's first layer
        ``start + 1`` must satisfy before it (rule ``identity`` of a window); its size is
        counted in ``budget`` first. ``None`` for a fixed map: the walk builds no map."""

    @abstractmethod
    def folded(self, tl: TargetRecord, box: Box) -> list[int]:
        """The input coordinates whose lower and upper bounds are equal and that rule
        ``identity`` folds into the bias (empty where it compares entry by entry); the walk
        counts the work of the comparison with it."""

    @abstractmethod
    def identity(self, layer: FrozenRecord, plain: Any, tl: TargetRecord, j: int, i: int,
                 box: Box) -> None:
        """Rules ``activation``, ``width``, ``identity`` at checkpoint ``j`` (record ``layer``)
        of target layer ``i``: for an affine kind ``plain`` is the checkpoint's pre-activation
        map ``(cols, rows, consts, den)`` of the segment input and must equal ``(W, b)`` on the
        box; for a fixed kind ``plain`` is ``None`` and the layer's fields must equal the
        target's."""

    @abstractmethod
    def next_box(self, tl: TargetRecord, box: Box, budget: Budget, i: int,
                 skip: tuple[Any, Box] | None) -> Box:
        """``B_i``, the exact interval box of target layer ``i``'s output, from ``box``, the box
        of the node it reads, and its skip ``(picks, B_q)`` if any; its size and cost counted in
        ``budget`` before it is computed (rule ``limit``)."""
