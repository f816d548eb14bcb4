"""The PyTorch export (floats, not certified): a state dict for one module layout of every layer
kind, the module itself (needs torch), and a numpy forward pass of the state dict.

PyTorch module layout (``exactnorm.frozen_bn`` v1)
--------------------------------------------------
``ExactnormFrozenNet(blocks=nn.ModuleList([Block_1, …, Block_L]))``; every node is a flat
``(N, d)`` tensor (an image is its C-order vector), and block ``j`` has its kind's modules
(:data:`~exactnorm.outputs.export.kinds.EXPORTERS`) and::

    act    = nn.ReLU() or nn.Identity()
    skips  = nn.ModuleDict({"<s>": nn.Linear(width(s), width_j, bias=False), …})   # P_{j,s}
    buffer input_node (int64 scalar)
    buffers residual_from (int64 scalar), residual_index (int64, one per entry)   # checkpoints

A dense block has ``linear = nn.Linear(width(input_node), width_j, bias=False)`` (``V_j``,
frozen) and ``norm = nn.BatchNorm1d(width_j, eps=eps)`` (weight γ̂, bias β̂, running_mean μ,
running_var s² − eps; eval mode); a convolution ``conv = nn.Conv2d(C, c, (kh, kw), stride,
padding, dilation, bias=False)`` and ``norm = nn.BatchNorm2d(c, eps=eps)``, reading its input
reshaped to ``(N, C, H, W)``; an average pooling ``pool = nn.AvgPool2d``, a global one ``pool =
nn.AdaptiveAvgPool2d(1)``; windowed blocks keep their shape in the int64 buffer ``geometry``.
``forward(x)``: ``nodes = [x]``; per block ``h = act(pre(nodes[input_node]) + R) + Σ_s
skips[s](nodes[s])`` with ``R`` a checkpoint's residual (entry ``r`` is entry
``residual_index[r]`` of ``nodes[residual_from]``, 0 for −1; absent elsewhere),
``nodes.append(h)``; return ``nodes[-1]``. State-dict keys:
``blocks.{j-1}.linear.weight``, ``blocks.{j-1}.norm.{weight,bias,running_mean,running_var,
num_batches_tracked}``, ``blocks.{j-1}.conv.weight``, ``blocks.{j-1}.geometry``,
``blocks.{j-1}.skips.{s}.weight``, ``blocks.{j-1}.input_node``. Only normalization parameters
would ever be trained; :func:`torch_module` sets ``requires_grad = False`` on the frozen maps.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from exactnorm.errors import InputError, require_extra
from exactnorm.model.operators import dense
from exactnorm.outputs.export.batchnorm import DEFAULT_EPS, FLOAT_DTYPES, float_layers
from exactnorm.outputs.export.kinds import EXPORTERS
from exactnorm.outputs.stages import ProgressHook

__all__ = ["torch_state_dict", "torch_module", "evaluate_state_dict", "torch_bytes"]


def _picks(residual: Any) -> np.ndarray:
    """A residual's route as the column each row copies, −1 for a zero row."""
    return np.array([-1 if c is None else c for c in residual.weight.picks], dtype=np.int64)


def torch_state_dict(cert_doc: Any, *, mean: Any = 0, scale: Any = 1,
                     eps: float = DEFAULT_EPS,
                     progress: ProgressHook | None = None) -> dict[str, np.ndarray]:
    """The state dict of the documented PyTorch layout as numpy arrays (no torch needed).

    Parameters
    ----------
    cert_doc
        A certificate document (or a construction, a frozen network).
    mean, scale, eps
        Frozen BatchNorm statistics (``running_var = s² − eps``).

    Returns
    -------
    dict
        ``blocks.{k}.…`` keys of the module docstring; ``torch.from_numpy`` of each value loads
        into :func:`torch_module` (``strict=True``).
    """
    net, stats = float_layers(cert_doc, mean, scale, eps, progress=progress)
    state: dict[str, np.ndarray] = {}
    for k, (layer, p) in enumerate(zip(net.layers, stats)):
        pre = f"blocks.{k}."
        exporter = EXPORTERS[layer.kind]
        for name, value in exporter.arrays(layer, p).items():
            state[pre + exporter.torch_keys[name]] = value
        if p is not None:
            state[pre + "norm.num_batches_tracked"] = np.array(0, dtype=np.int64)
        for source, P in layer.skips:
            state[pre + f"skips.{source}.weight"] = P
        state[pre + "input_node"] = np.array(layer.input, dtype=np.int64)
        r = net.residual(k + 1)
        if r is not None:
            state[pre + "residual_from"] = np.array(r.source, dtype=np.int64)
            state[pre + "residual_index"] = _picks(r)
    return state


def evaluate_state_dict(state: dict[str, Any], activations: Sequence[str], X: np.ndarray, *,
                        eps: float = DEFAULT_EPS,
                        kinds: Sequence[str] | None = None) -> np.ndarray:
    """float64 forward pass of :func:`torch_state_dict` arrays (the documented layout, in numpy).

    Parameters
    ----------
    state
        The state dict (numpy arrays or tensors converted with ``.numpy()``).
    activations
        ``relu``/``identity`` per block (the state dict has no activations).
    X
        Inputs ``(n, d_0)``.
    eps
        The BatchNorm ``eps`` the state dict was written with.
    kinds
        The layer kind of each block (default: every block dense); a state dict does not name
        them.

    Returns
    -------
    numpy.ndarray
        Outputs ``(n, d_L)``; rounded, for comparison only.
    """
    kinds = list(kinds) if kinds is not None else [dense.NAME] * len(activations)
    nodes = [np.asarray(X, dtype=np.float64)]
    for k, (act, kind) in enumerate(zip(activations, kinds)):
        pre = f"blocks.{k}."
        exporter = EXPORTERS[kind]
        arrays = {name: np.asarray(state[pre + key]) for name, key in exporter.torch_keys.items()
                  if pre + key in state}
        u = exporter.forward(arrays, nodes[int(state[pre + "input_node"])], eps)
        if pre + "residual_index" in state:  # before the activation; −1 reads the zero
            src = nodes[int(state[pre + "residual_from"])]
            padded = np.concatenate([src, np.zeros((len(src), 1))], axis=1)
            u = u + padded[:, np.asarray(state[pre + "residual_index"], dtype=np.int64)]
        h = np.maximum(u, 0.0) if act == "relu" else u
        for key in sorted(state):
            if key.startswith(pre + "skips."):
                source = int(key[len(pre + "skips."):].split(".")[0])
                h = h + nodes[source] @ np.asarray(state[key]).T
        nodes.append(h)
    return nodes[-1]


def torch_module(cert_doc: Any, *, mean: Any = 0, scale: Any = 1, eps: float = DEFAULT_EPS,
                 dtype: str = "float64") -> Any:
    """The certificate's network as a ``torch.nn.Module`` of the documented layout, eval mode.

    Parameters
    ----------
    cert_doc
        A certificate document.
    mean, scale, eps
        Frozen BatchNorm statistics.
    dtype
        ``"float32"`` or ``"float64"``.

    Returns
    -------
    torch.nn.Module
        With :func:`torch_state_dict` loaded (``strict=True``), frozen maps
        (``requires_grad = False``) and every BatchNorm in eval mode.

    Raises
    ------
    MissingExtraError
        Without torch.
    """
    torch = require_extra("torch", "the PyTorch export")
    if dtype not in FLOAT_DTYPES:
        raise InputError(f"dtype must be one of {tuple(FLOAT_DTYPES)}, got {dtype!r}",
                         parameter="dtype")
    net, _ = float_layers(cert_doc, mean, scale, eps)
    nn = torch.nn
    dims = net.node_dims

    class Block(nn.Module):  # type: ignore[name-defined]
        def __init__(self, layer: Any, residual: Any) -> None:
            super().__init__()
            modules, buffers, self._pre = EXPORTERS[layer.kind].torch_parts(layer, torch, eps)
            for name, module in modules.items():
                setattr(self, name, module)
            for name, value in buffers.items():
                self.register_buffer(name, value)
            self.act = nn.ReLU() if layer.activation == "relu" else nn.Identity()
            self.skips = nn.ModuleDict({str(s): nn.Linear(dims[s], layer.width, bias=False)
                                        for s, _ in layer.skips})
            self.register_buffer("input_node", torch.tensor(layer.input, dtype=torch.int64))
            self.residual = residual is not None
            if residual is not None:
                self.register_buffer("residual_from",
                                     torch.tensor(residual.source, dtype=torch.int64))
                self.register_buffer("residual_index", torch.from_numpy(_picks(residual)))

        def forward(self, nodes: list[Any]) -> Any:
            u = self._pre(self, nodes[int(self.input_node)])
            if self.residual:  # the shortcut, before the activation; −1 reads the zero
                src = nodes[int(self.residual_from)]
                u = u + torch.cat([src, src.new_zeros(len(src), 1)], 1)[:, self.residual_index]
            h = self.act(u)
            for s, skip in self.skips.items():
                h = h + skip(nodes[int(s)])
            return h

    class ExactnormFrozenNet(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([Block(layer, net.residual(j))
                                         for j, layer in enumerate(net.layers, 1)])

        def forward(self, x: Any) -> Any:
            nodes = [x.flatten(1)]
            for block in self.blocks:
                nodes.append(block(nodes))
            return nodes[-1]

    # float64 before loading: load_state_dict copies into the parameters' dtype, and a float32
    # module would round the float64 state once more than the requested dtype needs
    module = ExactnormFrozenNet().to(torch.float64)
    state = {k: torch.from_numpy(np.array(v, order="C"))
             for k, v in torch_state_dict(net, mean=mean, scale=scale, eps=eps).items()}
    module.load_state_dict(state, strict=True)
    module = module.to(torch.float32 if dtype == "float32" else torch.float64)
    for name, param in module.named_parameters():
        if not name.split(".")[2].startswith("norm"):
            param.requires_grad_(False)
    # train(False) is eval mode: BatchNorm uses the frozen running statistics
    return module.train(False)


def torch_bytes(state: dict[str, np.ndarray]) -> bytes:
    """``torch.save`` of a state dict given as NumPy arrays (needs torch)."""
    torch = require_extra("torch", "the PyTorch export")
    buf = io.BytesIO()
    torch.save({k: torch.from_numpy(np.array(v, order="C")) for k, v in state.items()}, buf)
    return buf.getvalue()
