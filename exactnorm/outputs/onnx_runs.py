"""Running exported (and source) ONNX models under onnxruntime: the measured error of an export
against the exact target at points of the box and on the user's data, the comparison with the
source model it replaces, and its size and latency.

Contract
--------
The certificate is exact; an export is its float image. :func:`verify_export` feeds the same
inputs, in the model's own input dtype, to the export (and to the source model when given) and
compares:

* the export's logits in its arithmetic dtype (named by the model's metadata,
  :data:`~exactnorm.outputs.onnx_interface.LOGITS_KEY`) with the exact target evaluated at the
  inputs as fed (each a dyadic rational), so the error is the model's own arithmetic;
* the source's logits (``provenance.source``'s output name) with the same exact values: the
  source's own float error, for scale;
* every output the two models share (labels, probabilities, probability maps): equal labels
  counted, numbers by their largest difference;
* on data with labels, the accuracy of the exact target (the source's function, exactly) and of
  each model.

:func:`latency` is the median wall time of one sample through a session (batch 1).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from exactnorm.errors import InputError, require_extra
from exactnorm.outputs.data_eval import CHUNK, compare, exact_outputs, inside_box
from exactnorm.outputs.onnx_interface import LOGITS_KEY

__all__ = ["Model", "verify_export", "latency", "exact_target", "source_error"]

_NUMPY = {"tensor(float)": np.float32, "tensor(double)": np.float64,
          "tensor(float16)": np.float16, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
          "tensor(int32)": np.int32, "tensor(int64)": np.int64}


def exact_target(doc: dict[str, Any]) -> Any:
    """The exact target of a certificate document (dense or convolutional), nothing else read."""
    from exactnorm.certificate import read_target

    return read_target(doc)


class Model:
    """An ONNX model under onnxruntime, with extra tensors exposed as outputs (``logits``)."""

    def __init__(self, path: str | os.PathLike[str], logits: str | None = None,
                 what: str = "model") -> None:
        onnx = require_extra("onnx", "running an ONNX model")
        ort = require_extra("onnxruntime", "running an ONNX model")
        from exactnorm.model.onnx_common import load_model

        proto = load_model(path)
        meta = {p.key: p.value for p in proto.metadata_props}
        self.logits = logits or meta.get(LOGITS_KEY) or proto.graph.output[0].name
        self.outputs = [o.name for o in proto.graph.output]
        if self.logits not in self.outputs:
            produced = {o for node in proto.graph.node for o in node.output}
            if self.logits not in produced:
                raise InputError(f"the {what} {path} has no tensor {self.logits!r} (the "
                                 f"certified logits): its outputs are {self.outputs}")
            info = onnx.helper.make_empty_tensor_value_info(self.logits)
            proto.graph.output.append(info)
        try:
            options = ort.SessionOptions()
            options.log_severity_level = 3  # errors only: no warnings on the user's terminal
            self.session = ort.InferenceSession(proto.SerializeToString(), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own errors: a model it cannot run
            raise InputError(f"onnxruntime cannot load the {what} {path}: "
                             f"{_words(str(exc))}") from None
        inp = self.session.get_inputs()[0]
        self.input_name, self.input_type = inp.name, inp.type
        if inp.type not in _NUMPY:
            raise InputError(f"the {what}'s input {inp.name!r} has type {inp.type}")
        self.dtype = _NUMPY[inp.type]
        dims = inp.shape[1:]
        self.shape = [int(d) for d in dims] if all(isinstance(d, int) for d in dims) else None
        # a model exported with a fixed batch size (torch's default: 1) runs that many at once
        self.batch = inp.shape[0] if isinstance(inp.shape[0], int) and inp.shape[0] > 0 \
            else _batch_for(onnx, proto)
        self.what = what
        self.bytes = os.path.getsize(path)
        #: the numbers the model stores (its initializers' entries): what makes it large
        self.numbers = sum(int(np.prod(t.dims)) for t in proto.graph.initializer)

    def feed(self, X: np.ndarray) -> np.ndarray:
        """Samples ``(n, d_0)`` in the model's input dtype and shape."""
        A = np.asarray(X).astype(self.dtype)
        return A.reshape(len(A), *self.shape) if self.shape is not None else A

    def run(self, X: np.ndarray, tick: Callable[[int], None] | None = None
            ) -> dict[str, Any]:
        """Every output (and the logits) at the rows of ``X``, in batches of :attr:`batch`;
        ``tick(done)`` counts the samples run."""
        names = self.outputs + ([self.logits] if self.logits not in self.outputs else [])
        parts: dict[str, list[Any]] = {n: [] for n in names}
        for start in range(0, len(X), self.batch):
            try:
                values = self.session.run(names, {self.input_name:
                                                  self.feed(X[start:start + self.batch])})
            except Exception as exc:  # onnxruntime's errors: an input it does not take
                if len(X[start:start + self.batch]) != self.batch and self.batch != CHUNK:
                    raise InputError(f"the {self.what} takes batches of exactly {self.batch} "
                                     f"samples") from None
                raise InputError(f"onnxruntime cannot run the {self.what}: "
                                 f"{_words(str(exc))}") from None
            for n, v in zip(names, values):
                parts[n].append(v)
            if tick is not None:
                tick(min(start + self.batch, len(X)))
        return {n: _joined(v) for n, v in parts.items()}


def _words(text: str, limit: int = 300) -> str:
    """The first line of a foreign message, at most ``limit`` characters, cut between words.

    >>> _words("Graph output (y) does not exist in the graph.", 20)
    'Graph output (y) …'
    """
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"


def source_error(doc: dict[str, Any], source: str | os.PathLike[str], points: int = 8,
                 seed: int = 0) -> tuple[float, float]:
    """The source model's logits against the exact target at ``points`` seeded points of the
    box: ``(largest absolute difference, largest absolute exact output)`` (``inf`` when its
    logits have another shape). A model the certificate was made from differs by its float
    rounding only."""
    from exactnorm.outputs.floatnet import box_points
    from exactnorm.outputs.onnx_interface import interface_of

    target = exact_target(doc)
    face = interface_of(doc, len(target.lower))
    src = Model(source, logits=face.logits_name if face.recorded else None, what="source model")
    xs = box_points(target.lower, target.upper, points, seed)
    fed = np.array([[int(v.p) / int(v.q) for v in x] for x in xs]).astype(src.dtype) \
        .astype(np.float64)
    exact, _ = exact_outputs(target, fed, None)
    theirs = np.asarray(src.run(fed)[src.logits], dtype=np.float64)
    if theirs.size != exact.size:
        return float("inf"), float(np.max(np.abs(exact)))
    return (float(np.max(np.abs(theirs.reshape(exact.shape) - exact))),
            float(np.max(np.abs(exact))))


def _batch_for(onnx: Any, proto: Any) -> int:
    """Samples per run of a model with a free batch dimension: :data:`CHUNK`, fewer when a
    batch of its widest tensor (from ONNX shape inference; ten values per entry allow for a
    convolution's patches) would pass ``FLOAT_BATCH_BYTES``. An export of a ResNet holds
    about 2·10⁵ values per sample in a tensor: 256 samples took 3.4 GB under onnxruntime."""
    from exactnorm.outputs.data_eval import FLOAT_BATCH_BYTES

    try:
        graph = onnx.shape_inference.infer_shapes(proto).graph
    except Exception:  # noqa: BLE001 - a model shape inference cannot follow keeps CHUNK
        return CHUNK
    widest = 1
    for info in [*graph.value_info, *graph.output]:
        dims = info.type.tensor_type.shape.dim[1:]
        if dims and all(d.HasField("dim_value") for d in dims):
            widest = max(widest, int(np.prod([d.dim_value for d in dims])))
    return max(1, min(CHUNK, FLOAT_BATCH_BYTES // (10 * 8 * widest)))


def _joined(parts: list[Any]) -> Any:
    if parts and isinstance(parts[0], list):  # a sequence of maps (ZipMap): keys in order
        rows = [row for p in parts for row in p]
        keys = sorted(rows[0]) if rows else []
        return np.array([[row[k] for k in keys] for row in rows], dtype=np.float64)
    return np.concatenate([np.asarray(p) for p in parts]) if parts else np.zeros(0)


def latency(model: Model, X: np.ndarray, budget: float = 0.5) -> float:
    """Median seconds of one sample (batch 1) through the model: one warm-up run, then runs
    until ``budget`` seconds or 25 runs."""
    one = model.feed(X[:1])
    model.session.run(None, {model.input_name: one})
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 25 and (time.perf_counter() - start < budget or len(times) < 3):
        t0 = time.perf_counter()
        model.session.run(None, {model.input_name: one})
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _agreement(a: dict[str, Any], b: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Shared outputs of two runs: labels counted equal, numbers by their largest difference."""
    out: dict[str, Any] = {}
    for name in names:
        x, y = np.asarray(a[name]), np.asarray(b[name])
        if x.shape != y.shape:
            out[name] = {"kind": "shape", "shapes": [list(x.shape), list(y.shape)]}
        elif x.dtype.kind in "fc":
            out[name] = {"kind": "values", "max_abs_diff": float(np.max(np.abs(
                x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0}
        else:
            out[name] = {"kind": "labels", "equal": int(np.sum(x == y)), "of": int(len(x))}
    return out


def _study(export: Model, source: Model | None, target: Any, X: np.ndarray,
           labels: np.ndarray | None, progress: Any) -> dict[str, Any]:
    """Both models at the rows of ``X`` (fed in the export's input dtype) against the exact
    target at those fed values; ``progress(done, n)`` counts half a sample for each of the
    exact evaluation and the export's run."""
    fed = np.asarray(X).astype(export.dtype).astype(np.float64)
    n = len(fed)
    # one after the other: each already keeps both cores busy (BLAS, onnxruntime's threads),
    # and side by side they ran slower than in turn
    exact, best = exact_outputs(target, fed, None if progress is None
                                else lambda done, _total: progress(done // 2, n))
    mine = export.run(fed, None if progress is None else lambda done: progress((n + done) // 2, n))
    out: dict[str, Any] = {"samples": len(fed),
                           "outside": int(np.sum(~inside_box(fed, target.lower, target.upper))),
                           "export": compare(np.asarray(mine[export.logits], dtype=np.float64)
                                             .reshape(len(fed), -1), exact, best, labels)}
    if labels is not None:
        out["exact_accuracy"] = float(np.mean(best == labels))
    if source is not None:
        theirs = source.run(fed)
        out["source"] = compare(np.asarray(theirs[source.logits], dtype=np.float64)
                                .reshape(len(fed), -1), exact, best, labels)
        out["outputs"] = _agreement(mine, theirs,
                                    [n for n in export.outputs if n in source.outputs])
    for part in ("export", "source"):
        if part in out:
            out[part].pop("abs", None)
    return out


def verify_export(doc: dict[str, Any], path: str | os.PathLike[str], points: int = 0, *,
                  source: str | os.PathLike[str] | None = None, data: Any = None,
                  labels: Any = None, seed: int = 0, timing: bool = True,
                  progress: Any = None) -> dict[str, Any]:
    """The export at ``path`` (and the ``source`` model) at ``points`` seeded points of the box
    and on ``data`` (``.npy`` path or array, optional integer ``labels``), against the exact
    target (module doc); with ``timing``, sizes and latencies.

    Returns
    -------
    dict
        ``box`` and ``data`` studies (``samples``, ``outside``, ``export`` and ``source`` with
        ``max_abs``, ``max_rel``, ``changed``, ``accuracy``; ``outputs`` shared by both),
        ``bytes``, ``latency`` and ``source_bytes``, ``source_latency``.
    """
    from exactnorm.outputs.data_eval import load_data, load_labels
    from exactnorm.outputs.floatnet import box_points

    target = exact_target(doc)
    export = Model(path, what="export")
    src = None
    if source is not None:
        from exactnorm.outputs.onnx_interface import interface_of

        face = interface_of(doc, len(target.lower))
        src = Model(source, logits=face.logits_name if face.recorded else None,
                    what="source model")
        if src.input_name != export.input_name:
            raise InputError(f"the source model's input is {src.input_name!r}, the export's "
                             f"{export.input_name!r}: the certificate was not made from this "
                             f"source", parameter="source")
    result: dict[str, Any] = {"bytes": export.bytes, "numbers": export.numbers}
    d0 = len(target.lower)
    n_data = 0
    X_data = y = None
    if data is not None:
        X_data = load_data(data, d0)
        n_data = len(X_data)
        y = None if labels is None else (labels if isinstance(labels, np.ndarray)
                                         else load_labels(labels, n_data))
    total = points + n_data

    def part(offset: int) -> Any:
        return None if progress is None else (lambda d, t: progress(offset + d, total))

    if points:
        xs = box_points(target.lower, target.upper, points, seed)
        X = np.array([[int(v.p) / int(v.q) for v in x] for x in xs])
        result["box"] = _study(export, src, target, X, None, part(0))
    if X_data is not None:
        result["data"] = _study(export, src, target, X_data, y, part(points))
        result["data"]["data"] = str(data) if not isinstance(data, np.ndarray) else "array"
    if timing:
        probe = X_data if X_data is not None else np.array(
            [[int(v.p) / int(v.q) for v in target.lower]])
        result["latency"] = latency(export, probe)
        if src is not None:
            result["source_bytes"] = src.bytes
            result["source_numbers"] = src.numbers
            result["source_latency"] = latency(src, probe)
    return result

