//! 8-bit RGBA images: reading PNG/JPEG files, area-filtered downscaling with premultiplied alpha,
//! compositing on a background, and atomic PNG writing.

use std::path::Path;

use super::dataset_error;
use crate::error::Result;

/// A straight-alpha (not premultiplied) 8-bit RGBA image, row-major, 4 bytes per pixel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes: R, G, B, A.
    pub pixels: Vec<u8>,
}

/// One straight-alpha RGBA pixel composited on `background`, RGB in [0, 1]:
/// `rgb * a + bg * (1 - a)`.
pub fn composite(pixel: [u8; 4], background: [f32; 3]) -> [f32; 3] {
    let a = f32::from(pixel[3]) / 255.0;
    [0, 1, 2].map(|k| f32::from(pixel[k]) / 255.0 * a + background[k] * (1.0 - a))
}

impl RgbaImage {
    /// A `width` × `height` image, all transparent black.
    pub fn new(width: u32, height: u32) -> RgbaImage {
        RgbaImage {
            width,
            height,
            pixels: vec![0; width as usize * height as usize * 4],
        }
    }

    /// Number of pixels.
    pub fn pixel_count(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// The RGBA bytes of pixel (`x`, `y`).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = (y as usize * self.width as usize + x as usize) * 4;
        [
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
            self.pixels[i + 3],
        ]
    }

    /// True when any pixel is not fully opaque.
    pub fn has_transparency(&self) -> bool {
        self.pixels.chunks_exact(4).any(|p| p[3] != 255)
    }

    /// RGB in [0, 1], `[height, width, 3]`, composited on `background`: `rgb * a + bg * (1 - a)`.
    pub fn rgb_on(&self, background: [f32; 3]) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.pixel_count() * 3);
        for p in self.pixels.chunks_exact(4) {
            out.extend(composite([p[0], p[1], p[2], p[3]], background));
        }
        out
    }

    /// Alpha in [0, 1], `[height, width]`.
    pub fn alpha(&self) -> Vec<f32> {
        self.pixels
            .chunks_exact(4)
            .map(|p| p[3] as f32 / 255.0)
            .collect()
    }

    /// This image resized to `width` × `height` with an area (box) filter on premultiplied alpha:
    /// every output pixel is the coverage-weighted mean of the input pixels under it, so integer
    /// factors average exact `f × f` blocks and transparent pixels do not bleed their colour.
    pub fn resized_area(&self, width: u32, height: u32) -> RgbaImage {
        if width == self.width && height == self.height {
            return self.clone();
        }
        let columns = area_weights(self.width, width);
        let rows = area_weights(self.height, height);
        // Horizontal pass on premultiplied alpha: self.height rows of `width` pixels.
        let mut horizontal = vec![0.0f32; self.height as usize * width as usize * 4];
        for y in 0..self.height as usize {
            let src = &self.pixels[y * self.width as usize * 4..(y + 1) * self.width as usize * 4];
            for (x, taps) in columns.iter().enumerate() {
                let dst = &mut horizontal[(y * width as usize + x) * 4..][..4];
                for &(sx, w) in taps {
                    let p = &src[sx * 4..sx * 4 + 4];
                    let a = f32::from(p[3]) / 255.0;
                    for k in 0..3 {
                        dst[k] += f32::from(p[k]) * a * w;
                    }
                    dst[3] += f32::from(p[3]) * w;
                }
            }
        }
        let mut out = RgbaImage::new(width, height);
        for (y, taps) in rows.iter().enumerate() {
            for x in 0..width as usize {
                let mut acc = [0.0f32; 4];
                for &(sy, w) in taps {
                    let src = &horizontal[(sy * width as usize + x) * 4..][..4];
                    for k in 0..4 {
                        acc[k] += src[k] * w;
                    }
                }
                let dst = &mut out.pixels[(y * width as usize + x) * 4..][..4];
                let alpha = acc[3] / 255.0;
                for k in 0..3 {
                    let straight = if alpha > 0.0 { acc[k] / alpha } else { 0.0 };
                    dst[k] = straight.round().clamp(0.0, 255.0) as u8;
                }
                dst[3] = acc[3].round().clamp(0.0, 255.0) as u8;
            }
        }
        out
    }

    /// Writes the image as a PNG at `path`, atomically (a temporary file renamed into place).
    pub fn write_png(&self, path: &Path) -> Result<()> {
        let mut bytes = Vec::new();
        let encoder = ::image::codecs::png::PngEncoder::new(&mut bytes);
        ::image::ImageEncoder::write_image(
            encoder,
            &self.pixels,
            self.width,
            self.height,
            ::image::ExtendedColorType::Rgba8,
        )
        .map_err(|e| dataset_error(path, format!("could not encode the PNG: {e}")))?;
        write_atomically(path, &bytes)
    }
}

/// For each of `dst` output samples, the (source index, weight) pairs of a box filter mapping
/// `src` samples onto `dst`; weights sum to 1.
fn area_weights(src: u32, dst: u32) -> Vec<Vec<(usize, f32)>> {
    let scale = src as f64 / dst as f64;
    (0..dst)
        .map(|i| {
            let (lo, hi) = (i as f64 * scale, (i + 1) as f64 * scale);
            let first = lo.floor() as usize;
            let last = (hi.ceil() as usize).min(src as usize);
            (first..last)
                .filter_map(|s| {
                    let overlap = (hi.min(s as f64 + 1.0) - lo.max(s as f64)).max(0.0);
                    (overlap > 1e-9).then_some((s, (overlap / scale) as f32))
                })
                .collect()
        })
        .collect()
}

/// The most bytes one image may take decoded, in its own pixel format (and as 8-bit RGBA): 1 GiB,
/// a 16,384 × 16,384 RGBA photograph. A small file that claims more (a decompression bomb, or a
/// photograph far beyond what training can use) is refused before anything is allocated.
pub const MAX_DECODED_IMAGE_BYTES: u64 = 1 << 30;

/// Reads a PNG or JPEG (format guessed from the content) as 8-bit RGBA; grey and RGB images get
/// alpha 255, 16-bit images are reduced to 8 bits. The file type is checked before it is opened
/// (a FIFO never blocks), the file's size and a JPEG's completeness before it is decoded
/// ([`read_image_bytes`]), the size in the header is checked against
/// [`MAX_DECODED_IMAGE_BYTES`] before decoding, and the pixels are reserved fallibly: a failure
/// names the file, its size and the limit.
pub fn read_image(path: &Path) -> Result<RgbaImage> {
    if !path.exists() {
        return Err(dataset_error(
            path,
            "the image file does not exist; check the dataset's image folder and names",
        ));
    }
    super::check_regular_file(path, "the image")?;
    let bytes = read_image_bytes(path).map_err(|e| dataset_error(path, e))?;
    let checked = CheckedDecoder::open(path, &bytes)?;
    let (width, height) = checked.size;
    let decoded = checked.decode(path)?;
    let pixels = into_rgba8(decoded, path)?;
    Ok(RgbaImage {
        width,
        height,
        pixels,
    })
}

/// An image decoder whose header has been read and checked against [`MAX_DECODED_IMAGE_BYTES`]
/// (its own pixel format and 8-bit RGBA alike) before any pixel is allocated: the one way every
/// reader of photographs (the trainer's loader, `wgsplat sfm`) opens an image.
pub(crate) struct CheckedDecoder<'a> {
    /// The decoder, ready to decode.
    pub decoder: Box<dyn ::image::ImageDecoder + 'a>,
    /// Width and height in the header.
    pub size: (u32, u32),
    /// The most bytes the decoded image takes: in its own format or as 8-bit RGBA (read by
    /// `wgsplat sfm`'s memory gate, which the browser build does not have).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub decoded_bytes: u64,
}

impl<'a> CheckedDecoder<'a> {
    /// Reads the header of the image in `bytes` (the file at `path`, format guessed from the
    /// content) and refuses one that would decode to more than [`MAX_DECODED_IMAGE_BYTES`], with
    /// an error naming the file, its size and the limit.
    pub fn open(path: &Path, bytes: &'a [u8]) -> Result<CheckedDecoder<'a>> {
        let mut reader = ::image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| dataset_error(path, format!("could not open the image: {e}")))?;
        let mut limits = ::image::Limits::default();
        limits.max_alloc = Some(MAX_DECODED_IMAGE_BYTES);
        reader.limits(limits);
        let decoder = reader
            .into_decoder()
            .map_err(|e| decode_error(path, e, None))?;
        let (width, height) = ::image::ImageDecoder::dimensions(&decoder);
        let native = ::image::ImageDecoder::total_bytes(&decoder);
        let decoded_bytes = native.max(u64::from(width) * u64::from(height) * 4);
        if decoded_bytes > MAX_DECODED_IMAGE_BYTES {
            return Err(dataset_error(
                path,
                format!(
                    "the image is {width}x{height}: decoded, it needs {}, above the limit of {} for one image; \
                     downscale the photographs (e.g. into images_2/ beside images/, read with -r 2)",
                    crate::gpu::memory::format_bytes(decoded_bytes),
                    crate::gpu::memory::format_bytes(MAX_DECODED_IMAGE_BYTES)
                ),
            ));
        }
        Ok(CheckedDecoder {
            decoder: Box::new(decoder),
            size: (width, height),
            decoded_bytes,
        })
    }

    /// Decodes the pixels (`path` names the file in errors).
    pub fn decode(self, path: &Path) -> Result<::image::DynamicImage> {
        let size = self.size;
        ::image::DynamicImage::from_decoder(self.decoder)
            .map_err(|e| decode_error(path, e, Some(size)))
    }
}

/// The error for an image that failed to open or decode: a limit names the size and what to do.
fn decode_error(path: &Path, e: ::image::ImageError, size: Option<(u32, u32)>) -> crate::Error {
    match e {
        ::image::ImageError::Limits(_) => {
            let size = size.map_or_else(String::new, |(w, h)| format!(" is {w}x{h} and"));
            dataset_error(
                path,
                format!(
                    "the image{size} needs more memory to decode than the limit of {} for one image; downscale \
                     the photographs (e.g. into images_2/ beside images/, read with -r 2)",
                    crate::gpu::memory::format_bytes(MAX_DECODED_IMAGE_BYTES)
                ),
            )
        }
        e => dataset_error(
            path,
            format!("could not decode the image (PNG and JPEG are supported): {e}"),
        ),
    }
}

/// The bytes of the image file at `path`, checked before decoding: a file larger than
/// [`MAX_DECODED_IMAGE_BYTES`] is refused unread (no photograph compresses to more than it
/// decodes to), and a truncated JPEG, which decodes without an error (its missing rows grey), is
/// refused ([`super::jpeg_check`]). The error is a message for the caller to wrap with the path.
pub(crate) fn read_image_bytes(path: &Path) -> std::result::Result<Vec<u8>, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("could not read the file: {e}"))?
        .len();
    if size > MAX_DECODED_IMAGE_BYTES {
        return Err(format!(
            "the file is {}, above the limit of {} for one image: is it an image?",
            crate::gpu::memory::format_bytes(size),
            crate::gpu::memory::format_bytes(MAX_DECODED_IMAGE_BYTES)
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("could not read the file: {e}"))?;
    if super::jpeg_check::is_jpeg(&bytes) {
        super::jpeg_check::check_jpeg_complete(&bytes)
            .map_err(|e| format!("{e}; copy the photograph again from where it came from"))?;
    }
    Ok(bytes)
}

/// A vector of `len` zeroed values, reserved fallibly: an error names `path` and the bytes needed
/// rather than aborting the process.
pub(crate) fn try_zeroed<T: Clone + Default>(
    len: usize,
    path: &Path,
    what: &str,
) -> Result<Vec<T>> {
    let mut values = Vec::new();
    values.try_reserve_exact(len).map_err(|_| {
        dataset_error(
            path,
            format!(
                "could not allocate {} of host memory for {what}; free memory, or use smaller images (-r 2)",
                crate::gpu::memory::format_bytes((len * std::mem::size_of::<T>()) as u64)
            ),
        )
    })?;
    values.resize(len, T::default());
    Ok(values)
}

/// The straight 8-bit RGBA bytes of `image`, in a buffer reserved fallibly (an RGBA8 image's own
/// buffer is reused).
fn into_rgba8(image: ::image::DynamicImage, path: &Path) -> Result<Vec<u8>> {
    use ::image::GenericImageView as _;
    let (width, height) = image.dimensions();
    let len = width as usize * height as usize * 4;
    match image {
        ::image::DynamicImage::ImageRgba8(buffer) => Ok(buffer.into_raw()),
        ::image::DynamicImage::ImageRgb8(buffer) => {
            let mut out = try_zeroed::<u8>(len, path, "the image's pixels")?;
            for (dst, src) in out.chunks_exact_mut(4).zip(buffer.as_raw().chunks_exact(3)) {
                dst[..3].copy_from_slice(src);
                dst[3] = 255;
            }
            Ok(out)
        }
        ::image::DynamicImage::ImageLuma8(buffer) => {
            let mut out = try_zeroed::<u8>(len, path, "the image's pixels")?;
            for (dst, &v) in out.chunks_exact_mut(4).zip(buffer.as_raw()) {
                dst.copy_from_slice(&[v, v, v, 255]);
            }
            Ok(out)
        }
        other => {
            let mut out = try_zeroed::<u8>(len, path, "the image's pixels")?;
            for ((_, _, pixel), dst) in other.pixels().zip(out.chunks_exact_mut(4)) {
                dst.copy_from_slice(&pixel.0);
            }
            Ok(out)
        }
    }
}

/// Writes `bytes` to `path` atomically, through the shared [`crate::io::write_atomically`].
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::io::write_atomically(path, |w| {
        std::io::Write::write_all(w, bytes).map_err(|e| crate::io::io_error(path, "write", e))
    })
}

/// Packs 8-bit RGBA pixels into one u32 each (R in the low byte), the layout the loss and LPIPS
/// kernels decode.
pub fn pack_rgba8(pixels: &[u8]) -> Vec<u32> {
    pixels
        .chunks_exact(4)
        .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
        .collect()
}
