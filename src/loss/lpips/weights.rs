//! The LPIPS weights file: AlexNet's five convolutions and the five linear heads of LPIPS v0.1,
//! little-endian, as `tools/lpips/convert_weights.py` writes it (`assets/lpips/README.md`).
//!
//! Layout: the magic `WGLPIPS\0`, `u32` version (1), `u32` convolution count (5); per convolution
//! five `u32` (out channels, in channels, kernel size, stride, padding); per head one `u32`
//! (channels); then the f32 data: per convolution its kernel in HWIO order
//! (`[ky][kx][in][out]`, output channel fastest) and its bias, then per head its weights. Nothing
//! may follow. The shapes must be AlexNet's ([`ALEXNET`]): the kernels assume that architecture
//! (max-pooling after the first two layers, channel counts divisible by 16).

use crate::error::{Error, Result};

/// The magic bytes that open a weights file.
pub const MAGIC: &[u8; 8] = b"WGLPIPS\0";
/// The format version this reader understands.
pub const VERSION: u32 = 1;

/// Shape of one convolution layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Output channels.
    pub out_channels: u32,
    /// Input channels.
    pub in_channels: u32,
    /// Square kernel side.
    pub kernel_size: u32,
    /// Stride in both directions.
    pub stride: u32,
    /// Zero padding on every side.
    pub padding: u32,
}

impl ConvShape {
    /// Number of kernel weights (`k * k * in * out`).
    pub fn weight_count(&self) -> u64 {
        u64::from(self.kernel_size).pow(2)
            * u64::from(self.in_channels)
            * u64::from(self.out_channels)
    }

    /// Output side for an input side, or `None` when the kernel does not fit.
    pub fn output_side(&self, input: u32) -> Option<u32> {
        let padded = u64::from(input) + 2 * u64::from(self.padding);
        let k = u64::from(self.kernel_size);
        (padded >= k).then(|| ((padded - k) / u64::from(self.stride) + 1) as u32)
    }
}

/// The AlexNet feature layers LPIPS taps (torchvision's `alexnet().features`, ReLU outputs).
pub const ALEXNET: [ConvShape; 5] = [
    conv(64, 3, 11, 4, 2),
    conv(192, 64, 5, 1, 2),
    conv(384, 192, 3, 1, 1),
    conv(256, 384, 3, 1, 1),
    conv(256, 256, 3, 1, 1),
];

const fn conv(
    out_channels: u32,
    in_channels: u32,
    kernel_size: u32,
    stride: u32,
    padding: u32,
) -> ConvShape {
    ConvShape {
        out_channels,
        in_channels,
        kernel_size,
        stride,
        padding,
    }
}

/// One convolution's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvLayer {
    /// Its shape.
    pub shape: ConvShape,
    /// Kernel in HWIO order (`[ky][kx][in][out]`).
    pub weights: Vec<f32>,
    /// Bias per output channel.
    pub bias: Vec<f32>,
}

/// Every parameter of the LPIPS AlexNet metric.
#[derive(Clone, Debug, PartialEq)]
pub struct LpipsWeights {
    /// The five convolutions, in order.
    pub convs: Vec<ConvLayer>,
    /// The five linear heads (one weight per channel of the matching layer).
    pub heads: Vec<Vec<f32>>,
}

/// Reads little-endian values from a byte slice, naming the file in every error.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    source: &'a str,
}

impl Reader<'_> {
    fn error(&self, message: String) -> Error {
        Error::Format {
            path: self.source.to_owned(),
            kind: "LPIPS weights file".into(),
            message,
        }
    }

    fn take(&mut self, count: usize, what: &str) -> Result<&[u8]> {
        let end = self
            .at
            .checked_add(count)
            .filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            self.error(format!(
                "truncated: {what} needs {count} bytes at offset {} but the file has {} bytes; \
                 regenerate it with tools/lpips/convert_weights.py",
                self.at,
                self.bytes.len()
            ))
        })?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f32s(&mut self, count: u64, what: &str) -> Result<Vec<f32>> {
        let bytes = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(4))
            .ok_or_else(|| self.error(format!("{what}: {count} values do not fit in memory")))?;
        let raw = self.take(bytes, what)?;
        let values: Vec<f32> = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(self.error(format!("{what}: value {i} is {}", values[i])));
        }
        Ok(values)
    }
}

impl LpipsWeights {
    /// Parses a weights file; `source` names it in errors. Checks the magic, the version, that
    /// the shapes are AlexNet's, that every value is finite and that nothing follows the data.
    pub fn parse(bytes: &[u8], source: &str) -> Result<Self> {
        let mut r = Reader {
            bytes,
            at: 0,
            source,
        };
        if r.take(MAGIC.len(), "the magic number")? != MAGIC {
            return Err(r.error("wrong magic number (expected WGLPIPS)".into()));
        }
        let version = r.u32("the version")?;
        if version != VERSION {
            return Err(r.error(format!(
                "version {version}, this build reads version {VERSION}"
            )));
        }
        let count = r.u32("the layer count")?;
        if count as usize != ALEXNET.len() {
            return Err(r.error(format!("{count} layers, AlexNet has {}", ALEXNET.len())));
        }
        let mut shapes = Vec::with_capacity(ALEXNET.len());
        for (i, expected) in ALEXNET.iter().enumerate() {
            let what = format!("the shape of convolution {i}");
            let shape = conv(
                r.u32(&what)?,
                r.u32(&what)?,
                r.u32(&what)?,
                r.u32(&what)?,
                r.u32(&what)?,
            );
            if shape != *expected {
                return Err(r.error(format!(
                    "convolution {i} is {shape:?}, AlexNet's is {expected:?}"
                )));
            }
            shapes.push(shape);
        }
        let mut head_channels = Vec::with_capacity(ALEXNET.len());
        for (i, shape) in shapes.iter().enumerate() {
            let channels = r.u32(&format!("the size of head {i}"))?;
            if channels != shape.out_channels {
                return Err(r.error(format!(
                    "head {i} has {channels} channels, its layer has {}",
                    shape.out_channels
                )));
            }
            head_channels.push(channels);
        }
        let mut convs = Vec::with_capacity(shapes.len());
        for (i, shape) in shapes.into_iter().enumerate() {
            let weights = r.f32s(shape.weight_count(), &format!("convolution {i}'s kernel"))?;
            let bias = r.f32s(
                u64::from(shape.out_channels),
                &format!("convolution {i}'s bias"),
            )?;
            convs.push(ConvLayer {
                shape,
                weights,
                bias,
            });
        }
        let mut heads = Vec::with_capacity(head_channels.len());
        for (i, channels) in head_channels.into_iter().enumerate() {
            heads.push(r.f32s(u64::from(channels), &format!("head {i}"))?);
        }
        if r.at != bytes.len() {
            return Err(r.error(format!(
                "{} bytes follow the data (expected none)",
                bytes.len() - r.at
            )));
        }
        Ok(LpipsWeights { convs, heads })
    }

    /// The file [`LpipsWeights::parse`] reads back as `self` (what the converter script writes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        let put = |v: u32, out: &mut Vec<u8>| out.extend_from_slice(&v.to_le_bytes());
        put(VERSION, &mut out);
        put(self.convs.len() as u32, &mut out);
        for c in &self.convs {
            let s = c.shape;
            for v in [
                s.out_channels,
                s.in_channels,
                s.kernel_size,
                s.stride,
                s.padding,
            ] {
                put(v, &mut out);
            }
        }
        for h in &self.heads {
            put(h.len() as u32, &mut out);
        }
        let values = self
            .convs
            .iter()
            .flat_map(|c| c.weights.iter().chain(&c.bias))
            .chain(self.heads.iter().flatten());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// The weights committed under `assets/lpips/` (AlexNet from torchvision, linear heads of
    /// LPIPS v0.1), embedded in the library so the metric works offline.
    pub fn alexnet() -> Result<Self> {
        Self::parse(
            include_bytes!("../../../assets/lpips/alexnet_lpips_v0.1.bin"),
            "the embedded assets/lpips/alexnet_lpips_v0.1.bin",
        )
    }
}
