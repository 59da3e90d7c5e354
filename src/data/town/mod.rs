//! The built-in town: a large scene for the scale-out commands. A square grid of blocks (houses
//! with windows, bricks and roofs, parks with trees, plazas with round towers, cars on the roads)
//! on a wide textured ground, ray traced on the CPU ([`super::raytrace`]) from drone-like views:
//! cameras at a fixed altitude looking forward and down at an oblique angle, flown on two
//! lawnmower paths (one along x, one along y, rows in alternating directions), so that every
//! facade is seen from the front and every part of the town by several views, while each view
//! covers only a small part of it.
//!
//! Views are named `town_0000.png`, ... in flight order. As with a COLMAP capture, the split
//! ([`Split`]) decides the test views: [`Split::Default`] holds out every 8th. The sparse point
//! cloud is sampled on the surfaces some view sees, coloured with their radiance.
//! [`super::colmap_write::write_colmap_dataset`] writes the town as a COLMAP folder.

mod layout;

use std::path::Path;

pub use layout::scene;

use super::builtin::{look_at, sample_points};
use super::raytrace::{CENTRE_SAMPLE, PIXEL_SAMPLES, Scene};
use super::{AlphaMeaning, Dataset, Split, View, parallel_map, split_views};
use crate::error::{Error, Result};
use crate::rng::SplitMix64;
use crate::splat::Camera;

/// Distance between the centre lines of neighbouring roads (a block and a road).
pub const BLOCK_PITCH: f32 = 1.0;
/// Width of a road.
pub const ROAD_WIDTH: f32 = 0.2;
/// Height of the cameras above the ground.
pub const ALTITUDE: f32 = 1.4;
/// Angle of the cameras' optical axis below the horizon, in degrees.
pub const PITCH_DEGREES: f32 = 55.0;
/// Horizontal field of view, in degrees (vertical too for square images).
pub const FIELD_OF_VIEW_DEGREES: f32 = 60.0;

/// Parameters of the town.
#[derive(Clone, Debug, PartialEq)]
pub struct TownOptions {
    /// Blocks along each side of the square town.
    pub blocks_per_side: u32,
    /// Number of views (train and test together).
    pub views: usize,
    /// Image width in pixels (and height, unless `height` is given).
    pub resolution: u32,
    /// Image height in pixels; `None` for square images.
    pub height: Option<u32>,
    /// Four rays per pixel (antialiased edges), or one through each pixel's centre when
    /// false: four times faster to generate, for captures of many large images.
    pub supersampled: bool,
    /// Number of points in the sparse cloud.
    pub points: usize,
    /// Seed of the layout, the flight jitter and the point sampling.
    pub seed: u64,
    /// Background colour given to the cameras (the ground fills every image, so it shows only
    /// where a model leaves gaps).
    pub background: [f32; 3],
}

impl Default for TownOptions {
    /// The demo size: 8 × 8 blocks, 256 views of 128², 16,000 points.
    fn default() -> Self {
        TownOptions {
            blocks_per_side: 8,
            views: 256,
            resolution: 128,
            height: None,
            supersampled: true,
            points: 16_000,
            seed: 1,
            background: [0.0; 3],
        }
    }
}

impl TownOptions {
    /// The test size: 3 × 3 blocks, 48 views of 48², 2,000 points.
    pub fn small() -> Self {
        TownOptions {
            blocks_per_side: 3,
            views: 48,
            resolution: 48,
            points: 2_000,
            ..TownOptions::default()
        }
    }

    fn validate(&self) -> Result<()> {
        let height = self.height();
        if self.blocks_per_side == 0 || self.views == 0 || self.resolution == 0 || height == 0 {
            return Err(Error::InvalidArgument {
                op: "town::generate",
                detail: format!(
                    "blocks per side {}, views {}, width {} and height {height} must all be at least 1",
                    self.blocks_per_side, self.views, self.resolution
                ),
            });
        }
        Ok(())
    }

    /// Image height in pixels.
    pub fn height(&self) -> u32 {
        self.height.unwrap_or(self.resolution)
    }
}

/// Half the side of the town proper (blocks and the roads around them).
pub fn town_half_size(blocks_per_side: u32) -> f32 {
    0.5 * (blocks_per_side as f32 * BLOCK_PITCH + ROAD_WIDTH)
}

/// Half the side of the ground: the town plus a margin wide enough that no view sees past it.
pub fn ground_half_size(blocks_per_side: u32) -> f32 {
    town_half_size(blocks_per_side) + 4.0 * ALTITUDE
}

/// The name of view `index`.
pub fn view_name(index: usize) -> String {
    format!("town_{index:04}.png")
}

/// Focal length in pixels of a view `width` pixels wide.
pub fn focal_length(width: u32) -> f32 {
    0.5 * width as f32 / (0.5 * FIELD_OF_VIEW_DEGREES.to_radians()).tan()
}

/// The cameras of every view, in flight order: half the views on a lawnmower path along x, the
/// rest on one along y. On each path the points where the optical axes meet the ground are
/// spread evenly along rows that cover the town; heading, altitude and those points are jittered
/// a little (from the seed).
pub fn cameras(options: &TownOptions) -> Vec<Camera> {
    let mut rng = SplitMix64::new(options.seed ^ 0xF11E);
    let half = town_half_size(options.blocks_per_side);
    let side = 2.0 * half;
    let (width, height) = (options.resolution, options.height());
    let fx = focal_length(width);
    let along_x = options.views.div_ceil(2);
    let mut cameras = Vec::with_capacity(options.views);
    for (pass, count) in [(0, along_x), (1, options.views - along_x)] {
        let rows = ((count as f32).sqrt().round() as usize).max(1);
        let path = rows as f32 * side;
        for i in 0..count {
            let s = (i as f32 + 0.5) * path / count as f32;
            let row = ((s / side) as usize).min(rows - 1);
            let along = s - row as f32 * side;
            let forward = if row.is_multiple_of(2) { 1.0 } else { -1.0 };
            let along = if forward > 0.0 {
                along - half
            } else {
                half - along
            };
            let across = -half + (row as f32 + 0.5) * side / rows as f32;
            let jitter = 0.15 * side / rows as f32;
            let target = [
                along + rng.range(-jitter, jitter),
                across + rng.range(-jitter, jitter),
            ];
            let heading = rng.range(-8.0, 8.0).to_radians();
            let (sin, cos) = heading.sin_cos();
            let direction = [forward * cos, forward * sin];
            let altitude = ALTITUDE * rng.range(0.92, 1.08);
            let back = altitude / PITCH_DEGREES.to_radians().tan();
            let mut eye = [0, 1].map(|k| target[k] - back * direction[k]);
            let mut ground_target = target;
            if pass == 1 {
                eye.swap(0, 1);
                ground_target.swap(0, 1);
            }
            cameras.push(look_at(
                [eye[0], eye[1], altitude],
                [ground_target[0], ground_target[1], 0.0],
                [0.0, 0.0, 1.0],
                width,
                height,
                fx,
                options.background,
            ));
        }
    }
    cameras
}

/// Generates the town: every view ray traced (in parallel), the points sampled, the views split
/// into train and test by `split` (by sorted name, as a COLMAP capture).
pub fn generate(options: &TownOptions, split: &Split) -> Result<Dataset> {
    options.validate()?;
    let scene = scene(options);
    let cameras = cameras(options);
    let samples: &[[f32; 2]] = if options.supersampled {
        &PIXEL_SAMPLES
    } else {
        &CENTRE_SAMPLE
    };
    let views = render_views(&scene, &cameras, samples)?;
    let points = sample_points(&scene, &cameras, options.points, options.seed ^ 0x5EED);
    let (train, test) = split_views(views, split, None, Path::new("built-in town"), true)?;
    Ok(Dataset::new(train, test, Some(points)))
}

/// The views of `cameras` in `scene`, named by [`view_name`].
fn render_views(scene: &Scene, cameras: &[Camera], samples: &[[f32; 2]]) -> Result<Vec<View>> {
    let jobs: Vec<(usize, &Camera)> = cameras.iter().enumerate().collect();
    parallel_map(&jobs, |&(i, camera)| {
        Ok(View {
            name: view_name(i),
            path: None,
            camera: camera.clone(),
            image: scene.render_sampled(camera, samples),
            alpha: AlphaMeaning::Coverage,
            source: None,
        })
    })
}
