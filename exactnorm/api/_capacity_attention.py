"""``capacity`` of a transformer: what re-tuning only its LayerNorms' ``γ, β`` reaches
(:mod:`exactnorm.analysis.capacity_attention`, docs/capacity.md "Attention").

:func:`capacity_transformer` reads the given transformer (and the target) from ONNX files (or
takes :class:`~exactnorm.model.transformer.Transformer` objects), answers every local question
with exact witnesses, and with ``out`` writes them as JSON — the bytes written are read back and
every witness in them is checked again (:func:`~exactnorm.analysis.capacity_attention.
check_witness`) before the file gets its name. Without a target it gives the profile: what each
LayerNorm can reach at most.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactnorm.analysis.capacity_attention import (
    TransformerCapacity,
    check_witness,
    profile,
    transformer_capacity,
)
from exactnorm.errors import InvariantError
from exactnorm.exact.files import atomic_write
from exactnorm.exact.rationals import strict_json_loads
from exactnorm.model.interop.transformer import transformer_from_onnx
from exactnorm.model.transformer import Transformer

__all__ = ["TransformerCapacityResult", "capacity_transformer", "CAPACITY_FORMAT"]

#: the JSON a transformer capacity writes
CAPACITY_FORMAT = "exactnorm.capacity.transformer"


@dataclass
class TransformerCapacityResult:
    """``word`` (``None`` without a target), the ``capacity`` (every question), the
    ``profile`` lines without a target, ``path`` and ``bytes`` written, ``seconds``."""

    word: str | None
    capacity: TransformerCapacity | None = None
    profile: list[str] = field(default_factory=list)
    path: Path | None = None
    bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return self.capacity.lines() if self.capacity is not None else list(self.profile)

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.word, "questions": [] if self.capacity is None else
                [q.as_dict() for q in self.capacity.questions], "profile": self.profile,
                "out": None if self.path is None else str(self.path), "bytes": self.bytes,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}


def _read(model: Any) -> Transformer:
    return model if isinstance(model, Transformer) else transformer_from_onnx(model)


def capacity_transformer(given: Any, target: Any = None, *,
                         out: str | os.PathLike[str] | None = None,
                         progress: Any = None) -> TransformerCapacityResult:
    """Every local question of re-tuning ``given``'s LayerNorms towards ``target`` (module
    doc); ``out`` writes the answers and witnesses as JSON (checked as written)."""
    t0 = time.perf_counter()
    tr = _read(given)
    seconds = {"read": 0.0}
    if target is None:
        seconds["read"] = time.perf_counter() - t0
        return TransformerCapacityResult(None, profile=profile(tr), seconds=seconds)
    tt = _read(target)
    seconds["read"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    cap = transformer_capacity(tr, tt, progress=progress)
    seconds["decide"] = time.perf_counter() - t1
    result = TransformerCapacityResult(cap.word, cap, seconds=seconds)
    if out is not None:
        t2 = time.perf_counter()
        doc = {"format": CAPACITY_FORMAT, "version": 1, **result.as_dict()}
        doc.pop("seconds")
        doc.pop("out")
        doc.pop("bytes")
        result.bytes = _write_checked(doc, out, tr, tt)
        result.path = Path(out)
        seconds["write and check"] = time.perf_counter() - t2
    return result


def _text(doc: dict[str, Any]) -> str:
    """One line per top-level key and per question (sorted keys, strict JSON)."""
    def dump(v: Any) -> str:
        return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    lines = []
    for k in sorted(doc):
        if k == "questions":
            body = ",\n".join(f"  {dump(q)}" for q in doc[k])
            lines.append(f' "questions": [\n{body}\n ]')
        else:
            lines.append(f" {dump(k)}: {dump(doc[k])}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _write_checked(doc: dict[str, Any], out: str | os.PathLike[str], given: Transformer,
                   target: Transformer) -> int:
    """Write ``doc`` to a hidden file beside ``out``, read the bytes back, check every witness
    in them, then rename (nothing is kept when one fails: a bug, not a verdict)."""
    dest = Path(out)
    tmp = dest.with_name(f".{dest.name}.unchecked")
    try:
        size = atomic_write(tmp, _text(doc))
        written = strict_json_loads(tmp.read_bytes(), what=str(tmp))
        for q in written["questions"]:
            if q["witness"] is not None and not check_witness(given, target, q["witness"]):
                raise InvariantError(f"the witness of {q['kind']} {q['name']} does not hold as "
                                     f"written; nothing was kept")
        os.replace(tmp, dest)
        return size
    finally:
        if tmp.exists():
            tmp.unlink()
