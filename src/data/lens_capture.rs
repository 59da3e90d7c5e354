//! The built-in scenes photographed through a lens of any COLMAP model
//! ([`super::lens_design`]): every view, training and test alike, ray traced through the lens
//! ([`RayTable`]: no resampling, so the images are exact), written as a COLMAP text folder
//! (`sparse/0` with one camera of that model, `images/`, and `masks/`, 0 on the pixels outside
//! the lens's field: beyond a fisheye's image circle or where the lens has no ray).
//!
//! The split is the COLMAP loader's: with `--eval`, every 8th view by sorted name is a test view.
//! The town's views are its usual ones. The objects scene's views are named `objects_NNNN.png`
//! with its test cameras at every 8th name (one test view per 7 training views). Through a wide
//! lens (wider than [`WIDE_FOV_DEGREES`]) the objects' cameras move in over the platform, low
//! and looking a little up at the centre ([`objects_cameras`]), so the platform around and behind them
//! fills the rim of the view: a wide fisheye photographs scene content more than 90° from its
//! axis.

use std::f64::consts::PI;
use std::path::Path;

use glam::Vec3;

use super::builtin::{self, BuiltinOptions, look_at, sample_points_seen};
use super::capture::{CaptureCamera, CaptureImage, write_colmap_text};
use super::lens_design::FieldLens;
use super::raytrace::{CENTRE_SAMPLE, PIXEL_SAMPLES, RayTable, Scene};
use super::town::{self, TownOptions};
use super::{dataset_error, parallel_map};
use crate::error::{Error, Result};
use crate::splat::Camera;

/// Through a lens wider than this (degrees across the width) the objects scene's cameras stand
/// over the platform ([`objects_cameras`]).
pub const WIDE_FOV_DEGREES: f64 = 120.0;
/// Horizontal distance of the wide lens's objects cameras from the scene's vertical axis (the
/// platform reaches 1).
pub const WIDE_ORBIT_RADIUS: f32 = 0.9;
/// Heights of the wide lens's objects cameras over the platform: training views from the first
/// to the second, test views at the middle (above the small objects, which reach 0.5).
pub const WIDE_HEIGHTS: [f32; 2] = [0.6, 0.9];

/// The closest the objects cameras of a lens up to [`WIDE_FOV_DEGREES`] come to
/// [`builtin::LOOK_AT`]: at 15° elevation they still clear every object (which reach 1.2 from
/// the axis and 1.0 high).
pub const MIN_OBJECTS_DISTANCE: f32 = 1.6;

/// How far above its own height a wide lens's objects camera looks at the axis: about 15° up,
/// so that the platform behind and below it lies more than 90° from its axis.
pub const WIDE_LOOK_UP: f32 = 0.25;

/// What [`write_objects_through`] and [`write_town_through`] wrote.
#[derive(Clone, Debug)]
pub struct LensCapture {
    /// The views, in name order, with their test flag (every 8th).
    pub views: Vec<(String, bool)>,
    /// The points of the sparse cloud.
    pub points: usize,
    /// The lens every view was photographed through.
    pub lens: FieldLens,
}

/// The objects scene's cameras through `field`, in name order (`objects_NNNN.png`), each with
/// its test flag: views `0, 8, 16, ...` are the test views, `options.train_views` training views
/// fill the rest (so there are `ceil(train / 7)` test views; `options.test_views` is not used).
/// Up to [`WIDE_FOV_DEGREES`] the cameras are the built-in ones (a spiral over elevations
/// 15°..65° and a ring at 35°), moved in or out so that the scene fills as much of the view as
/// it fills the built-in one ([`objects_distance`]); wider, they circle over the platform at
/// [`WIDE_ORBIT_RADIUS`] from the axis, at heights [`WIDE_HEIGHTS`], each looking at the axis
/// [`WIDE_LOOK_UP`] above its own height. Every camera carries the lens's focal length and principal point.
pub fn objects_cameras(options: &BuiltinOptions, field: &FieldLens) -> Vec<(String, Camera, bool)> {
    let train_count = options.train_views;
    let test_count = train_count.div_ceil(7);
    let (train, test) = if field.fov_degrees > WIDE_FOV_DEGREES {
        wide_cameras(options, train_count, test_count)
    } else {
        let options = BuiltinOptions {
            test_views: test_count,
            ..options.clone()
        };
        builtin::cameras_at(&options, objects_distance(field.fov_degrees))
    };
    let mut out = Vec::with_capacity(train_count + test_count);
    for i in 0..train_count + test_count {
        let is_test = i.is_multiple_of(8);
        let mut camera = if is_test {
            test[i / 8].clone()
        } else {
            train[i - i / 8 - 1].clone()
        };
        with_lens(&mut camera, field);
        out.push((format!("objects_{i:04}.png"), camera, is_test));
    }
    out
}

/// The objects cameras' distance from [`builtin::LOOK_AT`] through a lens seeing `fov_degrees`
/// across (up to [`WIDE_FOV_DEGREES`]): where the built-in camera's half width
/// ([`builtin::CAMERA_ANGLE_X`] at [`builtin::CAMERA_DISTANCE`]) spans the lens's, but no
/// closer than [`MIN_OBJECTS_DISTANCE`].
pub fn objects_distance(fov_degrees: f64) -> f32 {
    let half_width = builtin::CAMERA_DISTANCE * (0.5 * builtin::CAMERA_ANGLE_X).tan();
    let half_fov = (0.5 * fov_degrees.to_radians()) as f32;
    (half_width / half_fov.tan()).max(MIN_OBJECTS_DISTANCE)
}

/// Cameras over the platform for a wide lens (see [`objects_cameras`]).
fn wide_cameras(options: &BuiltinOptions, train: usize, test: usize) -> (Vec<Camera>, Vec<Camera>) {
    let size = options.resolution;
    let camera = |azimuth: f32, height: f32| {
        let (sin, cos) = azimuth.sin_cos();
        let eye = [WIDE_ORBIT_RADIUS * cos, WIDE_ORBIT_RADIUS * sin, height];
        let target = [0.0, 0.0, height + WIDE_LOOK_UP];
        let fx = builtin::focal_length(size);
        look_at(
            eye,
            target,
            [0.0, 0.0, 1.0],
            size,
            size,
            fx,
            options.background,
        )
    };
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    let [low, high] = WIDE_HEIGHTS;
    let train = (0..train)
        .map(|i| {
            camera(
                golden * i as f32,
                low + (high - low) * (i as f32 + 0.5) / train as f32,
            )
        })
        .collect();
    let test = (0..test)
        .map(|i| {
            let azimuth = std::f32::consts::TAU * (i as f32 + 0.37) / test as f32;
            camera(azimuth, 0.5 * (low + high))
        })
        .collect();
    (train, test)
}

/// Gives `camera` the focal length and principal point of `field`'s lens.
fn with_lens(camera: &mut Camera, field: &FieldLens) {
    camera.fx = field.lens.fx as f32;
    camera.fy = field.lens.fy as f32;
    camera.cx = field.lens.cx as f32;
    camera.cy = field.lens.cy as f32;
}

/// Writes the objects scene at `options` (resolution, training views, points) photographed
/// through `field` (designed for a `resolution`² image) to the COLMAP folder `dir`, which must
/// not exist yet or be empty.
pub fn write_objects_through(
    dir: &Path,
    options: &BuiltinOptions,
    field: &FieldLens,
) -> Result<LensCapture> {
    if options.resolution == 0 || options.train_views == 0 {
        return Err(Error::InvalidArgument {
            op: "lens_capture::write_objects_through",
            detail: format!(
                "resolution {} and train_views {} must both be at least 1",
                options.resolution, options.train_views
            ),
        });
    }
    let views = objects_cameras(options, field);
    let scene = builtin::scene();
    let size = (options.resolution, options.resolution);
    let rays = field_rays(field, size, &PIXEL_SAMPLES);
    write_through(dir, &scene, &views, &rays, field, options.points, 0x5EED)
}

/// Writes the town at `options` photographed through `field` (designed for the town's image
/// size) to the COLMAP folder `dir`, which must not exist yet or be empty. The views are the
/// town's, named as [`town::view_name`].
pub fn write_town_through(
    dir: &Path,
    options: &TownOptions,
    field: &FieldLens,
) -> Result<LensCapture> {
    let size = (options.resolution, options.height());
    if options.blocks_per_side == 0 || options.views == 0 || size.0 == 0 || size.1 == 0 {
        return Err(Error::InvalidArgument {
            op: "lens_capture::write_town_through",
            detail: format!(
                "blocks per side {}, views {}, width {} and height {} must all be at least 1",
                options.blocks_per_side, options.views, size.0, size.1
            ),
        });
    }
    let views: Vec<_> = town::cameras(options)
        .into_iter()
        .enumerate()
        .map(|(i, mut camera)| {
            with_lens(&mut camera, field);
            (town::view_name(i), camera, i.is_multiple_of(8))
        })
        .collect();
    let samples: &[[f32; 2]] = if options.supersampled {
        &PIXEL_SAMPLES
    } else {
        &CENTRE_SAMPLE
    };
    let rays = field_rays(field, size, samples);
    let seed = options.seed ^ 0x5EED;
    write_through(
        dir,
        &town::scene(options),
        &views,
        &rays,
        field,
        options.points,
        seed,
    )
}

/// The rays of `field` for images of `size`: pixels wholly inside its field.
fn field_rays(field: &FieldLens, size: (u32, u32), samples: &[[f32; 2]]) -> RayTable {
    RayTable::new(&field.lens, size.0, size.1, samples, field.field_limit).whole_pixels()
}

/// Ray traces `views` of `scene` through `rays`, samples `points` seen through the lens, and
/// writes the COLMAP folder `dir` with one camera and a mask per image.
fn write_through(
    dir: &Path,
    scene: &Scene,
    views: &[(String, Camera, bool)],
    rays: &RayTable,
    field: &FieldLens,
    points: usize,
    seed: u64,
) -> Result<LensCapture> {
    if let Ok(mut entries) = std::fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(dataset_error(
            dir,
            "the output folder exists and is not empty: choose a new folder or remove it",
        ));
    }
    let mask = rays.mask();
    let images = parallel_map(views, |(name, camera, _)| {
        Ok(CaptureImage {
            name: name.clone(),
            camera_id: 1,
            camera: camera.clone(),
            image: scene.render_rays(camera, rays),
            mask: Some(mask.clone()),
        })
    })?;
    let (width, height) = rays.size();
    let cameras: Vec<Camera> = views.iter().map(|(_, c, _)| c.clone()).collect();
    let cloud = sample_points_seen(scene, &cameras, points, seed, &|_, c| {
        in_field(field, (width, height), c)
    });
    let capture_camera = CaptureCamera {
        id: 1,
        lens: field.lens,
        width,
        height,
    };
    write_colmap_text(dir, &[capture_camera], &images, Some(&cloud))?;
    Ok(LensCapture {
        views: views.iter().map(|(n, _, t)| (n.clone(), *t)).collect(),
        points: cloud.len(),
        lens: *field,
    })
}

/// True when camera-space point `c` lies inside `field`'s image of `size`: in its field and
/// projecting inside the image.
fn in_field(field: &FieldLens, size: (u32, u32), c: [f32; 3]) -> bool {
    let d = Vec3::from(c).as_dvec3();
    let length = d.length();
    if length == 0.0 || (field.field_limit < PI && d.z / length < field.field_limit.cos()) {
        return false;
    }
    field.lens.project_ray(d.to_array()).is_some_and(|[u, v]| {
        u >= 0.0 && v >= 0.0 && u < f64::from(size.0) && v < f64::from(size.1)
    })
}

/// The angle (radians) between the optical axis and the ray of pixel centre (`x`, `y`) through
/// `field`'s lens, `None` where it has no ray.
pub fn pixel_angle(field: &FieldLens, x: u32, y: u32) -> Option<f64> {
    let d = field.lens.ray([f64::from(x) + 0.5, f64::from(y) + 0.5])?;
    Some(d[2].clamp(-1.0, 1.0).acos())
}
