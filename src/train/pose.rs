//! The training views' learned pose corrections (`TrainConfig::pose_opt`): one
//! [`PoseCorrection`] per view with its Adam moments, stepped on the CPU in f64 from the eight
//! floats of the step's pose gradient ([`crate::splat::pose`]).
//!
//! The step's gradient is read back at the end of the step that rendered the view, so the next
//! step (whichever view it draws) renders with every correction up to date, and a checkpoint
//! taken between steps holds the whole state: resumes are bit-exact.

use crate::error::{Error, Result};
use crate::splat::Camera;
use crate::splat::pose::{PoseCorrection, WorldPoseGradient, correction_gradient};

/// Adam's settings for the corrections (the learning rate is given per step).
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-15;

/// The key under which a checkpoint's `extra` JSON holds the pose state.
pub const POSE_KEY: &str = "pose";

/// Every training view's correction and Adam state.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoseState {
    /// The corrections, one per training view.
    pub corrections: Vec<PoseCorrection>,
    /// Adam's first moments, six per view (τ then ε).
    pub m: Vec<[f64; 6]>,
    /// Adam's second moments.
    pub v: Vec<[f64; 6]>,
    /// Adam steps taken per view.
    pub steps: Vec<u64>,
}

/// Summary of the corrections, for logs and `metrics.json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PoseSummary {
    /// Mean rotation of the corrections, degrees.
    pub mean_rotation_degrees: f64,
    /// Largest rotation, degrees.
    pub max_rotation_degrees: f64,
    /// Mean shift, in scene extents.
    pub mean_shift_extent: f64,
    /// Largest shift, in scene extents.
    pub max_shift_extent: f64,
}

impl PoseState {
    /// No correction for `views` views.
    pub fn identity(views: usize) -> PoseState {
        PoseState {
            corrections: vec![PoseCorrection::default(); views],
            m: vec![[0.0; 6]; views],
            v: vec![[0.0; 6]; views],
            steps: vec![0; views],
        }
    }

    /// The camera view `view` renders with: `base` moved by its correction.
    pub fn camera(&self, view: usize, base: &Camera) -> Camera {
        self.corrections[view].apply(base)
    }

    /// One Adam step of view `view`'s correction from the kernel's floats (`world`, rendered
    /// with [`PoseState::camera`] of `base`). The rotation steps with `lr` (radians), the shift
    /// with `lr * extent`.
    pub fn step(
        &mut self,
        view: usize,
        base: &Camera,
        world: &[f32],
        lr: f64,
        extent: f64,
    ) -> Result<()> {
        let world =
            WorldPoseGradient::from_floats(world).ok_or_else(|| Error::InvalidArgument {
                op: "pose step",
                detail: format!("the pose gradient has {} floats, not 8", world.len()),
            })?;
        let gradient = correction_gradient(base, &self.corrections[view], &world);
        if gradient.iter().any(|g| !g.is_finite()) {
            return Err(Error::NonFinite {
                what: format!("the pose gradient of training view {view}"),
                value: f32::NAN,
            });
        }
        self.steps[view] += 1;
        let t = self.steps[view].min(i32::MAX as u64) as i32;
        let (bias1, bias2) = (1.0 - BETA1.powi(t), 1.0 - BETA2.powi(t));
        let mut params = self.corrections[view].to_array();
        for k in 0..6 {
            let g = gradient[k];
            let m = BETA1 * self.m[view][k] + (1.0 - BETA1) * g;
            let v = BETA2 * self.v[view][k] + (1.0 - BETA2) * g * g;
            self.m[view][k] = m;
            self.v[view][k] = v;
            let rate = if k < 3 { lr * extent } else { lr };
            params[k] -= rate * (m / bias1) / ((v / bias2).sqrt() + EPS);
        }
        self.corrections[view] = PoseCorrection::from_array(params);
        Ok(())
    }

    /// The state as a checkpoint's JSON section (f64 values round-trip exactly).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The state a checkpoint's `extra` holds under [`POSE_KEY`], for `views` training views.
    pub fn from_checkpoint(extra: &serde_json::Value, views: usize) -> Result<PoseState> {
        let damaged = |why: String| Error::InvalidArgument {
            op: "resume",
            detail: format!(
                "the checkpoint was trained with pose refinement but its {POSE_KEY} section {why}; \
                 resume from another checkpoint or train afresh"
            ),
        };
        let section = extra
            .get(POSE_KEY)
            .ok_or_else(|| damaged("is missing".into()))?;
        let state: PoseState = serde_json::from_value(section.clone())
            .map_err(|e| damaged(format!("is damaged ({e})")))?;
        let lengths = [
            state.corrections.len(),
            state.m.len(),
            state.v.len(),
            state.steps.len(),
        ];
        if lengths.iter().any(|&n| n != views) {
            return Err(Error::InvalidArgument {
                op: "resume",
                detail: format!(
                    "the checkpoint has pose corrections for {lengths:?} training views, the dataset has {views}; \
                     resume with the dataset and split it was trained on"
                ),
            });
        }
        let finite = state
            .corrections
            .iter()
            .all(|c| c.to_array().iter().all(|x| x.is_finite()))
            && state
                .m
                .iter()
                .chain(&state.v)
                .flatten()
                .all(|x| x.is_finite());
        if !finite {
            return Err(damaged("holds values that are not finite".into()));
        }
        Ok(state)
    }

    /// The corrections' sizes; shifts relative to `extent`.
    pub fn summary(&self, extent: f64) -> PoseSummary {
        let n = self.corrections.len().max(1) as f64;
        let angles = self.corrections.iter().map(|c| c.angle_degrees());
        let shifts = self
            .corrections
            .iter()
            .map(|c| c.shift() / extent.max(1e-12));
        PoseSummary {
            mean_rotation_degrees: angles.clone().sum::<f64>() / n,
            max_rotation_degrees: angles.fold(0.0, f64::max),
            mean_shift_extent: shifts.clone().sum::<f64>() / n,
            max_shift_extent: shifts.fold(0.0, f64::max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_damaged_pose_section_is_refused_with_what_is_wrong() {
        let good = PoseState::identity(2);
        let extra = json!({ POSE_KEY: good.to_json() });
        assert_eq!(PoseState::from_checkpoint(&extra, 2).unwrap(), good);
        let cases = [
            (json!({}), "missing"),
            (json!({ POSE_KEY: {"corrections": "x"} }), "damaged"),
            (
                json!({ POSE_KEY: PoseState::identity(3).to_json() }),
                "dataset has 2",
            ),
        ];
        for (extra, wanted) in cases {
            let err = PoseState::from_checkpoint(&extra, 2)
                .unwrap_err()
                .to_string();
            assert!(err.contains(wanted), "{err}");
        }
    }

    #[test]
    fn adam_moves_each_parameter_against_its_gradient_by_the_rate() {
        let mut state = PoseState::identity(1);
        let base = Camera::facing_origin(8, 8, 4.0, [0.0; 3]);
        // dL/db along +x in world = camera x: the shift steps by -lr * extent along x.
        state
            .step(
                0,
                &base,
                &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                0.01,
                2.0,
            )
            .unwrap();
        let c = state.corrections[0];
        assert!((c.translation[0] + 0.02).abs() < 1e-9, "{c:?}");
        // The camera's translation is 4 along z, so a shift gradient also turns the camera.
        assert!((c.rotation[1] + 0.01).abs() < 1e-9, "{c:?}");
        assert_eq!(c.translation[1], 0.0);
        assert_eq!(c.rotation[0], 0.0);
    }
}
