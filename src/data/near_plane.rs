//! The near plane every front end draws a capture with: Gaussians whose centre lies nearer a
//! camera than this depth are not drawn, in training, evaluation, `render`, the viewer and the
//! page alike. A Gaussian that close to a camera fills the view; between training cameras,
//! where no training view sees it so, such a Gaussian is a veil over a held-out view
//! ([`crate::train::clearance`] prunes those near the cameras' path). INRIA's rasterizer drops
//! Gaussians within 0.2 of the camera in the scene's units; here the distance is relative to the
//! capture: [`NEAR_PLANE_FRACTION`] of the median distance between neighbouring training
//! cameras, never below [`DEFAULT_NEAR`]. A trained model records the value it was trained
//! with (the PLY's header, `metrics.json`, checkpoints), and the front ends drawing it use that.

use super::{DEFAULT_NEAR, Dataset};
use crate::error::{Error, Result};

/// The near plane, as a fraction of the median distance from each training camera to its
/// nearest neighbour. 0.2: on a walk round a courtyard (cameras 0.7 to 0.9 apart) it drops the
/// opaque Gaussians 0.08 to 0.16 from a held-out view, and on the shared captures no
/// structure-from-motion point lies nearer any camera than 0.26 spacings (Sceaux) or outside a
/// few three-view points (monstree; docs/training.md).
pub const NEAR_PLANE_FRACTION: f32 = 0.2;

/// The largest near plane accepted (`--near-plane`), in the scene's units.
pub const MAX_NEAR_PLANE: f32 = 1.0e6;

/// The default near plane for cameras at `centres` (the training cameras): [`NEAR_PLANE_FRACTION`]
/// of their median nearest-neighbour spacing, at least [`DEFAULT_NEAR`] (which one camera, or
/// cameras all at one point, get).
pub fn near_plane_for(centres: &[[f32; 3]]) -> f32 {
    crate::geometry::nearest_others(centres, 1)
        .median_spacing()
        .map(|spacing| NEAR_PLANE_FRACTION * spacing)
        .filter(|near| near.is_finite())
        .map_or(DEFAULT_NEAR, |near| {
            near.clamp(DEFAULT_NEAR, MAX_NEAR_PLANE)
        })
}

/// Checks a near plane given by a user or read from a model (`what` names where it came from):
/// finite, positive and at most [`MAX_NEAR_PLANE`].
pub fn check_near_plane(near: f32, what: &str) -> Result<f32> {
    match near.is_finite() && near > 0.0 && near <= MAX_NEAR_PLANE {
        true => Ok(near),
        false => Err(Error::InvalidSetting {
            name: what.into(),
            value: near.to_string(),
            expected: format!(
                "a positive distance in the scene's units, at most {MAX_NEAR_PLANE} (the depth \
                 before each camera within which Gaussians are not drawn)"
            ),
        }),
    }
}

impl Dataset {
    /// The default near plane of this dataset: [`near_plane_for`] its training cameras.
    pub fn default_near_plane(&self) -> f32 {
        let centres: Vec<[f32; 3]> = self.train.iter().map(|v| v.camera.position()).collect();
        near_plane_for(&centres)
    }

    /// Gives every view, train and test, the near plane `near` (kept below each camera's far
    /// plane).
    pub fn set_near_plane(&mut self, near: f32) {
        for view in self.train.iter_mut().chain(self.test.iter_mut()) {
            view.camera.near = near.min(0.5 * view.camera.far);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_near_plane_is_a_fifth_of_the_median_spacing() {
        // A walk 0.8 apart with one gap: spacings 0.8 everywhere.
        let walk: Vec<[f32; 3]> = (0..11)
            .filter(|&k| k != 5)
            .map(|k| [0.8 * k as f32, 1.5, 0.0])
            .collect();
        assert!((near_plane_for(&walk) - 0.16).abs() < 1e-6);
        // Scaled, the near plane scales with it; dense cameras keep the old 0.01.
        let far: Vec<[f32; 3]> = walk.iter().map(|p| p.map(|v| 10.0 * v)).collect();
        assert!((near_plane_for(&far) - 1.6).abs() < 1e-5);
        let dense: Vec<[f32; 3]> = walk.iter().map(|p| p.map(|v| 0.01 * v)).collect();
        assert_eq!(near_plane_for(&dense), DEFAULT_NEAR);
        assert_eq!(near_plane_for(&[]), DEFAULT_NEAR);
        assert_eq!(near_plane_for(&[[1.0; 3]; 3]), DEFAULT_NEAR);
        assert_eq!(near_plane_for(&[[f32::NAN; 3], [0.0; 3]]), DEFAULT_NEAR);
    }

    #[test]
    fn near_planes_are_checked() {
        assert_eq!(check_near_plane(0.2, "--near-plane").unwrap(), 0.2);
        for bad in [0.0, -1.0, f32::NAN, f32::INFINITY, 2.0e6] {
            let err = check_near_plane(bad, "--near-plane")
                .unwrap_err()
                .to_string();
            assert!(err.contains("--near-plane"), "{bad}: {err}");
        }
    }
}
