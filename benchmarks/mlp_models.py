"""Seeded MLPs trained on scikit-learn's bundled digits, upsampled to a chosen side (no downloads).

Used by ``bench_real_size.py`` and its tests: ``write_mlp_npz((784, 128, 10), path)`` trains a
784-128-10 ReLU MLP on the 8×8 digits resized to 28×28 (bilinear, values in [0, 1]) and writes
``W1, b1, …, lower, upper`` as float32 arrays, the layout ``exactnorm certify --target`` reads.
Training is deterministic for a fixed seed on one machine; the certificate proves whatever weights
were written, so bit-for-bit reproducibility of training across machines is not needed.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

__all__ = ["digits_images", "train_mlp", "write_mlp_npz"]


def digits_images(side: int) -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 digits resized to ``side × side`` (flattened, in [0, 1]) and their labels."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    data = load_digits()
    images = data.images.astype(np.float64) / 16.0
    big = np.stack([zoom(im, side / 8, order=1, grid_mode=False) for im in images])
    big = np.clip(big[:, :side, :side], 0.0, 1.0)
    return big.reshape(len(images), side * side), data.target


def train_mlp(widths: tuple[int, ...], seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(W_i, b_i)`` float32 pairs of an MLP with hidden ReLU layers, input side √widths[0]."""
    from sklearn.neural_network import MLPClassifier

    side = math.isqrt(widths[0])
    if side * side != widths[0] or widths[-1] != 10:
        raise ValueError(f"widths must be (s², …, 10), got {widths}")
    X, y = digits_images(side)
    clf = MLPClassifier(hidden_layer_sizes=widths[1:-1], activation="relu", max_iter=30,
                        random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 epochs do not converge; accuracy is not the point
        clf.fit(X, y)
    # sklearn stores x ↦ x·W + b; the target format is W x + b with W of shape (d_out, d_in)
    return [(W.T.astype(np.float32), b.astype(np.float32))
            for W, b in zip(clf.coefs_, clf.intercepts_)]


def write_mlp_npz(widths: tuple[int, ...], path: str | os.PathLike[str], seed: int = 0) -> None:
    """Train (seeded) and write ``W1, b1, …`` float32 and the box ``[0, 1]^d`` as ``.npz``."""
    arrays: dict[str, np.ndarray] = {}
    for i, (W, b) in enumerate(train_mlp(widths, seed), 1):
        arrays[f"W{i}"], arrays[f"b{i}"] = W, b
    arrays["lower"] = np.zeros(widths[0], dtype=np.float32)
    arrays["upper"] = np.ones(widths[0], dtype=np.float32)
    np.savez(path, **arrays)
