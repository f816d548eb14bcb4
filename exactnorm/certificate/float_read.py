"""The float view of a certificate: its frozen network as a
:class:`~exactnorm.model.network.FloatNetwork` (every frozen entry float64, γ and β exact), read
layer by layer by each kind's codec (:meth:`Codec.float_layer
<exactnorm.certificate.kinds.base.Codec.float_layer>`) without building any exact matrix
(:mod:`~exactnorm.certificate.arrays`). The frame here is kind-free; it parses, it does not check
(the checker decides validity).

>>> from exactnorm.constructions.plan import construct
>>> from exactnorm.certificate.write import certificate_document
>>> from exactnorm.model.targets import demo_target
>>> net = float_network(certificate_document(construct(demo_target(), seed=0)))
>>> net.depth, net.checkpoints, net.layers[0].kind
(6, (2, 4, 6), 'dense')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exactnorm.certificate.compact import route_of
from exactnorm.certificate.kinds import CODECS, kind_of
from exactnorm.errors import ExactnormError, InputError
from exactnorm.model.network import FloatNetwork

__all__ = ["float_network"]


def float_network(doc: dict[str, Any], *,
                  progress: Callable[[int, int], None] | None = None) -> FloatNetwork:
    """The frozen network of a certificate document as a float copy (module doc);
    ``progress(done, total)`` is told the layers read so far."""
    if not isinstance(doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    try:
        net = doc["network"]
        layers = []
        residuals = []
        for j, entry in enumerate(net["layers"], 1):
            if progress is not None and j > 1:
                progress(j - 1, len(net["layers"]))
            layers.append(CODECS[kind_of(entry)].float_layer(entry, j))
            if "residual" in entry:  # a checkpoint's skip before its activation: a route
                residuals.append((j, route_of(entry["residual"], f"frozen layer {j} residual")))
        if progress is not None:
            progress(len(layers), len(layers))
        lower = doc["domain"]["lower"]
        d0 = len(lower["num"]) if isinstance(lower, dict) and "num" in lower else len(lower)
        return FloatNetwork(d0, tuple(layers), tuple(int(c) for c in net["checkpoints"]),
                            tuple(residuals))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise InputError(f"certificate network section is malformed: {exc!r}"[:300]) from None
