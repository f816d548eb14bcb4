"""Running an exported transformer (and the model it was certified from) under onnxruntime: its
logits and predictions against the float64 reference of the original transformer, on seeded or
all token sequences and on the user's sequences, with sizes and latencies.

Contract
--------
The certificate proves, exactly, that the rewritten transformer equals the original on every
sequence (real arithmetic). The export is its float image; this module measures the float:

* :func:`reference_logits` — the original transformer of the document (each slot its exact
  target rounded once to float64; LayerNorm, scores, mask and softmax in float64), batched over
  sequences of one length; the same semantics as :meth:`Transformer.evaluate_float
  <exactnorm.model.transformer.Transformer.evaluate_float>` (a test compares both), which is
  docs/certificate-format.md §11.1 in float64;
* :class:`TokenModel` — an ONNX model of token ids under onnxruntime: its logits for a batch of
  sequences (a model exported with a fixed batch runs that many at a time), the export's in its
  arithmetic dtype (named by its metadata, before a cast to the source's type);
* :func:`task_sequences` — every sequence of length ``L`` when there are at most ``N``, else
  ``N`` seeded ones (``numpy.random.default_rng(seed)``);
* :func:`verify_transformer_export` — for each set of sequences (``sequences`` from
  ``--verify``, ``data`` from the user's file) the export's and the source's largest logit
  error against the reference (absolute, and relative to the largest reference logit), the
  positions whose prediction (argmax) differs from the reference's, the predictions the export
  and the source share, and with labels the accuracy of each; the sizes and latencies (batch 1,
  median) of both models.

The reference is float64, not exact (softmax and square roots are not rational); its own
rounding is far below the differences measured here (about 1e-13 relative), and the report says
which reference was used.
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import numpy as np

from exactnorm.errors import InputError, require_extra
from exactnorm.model.transformer import Transformer
from exactnorm.outputs.onnx_interface import LOGITS_KEY

__all__ = ["reference_logits", "rewritten_logits", "graph_logits", "TokenModel",
           "task_sequences", "load_tokens", "load_token_labels", "verify_transformer_export",
           "study", "latency", "measurement_lines", "MAX_SEQUENCES"]

#: the most sequences one verification evaluates (the float64 reference is NumPy, batched)
MAX_SEQUENCES = 1_000_000
#: sequences per batch of the reference and of a model run
CHUNK = 512


def reference_logits(tr: Transformer, tokens: np.ndarray) -> np.ndarray:
    """float64 logits ``(m, n, w)`` of the original transformer on the sequences ``tokens``
    ``(m, n)``: every slot its exact target rounded once (module doc)."""
    floats = {name: [(np.array([[float(x) for x in row] for row in layer.weight.tolist()]),
                      np.array([float(x) for x in layer.bias]), layer.activation)
                     for layer in s.layers] for name, s in tr.slots.items()}

    def slot(name: str, X: np.ndarray) -> np.ndarray:
        for W, b, act in floats[name]:
            X = X @ W.T + b
            if act == "relu":
                X = np.maximum(X, 0.0)
        return X

    return graph_logits(tr, tokens, slot, np.float64)


def rewritten_logits(tr: Transformer, copies: dict[str, Any], tokens: np.ndarray,
                     dtype: Any) -> np.ndarray:
    """Logits ``(m, n, w)`` of the *rewritten* transformer with every parameter rounded to
    ``dtype`` and every operation in ``dtype``: each slot its frozen network's float copy
    (``copies[name]``, :func:`~exactnorm.outputs.data_eval.float_copy`) — what a float export
    computes, without onnxruntime."""
    from exactnorm.outputs.data_eval import run_float

    def slot(name: str, X: np.ndarray) -> np.ndarray:
        return run_float(copies[name], X, dtype).astype(dtype)

    return graph_logits(tr, tokens, slot, dtype)


def graph_logits(tr: Transformer, tokens: np.ndarray, slot: Any, dtype: Any) -> np.ndarray:
    """The graph of docs/certificate-format.md §11.1 in ``dtype`` on the sequences ``tokens``
    ``(m, n)``, each slot ``slot(name, rows)``; float64 logits ``(m, n, w)``."""
    t = np.asarray(tokens, dtype=np.int64)
    m, n = t.shape
    if n < 1 or (tr.positions and n > tr.positions):
        raise InputError(f"sequences of length {n}; this transformer reads 1 to "
                         f"{tr.positions or 'any number of'} tokens")
    if m and (t.min() < 0 or t.max() >= tr.vocabulary):
        raise InputError(f"tokens must lie in 0 … {tr.vocabulary - 1}")
    out = []
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, m, CHUNK):
            out.append(_graph_chunk(tr, t[start:start + CHUNK], slot, dtype))
    return np.concatenate(out) if out else np.zeros((0, n, tr.widths()[tr.output]))


def _layernorm(ln: Any, X: np.ndarray, dtype: Any) -> np.ndarray:
    g = np.array([float(x) for x in ln.gain], dtype=dtype)
    b = np.array([float(x) for x in ln.bias], dtype=dtype)
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    return (g * (X - mu) / np.sqrt(var + dtype(float(ln.epsilon))) + b).astype(dtype)


def _graph_chunk(tr: Transformer, t: np.ndarray, slot: Any, dtype: Any) -> np.ndarray:
    m, n = t.shape
    rows = np.arange(m * n)
    X = np.zeros((m * n, tr.vocabulary + tr.positions), dtype=dtype)
    X[rows, t.reshape(-1)] = 1
    if tr.positions:
        X[rows, tr.vocabulary + np.tile(np.arange(n), m)] = 1
    later = ~np.tril(np.ones((n, n), dtype=bool))
    vals: list[np.ndarray] = []
    for node in tr.nodes:
        if node.op == "input":
            vals.append(X)
        elif node.op == "slot":
            vals.append(slot(node.slot, vals[node.reads[0]]))
        elif node.op == "layernorm":
            vals.append(_layernorm(node.layernorm, vals[node.reads[0]], dtype))
        elif node.op == "add":
            vals.append(vals[node.reads[0]] + vals[node.reads[1]])
        else:
            x = vals[node.reads[0]]
            heads = []
            for h in node.heads:
                q, k, v = (slot(s, x).reshape(m, n, -1) for s in (h.q, h.k, h.v))
                scores = dtype(float(node.scale or 0)) * (q @ k.transpose(0, 2, 1))
                if node.mask == "causal":
                    scores = np.where(later, dtype(-np.inf), scores)
                elif isinstance(node.mask, tuple):
                    how, c = node.mask
                    value = dtype(float(c))
                    scores = np.where(later, value + scores if how == "add" else value, scores)
                scores = scores - scores.max(axis=2, keepdims=True)
                p = np.exp(scores)
                p /= p.sum(axis=2, keepdims=True)
                heads.append((p @ v).reshape(m * n, -1).astype(dtype))
            vals.append(np.concatenate(heads, axis=1))
    return np.asarray(vals[tr.output], dtype=np.float64).reshape(m, n, -1)


_NUMPY = {"tensor(int64)": np.int64, "tensor(int32)": np.int32}


class TokenModel:
    """An ONNX model of token ids under onnxruntime (module doc); ``what`` names it in errors."""

    def __init__(self, path: str | os.PathLike[str], what: str = "model",
                 logits: str | None = None) -> None:
        onnx = require_extra("onnx", "running an ONNX model")
        ort = require_extra("onnxruntime", "running an ONNX model")
        from exactnorm.model.onnx_common import load_model

        proto = load_model(path)
        meta = {p.key: p.value for p in proto.metadata_props}
        self.logits = logits or meta.get(LOGITS_KEY) or proto.graph.output[0].name
        self.outputs = [o.name for o in proto.graph.output]
        if self.logits not in self.outputs:
            proto.graph.output.append(onnx.helper.make_empty_tensor_value_info(self.logits))
        try:
            options = ort.SessionOptions()
            options.log_severity_level = 3
            self.session = ort.InferenceSession(proto.SerializeToString(), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own errors: a model it cannot run
            raise InputError(f"onnxruntime cannot load the {what} {path}: "
                             f"{str(exc).splitlines()[0][:200]}") from None
        inp = self.session.get_inputs()[0]
        if inp.type not in _NUMPY:
            raise InputError(f"the {what}'s input {inp.name!r} has type {inp.type}; token ids "
                             f"are int64 or int32")
        self.input_name, self.dtype, self.what = inp.name, _NUMPY[inp.type], what
        self.rank = len(inp.shape)
        self.length = inp.shape[-1] if isinstance(inp.shape[-1], int) else None
        self.batch = 1 if self.rank == 1 else (
            inp.shape[0] if isinstance(inp.shape[0], int) and inp.shape[0] > 0 else CHUNK)
        self.bytes = os.path.getsize(path)
        self.numbers = sum(int(np.prod(t.dims)) for t in proto.graph.initializer)

    def feed(self, tokens: np.ndarray) -> np.ndarray:
        """A batch of sequences ``(b, n)`` as the model's input."""
        A = np.asarray(tokens).astype(self.dtype)
        return A[0] if self.rank == 1 else A

    def run(self, tokens: np.ndarray) -> np.ndarray:
        """float64 logits ``(m, n, w)`` of the sequences ``tokens`` ``(m, n)``."""
        t = np.asarray(tokens)
        if self.length is not None and t.shape[1] != self.length:
            raise InputError(f"the {self.what} reads sequences of exactly {self.length} tokens, "
                             f"got {t.shape[1]}")
        parts = []
        for start in range(0, len(t), self.batch):
            chunk = t[start:start + self.batch]
            short = self.batch - len(chunk)
            if short and self.batch != CHUNK:  # a fixed batch: pad with copies, drop after
                chunk = np.concatenate([chunk, np.repeat(chunk[:1], short, axis=0)])
            try:
                (y,) = self.session.run([self.logits], {self.input_name: self.feed(chunk)})
            except Exception as exc:  # onnxruntime's errors: an input it does not take
                raise InputError(f"onnxruntime cannot run the {self.what}: "
                                 f"{str(exc).splitlines()[0][:200]}") from None
            y = np.asarray(y, dtype=np.float64).reshape(len(chunk), t.shape[1], -1)
            parts.append(y[:len(chunk) - short] if short and self.batch != CHUNK else y)
        return np.concatenate(parts) if parts else np.zeros((0, t.shape[1], 0))


def latency(model: TokenModel, tokens: np.ndarray, budget: float = 0.5) -> float:
    """Median seconds of one sequence (batch 1 where the model takes any batch) through the
    model: one warm-up run, then runs until ``budget`` seconds or 25 runs."""
    one = model.feed(np.asarray(tokens)[:1] if model.batch in (1, CHUNK)
                     else np.repeat(np.asarray(tokens)[:1], model.batch, axis=0))
    model.session.run([model.logits], {model.input_name: one})
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 25 and (time.perf_counter() - start < budget or len(times) < 3):
        t0 = time.perf_counter()
        model.session.run([model.logits], {model.input_name: one})
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def task_sequences(vocabulary: int, length: int, count: int, seed: int = 0
                   ) -> tuple[np.ndarray, bool]:
    """``(sequences, every)``: all ``vocabulary**length`` sequences when there are at most
    ``count`` (``every`` True), else ``count`` seeded ones."""
    if vocabulary ** length <= count:
        seqs = np.array(list(itertools.product(range(vocabulary), repeat=length)),
                        dtype=np.int64).reshape(-1, length)
        return seqs, True
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocabulary, size=(count, length), dtype=np.int64), False


def load_tokens(data: Any, tr: Transformer) -> np.ndarray:
    """Token sequences ``(m, n)`` from an ``.npy`` path or an array: integers in the
    vocabulary, ``1 ≤ n ≤ T`` (one sequence may be given as ``(n,)``)."""
    A = _array(data, "data")
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[1] < 1 or not len(A):
        raise InputError(f"data: token sequences are an (m, n) integer array, got shape "
                         f"{A.shape}", parameter="data")
    if A.dtype.kind not in "iu":
        raise InputError(f"data: token ids are integers, got dtype {A.dtype}", parameter="data")
    if len(A) > MAX_SEQUENCES:
        raise InputError(f"data: at most {MAX_SEQUENCES:,} sequences, got {len(A):,}",
                         parameter="data")
    if tr.positions and A.shape[1] > tr.positions:
        raise InputError(f"data: sequences of {A.shape[1]} tokens; the certificate covers "
                         f"lengths 1 … {tr.positions}", parameter="data")
    if A.min() < 0 or A.max() >= tr.vocabulary:
        raise InputError(f"data: token ids lie in 0 … {tr.vocabulary - 1}, found {A.min()} … "
                         f"{A.max()}", parameter="data")
    return A.astype(np.int64)


def load_token_labels(labels: Any, tokens: np.ndarray, classes: int) -> np.ndarray:
    """Labels of the sequences: ``(m,)`` (the prediction at the last position) or ``(m, n)``
    (at every position), integers below the number of logits."""
    y = _array(labels, "labels")
    if y.dtype.kind not in "iu" or y.shape not in ((len(tokens),), tokens.shape):
        raise InputError(f"labels: an integer array of shape ({len(tokens)},) (the last "
                         f"position) or {tokens.shape} (every position), got {y.dtype} "
                         f"{y.shape}", parameter="labels")
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise InputError(f"labels lie in 0 … {classes - 1}", parameter="labels")
    return y.astype(np.int64)


def _array(value: Any, what: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    from exactnorm.exact.files import require_file

    require_file(value, what, parameter=what)
    try:
        return np.asarray(np.load(os.fspath(value), allow_pickle=False))
    except (ValueError, OSError) as exc:
        raise InputError(f"{what}: {os.fspath(value)} is not a NumPy .npy array ({exc})",
                         parameter=what) from None


def _compare(logits: np.ndarray, ref: np.ndarray, labels: np.ndarray | None) -> dict[str, Any]:
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    err = float(np.max(np.abs(logits - ref))) if ref.size else 0.0
    pred, best = logits.argmax(-1), ref.argmax(-1)
    out: dict[str, Any] = {"max_abs": err, "max_rel": err / scale if scale else err,
                           "changed": int(np.sum(pred != best)),
                           "changed_last": int(np.sum(pred[:, -1] != best[:, -1]))}
    if labels is not None:
        out["accuracy"] = _accuracy(pred, labels)
    return out


def _accuracy(pred: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean((pred[:, -1] if labels.ndim == 1 else pred) == labels))


def study(tr: Transformer, export: TokenModel, source: TokenModel | None, tokens: np.ndarray,
          labels: np.ndarray | None = None) -> dict[str, Any]:
    """The export (and the source) on ``tokens`` against the reference (module doc)."""
    ref = reference_logits(tr, tokens)
    mine = export.run(tokens)
    out: dict[str, Any] = {"sequences": int(len(tokens)), "length": int(tokens.shape[1]),
                           "positions": int(tokens.size),
                           "export": _compare(mine, ref, labels)}
    if labels is not None:
        out["reference_accuracy"] = _accuracy(ref.argmax(-1), labels)
    if source is not None:
        theirs = source.run(tokens)
        out["source"] = _compare(theirs, ref, labels)
        out["agreement"] = {"equal": int(np.sum(mine.argmax(-1) == theirs.argmax(-1))),
                            "equal_last": int(np.sum(mine.argmax(-1)[:, -1]
                                                     == theirs.argmax(-1)[:, -1])),
                            "max_abs_diff": float(np.max(np.abs(mine - theirs)))
                            if mine.size else 0.0}
    return out


def verify_transformer_export(tr: Transformer, path: str | os.PathLike[str], sequences: int = 0,
                              *, source: str | os.PathLike[str] | None = None, data: Any = None,
                              labels: Any = None, seed: int = 0, timing: bool = True
                              ) -> dict[str, Any]:
    """The export at ``path`` (and the ``source`` model) on ``sequences`` seeded sequences (all
    of them when there are no more) and on ``data`` (with ``labels``): module doc.

    Returns
    -------
    dict
        ``transformer: True``; ``sequences`` and ``data`` studies (``sequences``, ``length``,
        ``positions``, ``every``; ``export`` and ``source`` with ``max_abs``, ``max_rel``,
        ``changed``, ``changed_last``, ``accuracy``; ``agreement``: ``equal``, ``equal_last``,
        ``max_abs_diff``); ``bytes``, ``numbers``, ``latency``, and ``source_bytes``,
        ``source_numbers``, ``source_latency``.
    """
    export = TokenModel(path, "export")
    src = TokenModel(source, "source model", logits=(tr.source or {}).get("output", {}).get(
        "name") if isinstance(tr.source, dict) else None) if source is not None else None
    result: dict[str, Any] = {"transformer": True, "bytes": export.bytes,
                              "numbers": export.numbers}
    length = export.length or (src.length if src is not None else None) or tr.positions or 8
    probe = None
    if sequences:
        tokens, every = task_sequences(tr.vocabulary, length, min(sequences, MAX_SEQUENCES),
                                       seed)
        result["sequences"] = dict(study(tr, export, src, tokens), every=every)
        probe = tokens
    if data is not None:
        tokens = load_tokens(data, tr)
        y = None if labels is None else load_token_labels(labels, tokens,
                                                          tr.widths()[tr.output])
        result["data"] = dict(study(tr, export, src, tokens, y),
                              data=str(data) if not isinstance(data, np.ndarray) else "array")
        probe = tokens
    if timing:
        if probe is None:
            probe = np.zeros((1, length), dtype=np.int64)
        result["latency"] = latency(export, probe)
        if src is not None:
            result["source_bytes"] = src.bytes
            result["source_numbers"] = src.numbers
            result["source_latency"] = latency(src, probe)
    return result


def _study_lines(name: str, s: dict[str, Any]) -> list[str]:
    m, pos = s["sequences"], s["positions"]
    e = s["export"]
    lines = [f"{name}: {m} sequences of {s['length']} tokens ({pos} positions)",
             f"  export vs float64 reference: max abs logit error {e['max_abs']:.3g} (rel "
             f"{e['max_rel']:.3g}); predictions changed at {e['changed']}/{pos} positions, "
             f"{e['changed_last']}/{m} last positions"
             + (f"; accuracy {e['accuracy']:.2%}" if "accuracy" in e else "")]
    if "reference_accuracy" in s:
        lines.append(f"  reference (the original transformer): accuracy "
                     f"{s['reference_accuracy']:.2%}")
    if "source" in s:
        r, a = s["source"], s["agreement"]
        lines.append(f"  source vs float64 reference: max abs logit error {r['max_abs']:.3g}; "
                     f"predictions changed at {r['changed']}/{pos} positions"
                     + (f"; accuracy {r['accuracy']:.2%}" if "accuracy" in r else ""))
        lines.append(f"  export vs source: equal predictions at {a['equal']}/{pos} positions "
                     f"({a['equal_last']}/{m} last positions), max abs logit difference "
                     f"{a['max_abs_diff']:.3g}")
    return lines


def measurement_lines(m: dict[str, Any], size: int) -> list[str]:
    """What a transformer export measured, one fact per line."""
    out: list[str] = []
    if "sequences" in m:
        s = m["sequences"]
        out += _study_lines("every sequence" if s.get("every") else "seeded sequences", s)
    if "data" in m:
        out += _study_lines(f"on {m['data']['data']}", m["data"])
    line = f"size {size:,} bytes"
    if "source_bytes" in m:
        line += f" (the source: {m['source_bytes']:,} bytes)"
    out.append(line)
    if "latency" in m:
        lat = f"latency {m['latency'] * 1000:.3g} ms per sequence (onnxruntime)"
        if "source_latency" in m:
            lat += f"; the source: {m['source_latency'] * 1000:.3g} ms"
        out.append(lat)
    return out
