//! NeRF-style datasets: NeRF-synthetic (`transforms_train.json` + `transforms_test.json` with
//! `camera_angle_x`) and nerfstudio (`transforms.json` with `fl_x`, `fl_y`, `cx`, `cy`, `w`, `h`,
//! `camera_model` (`PINHOLE`, `OPENCV` or `OPENCV_FISHEYE`) with `k1`..`k4`, `p1`, `p2`, globally
//! or per frame, a per-frame `mask_path`, and optional `train_filenames` / `test_filenames`
//! split lists). Distorted frames are undistorted at load, as COLMAP's are.
//!
//! `transform_matrix` is camera-to-world in the OpenGL/Blender convention (x right, y up, looking
//! down −z); it becomes an OpenCV world-to-camera pose by flipping the camera's y and z axes and
//! inverting. NeRF-synthetic's `transforms_val.json` is not read (3DGS ignores it too).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lens::{CameraModel, Lens};
use super::nerf_fields::{json_kind, mask_path, resolve_image, shorten, transform_matrix};
use super::prepare::{UndistortCache, ViewRequest, load_view};
use super::{Dataset, LoadOptions, PointCloud, View, dataset_error, parallel_map, split_views};
use crate::error::Result;
use crate::splat::Camera;

/// OpenCV world-to-camera (row-major rotation, translation) of an OpenGL camera-to-world matrix.
pub fn opengl_c2w_to_opencv_w2c(c2w: [[f64; 4]; 4]) -> ([[f64; 3]; 3], [f64; 3]) {
    // Camera-to-world rotation with the camera's y and z axes flipped (columns 1 and 2 negated).
    let flip = [1.0, -1.0, -1.0];
    let mut rotation = [[0.0f64; 3]; 3];
    for (r, row) in rotation.iter_mut().enumerate() {
        for (c, value) in row.iter_mut().enumerate() {
            // World-to-camera = transpose of camera-to-world.
            *value = c2w[c][r] * flip[r];
        }
    }
    let centre = [c2w[0][3], c2w[1][3], c2w[2][3]];
    let translation = [0, 1, 2].map(|r| -(0..3).map(|c| rotation[r][c] * centre[c]).sum::<f64>());
    (rotation, translation)
}

/// OpenGL camera-to-world matrix of an OpenCV world-to-camera pose (inverse of
/// [`opengl_c2w_to_opencv_w2c`]).
pub fn opencv_w2c_to_opengl_c2w(rotation: [[f64; 3]; 3], translation: [f64; 3]) -> [[f64; 4]; 4] {
    let flip = [1.0, -1.0, -1.0];
    let centre = [0, 1, 2].map(|c| -(0..3).map(|r| rotation[r][c] * translation[r]).sum::<f64>());
    let mut c2w = [[0.0f64; 4]; 4];
    for r in 0..3 {
        for c in 0..3 {
            c2w[r][c] = rotation[c][r] * flip[c];
        }
        c2w[r][3] = centre[r];
    }
    c2w[3][3] = 1.0;
    c2w
}

/// Reads a NeRF-synthetic folder (when `transforms_train.json` exists) or a nerfstudio folder
/// (`transforms.json`). A `points3d.ply` next to the JSON (3DGS's convention), or nerfstudio's
/// `ply_file_path`, becomes the point cloud.
pub fn load(root: &Path, options: &LoadOptions) -> Result<Dataset> {
    let train_json = root.join("transforms_train.json");
    let (frames, own_test, ply) = if train_json.is_file() {
        let mut frames = read_transforms(&train_json)?.1;
        let test_json = root.join("transforms_test.json");
        let test_frames = if test_json.is_file() {
            read_transforms(&test_json)?.1
        } else {
            Vec::new()
        };
        let own_test: Vec<String> = test_frames.iter().map(|f| f.name.clone()).collect();
        frames.extend(test_frames);
        (frames, Some(own_test), None)
    } else {
        let path = root.join("transforms.json");
        if !path.is_file() {
            return Err(dataset_error(
                &path,
                "neither transforms_train.json nor transforms.json exists in this folder",
            ));
        }
        let (json, frames) = read_transforms(&path)?;
        let own_test = nerfstudio_test_names(&path, &json, &frames)?;
        let ply = json
            .get("ply_file_path")
            .and_then(Value::as_str)
            .map(|p| root.join(p));
        (frames, own_test, ply)
    };
    let mut seen = std::collections::HashSet::new();
    if let Some(frame) = frames.iter().find(|f| !seen.insert(f.name.clone())) {
        return Err(dataset_error(
            &frame.json,
            format!(
                "file_path {:?} appears twice; every frame needs its own image",
                frame.name
            ),
        ));
    }
    let cache = std::sync::Arc::new(UndistortCache::default());
    options.progress.start(frames.len());
    let views = parallel_map(&frames, |frame| frame.view(options, &cache))?;
    let ply = ply.or_else(|| Some(root.join("points3d.ply")).filter(|p| p.is_file()));
    let points: Option<PointCloud> = ply.map(|p| super::ply::read_points_ply(&p)).transpose()?;
    let source = if train_json.is_file() {
        root.join("transforms_test.json")
    } else {
        root.join("transforms.json")
    };
    let masked = views.iter().filter(|v| v.is_masked()).count();
    let empty_mask_note = super::empty_mask_note(&views);
    let (train, test) = split_views(views, &options.split, own_test.as_deref(), &source, false)?;
    let mut dataset = Dataset::new(train, test, points);
    dataset.notes = cache.notes();
    dataset.notes.extend(empty_mask_note);
    if masked > 0 {
        dataset.notes.push(format!(
            "{masked} views carry a loss mask (mask_path, --alpha-as-mask or pixels undistortion left without a \
             source); masked pixels count neither in the loss nor in the evaluation"
        ));
    }
    Ok(dataset)
}

/// One frame of a transforms file, with its intrinsics resolved.
struct Frame {
    json: PathBuf,
    name: String,
    image_path: PathBuf,
    mask_path: Option<PathBuf>,
    rotation: [[f64; 3]; 3],
    translation: [f64; 3],
    /// fx, fy, cx, cy when known from the JSON; missing ones are derived from the image size.
    intrinsics: Intrinsics,
}

/// Intrinsics as written in the JSON (any may be absent).
#[derive(Clone, Copy, Default)]
struct Intrinsics {
    fl_x: Option<f64>,
    fl_y: Option<f64>,
    cx: Option<f64>,
    cy: Option<f64>,
    w: Option<u32>,
    h: Option<u32>,
    angle_x: Option<f64>,
    angle_y: Option<f64>,
    /// nerfstudio's `camera_model`.
    model: Option<CameraModel>,
    /// k1, k2, k3, k4, p1, p2 (absent ones are 0).
    distortion: [Option<f64>; 6],
}

/// nerfstudio's distortion keys, in [`Intrinsics::distortion`]'s order.
const DISTORTION_KEYS: [&str; 6] = ["k1", "k2", "k3", "k4", "p1", "p2"];

impl Frame {
    fn view(&self, options: &LoadOptions, cache: &std::sync::Arc<UndistortCache>) -> Result<View> {
        let i = self.intrinsics;
        let expected = i.w.zip(i.h);
        // The image size is needed when the JSON does not give it; read_view_image checks `expected`.
        let size = match expected {
            Some(size) => size,
            None => {
                let dims = ::image::image_dimensions(&self.image_path).map_err(|e| {
                    dataset_error(
                        &self.image_path,
                        format!("could not read the image size: {e}"),
                    )
                })?;
                (dims.0, dims.1)
            }
        };
        let (w, h) = (size.0 as f64, size.1 as f64);
        let fx = i
            .fl_x
            .or(i.angle_x.map(|a| 0.5 * w / (0.5 * a).tan()))
            .ok_or_else(|| {
                dataset_error(
                    &self.json,
                    format!(
                        "frame {:?} has no focal length: give fl_x or camera_angle_x",
                        self.name
                    ),
                )
            })?;
        let fy = i
            .fl_y
            .or(i.angle_y.map(|a| 0.5 * h / (0.5 * a).tan()))
            .unwrap_or(fx);
        let usable = |f: f64| f.is_finite() && f > 0.0 && (f as f32).is_finite();
        if !(usable(fx) && usable(fy)) {
            return Err(dataset_error(
                &self.json,
                format!(
                    "frame {:?} has the focal lengths fx {} and fy {} pixels; both must be positive and finite \
                     (check fl_x / fl_y or camera_angle_x)",
                    self.name,
                    super::compact_number(fx),
                    super::compact_number(fy)
                ),
            ));
        }
        let (cx, cy) = (i.cx.unwrap_or(0.5 * w), i.cy.unwrap_or(0.5 * h));
        let lens = self.lens(fx, fy, cx, cy)?;
        let camera = Camera {
            lens: Default::default(),
            rotation: self.rotation.map(|r| r.map(|v| v as f32)),
            translation: self.translation.map(|v| v as f32),
            fx: fx as f32,
            fy: fy as f32,
            cx: cx as f32,
            cy: cy as f32,
            width: size.0,
            height: size.1,
            near: options.near,
            far: options.far,
            background: options.background,
        };
        let request = ViewRequest {
            name: self.name.clone(),
            image_path: self.image_path.clone(),
            prescaled: None,
            mask_path: self.mask_path.clone(),
            camera,
            lens,
            full_size: Some(size),
            camera_name: format!("the camera of frame {:?}", self.name),
        };
        load_view(&request, options, cache)
    }

    /// The lens of this frame: pinhole, nerfstudio's OPENCV (k1..k3 radial, p1 p2) or
    /// OPENCV_FISHEYE (k1..k4); see [`Lens::from_nerfstudio`].
    fn lens(&self, fx: f64, fy: f64, cx: f64, cy: f64) -> Result<Lens> {
        let i = self.intrinsics;
        Lens::from_nerfstudio(
            i.model,
            [fx, fy, cx, cy],
            i.distortion.map(|v| v.unwrap_or(0.0)),
        )
        .map_err(|why| dataset_error(&self.json, format!("frame {:?}: {why}", self.name)))
    }
}

/// Parses a transforms JSON file into its top-level value and frames.
fn read_transforms(path: &Path) -> Result<(Value, Vec<Frame>)> {
    let text = super::read_regular_text(path, "the transforms file")?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| dataset_error(path, format!("invalid JSON: {e}")))?;
    let folder = path.parent().unwrap_or(Path::new("."));
    let top = intrinsics(path, &json, Intrinsics::default())?;
    let list = json.get("frames").and_then(Value::as_array).ok_or_else(|| {
        dataset_error(path, "no \"frames\" list; a transforms file needs frames with file_path and transform_matrix")
    })?;
    let mut frames = Vec::with_capacity(list.len());
    for (index, frame) in list.iter().enumerate() {
        let name = match frame.get("file_path") {
            Some(Value::String(name)) if !name.is_empty() => name.as_str(),
            Some(other) => {
                return Err(dataset_error(
                    path,
                    format!(
                        "frame {index}: \"file_path\" is {} ({}); expected a string, the image's path relative \
                         to this file",
                        shorten(other),
                        json_kind(other)
                    ),
                ));
            }
            None => {
                return Err(dataset_error(
                    path,
                    format!("frame {index} has no \"file_path\"; every frame names its image"),
                ));
            }
        };
        let c2w = transform_matrix(path, frame, name)?;
        let (rotation, translation) = opengl_c2w_to_opencv_w2c(c2w);
        frames.push(Frame {
            json: path.to_path_buf(),
            name: name.to_string(),
            image_path: resolve_image(folder, name)?,
            mask_path: mask_path(path, folder, frame, name)?,
            rotation,
            translation,
            intrinsics: intrinsics(path, frame, top)?,
        });
    }
    Ok((json, frames))
}

/// Intrinsics keys of `value`, falling back to `fallback` for the absent ones.
fn intrinsics(path: &Path, value: &Value, fallback: Intrinsics) -> Result<Intrinsics> {
    let number = |key: &str| -> Result<Option<f64>> {
        match value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| dataset_error(path, format!("\"{key}\" is {v}, not a number"))),
        }
    };
    let size = |key: &str| -> Result<Option<u32>> {
        Ok(number(key)?.map(|v| v.round() as u32).filter(|&v| v > 0))
    };
    Ok(Intrinsics {
        fl_x: number("fl_x")?.or(fallback.fl_x),
        fl_y: number("fl_y")?.or(fallback.fl_y),
        cx: number("cx")?.or(fallback.cx),
        cy: number("cy")?.or(fallback.cy),
        w: size("w")?.or(fallback.w),
        h: size("h")?.or(fallback.h),
        angle_x: number("camera_angle_x")?.or(fallback.angle_x),
        angle_y: number("camera_angle_y")?.or(fallback.angle_y),
        model: match value.get("camera_model").and_then(Value::as_str) {
            Some(name) => Some(CameraModel::from_name(name).ok_or_else(|| {
                dataset_error(
                    path,
                    format!("camera_model {name:?} is unknown; nerfstudio writes PINHOLE, OPENCV or OPENCV_FISHEYE"),
                )
            })?),
            None => fallback.model,
        },
        distortion: {
            let mut d = fallback.distortion;
            for (slot, key) in d.iter_mut().zip(DISTORTION_KEYS) {
                if let Some(v) = number(key)? {
                    *slot = Some(v);
                }
            }
            d
        },
    })
}

/// nerfstudio's own test split: the frames listed in `test_filenames` (else `val_filenames`).
fn nerfstudio_test_names(
    path: &Path,
    json: &Value,
    frames: &[Frame],
) -> Result<Option<Vec<String>>> {
    let Some((key, value)) = ["test_filenames", "val_filenames"]
        .into_iter()
        .find_map(|key| json.get(key).map(|value| (key, value)))
    else {
        return Ok(None);
    };
    let Value::Array(list) = value else {
        return Err(dataset_error(
            path,
            format!(
                "\"{key}\" is {} ({}); expected a list of file paths, the file_path of each test frame",
                shorten(value),
                json_kind(value)
            ),
        ));
    };
    let normal = |p: &str| p.trim_start_matches("./").to_string();
    let mut names = Vec::with_capacity(list.len());
    for (index, entry) in list.iter().enumerate() {
        let file = match entry {
            Value::String(text) if !normal(text).is_empty() => normal(text),
            other => {
                return Err(dataset_error(
                    path,
                    format!(
                        "entry {index} of \"{key}\" is {} ({}); expected a string, the file_path of a frame",
                        shorten(other),
                        json_kind(other)
                    ),
                ));
            }
        };
        let frame = frames
            .iter()
            .find(|f| normal(&f.name) == file || f.image_path.ends_with(&file))
            .ok_or_else(|| {
                dataset_error(
                    path,
                    format!(
                        "the test split lists {entry}, which is not the file_path of any frame"
                    ),
                )
            })?;
        names.push(frame.name.clone());
    }
    Ok(Some(names))
}
