"""The readers of the layer kinds, one module each, in one closed registry.

``READERS`` maps the certificate's ``kind`` word to the module that reads layers of that kind
from model files: ``ONNX_OPS`` (``(domain, op type) → handler(chain, node, attributes,
constants)``) for the ONNX walker (:mod:`exactnorm.model.interop.onnx`) and ``TORCH_TOKENS``
(``token → (handler(chain, entry), has parameters)``) for the state-dict reader
(:mod:`exactnorm.model.interop.torch`). It is built from explicit imports, and
``tests/kinds/test_kind_contract.py`` demands that its keys equal the format's ``LAYER_KINDS``;
an operator or token claimed by two kinds is refused here, at import.

>>> sorted(READERS), sorted(op for _, op in KIND_ONNX_OPS)[:3]
(['avgpool', 'conv', 'dense', 'globalavgpool'], ['AveragePool', 'Conv', 'Gemm'])
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from exactnorm.model.interop.kinds import avgpool, conv, dense, globalavgpool

__all__ = ["READERS", "KIND_ONNX_OPS", "KIND_TORCH_TOKENS"]

#: kind word → its reader module (ONNX_OPS, TORCH_TOKENS)
READERS: dict[str, ModuleType] = {
    dense.NAME: dense,
    conv.NAME: conv,
    avgpool.NAME: avgpool,
    globalavgpool.NAME: globalavgpool,
}


def _merged(table: str) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for kind, module in READERS.items():
        for key, handler in getattr(module, table).items():
            if key in out:
                raise RuntimeError(f"{key!r} is claimed by two kinds ({kind} and another)")
            out[key] = handler
    return out


#: (domain, op type) → handler of every kind's ONNX operators
KIND_ONNX_OPS: dict[tuple[str, str], Callable[..., None]] = _merged("ONNX_OPS")
#: architecture token → (handler, has parameters) of every kind
KIND_TORCH_TOKENS: dict[str, tuple[Callable[..., None], bool]] = _merged("TORCH_TOKENS")
