//! Far-field points for captures with a sky: Gaussians on a sphere far outside the scene, coloured
//! from the training photographs, so that the sky and the distant background are modelled where
//! they are (far away) instead of by a few Gaussians near the cameras that grow to fill the
//! frame. Such a Gaussian is a backdrop in the views it was trained from, but it is depth-sorted
//! by its centre, so from another viewpoint it comes in front of the scene and veils the view.
//!
//! The points are a Fibonacci sphere (even spacing, deterministic) of radius
//! `radius_factor × extent` around the scene centre, and at least twice the distance within which
//! 99% of the sparse points lie. Each point takes the per-channel median of the pixels it projects
//! to in up to [`MAX_SAMPLED_VIEWS`] training views; points no sampled view sees are dropped, and
//! so are points whose median is the training background (a synthetic capture's plain backdrop
//! needs no Gaussians: the background already renders it). A direction the scene blocks in the
//! views that see it takes the scene's colour and sits hidden behind it (below the horizon, such
//! points lie behind the ground).

use glam::Vec3;

use super::image::composite;
use super::{AlphaMeaning, Dataset, PointCloud};
use crate::error::Result;

/// At most this many training views (evenly spaced) are read to colour the points.
pub const MAX_SAMPLED_VIEWS: usize = 64;
/// A point whose median colour is within this of the background on every channel is dropped.
pub const BACKGROUND_TOLERANCE: f32 = 10.0 / 255.0;

/// What [`sky_points`] builds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkyPoints {
    /// The kept points, with their colours.
    pub points: PointCloud,
    /// The sphere's radius (world units).
    pub radius: f32,
    /// Points on the whole sphere.
    pub sphere: usize,
    /// Points some sampled view saw.
    pub seen: usize,
    /// Seen points dropped because their colour is the background.
    pub like_background: usize,
}

impl SkyPoints {
    /// One line for a user: how many points, where, and why the others were dropped.
    pub fn summary(&self) -> String {
        format!(
            "sky: {} far-field Gaussians on a sphere of radius {:.3} ({} of {} directions seen by a training view{})",
            self.points.len(),
            self.radius,
            self.seen,
            self.sphere,
            if self.like_background > 0 {
                format!(
                    ", {} of them dropped as the background",
                    self.like_background
                )
            } else {
                String::new()
            }
        )
    }
}

/// `count` evenly spread unit directions (a Fibonacci sphere).
pub fn fibonacci_directions(count: usize) -> Vec<[f32; 3]> {
    let golden_angle = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..count)
        .map(|i| {
            let z = 1.0 - (2.0 * i as f64 + 1.0) / count as f64;
            let r = (1.0 - z * z).max(0.0).sqrt();
            let phi = golden_angle * i as f64;
            [(r * phi.cos()) as f32, (r * phi.sin()) as f32, z as f32]
        })
        .collect()
}

/// The sphere's radius: `radius_factor × extent`, and at least twice the distance from the centre
/// within which 99% of the sparse points lie.
pub fn sky_radius(dataset: &Dataset, radius_factor: f32) -> f32 {
    let mut distances: Vec<f32> = dataset
        .points
        .iter()
        .flat_map(|cloud| &cloud.positions)
        .map(|p| Vec3::from(*p).distance(Vec3::from(dataset.center)))
        .filter(|d| d.is_finite())
        .collect();
    let from_points = if distances.is_empty() {
        0.0
    } else {
        let at = (distances.len() - 1) * 99 / 100;
        let (_, q99, _) = distances.select_nth_unstable_by(at, f32::total_cmp);
        2.0 * *q99
    };
    (radius_factor * dataset.extent).max(from_points)
}

/// The far-field points of `dataset` (see the module documentation): `count` directions on the
/// sphere, kept where a sampled training view sees them and (when `background` is a fixed colour)
/// their colour is not that background. Reads streamed views from disk.
pub fn sky_points(
    dataset: &Dataset,
    count: usize,
    radius_factor: f32,
    background: Option<[f32; 3]>,
) -> Result<SkyPoints> {
    let radius = sky_radius(dataset, radius_factor);
    let positions: Vec<[f32; 3]> = fibonacci_directions(count)
        .into_iter()
        .map(|d| [0, 1, 2].map(|k| dataset.center[k] + radius * d[k]))
        .collect();
    let mut samples: Vec<Vec<[f32; 3]>> = vec![Vec::new(); count];
    let views = &dataset.train;
    let sampled = views.len().min(MAX_SAMPLED_VIEWS);
    for k in 0..sampled {
        let view = views[k * views.len() / sampled].resident()?;
        let camera = &view.camera;
        let image = &view.image;
        for (position, seen) in positions.iter().zip(samples.iter_mut()) {
            let [x, y, z] = camera.to_camera(*position);
            if !(z > camera.near && z < camera.far) {
                continue;
            }
            let u = (camera.fx * x / z + camera.cx).floor();
            let v = (camera.fy * y / z + camera.cy).floor();
            if !(u >= 0.0 && v >= 0.0 && u < image.width as f32 && v < image.height as f32) {
                continue;
            }
            let pixel = image.pixel(u as u32, v as u32);
            let colour = match view.alpha {
                AlphaMeaning::Mask if pixel[3] == 0 => continue,
                // The mask weighs the pixel; its colour counts as it stands.
                AlphaMeaning::Mask => composite([pixel[0], pixel[1], pixel[2], 255], [0.0; 3]),
                AlphaMeaning::Coverage => composite(pixel, camera.background),
            };
            seen.push(colour);
        }
    }
    let mut sky = SkyPoints {
        radius,
        sphere: count,
        ..SkyPoints::default()
    };
    for (position, mut seen) in positions.into_iter().zip(samples) {
        if seen.is_empty() {
            continue;
        }
        sky.seen += 1;
        let colour = median_colour(&mut seen);
        let is_background = background
            .is_some_and(|bg| (0..3).all(|c| (colour[c] - bg[c]).abs() <= BACKGROUND_TOLERANCE));
        if is_background {
            sky.like_background += 1;
            continue;
        }
        sky.points.positions.push(position);
        sky.points.colors.push(colour);
    }
    Ok(sky)
}

/// The per-channel median of `colours` (the lower middle for an even count).
fn median_colour(colours: &mut [[f32; 3]]) -> [f32; 3] {
    let middle = (colours.len() - 1) / 2;
    [0, 1, 2].map(|c| {
        let (_, m, _) = colours.select_nth_unstable_by(middle, |a, b| a[c].total_cmp(&b[c]));
        m[c]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fibonacci_directions_are_unit_and_spread_over_the_sphere() {
        let dirs = fibonacci_directions(1000);
        assert!(
            dirs.iter()
                .all(|d| (Vec3::from(*d).length() - 1.0).abs() < 1e-5)
        );
        // Every octant holds about an eighth of them.
        let mut octants = [0usize; 8];
        for d in &dirs {
            let o = usize::from(d[0] > 0.0)
                | usize::from(d[1] > 0.0) << 1
                | usize::from(d[2] > 0.0) << 2;
            octants[o] += 1;
        }
        assert!(
            octants.iter().all(|&n| (110..=140).contains(&n)),
            "{octants:?}"
        );
    }

    #[test]
    fn the_median_ignores_an_outlier_per_channel() {
        let mut colours = vec![[0.5, 0.1, 0.9], [0.6, 0.9, 0.8], [0.55, 0.2, 0.0]];
        assert_eq!(median_colour(&mut colours), [0.55, 0.2, 0.8]);
    }
}
