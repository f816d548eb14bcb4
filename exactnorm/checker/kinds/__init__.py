"""The checker's layer kinds: one standard-library module per kind, each holding the rules of
:class:`.base.Kind` (reading its fields, the segment rule, the stability family, the checkpoint
identity, the next box), and :data:`RULES`, the closed registry the kind-free reader
(:mod:`..document`) and walk (:mod:`..walk`) call. A new kind is one module here and one line
below; ``tests/kinds/test_checker_kinds.py`` fails unless the keys are ``LAYER_KINDS``.
"""

from __future__ import annotations

from .avgpool import AvgPool
from .base import Kind
from .conv import Conv
from .dense import Dense
from .globalavgpool import GlobalAvgPool

__all__ = ["RULES", "Kind"]

#: the rules of every layer kind, under its word of ``vocabulary.LAYER_KINDS``
RULES: dict[str, Kind] = {rules.name: rules for rules in (
    Dense(),
    Conv(),
    AvgPool(),
    GlobalAvgPool(),
)}
