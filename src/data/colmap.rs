//! COLMAP models: `cameras`, `images` and `points3D` in COLMAP's binary (`.bin`) or text (`.txt`)
//! format, and the images they pose. Every camera model with a closed-form projection is read
//! ([`super::lens`]); distorted images are undistorted at load ([`super::undistort`]). Masks come
//! from `masks/` beside `images/`; with a downscale factor N, INRIA's pre-scaled `images_N`
//! folder is used when it exists. COLMAP poses are world-to-camera in the OpenCV convention,
//! which is wgsplat's, so they are used as they are.

use std::path::{Path, PathBuf};

use super::colmap_binary;
pub use super::colmap_text::{read_cameras_text, read_images_text, read_points_text};
use super::lens::{CameraModel, Lens};
use super::prepare::{UndistortCache, ViewRequest, find_mask, load_view};
use super::{
    Dataset, LoadOptions, PointCloud, Resolution, dataset_error, parallel_map, split_views,
};
use crate::error::Result;
use crate::splat::Camera;

/// An intrinsic camera of a COLMAP model, with its lens as COLMAP defines the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ColmapCamera {
    /// COLMAP camera id.
    pub id: u32,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Focal length x in pixels.
    pub fx: f64,
    /// Focal length y in pixels.
    pub fy: f64,
    /// Principal point x (COLMAP: the top-left pixel's centre is at 0.5).
    pub cx: f64,
    /// Principal point y.
    pub cy: f64,
    /// The model, focal lengths, principal point and distortion.
    pub lens: Lens,
}

/// One registered image of a COLMAP model.
#[derive(Clone, Debug, PartialEq)]
pub struct ColmapImage {
    /// COLMAP image id.
    pub id: u32,
    /// World-to-camera rotation as a Hamilton quaternion (w, x, y, z).
    pub qvec: [f64; 4],
    /// World-to-camera translation.
    pub tvec: [f64; 3],
    /// Id of its [`ColmapCamera`].
    pub camera_id: u32,
    /// File name, relative to the image folder.
    pub name: String,
}

/// A whole COLMAP model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColmapModel {
    /// Cameras in file order.
    pub cameras: Vec<ColmapCamera>,
    /// Images in file order.
    pub images: Vec<ColmapImage>,
    /// The 3D points with their colours (`None` when the model has no points3D file).
    pub points: Option<PointCloud>,
}

/// On-disk format of a COLMAP model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    /// `cameras.bin`, `images.bin`, `points3D.bin`.
    Binary,
    /// `cameras.txt`, `images.txt`, `points3D.txt`.
    Text,
}

impl ModelFormat {
    /// File extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ModelFormat::Binary => "bin",
            ModelFormat::Text => "txt",
        }
    }
}

/// Builds a camera from a COLMAP model and its parameters. The error names the file, the camera,
/// the model and the bad parameter.
pub(crate) fn colmap_camera(
    path: &Path,
    id: u32,
    model: CameraModel,
    width: u32,
    height: u32,
    params: &[f64],
) -> Result<ColmapCamera> {
    let lens = Lens::from_params(model, params)
        .map_err(|why| dataset_error(path, format!("camera {id} ({}): {why}", model.name())))?;
    if width == 0 || height == 0 {
        return Err(dataset_error(
            path,
            format!(
                "camera {id} ({}) has an empty size {width}x{height}",
                model.name()
            ),
        ));
    }
    let values = [
        ("fx", lens.fx),
        ("fy", lens.fy),
        ("cx", lens.cx),
        ("cy", lens.cy),
    ];
    if let Some((name, value)) = values
        .into_iter()
        .find(|(_, v)| v.abs() >= f64::from(f32::MAX))
    {
        return Err(dataset_error(
            path,
            format!(
                "camera {id} ({}): {name} is {}, beyond what single precision holds (about 3.4e38); the camera \
                 is corrupt — re-run the reconstruction or re-export the model",
                model.name(),
                super::compact_number(value)
            ),
        ));
    }
    Ok(ColmapCamera {
        id,
        width,
        height,
        fx: lens.fx,
        fy: lens.fy,
        cx: lens.cx,
        cy: lens.cy,
        lens,
    })
}

/// Checks the pose of image `image` read from `path` (`place` says where in the file, e.g.
/// "line 7"): a rotation quaternion that is finite and not zero (it is normalised later), and a
/// finite translation. COLMAP never writes others; a corrupt or hand-made model does, and
/// replacing them by the identity would train on a wrong camera without a word.
pub(crate) fn check_pose(path: &Path, place: &str, image: &ColmapImage) -> Result<()> {
    let quaternion = image.qvec.map(super::compact_number).join(", ");
    let norm = image.qvec.iter().map(|v| v * v).sum::<f64>().sqrt();
    if !(image.qvec.iter().all(|v| v.is_finite()) && norm > 1e-9 && norm.is_finite()) {
        return Err(dataset_error(
            path,
            format!(
                "{place}: image {:?} (id {}) has the rotation quaternion QW QX QY QZ = [{quaternion}], which is not a \
                 rotation (it must be finite and not zero); the model is corrupt — re-run the reconstruction or \
                 re-export it with `colmap model_converter`",
                image.name, image.id
            ),
        ));
    }
    if !image
        .tvec
        .iter()
        .all(|v| v.is_finite() && v.abs() < f64::from(f32::MAX))
    {
        let translation = image.tvec.map(super::compact_number).join(", ");
        return Err(dataset_error(
            path,
            format!(
                "{place}: image {:?} (id {}) has the translation TX TY TZ = [{translation}], which is not a finite \
                 position; the model is corrupt — re-run the reconstruction or re-export it",
                image.name, image.id
            ),
        ));
    }
    Ok(())
}

/// The model named `name` (text files), or an error naming the file and camera.
pub(crate) fn model_named(path: &Path, id: u32, name: &str) -> Result<CameraModel> {
    CameraModel::from_name(name).ok_or_else(|| {
        dataset_error(
            path,
            format!(
                "camera {id} uses the camera model {name:?}, which COLMAP does not define; known models: {}",
                CameraModel::ALL.map(CameraModel::name).join(", ")
            ),
        )
    })
}

/// The folder holding the model under a dataset root: `sparse/0`, else `sparse`, when it has a
/// `cameras.bin` or `cameras.txt`.
pub fn find_sparse_dir(root: &Path) -> Option<PathBuf> {
    [root.join("sparse").join("0"), root.join("sparse")]
        .into_iter()
        .find(|dir| dir.join("cameras.bin").is_file() || dir.join("cameras.txt").is_file())
}

/// The format of the model in `sparse_dir`: binary when `cameras.bin` exists (as 3DGS), else text.
pub fn detect_format(sparse_dir: &Path) -> ModelFormat {
    if sparse_dir.join("cameras.bin").is_file() {
        ModelFormat::Binary
    } else {
        ModelFormat::Text
    }
}

/// Reads the model in `sparse_dir` in the given format. `cameras` and `images` must exist;
/// `points3D` is optional.
pub fn read_model(sparse_dir: &Path, format: ModelFormat) -> Result<ColmapModel> {
    let file = |stem: &str| sparse_dir.join(format!("{stem}.{}", format.extension()));
    for stem in ["cameras", "images"] {
        let path = file(stem);
        if !path.exists() {
            return Err(dataset_error(
                &path,
                format!(
                    "the COLMAP model file is missing; a model needs cameras, images (and points3D) in one format \
                     ({}) in {}",
                    format.extension(),
                    sparse_dir.display()
                ),
            ));
        }
    }
    let points_path = file("points3D");
    let model = match format {
        ModelFormat::Binary => ColmapModel {
            cameras: colmap_binary::read_cameras(&file("cameras"))?,
            images: colmap_binary::read_images(&file("images"))?,
            points: points_path
                .exists()
                .then(|| colmap_binary::read_points(&points_path))
                .transpose()?,
        },
        ModelFormat::Text => ColmapModel {
            cameras: read_cameras_text(&file("cameras"))?,
            images: read_images_text(&file("images"))?,
            points: points_path
                .exists()
                .then(|| read_points_text(&points_path))
                .transpose()?,
        },
    };
    Ok(model)
}

/// Reads a COLMAP dataset: the model found by [`find_sparse_dir`] (binary preferred) with the
/// images in `root/images`.
pub fn load(root: &Path, options: &LoadOptions) -> Result<Dataset> {
    let sparse_dir = find_sparse_dir(root).ok_or_else(|| {
        dataset_error(root, "no COLMAP model: expected sparse/0/cameras.bin or sparse/0/cameras.txt under this folder")
    })?;
    load_parts(
        &sparse_dir,
        &root.join("images"),
        detect_format(&sparse_dir),
        options,
    )
}

/// INRIA's pre-scaled image folder for `images_dir` at `resolution` (`images_2` beside `images`
/// for a factor of 2), when it exists.
fn prescaled_dir(images_dir: &Path, resolution: Resolution) -> Option<(PathBuf, u32)> {
    let Resolution::Factor(factor) = resolution else {
        return None;
    };
    let name = images_dir.file_name()?.to_str()?;
    let dir = images_dir.with_file_name(format!("{name}_{factor}"));
    (factor > 1 && dir.is_dir()).then_some((dir, factor))
}

/// Reads a COLMAP model from `sparse_dir` in `format` with its images from `images_dir`.
pub fn load_parts(
    sparse_dir: &Path,
    images_dir: &Path,
    format: ModelFormat,
    options: &LoadOptions,
) -> Result<Dataset> {
    let model = read_model(sparse_dir, format)?;
    let images_file = sparse_dir.join(format!("images.{}", format.extension()));
    if model.images.is_empty() {
        return Err(dataset_error(
            &images_file,
            "the model has no registered images",
        ));
    }
    if !images_dir.is_dir() {
        return Err(dataset_error(
            images_dir,
            "the image folder does not exist; COLMAP datasets keep their images in images/",
        ));
    }
    let mut posed = Vec::with_capacity(model.images.len());
    for image in &model.images {
        let camera = model
            .cameras
            .iter()
            .find(|c| c.id == image.camera_id)
            .ok_or_else(|| {
                dataset_error(
                    &images_file,
                    format!(
                        "image {:?} refers to camera {}, which is not in the cameras file",
                        image.name, image.camera_id
                    ),
                )
            })?;
        posed.push((image, camera));
    }
    let prescaled = prescaled_dir(images_dir, options.resolution);
    let masks_dir = images_dir.with_file_name("masks");
    let masks_dir = masks_dir.is_dir().then_some(masks_dir);
    let cache = std::sync::Arc::new(UndistortCache::default());
    options.progress.start(posed.len());
    let views = parallel_map(&posed, |(image, camera)| {
        let full_path = images_dir.join(&image.name);
        let (image_path, factor) = match &prescaled {
            Some((dir, factor)) if dir.join(&image.name).is_file() => {
                (dir.join(&image.name), Some(*factor))
            }
            _ => (full_path, None),
        };
        if !image_path.exists() {
            return Err(dataset_error(
                &image_path,
                format!(
                    "image {:?} of the COLMAP model is missing from {}; every image in images.{} must be present",
                    image.name,
                    images_dir.display(),
                    format.extension()
                ),
            ));
        }
        let request = ViewRequest {
            name: image.name.clone(),
            image_path,
            prescaled: factor,
            mask_path: masks_dir
                .as_deref()
                .and_then(|dir| find_mask(dir, &image.name)),
            camera: image.camera(camera, options),
            lens: camera.lens,
            full_size: Some((camera.width, camera.height)),
            camera_name: format!("camera {}", camera.id),
        };
        load_view(&request, options, &cache)
    })?;
    let mut notes = cache.notes();
    let masked = views.iter().filter(|v| v.is_masked()).count();
    if let Some((dir, factor)) = &prescaled {
        notes.push(format!(
            "images read from {} (pre-scaled by {factor}) where present",
            dir.display()
        ));
    }
    if masked > 0 {
        notes.push(format!(
            "{masked} of {} views carry a loss mask (masks/, --alpha-as-mask or pixels undistortion left without a \
             source); masked pixels count neither in the loss nor in the evaluation",
            views.len()
        ));
    }
    notes.extend(super::empty_mask_note(&views));
    let (train, test) = split_views(views, &options.split, None, &images_file, true)?;
    let mut dataset = Dataset::new(train, test, model.points);
    dataset.notes = notes;
    Ok(dataset)
}

impl ColmapImage {
    /// The wgsplat camera of this image at its camera's full resolution.
    pub fn camera(&self, intrinsics: &ColmapCamera, options: &LoadOptions) -> Camera {
        let rotation = quaternion_to_matrix(self.qvec);
        Camera {
            lens: Default::default(),
            rotation: rotation.map(|row| row.map(|v| v as f32)),
            translation: self.tvec.map(|v| v as f32),
            fx: intrinsics.fx as f32,
            fy: intrinsics.fy as f32,
            cx: intrinsics.cx as f32,
            cy: intrinsics.cy as f32,
            width: intrinsics.width,
            height: intrinsics.height,
            near: options.near,
            far: options.far,
            background: options.background,
        }
    }
}

/// Row-major rotation matrix of a Hamilton quaternion (w, x, y, z), normalised first.
pub fn quaternion_to_matrix(q: [f64; 4]) -> [[f64; 3]; 3] {
    let q = glam::DVec4::from(q);
    let norm = q.length();
    let [w, x, y, z] = if norm > 0.0 {
        (q / norm).to_array()
    } else {
        [1.0, 0.0, 0.0, 0.0]
    };
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}
