//! Synthetic captures for the partition and merge tests: a drone survey over a flat ground (world
//! z up, optionally tilted), cameras in a grid looking down, points scattered on the ground.

use wgsplat::data::{Dataset, PointCloud, RgbaImage, View};
use wgsplat::splat::Camera;
use wgsplat::testing::TestRng;

/// Image side of the synthetic views (only their size matters to the partition).
pub const SIDE: u32 = 16;

/// `rotation` applied to a world vector.
pub fn rotate(rotation: [[f32; 3]; 3], p: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|r| rotation[r][0] * p[0] + rotation[r][1] * p[1] + rotation[r][2] * p[2])
}

/// A rotation about the x axis by `angle` radians.
pub fn tilt_about_x(angle: f32) -> [[f32; 3]; 3] {
    let (s, c) = angle.sin_cos();
    [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]]
}

/// A camera at `eye` (world) looking straight down (-z), image x along world +x, in a world
/// turned by `world` (a rotation applied to every world point).
pub fn down_camera(eye: [f32; 3], world: [[f32; 3]; 3], fov_deg: f32) -> Camera {
    // Camera axes in the unturned world: right +x, down -y (image y), forward -z.
    let axes = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]].map(|a| rotate(world, a));
    let eye = rotate(world, eye);
    let translation =
        [0, 1, 2].map(|r| -(axes[r][0] * eye[0] + axes[r][1] * eye[1] + axes[r][2] * eye[2]));
    let f = 0.5 * SIDE as f32 / (0.5 * fov_deg.to_radians()).tan();
    Camera {
        lens: Default::default(),
        rotation: axes,
        translation,
        fx: f,
        fy: f,
        cx: 0.5 * SIDE as f32,
        cy: 0.5 * SIDE as f32,
        width: SIDE,
        height: SIDE,
        near: 0.01,
        far: 1e4,
        background: [0.0; 3],
    }
}

/// A survey: `nx` × `ny` cameras at height `height` over `[0, nx·spacing) × [0, ny·spacing)`
/// (jittered), `points` ground points over the same area, all turned by `world`.
pub fn survey(nx: usize, ny: usize, points: usize, world: [[f32; 3]; 3], seed: u64) -> Dataset {
    let mut rng = TestRng::new(seed);
    let spacing = 1.0;
    let mut train = Vec::new();
    for i in 0..nx {
        for j in 0..ny {
            let eye = [
                (i as f32 + 0.5 + 0.3 * (rng.unit() - 0.5)) * spacing,
                (j as f32 + 0.5 + 0.3 * (rng.unit() - 0.5)) * spacing,
                2.0,
            ];
            train.push(View {
                name: format!("v_{i:03}_{j:03}.png"),
                path: None,
                camera: down_camera(eye, world, 60.0),
                image: RgbaImage::new(SIDE, SIDE),
                alpha: Default::default(),
                source: None,
            });
        }
    }
    let mut cloud = PointCloud::default();
    for _ in 0..points {
        let p = [
            rng.unit() * nx as f32 * spacing,
            rng.unit() * ny as f32 * spacing,
            0.1 * rng.unit(),
        ];
        cloud.positions.push(rotate(world, p));
        cloud.colors.push([0.5; 3]);
    }
    Dataset::new(train, Vec::new(), Some(cloud))
}
