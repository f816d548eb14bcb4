"""Progress of a verb made of several steps (report, export) as one ``hook(done, total)``.

Contract: a verb declares its stages and their sizes once (``check`` = the frozen layers, ``plots``
= 3 …); each stage reports ``(done, size)`` of its own, and the caller's hook sees the sum over the
stages before it plus ``done``, out of the sum of all sizes. So a bar fills once, monotonically,
whatever the stages are, and a plain two-argument callback (the API's ``progress``) needs nothing
more. ``None`` as the hook makes every call a no-op.

>>> seen = []
>>> s = Stages(lambda d, t: seen.append((d, t)), check=2, plots=1)
>>> s.hook("check")(1, 2); s.finish("check"); s.finish("plots")
>>> seen
[(1, 3), (2, 3), (3, 3)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ProgressHook", "Stages", "declared_depth", "refuse_invalid"]

ProgressHook = Callable[[int, int], None]


class Stages:
    """Named stages of known sizes, reported through one hook (see the module docstring)."""

    def __init__(self, hook: ProgressHook | None, **sizes: int) -> None:
        self._hook = hook
        self._sizes = {name: max(0, int(n)) for name, n in sizes.items()}
        self.total = sum(self._sizes.values())
        offset = 0
        self._offsets = {}
        for name, n in self._sizes.items():
            self._offsets[name] = offset
            offset += n

    def hook(self, name: str) -> ProgressHook | None:
        """The ``(done, size)`` hook of one stage, or ``None`` when nobody listens."""
        if self._hook is None:
            return None
        start, size, outer = self._offsets[name], self._sizes[name], self._hook

        def stage(done: int, _total: int) -> None:
            outer(start + min(max(done, 0), size), self.total)
        return stage

    def finish(self, name: str) -> None:
        """Mark a stage complete (a step of size 1, or one that was skipped)."""
        if self._hook is not None:
            self._hook(self._offsets[name] + self._sizes[name], self.total)


def declared_depth(doc: Any) -> int:
    """The number of frozen layers a certificate document declares, for sizing the stages
    before anything is read (0 when the document is malformed: its reader says why later).

    >>> declared_depth({"network": {"layers": [{}, {}]}}), declared_depth([])
    (2, 0)
    """
    network = doc.get("network") if isinstance(doc, dict) else None
    layers = network.get("layers") if isinstance(network, dict) else None
    return len(layers) if isinstance(layers, list) else 0


def refuse_invalid(verdict: Any) -> None:
    """Nothing uncertified leaves: an output verb (export, report) stops at an INVALID verdict
    with the checker's reason (exit code 1 on the command line)."""
    from exactnorm.errors import InvalidCertificateError

    if verdict is not None and not verdict.ok:
        raise InvalidCertificateError(
            f"the certificate is INVALID (rule {verdict.rule}): {verdict.message}; nothing was "
            f"written (--no-check, or check=False in Python, skips the check)")
