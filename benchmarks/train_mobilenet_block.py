"""Train a MobileNet-style block on scikit-learn's 8×8 digits and export it to ONNX in eval mode.

Architecture (a depthwise separable convolution, as MobileNet stacks them)::

    stem       conv 3×3 1→c, BN, ReLU
    depthwise  conv 3×3 c→c with c groups, BN, ReLU
    pointwise  conv 1×1 c→2c, BN, ReLU
    head       global average pooling, linear 2c→10

with ``c = 4``. Training needs PyTorch, which exactnorm does not depend on; the trained model is
shipped as a small ONNX file next to this script (``mobilenet_digits.onnx``), written by the
TorchScript exporter in eval mode without constant folding, so that its ``BatchNormalization``
nodes stay and fold into the grouped convolution's rows when exactnorm reads it:

    pip install torch==2.13.0 onnx scikit-learn scipy
    python benchmarks/train_mobilenet_block.py    # writes benchmarks/mobilenet_digits.onnx

The data is :func:`mlp_models.digits_images` at side 8 (1,797 digits, pixel values in [0, 1]);
the first 1,500 images train, the rest are held out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def build(c: int):
    from torch import nn

    def bn_relu(channels: int) -> list:
        return [nn.BatchNorm2d(channels), nn.ReLU()]

    return nn.Sequential(nn.Conv2d(1, c, 3, padding=1, bias=False), *bn_relu(c),
                         nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), *bn_relu(c),
                         nn.Conv2d(c, 2 * c, 1, bias=False), *bn_relu(2 * c),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * c, 10))


def train(c: int, epochs: int, seed: int):
    import torch
    from mlp_models import digits_images

    torch.manual_seed(seed)
    X, y = digits_images(8)
    X = X.reshape(-1, 1, 8, 8).astype(np.float32)
    Xt, yt = torch.from_numpy(X[:1500]), torch.from_numpy(y[:1500]).long()
    model = build(c)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(Xt), generator=gen).split(64):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(X)).argmax(1).numpy()
    return model, float((pred[:1500] == y[:1500]).mean()), float((pred[1500:] == y[1500:]).mean())


def main() -> None:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--channels", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(HERE / "mobilenet_digits.onnx"))
    args = ap.parse_args()
    model, acc_train, acc_test = train(args.channels, args.epochs, args.seed)
    out = Path(args.out)
    torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(out), input_names=["image"],
                      output_names=["logits"], dynamo=False, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.EVAL)
    print(f"{out.name}: train accuracy {acc_train:.3f}, held-out {acc_test:.3f}, "
          f"{out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
