//! Helpers shared by the suite's modules: scenes and peer data for the splatting tests, running
//! the `wgsplat` binary ([`binary`]) and running a test again in a child process ([`child`]).
#![allow(dead_code)]

pub mod binary;
pub mod child;

use std::path::PathBuf;
use wgsplat::splat::backward::{BackwardOptions, BackwardOutput, record_backward};
use wgsplat::splat::forward::ForwardOutput;
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::TestRng;
use wgsplat::{GpuContext, MemoryCategory, Tensor};

/// gsplat's reference renders, committed under `tests/fixtures/gsplat/` (with attribution).
pub struct PeerCase {
    pub name: &'static str,
    pub gaussians: CpuGaussians,
    bytes: Vec<u8>,
}

impl PeerCase {
    pub fn load(name: &'static str) -> Option<PeerCase> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gsplat")
            .join(name);
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("the committed peer case {}: {e}", path.display()));
        let mut case = PeerCase {
            name,
            gaussians: CpuGaussians::default(),
            bytes,
        };
        let means = case.tensor("means");
        let n = means.len() / 3;
        let coeffs = case.tensor("coeffs");
        case.gaussians = CpuGaussians {
            means: means.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
            log_scales: case
                .tensor("scales")
                .chunks_exact(3)
                .map(|c| [c[0], c[1], c[2]])
                .collect(),
            quats: case
                .tensor("quats")
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect(),
            opacity_logits: case.tensor("opacities"),
            sh: (0..n)
                .map(|i| {
                    std::array::from_fn(|k| std::array::from_fn(|ch| coeffs[i * 48 + k * 3 + ch]))
                })
                .collect(),
        };
        Some(case)
    }

    pub fn all() -> Vec<PeerCase> {
        let cases: Vec<PeerCase> = ["tiny_case.safetensors", "basic_case.safetensors"]
            .into_iter()
            .filter_map(PeerCase::load)
            .collect();
        assert_eq!(cases.len(), 2, "both peer cases load");
        cases
    }

    pub fn tensor(&self, name: &str) -> Vec<f32> {
        let st = safetensors::SafeTensors::deserialize(&self.bytes).expect("valid safetensors");
        let view = st
            .tensor(name)
            .unwrap_or_else(|e| panic!("{}: {name}: {e}", self.name));
        view.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    /// The camera the peer cases were rendered with.
    pub fn camera() -> Camera {
        Camera {
            lens: Default::default(),
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            translation: [-0.123, -0.456, 8.0],
            fx: 61.5,
            fy: 61.5,
            cx: 61.5,
            cy: 41.0,
            width: 123,
            height: 82,
            near: 0.01,
            far: 1e12,
            background: [0.0; 3],
        }
    }
}

/// The test camera: 5 units down the -z axis, looking at the origin (see `Camera::facing_origin`).
pub fn camera(width: u32, height: u32, background: [f32; 3]) -> Camera {
    Camera::facing_origin(width, height, 5.0, background)
}

/// `n` random Gaussians in a cube of half-size `extent` around the origin, with small scales,
/// random rotations, opacities and SH of degree 3.
pub fn random_gaussians(seed: u64, n: usize, extent: f32, scale: f32) -> CpuGaussians {
    let mut rng = TestRng::new(seed);
    let mut g = CpuGaussians::default();
    for _ in 0..n {
        g.means.push([
            rng.range(-extent, extent),
            rng.range(-extent, extent),
            rng.range(-extent, extent),
        ]);
        let s = scale.ln();
        g.log_scales.push([
            s + rng.range(-1.0, 0.5),
            s + rng.range(-1.0, 0.5),
            s + rng.range(-1.0, 0.5),
        ]);
        g.quats.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.opacity_logits.push(rng.range(-2.0, 3.0));
        let mut sh = [[0f32; 3]; 16];
        for (k, c) in sh.iter_mut().enumerate() {
            let amp = if k == 0 { 1.0 } else { 0.3 };
            *c = [
                rng.range(-amp, amp),
                rng.range(-amp, amp),
                rng.range(-amp, amp),
            ];
        }
        g.sh.push(sh);
    }
    g
}

/// The backward pass of `fwd` (rendered from `params`) with image gradient `v_image`, run to
/// completion: the per-Gaussian gradients and the pass's output.
pub fn run_backward(
    ctx: &GpuContext,
    params: &GaussianTensors,
    fwd: &ForwardOutput,
    v_image: &[f32],
    options: BackwardOptions,
) -> (GaussianTensors, BackwardOutput) {
    let mut enc = ctx.encoder("backward");
    let grads =
        GaussianTensors::zeros_like(&mut enc, params, MemoryCategory::Gradients, "g").unwrap();
    let v = Tensor::from_slice(
        &mut enc,
        v_image,
        fwd.image.shape(),
        MemoryCategory::Other,
        "v_image",
    )
    .unwrap();
    let out = record_backward(&mut enc, params, fwd, &v, &grads, None, options).unwrap();
    ctx.submit(enc).unwrap();
    (grads, out)
}

/// `Σ image · weights` in f64: the scalar loss whose gradient is `weights` (finite differences).
pub fn weighted_sum(image: &Tensor, weights: &[f32], ctx: &GpuContext) -> f64 {
    let image = image.read::<f32>(ctx).unwrap();
    image
        .iter()
        .zip(weights)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum()
}
