//! Photographs made ready for COLMAP and training: the EXIF orientation applied to the pixels
//! (COLMAP reads pixels as stored), the long side brought down to the size limit, and INRIA's
//! pre-scaled `images_N` folders when asked. The originals are only read.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageEncoder};
use rayon::prelude::*;

use super::memory_gate::{MemoryGate, MemoryPermit};
use crate::data::RgbaImage;
use crate::data::image::CheckedDecoder;
use crate::error::{Error, Result};

/// JPEG quality of re-encoded photographs (visually lossless for SfM and training).
pub const JPEG_QUALITY: u8 = 95;

/// What happened to one photograph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedPhoto {
    /// The name it has in `images/` (and in the COLMAP model).
    pub name: String,
    /// Its size there.
    pub size: (u32, u32),
    /// True when the original file was copied byte for byte (upright and small enough).
    pub copied: bool,
}

fn photo_error(path: &Path, message: String) -> Error {
    crate::data::dataset_error(path, message)
}

/// The size a `width` × `height` image is brought to so that its long side is at most
/// `max_size` (0: no limit). Never upscales; integer arithmetic, rounded to nearest.
pub fn limited_size(width: u32, height: u32, max_size: u32) -> (u32, u32) {
    let long = width.max(height);
    if max_size == 0 || long <= max_size {
        return (width, height);
    }
    let scale = |side: u32| {
        let scaled =
            (u64::from(side) * u64::from(max_size) + u64::from(long) / 2) / u64::from(long);
        (scaled as u32).max(1)
    };
    (scale(width), scale(height))
}

/// The name `source` gets in `images/` (and in the COLMAP model): its own, with bytes that are
/// not UTF-8 shown as U+FFFD and control characters (a newline would split COLMAP's image lists)
/// as `_`; formats COLMAP may not read (WebP) become PNG. Two sources may get one name:
/// [`super::inputs::classify`] refuses that before anything is written.
pub fn output_name(source: &Path) -> String {
    let name: String = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    if !is_webp(source) {
        return name;
    }
    let stem = name
        .rsplit_once('.')
        .map_or(name.as_str(), |(stem, _)| stem);
    format!("{stem}.png")
}

fn is_webp(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("webp"))
}

fn is_jpeg(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"))
}

/// One decoded photograph, upright, with the metadata worth keeping.
struct Decoded {
    image: DynamicImage,
    /// EXIF with the orientation reset to "upright" (the focal length stays: COLMAP reads it).
    exif: Option<Vec<u8>>,
    icc: Option<Vec<u8>>,
    rotated: bool,
    /// The file as read, written out unchanged when the photograph needs no change.
    file: Vec<u8>,
}

/// The host memory one photograph of `decoded_bytes` (decoded, as the larger of its own format
/// and RGBA) takes while it is prepared from a file of `file_bytes`: the file, the decoded pixels,
/// an upright copy, the RGBA copy, and the resized image and its encoding (at most one more).
pub fn preparation_bytes(file_bytes: u64, decoded_bytes: u64) -> u64 {
    file_bytes.saturating_add(decoded_bytes.saturating_mul(4))
}

/// Reads and decodes `path` upright, holding its memory ([`preparation_bytes`]) from `gate`
/// once the header has been checked ([`CheckedDecoder`]: a file whose header claims more than
/// [`crate::data::image::MAX_DECODED_IMAGE_BYTES`] is refused before any pixel is allocated).
fn decode_upright<'g>(path: &Path, gate: &'g MemoryGate) -> Result<(Decoded, MemoryPermit<'g>)> {
    let bytes = crate::data::image::read_image_bytes(path).map_err(|e| photo_error(path, e))?;
    let CheckedDecoder {
        mut decoder,
        size,
        decoded_bytes,
    } = CheckedDecoder::open(path, &bytes)?;
    let permit = gate.acquire(preparation_bytes(bytes.len() as u64, decoded_bytes));
    let icc = decoder.icc_profile().ok().flatten();
    let mut exif = decoder.exif_metadata().ok().flatten();
    let orientation = exif
        .as_mut()
        .and_then(|chunk| image::metadata::Orientation::remove_from_exif_chunk(chunk))
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut image = CheckedDecoder {
        decoder,
        size,
        decoded_bytes,
    }
    .decode(path)?;
    let rotated = orientation != image::metadata::Orientation::NoTransforms;
    image.apply_orientation(orientation);
    let decoded = Decoded {
        image,
        exif,
        icc,
        rotated,
        file: bytes,
    };
    Ok((decoded, permit))
}

fn to_rgba(image: &DynamicImage) -> RgbaImage {
    let rgba = image.to_rgba8();
    RgbaImage {
        width: rgba.width(),
        height: rgba.height(),
        pixels: rgba.into_raw(),
    }
}

/// Encodes `image` to `path` atomically: JPEG (quality [`JPEG_QUALITY`]) for `.jpg`/`.jpeg`
/// names, PNG otherwise, with the EXIF and colour profile given.
fn encode(image: &RgbaImage, path: &Path, exif: Option<&[u8]>, icc: Option<&[u8]>) -> Result<()> {
    let (width, height) = (image.width, image.height);
    crate::io::write_atomically(path, |w| {
        let fail = |e: String| photo_error(path, format!("could not encode the photograph: {e}"));
        if is_jpeg(path) {
            let rgb: Vec<u8> = image
                .pixels
                .chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect();
            let mut encoder =
                image::codecs::jpeg::JpegEncoder::new_with_quality(&mut *w, JPEG_QUALITY);
            if let Some(exif) = exif {
                let _ = encoder.set_exif_metadata(exif.to_vec());
            }
            if let Some(icc) = icc {
                let _ = encoder.set_icc_profile(icc.to_vec());
            }
            encoder
                .write_image(&rgb, width, height, image::ExtendedColorType::Rgb8)
                .map_err(|e| fail(e.to_string()))
        } else {
            let mut encoder = image::codecs::png::PngEncoder::new(&mut *w);
            if let Some(icc) = icc {
                let _ = encoder.set_icc_profile(icc.to_vec());
            }
            encoder
                .write_image(
                    &image.pixels,
                    width,
                    height,
                    image::ExtendedColorType::Rgba8,
                )
                .map_err(|e| fail(e.to_string()))
        }
    })
}

/// Writes a photograph's file `bytes`, as read, to `target`, atomically.
fn copy_file(bytes: &[u8], target: &Path) -> Result<()> {
    crate::io::write_atomically(target, |w| {
        w.write_all(bytes)
            .map_err(|e| crate::io::io_error(target, "write", e))
    })
}

/// What [`prepare_photos`] made of the sources.
#[derive(Debug, Default)]
pub struct PreparedPhotos {
    /// The photographs written, in the order of the sources.
    pub written: Vec<PreparedPhoto>,
    /// The sources that could not be read or decoded (refused before their pixels were
    /// allocated when their header claims too large an image), with the reason: left out.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Writes each of `sources` into `images_dir` upright and at most `max_size` px on the long side
/// (0: full size) under the name [`output_names`] gave it (`names[i]` for `sources[i]`), and into
/// `images_dir`'s `_N` siblings for each factor in `downscales`. Runs on every core, with the
/// photographs in memory at once bounded by `memory_limit` bytes ([`preparation_bytes`] each);
/// `on_done` is called once per photograph. A photograph that cannot be read is skipped and
/// named in [`PreparedPhotos::skipped`]; a failure to write is an error.
pub fn prepare_photos(
    sources: &[PathBuf],
    names: &[String],
    images_dir: &Path,
    max_size: u32,
    downscales: &[u32],
    memory_limit: u64,
    on_done: &(dyn Fn() + Sync),
) -> Result<PreparedPhotos> {
    let mut dirs = vec![images_dir.to_path_buf()];
    for factor in downscales {
        dirs.push(prescaled_dir(images_dir, *factor));
    }
    for dir in &dirs {
        std::fs::create_dir_all(dir).map_err(|e| crate::io::io_error(dir, "create", e))?;
    }
    let gate = MemoryGate::new(memory_limit);
    let results: Vec<Result<std::result::Result<PreparedPhoto, String>>> = sources
        .par_iter()
        .zip(names.par_iter())
        .map(|(source, name)| {
            let prepared = prepare_one(source, name, images_dir, max_size, downscales, &gate);
            on_done();
            prepared
        })
        .collect();
    let mut prepared = PreparedPhotos::default();
    for (source, result) in sources.iter().zip(results) {
        match result? {
            Ok(photo) => prepared.written.push(photo),
            Err(reason) => prepared.skipped.push((source.clone(), reason)),
        }
    }
    Ok(prepared)
}

/// INRIA's name for the folder of images downscaled by `factor`: `images_N` beside `images`.
pub fn prescaled_dir(images_dir: &Path, factor: u32) -> PathBuf {
    let name = images_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "images".into());
    images_dir.with_file_name(format!("{name}_{factor}"))
}

/// Prepares one photograph: `Ok(Err(reason))` when it cannot be read or decoded (it is
/// skipped), `Err` when its output cannot be written.
fn prepare_one(
    source: &Path,
    name: &str,
    images_dir: &Path,
    max_size: u32,
    downscales: &[u32],
    gate: &MemoryGate,
) -> Result<std::result::Result<PreparedPhoto, String>> {
    let target = images_dir.join(name);
    let (decoded, _permit) = match decode_upright(source, gate) {
        Ok(decoded) => decoded,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let (width, height) = (decoded.image.width(), decoded.image.height());
    let size = limited_size(width, height, max_size);
    // A file is copied only when its content is what its name says (a JPEG named .png is
    // re-encoded as the PNG its name promises COLMAP).
    let content_matches_name =
        image::guess_format(&decoded.file).ok() == image::ImageFormat::from_path(name).ok();
    let copied = !decoded.rotated && size == (width, height) && content_matches_name;
    let full = to_rgba(&decoded.image);
    drop(decoded.image);
    let image = if size == (width, height) {
        full
    } else {
        full.resized_area(size.0, size.1)
    };
    if copied {
        copy_file(&decoded.file, &target)?;
    } else {
        encode(
            &image,
            &target,
            decoded.exif.as_deref(),
            decoded.icc.as_deref(),
        )?;
    }
    for &factor in downscales {
        // Rounded as `-r N` rounds ([`crate::data::Resolution::target_size`]).
        let factor = factor.max(1);
        let (w, h) = (
            ((image.width + factor / 2) / factor).max(1),
            ((image.height + factor / 2) / factor).max(1),
        );
        let small = image.resized_area(w, h);
        let path = prescaled_dir(images_dir, factor).join(name);
        encode(
            &small,
            &path,
            decoded.exif.as_deref(),
            decoded.icc.as_deref(),
        )?;
    }
    Ok(Ok(PreparedPhoto {
        name: name.to_owned(),
        size,
        copied,
    }))
}

/// `names` (in `images`) grouped by image size, in name order within each group.
pub fn size_groups(images: &Path, names: &[String]) -> Result<Vec<Vec<String>>> {
    let mut groups: Vec<((u32, u32), Vec<String>)> = Vec::new();
    for name in names {
        let path = images.join(name);
        let size = image::image_dimensions(&path).map_err(|e| {
            crate::data::dataset_error(&path, format!("could not read the image's size: {e}"))
        })?;
        match groups.iter_mut().find(|(s, _)| *s == size) {
            Some((_, group)) => group.push(name.clone()),
            None => groups.push((size, vec![name.clone()])),
        }
    }
    Ok(groups.into_iter().map(|(_, g)| g).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_side_is_limited_and_never_upscaled() {
        assert_eq!(limited_size(3200, 2400, 1600), (1600, 1200));
        assert_eq!(limited_size(2128, 2832, 1600), (1202, 1600));
        assert_eq!(limited_size(800, 600, 1600), (800, 600));
        assert_eq!(limited_size(3200, 2400, 0), (3200, 2400));
        assert_eq!(limited_size(100_000, 1, 1600), (1600, 1));
    }

    #[test]
    fn images_are_grouped_by_size_for_one_camera_each() {
        let dir = std::env::temp_dir().join(format!("wgsplat-size-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sizes = [
            ("a.png", 8, 6),
            ("b.png", 6, 8),
            ("c.png", 8, 6),
            ("d.png", 6, 8),
        ];
        for (name, w, h) in sizes {
            image::RgbImage::new(w, h).save(dir.join(name)).unwrap();
        }
        let names: Vec<String> = sizes.iter().map(|s| s.0.to_owned()).collect();
        let groups = size_groups(&dir, &names).unwrap();
        assert_eq!(groups, [vec!["a.png", "c.png"], vec!["b.png", "d.png"]]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn webp_becomes_png_and_others_keep_their_name() {
        assert_eq!(output_name(Path::new("a/IMG_1.JPG")), "IMG_1.JPG");
        assert_eq!(output_name(Path::new("a/b.webp")), "b.png");
        assert_eq!(output_name(Path::new("a/b\nc.JPG")), "b_c.JPG");
    }
}
