//! COLMAP's binary model format (little-endian, as written by `colmap model_converter` and
//! `Reconstruction::WriteBinary`). Every read is bounds-checked: a truncated or corrupt file gives
//! an error naming the file, the record and the byte offset, never a panic.

use std::path::Path;

use super::colmap::{ColmapCamera, ColmapImage, check_pose, colmap_camera};
use super::lens::CameraModel;
use super::{PointCloud, dataset_error};
use crate::error::Result;

/// A bounds-checked little-endian cursor over one file's bytes.
struct Reader<'a> {
    path: &'a Path,
    bytes: Vec<u8>,
    position: usize,
}

impl<'a> Reader<'a> {
    fn open(path: &'a Path) -> Result<Reader<'a>> {
        let bytes = super::read_regular_file(path, "the COLMAP model file")?;
        Ok(Reader {
            path,
            bytes,
            position: 0,
        })
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        if self.remaining() < N {
            return Err(self.truncated(N, what()));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[self.position..self.position + N]);
        self.position += N;
        Ok(out)
    }

    fn truncated(&self, needed: usize, what: String) -> crate::Error {
        dataset_error(
            self.path,
            format!(
                "the file is truncated: {what} needs {needed} bytes at byte offset {}, but the file ends at byte {}; \
                 the model is incomplete or corrupt — re-export it (e.g. `colmap model_converter --output_type BIN`)",
                self.position,
                self.bytes.len()
            ),
        )
    }

    /// Skips `count` records of `each` bytes, or names the header's count and what the rest of
    /// the file holds when it cannot hold them (never a wrapped byte count).
    fn skip_records(&mut self, count: u64, each: u64, what: &dyn Fn() -> String) -> Result<()> {
        let remaining = self.remaining();
        match count.checked_mul(each) {
            Some(bytes) if bytes <= remaining as u64 => {
                self.position += bytes as usize;
                Ok(())
            }
            needed => Err(dataset_error(
                self.path,
                format!(
                    "{} lists {count} entries of {each} bytes ({}) at byte offset {}, but only \
                     {remaining} bytes remain; the model is truncated or corrupt — re-export it \
                     (e.g. `colmap model_converter --output_type BIN`)",
                    what(),
                    needed.map_or_else(
                        || "more bytes than any file holds".to_owned(),
                        |b| format!("{b} bytes")
                    ),
                    self.position,
                ),
            )),
        }
    }

    fn u8(&mut self, what: &dyn Fn() -> String) -> Result<u8> {
        Ok(self.take::<1>(what)?[0])
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(what)?))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(what)?))
    }

    fn f64(&mut self, what: &dyn Fn() -> String) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take(what)?))
    }

    /// A NUL-terminated UTF-8 string.
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let rest = &self.bytes[self.position..];
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.truncated(rest.len() + 1, what()))?;
        let text = std::str::from_utf8(&rest[..end])
            .map_err(|_| {
                dataset_error(
                    self.path,
                    format!(
                        "{} at byte offset {} is not valid UTF-8",
                        what(),
                        self.position
                    ),
                )
            })?
            .to_string();
        self.position += end + 1;
        Ok(text)
    }

    /// A record count, checked against the bytes left (each record needs at least `min_record` bytes).
    fn count(&mut self, records: &str, min_record: usize) -> Result<usize> {
        let count = self.u64(&|| format!("the number of {records}"))?;
        let fits = (self.remaining() / min_record) as u64;
        if count > fits {
            return Err(dataset_error(
                self.path,
                format!(
                    "the header declares {count} {records}, but the {} bytes after it hold at most {fits}; the file is \
                     truncated or corrupt — re-export the model",
                    self.remaining()
                ),
            ));
        }
        Ok(count as usize)
    }

    /// Checks that every byte was consumed.
    fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(dataset_error(
                self.path,
                format!(
                    "{} unexpected bytes after the last record (at byte offset {}); the file is corrupt or not a COLMAP \
                     binary model file",
                    self.remaining(),
                    self.position
                ),
            ));
        }
        Ok(())
    }
}

/// Reads `cameras.bin`: every COLMAP camera model, with the parameters its model id says.
pub fn read_cameras(path: &Path) -> Result<Vec<ColmapCamera>> {
    let mut r = Reader::open(path)?;
    let count = r.count("cameras", 24)?;
    let mut cameras = Vec::with_capacity(count);
    for i in 0..count {
        let what = |field: &'static str| move || format!("{field} of camera record {i}");
        let id = r.u32(&what("the camera id"))?;
        let model_id = r.u32(&what("the model id"))?;
        let width = r.u64(&what("the width"))?;
        let height = r.u64(&what("the height"))?;
        let model = CameraModel::from_id(model_id).ok_or_else(|| {
            dataset_error(
                path,
                format!(
                    "camera {id} has model id {model_id}, which COLMAP does not define (0..=11); the file is corrupt \
                     or from a newer COLMAP"
                ),
            )
        })?;
        let param_count = model.param_names().len();
        let params: Vec<f64> = (0..param_count)
            .map(|_| r.f64(&what("a parameter")))
            .collect::<Result<_>>()?;
        let (width, height) = match (u32::try_from(width), u32::try_from(height)) {
            (Ok(w), Ok(h)) => (w, h),
            _ => {
                return Err(dataset_error(
                    path,
                    format!(
                        "camera {id} has an impossible size {width}x{height}; the file is corrupt"
                    ),
                ));
            }
        };
        cameras.push(colmap_camera(path, id, model, width, height, &params)?);
    }
    r.finish()?;
    Ok(cameras)
}

/// Reads `images.bin`; the 2D observations are skipped.
pub fn read_images(path: &Path) -> Result<Vec<ColmapImage>> {
    let mut r = Reader::open(path)?;
    let count = r.count("images", 4 + 7 * 8 + 4 + 1 + 8)?;
    let mut images = Vec::with_capacity(count);
    for i in 0..count {
        let what = |field: &'static str| move || format!("{field} of image record {i}");
        let id = r.u32(&what("the image id"))?;
        let mut pose = [0.0f64; 7];
        for value in &mut pose {
            *value = r.f64(&what("the pose"))?;
        }
        let camera_id = r.u32(&what("the camera id"))?;
        let name = r.string(&what("the NUL-terminated name"))?;
        let observations = r.u64(&what("the number of 2D points"))?;
        r.skip_records(observations, 24, &|| {
            format!("the 2D points of image {name:?}")
        })?;
        let image = ColmapImage {
            id,
            qvec: [pose[0], pose[1], pose[2], pose[3]],
            tvec: [pose[4], pose[5], pose[6]],
            camera_id,
            name,
        };
        check_pose(path, &format!("image record {i}"), &image)?;
        images.push(image);
    }
    r.finish()?;
    Ok(images)
}

/// Reads `points3D.bin` (positions and colours; errors and tracks are skipped).
pub fn read_points(path: &Path) -> Result<PointCloud> {
    read_points_with_errors(path).map(|(points, _)| points)
}

/// Reads `points3D.bin`: the points, and each point's mean reprojection error in pixels (tracks
/// are skipped).
pub fn read_points_with_errors(path: &Path) -> Result<(PointCloud, Vec<f64>)> {
    let mut r = Reader::open(path)?;
    let count = r.count("points", 8 + 24 + 3 + 8 + 8)?;
    let mut points = PointCloud {
        positions: Vec::with_capacity(count),
        colors: Vec::with_capacity(count),
    };
    let mut errors = Vec::with_capacity(count);
    for i in 0..count {
        let what = |field: &'static str| move || format!("{field} of point record {i}");
        r.u64(&what("the point id"))?;
        let mut xyz = [0.0f32; 3];
        for value in &mut xyz {
            *value = r.f64(&what("the position"))? as f32;
        }
        let mut rgb = [0.0f32; 3];
        for value in &mut rgb {
            *value = r.u8(&what("the colour"))? as f32 / 255.0;
        }
        errors.push(r.f64(&what("the reprojection error"))?);
        let track = r.u64(&what("the track length"))?;
        r.skip_records(track, 8, &|| format!("the track of point record {i}"))?;
        points.positions.push(xyz);
        points.colors.push(rgb);
    }
    r.finish()?;
    Ok((points, errors))
}
