//! Camera pose refinement: a rigid correction of a camera and the gradient of the loss with
//! respect to it (`shaders/pose_gradient.wgsl`, with the CPU reference in [`reference`]).
//!
//! A correction `(τ, ε)` moves a camera with world-to-camera rotation `W₀` and translation `t₀`
//! to `W = exp([ε]×) W₀`, `t = exp([ε]×) t₀ + τ`: a rotation about the camera's own axes and a
//! shift in camera coordinates, both zero for the camera as given. For the projection, moving the
//! camera is the same as moving every Gaussian by the inverse motion, so the gradient with
//! respect to the correction follows from the backward pass's per-Gaussian gradients of the means
//! and rotations: the kernel sums them over the model in world coordinates
//! ([`WorldPoseGradient`]) and [`correction_gradient`] turns the sums into `dL/dτ` and `dL/dε`.
//! The view direction of the SH colour is the one term not carried (exact at SH degree 0).

pub mod reference;

use glam::{DMat3, DVec3};

use super::Camera;
use super::GaussianTensors;
use crate::error::Result;
use crate::gpu::kernels::{RowChunk, pose_gradient};
use crate::gpu::{Encoder, MemoryCategory, WorkgroupGrid};
use crate::tensor::{DType, Tensor};

/// Rows one workgroup of the gradient kernel sums (its workgroup size).
const WORKGROUP: u64 = 256;
/// Floats per record and in the result: `dL/db` then `dL/de`, each a vec4 with `w` unused.
const RECORD_FLOATS: usize = 8;

/// The sums of one view's step, in world coordinates: `dL/db = Σ g` and
/// `dL/de = Σ (x × g + ½ (q_w h_v − h_w q_v + q_v × h_v))` for a motion `x → x + e × x + b` of
/// every Gaussian (`g`, `h`: the gradients of its mean and quaternion).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WorldPoseGradient {
    /// Gradient with respect to a shift of every Gaussian.
    pub shift: [f64; 3],
    /// Gradient with respect to a small rotation of every Gaussian about the world origin.
    pub rotation: [f64; 3],
}

impl WorldPoseGradient {
    /// From the kernel's eight floats (`dL/db`, pad, `dL/de`, pad).
    pub fn from_floats(values: &[f32]) -> Option<WorldPoseGradient> {
        let v: [f32; RECORD_FLOATS] = values.try_into().ok()?;
        Some(WorldPoseGradient {
            shift: [v[0], v[1], v[2]].map(f64::from),
            rotation: [v[4], v[5], v[6]].map(f64::from),
        })
    }
}

/// Records the world-space pose gradient of one training step, chunk by chunk as the backward
/// pass writes the chunk's gradients (see [`crate::train`]'s gradient step).
pub struct PoseGradientPass {
    records: Tensor,
    records_count: u64,
    next_record: u64,
}

impl PoseGradientPass {
    /// A pass over the chunks `chunks` of the model (the same chunks, in the same order, that
    /// [`PoseGradientPass::record_chunk`] will be given).
    pub fn new(
        enc: &mut Encoder,
        chunks: impl Iterator<Item = RowChunk>,
    ) -> Result<PoseGradientPass> {
        let records_count: u64 = chunks.map(|c| c.rows.div_ceil(WORKGROUP)).sum();
        let records = Tensor::uninit(
            enc,
            DType::F32,
            &[records_count.max(1) as usize, RECORD_FLOATS],
            MemoryCategory::FrameScratch,
            "pose/records",
        )?;
        Ok(PoseGradientPass {
            records,
            records_count,
            next_record: 0,
        })
    }

    /// Records the sums of one chunk: `params` rows `chunk`, their gradients in `grads` rows
    /// `grad_rows` (means and quaternions, complete for the step).
    pub fn record_chunk(
        &mut self,
        enc: &mut Encoder,
        params: &GaussianTensors,
        chunk: &RowChunk,
        grads: &GaussianTensors,
        grad_rows: &RowChunk,
    ) -> Result<()> {
        if chunk.rows == 0 {
            return Ok(());
        }
        let kernel = enc.ctx().typed::<pose_gradient::PoseGradient>()?;
        let uniform = pose_gradient::PoseParams {
            rows: chunk.rows as u32,
            record0: self.next_record as u32,
            ..Default::default()
        };
        let bindings = pose_gradient::PoseGradientBindings {
            means: params.means.rows_arg(chunk)?,
            quats: params.quats.rows_arg(chunk)?,
            v_means: grads.means.rows_arg(grad_rows)?,
            v_quats: grads.quats.rows_arg(grad_rows)?,
            records: self.records.page_arg(0),
        };
        let grid = crate::ops::grid(enc, chunk.rows, WORKGROUP as u32)?;
        enc.run(&kernel, &uniform, bindings, grid)?;
        self.next_record += chunk.rows.div_ceil(WORKGROUP);
        Ok(())
    }

    /// Records the sum of every chunk's records: eight floats (`dL/db`, pad, `dL/de`, pad;
    /// [`WorldPoseGradient::from_floats`]).
    pub fn finish(self, enc: &mut Encoder) -> Result<Tensor> {
        let gradient = Tensor::uninit(
            enc,
            DType::F32,
            &[RECORD_FLOATS],
            MemoryCategory::FrameScratch,
            "pose/gradient",
        )?;
        let kernel = enc.ctx().typed::<pose_gradient::PoseSum>()?;
        let uniform = pose_gradient::PoseParams {
            record0: self.records_count.min(self.next_record) as u32,
            ..Default::default()
        };
        let bindings = pose_gradient::PoseSumBindings {
            records: self.records.page_arg(0),
            gradient: gradient.page_arg(0),
        };
        enc.run(&kernel, &uniform, bindings, WorkgroupGrid { x: 1, y: 1 })?;
        Ok(gradient)
    }
}

/// A rigid correction of one camera: `translation` τ (camera coordinates, world units) and
/// `rotation` ε (an axis-angle vector in camera coordinates, radians).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoseCorrection {
    /// τ: added to the camera-space position of every point.
    pub translation: [f64; 3],
    /// ε: the rotation `exp([ε]×)` applied to camera space.
    pub rotation: [f64; 3],
}

impl PoseCorrection {
    /// The six parameters, τ then ε.
    pub fn to_array(self) -> [f64; 6] {
        let (t, r) = (self.translation, self.rotation);
        [t[0], t[1], t[2], r[0], r[1], r[2]]
    }

    /// From six parameters, τ then ε.
    pub fn from_array(p: [f64; 6]) -> PoseCorrection {
        PoseCorrection {
            translation: [p[0], p[1], p[2]],
            rotation: [p[3], p[4], p[5]],
        }
    }

    /// `camera` moved by the correction (intrinsics and background unchanged).
    pub fn apply(&self, camera: &Camera) -> Camera {
        let r = rotation_matrix(DVec3::from(self.rotation));
        let w = r * widen_rows(&camera.rotation);
        let rt0 = r * DVec3::from(camera.translation.map(f64::from));
        let mut out = camera.clone();
        out.rotation = w
            .transpose()
            .to_cols_array_2d()
            .map(|row| row.map(|x| x as f32));
        out.translation = (rt0 + DVec3::from(self.translation))
            .to_array()
            .map(|x| x as f32);
        out
    }

    /// The rotation angle in degrees.
    pub fn angle_degrees(&self) -> f64 {
        DVec3::from(self.rotation).length().to_degrees()
    }

    /// The length of the translation (world units).
    pub fn shift(&self) -> f64 {
        DVec3::from(self.translation).length()
    }
}

/// `dL/d(τ, ε)` of a correction of `base`, from the world-space sums of a step rendered with the
/// corrected camera: `dL/dτ = W Σg` and `dL/dε = J_l(ε)ᵀ (W Σe + (R t₀) × W Σg)`, with `W`
/// the corrected rotation, `R = exp([ε]×)` and `J_l` the left Jacobian of SO(3).
pub fn correction_gradient(
    base: &Camera,
    correction: &PoseCorrection,
    world: &WorldPoseGradient,
) -> [f64; 6] {
    let epsilon = DVec3::from(correction.rotation);
    let r = rotation_matrix(epsilon);
    let w = r * widen_rows(&base.rotation);
    let rt0 = r * DVec3::from(base.translation.map(f64::from));
    let d_tau = w * DVec3::from(world.shift);
    let left = w * DVec3::from(world.rotation) + rt0.cross(d_tau);
    let d_eps = left_jacobian(epsilon).transpose() * left;
    [d_tau.x, d_tau.y, d_tau.z, d_eps.x, d_eps.y, d_eps.z]
}

/// A row-major f32 rotation (a [`Camera`]'s) as an f64 matrix.
fn widen_rows(rows: &[[f32; 3]; 3]) -> DMat3 {
    DMat3::from_cols_array_2d(&rows.map(|row| row.map(f64::from))).transpose()
}

/// The cross-product matrix `[v]×`: `[v]× u = v × u`.
fn skew(v: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, v.z, -v.y),
        DVec3::new(-v.z, 0.0, v.x),
        DVec3::new(v.y, -v.x, 0.0),
    )
}

/// `I + a [v]× + b [v]×²`.
fn skew_series(v: DVec3, a: f64, b: f64) -> DMat3 {
    let k = skew(v);
    DMat3::IDENTITY + k * a + (k * k) * b
}

/// `exp([v]×)` (Rodrigues).
pub fn rotation_matrix(v: DVec3) -> DMat3 {
    let theta = v.length();
    if theta < 1e-8 {
        return skew_series(v, 1.0, 0.5);
    }
    let t2 = theta * theta;
    skew_series(v, theta.sin() / theta, (1.0 - theta.cos()) / t2)
}

/// The left Jacobian of SO(3): `exp([v + δ]×) ≈ exp([J_l(v) δ]×) exp([v]×)`.
fn left_jacobian(v: DVec3) -> DMat3 {
    let theta = v.length();
    if theta < 1e-6 {
        return skew_series(v, 0.5, 1.0 / 6.0);
    }
    let t2 = theta * theta;
    skew_series(
        v,
        (1.0 - theta.cos()) / t2,
        (theta - theta.sin()) / (t2 * theta),
    )
}
