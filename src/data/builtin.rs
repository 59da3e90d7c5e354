//! The built-in scene: a textured platform with three spheres and a box, ray traced on the CPU
//! ([`raytrace`](super::raytrace)) from cameras on a hemisphere around it, deterministic, with a
//! sparse point cloud sampled on the visible surfaces. It needs no files; [`write_nerf_synthetic`]
//! saves it (or any dataset) as a NeRF-synthetic folder for inspection.

use std::path::Path;

use glam::Vec3;
use serde_json::json;

use super::init::SplitMix64;
use super::nerf::opencv_w2c_to_opengl_c2w;
use super::raytrace::{Object, Scene, Shape, Texture};
use super::{Dataset, PointCloud, View, dataset_error, parallel_map};
use crate::error::{Error, Result};
use crate::splat::Camera;

/// Horizontal field of view of the built-in cameras (Blender 'lego's `camera_angle_x`).
pub const CAMERA_ANGLE_X: f32 = 0.691_111_2;
/// Distance of every built-in camera from [`LOOK_AT`].
pub const CAMERA_DISTANCE: f32 = 4.0;
/// The point every built-in camera looks at.
pub const LOOK_AT: [f32; 3] = [0.0, 0.0, 0.3];

/// Parameters of the built-in scene.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinOptions {
    /// Image width and height in pixels.
    pub resolution: u32,
    /// Number of training views (a spiral over elevations 15°..65°).
    pub train_views: usize,
    /// Number of test views (a ring at 35° elevation, between the training azimuths).
    pub test_views: usize,
    /// Number of points in the sparse cloud.
    pub points: usize,
    /// Background colour given to the cameras (the images themselves are transparent there).
    pub background: [f32; 3],
}

impl Default for BuiltinOptions {
    fn default() -> Self {
        BuiltinOptions {
            resolution: 128,
            train_views: 48,
            test_views: 8,
            points: 4000,
            background: [0.0; 3],
        }
    }
}

/// The analytic scene (world z up): a checkered platform, a striped sphere at the centre, a
/// gradient sphere, a small orange sphere and a checkered box.
pub fn scene() -> Scene {
    let z_axis = [0.0, 0.0, 1.0];
    let x_axis = [1.0, 0.0, 0.0];
    Scene::new(
        vec![
            Object {
                shape: Shape::Cuboid {
                    min: [-1.0, -1.0, -0.1],
                    max: [1.0, 1.0, 0.0],
                },
                texture: Texture::Checker {
                    even: [0.9, 0.9, 0.85],
                    odd: [0.25, 0.3, 0.35],
                    size: 0.25,
                },
            },
            Object {
                shape: Shape::Sphere {
                    center: [0.0, 0.0, 0.5],
                    radius: 0.5,
                },
                texture: Texture::Stripes {
                    even: [0.85, 0.2, 0.15],
                    odd: [0.95, 0.85, 0.3],
                    axis: z_axis,
                    period: 0.18,
                },
            },
            Object {
                shape: Shape::Sphere {
                    center: [0.6, -0.55, 0.25],
                    radius: 0.25,
                },
                texture: Texture::Gradient {
                    from: [0.1, 0.3, 0.9],
                    to: [0.1, 0.8, 0.3],
                    axis: x_axis,
                    start: 0.35,
                    end: 0.85,
                },
            },
            Object {
                shape: Shape::Sphere {
                    center: [-0.55, -0.6, 0.15],
                    radius: 0.15,
                },
                texture: Texture::Solid([1.0, 0.55, 0.1]),
            },
            Object {
                shape: Shape::Cuboid {
                    min: [-0.85, 0.3, 0.0],
                    max: [-0.35, 0.8, 0.5],
                },
                texture: Texture::Checker {
                    even: [0.6, 0.2, 0.7],
                    odd: [0.95, 0.95, 0.95],
                    size: 0.125,
                },
            },
        ],
        Vec3::new(0.5, 0.3, 1.0).normalize().to_array(),
        0.3,
    )
}

/// A camera at `eye` looking at `target` with `up` roughly up in the image (OpenCV: y down).
pub fn look_at(
    eye: [f32; 3],
    target: [f32; 3],
    up: [f32; 3],
    width: u32,
    height: u32,
    fx: f32,
    background: [f32; 3],
) -> Camera {
    let (eye, up) = (Vec3::from(eye), Vec3::from(up));
    let forward = (Vec3::from(target) - eye).normalize();
    let right = forward.cross(up).normalize();
    let down = forward.cross(right);
    let rotation = [right, down, forward];
    Camera {
        lens: Default::default(),
        rotation: rotation.map(|row| row.to_array()),
        translation: rotation.map(|row| -row.dot(eye)),
        fx,
        fy: fx,
        cx: 0.5 * width as f32,
        cy: 0.5 * height as f32,
        width,
        height,
        near: super::DEFAULT_NEAR,
        far: super::DEFAULT_FAR,
        background,
    }
}

/// Focal length in pixels of a built-in camera `width` pixels wide.
pub fn focal_length(width: u32) -> f32 {
    0.5 * width as f32 / (0.5 * CAMERA_ANGLE_X).tan()
}

fn orbit_camera(azimuth: f32, elevation: f32, distance: f32, options: &BuiltinOptions) -> Camera {
    let (sa, ca) = azimuth.sin_cos();
    let (se, ce) = elevation.sin_cos();
    let eye = [0, 1, 2].map(|k| LOOK_AT[k] + distance * [ce * ca, ce * sa, se][k]);
    let size = options.resolution;
    look_at(
        eye,
        LOOK_AT,
        [0.0, 0.0, 1.0],
        size,
        size,
        focal_length(size),
        options.background,
    )
}

/// The training cameras (a golden-angle spiral over elevations 15°..65°, uniform in area) and
/// test cameras (a ring at 35°, offset between training azimuths), [`CAMERA_DISTANCE`] from
/// [`LOOK_AT`].
pub fn cameras(options: &BuiltinOptions) -> (Vec<Camera>, Vec<Camera>) {
    cameras_at(options, CAMERA_DISTANCE)
}

/// [`cameras`] at `distance` from [`LOOK_AT`].
pub fn cameras_at(options: &BuiltinOptions, distance: f32) -> (Vec<Camera>, Vec<Camera>) {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    let (lo, hi) = (15f32.to_radians().sin(), 65f32.to_radians().sin());
    let train = (0..options.train_views)
        .map(|i| {
            let s = lo + (hi - lo) * (i as f32 + 0.5) / options.train_views as f32;
            orbit_camera(golden * i as f32, s.asin(), distance, options)
        })
        .collect();
    let test = (0..options.test_views)
        .map(|i| {
            let azimuth = std::f32::consts::TAU * (i as f32 + 0.37) / options.test_views as f32;
            orbit_camera(azimuth, 35f32.to_radians(), distance, options)
        })
        .collect();
    (train, test)
}

/// True when camera-space point `c` projects inside the pinhole image of `camera`.
fn in_pinhole_image(camera: &Camera, c: [f32; 3]) -> bool {
    let (u, v) = (
        camera.fx * c[0] / c[2] + camera.cx,
        camera.fy * c[1] / c[2] + camera.cy,
    );
    c[2] > 0.0 && u >= 0.0 && v >= 0.0 && u < camera.width as f32 && v < camera.height as f32
}

/// True when `p` (with normal `n`) is seen, unoccluded and inside the image (`in_image` of the
/// camera-space point), by some camera.
fn visible(
    scene: &Scene,
    p: [f32; 3],
    n: [f32; 3],
    cameras: &[Camera],
    in_image: &dyn Fn(&Camera, [f32; 3]) -> bool,
) -> bool {
    cameras.iter().any(|camera| {
        let eye = camera.position();
        let to_eye = Vec3::from(eye) - Vec3::from(p);
        if to_eye.dot(Vec3::from(n)) <= 0.0 || !in_image(camera, camera.to_camera(p)) {
            return false;
        }
        let distance = to_eye.length();
        let origin = Vec3::from(p) + Vec3::from(n) * 1e-4;
        scene
            .intersect(origin.to_array(), to_eye.normalize().to_array())
            .is_none_or(|hit| hit.t >= distance)
    })
}

/// `count` points on the surfaces of `scene` (area-weighted, deterministic in `seed`) that some
/// camera in `cameras` sees, coloured with the scene's radiance there.
pub fn sample_points(scene: &Scene, cameras: &[Camera], count: usize, seed: u64) -> PointCloud {
    sample_points_seen(scene, cameras, count, seed, &in_pinhole_image)
}

/// [`sample_points`] for cameras whose images are not their pinhole's: `in_image` says whether a
/// camera-space point lies inside a camera's image (through its lens).
pub fn sample_points_seen(
    scene: &Scene,
    cameras: &[Camera],
    count: usize,
    seed: u64,
    in_image: &dyn Fn(&Camera, [f32; 3]) -> bool,
) -> PointCloud {
    let mut rng = SplitMix64::new(seed);
    let objects = scene.objects();
    let areas: Vec<f32> = objects.iter().map(|o| o.shape.surface_area()).collect();
    let total: f32 = areas.iter().sum();
    let mut cloud = PointCloud::default();
    let mut attempts = 0;
    while cloud.len() < count && attempts < 100 * count.max(1) {
        attempts += 1;
        let mut pick = rng.next_f32() * total;
        let object = areas.iter().position(|&a| {
            pick -= a;
            pick < 0.0
        });
        let object = object.unwrap_or(areas.len() - 1);
        let (p, n) = objects[object].shape.sample_surface(&mut rng);
        if scene.buried(p, 1e-4, object) || !visible(scene, p, n, cameras, in_image) {
            continue;
        }
        cloud.positions.push(p);
        cloud.colors.push(scene.radiance(object, p, n));
    }
    cloud
}

/// Generates the built-in dataset: views named `./train/r_{i}` and `./test/r_{i}` (as in
/// NeRF-synthetic), images ray traced in parallel, points sampled on the visible surfaces.
pub fn generate(options: &BuiltinOptions) -> Result<Dataset> {
    if options.resolution == 0 || options.train_views == 0 {
        return Err(Error::InvalidArgument {
            op: "builtin::generate",
            detail: format!(
                "resolution {} and train_views {} must both be at least 1",
                options.resolution, options.train_views
            ),
        });
    }
    let scene = scene();
    let (train_cameras, test_cameras) = cameras(options);
    let jobs: Vec<(String, &Camera)> = train_cameras
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("./train/r_{i}"), c))
        .chain(
            test_cameras
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("./test/r_{i}"), c)),
        )
        .collect();
    let mut views = parallel_map(&jobs, |(name, camera)| {
        Ok(View {
            name: name.clone(),
            path: None,
            camera: (*camera).clone(),
            image: scene.render(camera),
            alpha: super::AlphaMeaning::Coverage,
            source: None,
        })
    })?;
    let test = views.split_off(train_cameras.len());
    let points = sample_points(&scene, &train_cameras, options.points, 0x5EED);
    Ok(Dataset::new(views, test, Some(points)))
}

/// Writes `dataset` as a NeRF-synthetic folder in `dir`: `transforms_train.json`,
/// `transforms_test.json` (with `camera_angle_x`, plus `fl_x`, `fl_y`, `cx`, `cy`, `w`, `h` per
/// frame), PNGs under `train/` and `test/`, and `points3d.ply` when there are points. Every file
/// is written atomically.
pub fn write_nerf_synthetic(dataset: &Dataset, dir: &Path) -> Result<()> {
    for (split, views) in [("train", &dataset.train), ("test", &dataset.test)] {
        let folder = dir.join(split);
        std::fs::create_dir_all(&folder)
            .map_err(|e| dataset_error(&folder, format!("could not create the folder: {e}")))?;
        let mut frames = Vec::with_capacity(views.len());
        for (i, view) in views.iter().enumerate() {
            view.image.write_png(&folder.join(format!("r_{i}.png")))?;
            let c = &view.camera;
            let c2w = opencv_w2c_to_opengl_c2w(
                c.rotation.map(|r| r.map(f64::from)),
                c.translation.map(f64::from),
            );
            frames.push(json!({
                "file_path": format!("./{split}/r_{i}"),
                "transform_matrix": c2w,
                "fl_x": c.fx, "fl_y": c.fy, "cx": c.cx, "cy": c.cy, "w": c.width, "h": c.height,
            }));
        }
        let angle_x = views
            .first()
            .or(dataset.train.first())
            .map(|v| 2.0 * (0.5 * v.camera.width as f32 / v.camera.fx).atan());
        let document =
            json!({ "camera_angle_x": angle_x.unwrap_or(CAMERA_ANGLE_X), "frames": frames });
        let path = dir.join(format!("transforms_{split}.json"));
        let text = serde_json::to_string_pretty(&document).map_err(|e| {
            dataset_error(&path, format!("could not serialise the transforms: {e}"))
        })?;
        super::image::write_atomically(&path, text.as_bytes())?;
    }
    if let Some(points) = &dataset.points {
        super::ply::write_points_ply(&dir.join("points3d.ply"), points)?;
    }
    Ok(())
}
