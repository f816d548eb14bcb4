"""The records the checker's reader returns (docs/certificate-format.md §0, §8, §10): the
declared, typed API that both arithmetics, the walk and the rest of the package consume.
Standard library only; named tuples (immutable, cheap to build: one per layer of a deep
network), built once by the reader and never changed.

A :class:`TargetRecord` is a target layer, a :class:`FrozenRecord` a frozen layer, with every
vector and matrix as integers over one denominator (:class:`~.numbers.IntVector`,
:class:`~.numbers.IntMatrix`), a frozen weight given by reference as a lazy
:class:`~.provenance.Draw`, a 0/1 skip as :class:`~.topology.Picks`, and a window as
:class:`Geometry`. A field a kind does not have is ``None`` (a pooling has no ``W``, ``V``, γ,
β) or empty (its ``skips``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from .numbers import IntMatrix, IntVector

__all__ = ["Geometry", "TargetRecord", "FrozenRecord"]


@dataclass(frozen=True)
class Geometry:
    """A convolution or pooling window on a (C, H, W) input in C order (docs/certificate-format.md
    §8): kernel, stride, symmetric zero padding and dilation; ``group`` the groups of a grouped
    convolution (whose kernel a record holds as the block-diagonal kernel of the whole patch)."""

    C: int
    H: int
    W: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    group: int = 1

    @property
    def Ho(self) -> int:
        return (self.H + 2 * self.ph - self.dh * (self.kh - 1) - 1) // self.sh + 1

    @property
    def Wo(self) -> int:
        return (self.W + 2 * self.pw - self.dw * (self.kw - 1) - 1) // self.sw + 1

    @property
    def patch(self) -> int:
        """Patch coordinates: C·kh·kw."""
        return self.C * self.kh * self.kw

    def window(self) -> tuple[int, int, int, int]:
        return self.kh, self.kw, self.sh, self.sw

    def same_window(self, other: Geometry) -> bool:
        return (self.C, self.H, self.W, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw,
                self.dh, self.dw) == (other.C, other.H, other.W, other.kh, other.kw, other.sh,
                                      other.sw, other.ph, other.pw, other.dh, other.dw)

    def pointwise(self) -> bool:
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.dh, self.dw) == \
            (1, 1, 1, 1, 0, 0, 1, 1)

    def pixels(self, y: int, x: int) -> list[int | None]:
        """Input index (C order) of every patch coordinate t = c·kh·kw + u·kw + v at output
        position (y, x); None where the pixel lies in the zero padding."""
        out: list[int | None] = []
        for c in range(self.C):
            for u in range(self.kh):
                row = y * self.sh - self.ph + u * self.dh
                for v in range(self.kw):
                    col = x * self.sw - self.pw + v * self.dw
                    inside = 0 <= row < self.H and 0 <= col < self.W
                    out.append((c * self.H + row) * self.W + col if inside else None)
        return out

    def describe(self) -> str:
        return (f"kernel {self.kh}x{self.kw}, stride {self.sh}x{self.sw}, padding "
                f"{self.ph}x{self.pw}, dilation {self.dh}x{self.dw} on {self.C}x{self.H}x{self.W}")


class TargetRecord(NamedTuple):
    """Target layer ``i``: ``σ(W a_p + b [+ S a_q])``, or a fixed map of its kind.

    ``W`` is d_i x d_p (dense) or c_out x C·kh·kw (conv); ``width`` the width of its output;
    ``input`` the node ``p`` it reads; ``skip`` None or ``(q, kind, Picks)``
    (:mod:`.topology`); ``shape`` the ``(C, H, W)`` of a global pooling."""

    kind: str
    W: IntMatrix | None
    b: IntVector | None
    act: str
    width: int
    geom: Geometry | None = None
    shape: tuple[int, int, int] | None = None
    input: int = 0
    skip: tuple[int, str, Any] | None = None


class FrozenRecord(NamedTuple):
    """Frozen layer ``j``: ``σ(γ ⊙ (V h_input) + β [+ residual]) + Σ skips``, or a fixed map.

    ``V`` an :class:`~.numbers.IntMatrix` or a :class:`~.provenance.Draw`; ``skips`` the
    post-activation skips ``(source, matrix or Picks)``; ``residual`` a checkpoint's
    ``(q, kind, Picks)``; ``hull`` whether rule ``stability`` is checked on the hull of the
    patch boxes; ``shape`` the ``(C, H, W)`` of a global pooling."""

    kind: str
    input: int
    V: Any
    gamma: IntVector | None
    beta: IntVector | None
    act: str
    skips: tuple[tuple[int, Any], ...] = ()
    geom: Geometry | None = None
    shape: tuple[int, int, int] | None = None
    residual: tuple[int, str, Any] | None = None
    hull: bool = False
