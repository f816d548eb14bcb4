"""The float64 ``.npz`` export (not certified) and its numpy forward pass, for every layer kind.

Per frozen layer ``j``: ``input{j}`` (the node read), ``skip{j}_{s}`` for a skip from node ``s``,
a checkpoint's residual (added before the activation) as ``residual_from{j}`` (its node) and
``residual{j}`` (per row the node's entry it copies, −1 for a zero row),
and the arrays of its kind's exporter (:data:`~exactnorm.outputs.export.kinds.EXPORTERS`): a
dense layer ``V{j}`` (``(out, in)``), ``gamma{j}`` = γ̂, ``beta{j}`` = β̂, ``running_mean{j}`` = μ,
``running_var{j}`` = s² − eps; a convolution the same with ``V{j}`` its ``[c, C, kh, kw]``
kernel and ``geometry{j}``; a pooling ``geometry{j}`` only. Plus ``kinds``, ``activations``,
``checkpoints``, ``eps`` and ``WARNING_floats_not_certified``.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from exactnorm.exact.files import atomic_write_bytes, npz_bytes
from exactnorm.model.operators import dense
from exactnorm.model.routes import Route
from exactnorm.outputs.export.batchnorm import DEFAULT_EPS, FLOAT_WARNING, float_layers
from exactnorm.outputs.export.kinds import EXPORTERS
from exactnorm.outputs.stages import ProgressHook

__all__ = ["export_npz", "npz_bytes_of", "evaluate_npz_export"]


def npz_bytes_of(source: Any, mean: Any, scale: Any, eps: float,
                 progress: ProgressHook | None = None) -> bytes:
    """The bytes of the npz export of a certificate document (module doc)."""
    net, stats = float_layers(source, mean, scale, eps, progress=progress)
    arrays: dict[str, np.ndarray] = {}
    for j, (layer, p) in enumerate(zip(net.layers, stats), 1):
        for name, value in EXPORTERS[layer.kind].arrays(layer, p).items():
            arrays[f"{name}{j}"] = value
        arrays[f"input{j}"] = np.array(layer.input, dtype=np.int64)
        for s, P in layer.skips:
            arrays[f"skip{j}_{s}"] = P
        r = net.residual(j)
        if r is not None:  # a route: the node's entry each row copies, −1 for a zero row
            route = r.weight
            assert isinstance(route, Route)
            arrays[f"residual_from{j}"] = np.array(r.source, dtype=np.int64)
            arrays[f"residual{j}"] = np.array([-1 if c is None else c for c in route.picks],
                                              dtype=np.int64)
    arrays["kinds"] = np.array([layer.kind for layer in net.layers])
    arrays["activations"] = np.array([layer.activation for layer in net.layers])
    arrays["checkpoints"] = np.array(net.checkpoints, dtype=np.int64)
    arrays["eps"] = np.array(eps, dtype=np.float64)
    arrays["WARNING_floats_not_certified"] = np.array([FLOAT_WARNING])
    return npz_bytes(arrays)  # fixed zip metadata: same certificate, same bytes


def export_npz(cert_doc: dict[str, Any], path: str | os.PathLike[str], mean: Any = 0,
               scale: Any = 1, *, eps: float = DEFAULT_EPS) -> str:
    """Write the float64 arrays (atomic) and return the not-certified warning. Refuses
    ``s² ≤ eps`` (the variance would not be positive)."""
    data = npz_bytes_of(cert_doc, mean, scale, eps)
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return FLOAT_WARNING


def evaluate_npz_export(path: str | os.PathLike[str], X: np.ndarray) -> np.ndarray:
    """float64 forward pass of an :func:`export_npz` file, as a framework's BatchNorm in eval mode
    computes it (rounded; for comparison only).

    Parameters
    ----------
    path
        An :func:`export_npz` file.
    X
        Inputs, ``(n, d_0)``.

    Returns
    -------
    numpy.ndarray
        ``(n, d_L)`` float64 outputs.
    """
    with np.load(path, allow_pickle=False) as z:
        acts = [str(a) for a in z["activations"]]
        # an export written before other kinds existed has no ``kinds``: every layer is dense
        kinds = [str(k) for k in z["kinds"]] if "kinds" in z.files else [dense.NAME] * len(acts)
        eps = float(z["eps"])
        per_layer: dict[int, dict[str, np.ndarray]] = {}
        for key in z.files:
            m = re.fullmatch(r"([A-Za-z_]+?)(\d+)", key)
            if m is not None:
                per_layer.setdefault(int(m.group(2)), {})[m.group(1)] = z[key]
        nodes = [np.asarray(X, dtype=np.float64)]
        for j in range(1, len(acts) + 1):
            arrays = per_layer.get(j, {})
            u = EXPORTERS[kinds[j - 1]].forward(arrays, nodes[int(arrays["input"])], eps)
            if "residual" in arrays:  # added before the activation
                src = nodes[int(arrays["residual_from"])]
                padded = np.concatenate([src, np.zeros((len(src), 1))], axis=1)
                u = u + padded[:, np.asarray(arrays["residual"], dtype=np.int64)]
            h = np.maximum(u, 0.0) if acts[j - 1] == "relu" else u
            for key in z.files:
                if key.startswith(f"skip{j}_"):
                    h = h + nodes[int(key.split("_")[1])] @ z[key].T
            nodes.append(h)
    return nodes[-1]
