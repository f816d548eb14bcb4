"""Train a ResNet-8 on scikit-learn's digits upsampled to 28×28 and export it to ONNX in eval mode.

Architecture (torchvision-style BasicBlocks, BatchNorm after every convolution)::

    stem   conv 3×3 1→c1, BN, ReLU
    stage1 BasicBlock c1→c1 (identity shortcut)
    stage2 BasicBlock c1→c2, stride 2 (projection shortcut: 1×1 conv, stride 2, BN)
    stage3 BasicBlock c2→c3, stride 2 (projection shortcut)
    head   global average pooling, linear c3→10

with ``(c1, c2, c3) = (8, 16, 32)`` (the certified benchmark) or ``(16, 32, 64)`` (the standard
width, measured only). Training needs PyTorch, which exactnorm does not depend on; the trained
models are shipped as small ONNX files next to this script (``resnet8_digits*.onnx``), written by
PyTorch's exporter in eval mode, so nothing else needs PyTorch:

    pip install torch==2.13.0 onnx onnxscript scikit-learn scipy
    python benchmarks/train_resnet8.py            # writes benchmarks/resnet8_digits.onnx
    python benchmarks/train_resnet8.py --channels 16,32,64

The data is :func:`mlp_models.digits_images` (1,797 digits, pixel values in [0, 1]); the first
1,500 images train, the rest are held out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def build(channels: tuple[int, int, int]):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut: nn.Module = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(h)) + self.shortcut(x))

    class ResNet8(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c1, c2, c3 = channels
            self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, 1, 1, bias=False), nn.BatchNorm2d(c1),
                                      nn.ReLU())
            self.layer1 = Block(c1, c1, 1)
            self.layer2 = Block(c1, c2, 2)
            self.layer3 = Block(c2, c3, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(c3, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.layer3(self.layer2(self.layer1(self.stem(x))))
            return self.fc(torch.flatten(self.pool(h), 1))

    return ResNet8()


def train(channels: tuple[int, int, int], epochs: int, seed: int):
    import torch
    from mlp_models import digits_images

    torch.manual_seed(seed)
    X, y = digits_images(28)
    X = X.reshape(-1, 1, 28, 28).astype(np.float32)
    Xt, yt = torch.from_numpy(X[:1500]), torch.from_numpy(y[:1500]).long()
    model = build(channels)
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
    ap.add_argument("--channels", default="8,16,32")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--exporter", choices=("dynamo", "torchscript"), default="dynamo",
                    help="dynamo folds BatchNorm into the convolutions and writes ReduceMean; "
                         "torchscript without constant folding keeps BatchNormalization nodes "
                         "and writes GlobalAveragePool and Flatten")
    args = ap.parse_args()
    channels = tuple(int(c) for c in args.channels.split(","))
    assert len(channels) == 3
    model, acc_train, acc_test = train(channels, args.epochs, args.seed)
    suffix = "" if channels == (8, 16, 32) else "_" + "_".join(map(str, channels))
    suffix += "" if args.exporter == "dynamo" else "_bn"
    out = Path(args.out) if args.out else HERE / f"resnet8_digits{suffix}.onnx"
    example = (torch.zeros(1, 1, 28, 28),)
    if args.exporter == "dynamo":
        torch.onnx.export(model, example, str(out), input_names=["image"],
                          output_names=["logits"], dynamo=True, external_data=False)
    else:
        torch.onnx.export(model, example, str(out), input_names=["image"],
                          output_names=["logits"], dynamo=False, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.EVAL)
    print(f"{out.name}: train accuracy {acc_train:.3f}, held-out {acc_test:.3f}, "
          f"{out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
