//! Optimising a level of detail's merged nodes against the model they stand for (Hierarchical
//! 3DGS's hierarchy optimisation, as distillation). The merge ([`super::merge`]) matches moments,
//! which keeps a node's mass and colour but not what its children look like from afar: texture
//! finer than the node is averaged away and its edges blur. Here each step renders the full model
//! from a random camera as the target (supersampled: rendered larger and area-downsampled, so
//! that the nodes learn the model's look rather than the aliasing of its sub-pixel Gaussians),
//! draws the cut of a random splat budget from the same camera ([`super::cut_reference`]), and
//! moves the interior nodes in that cut down the gradient of the
//! training loss (L1 and SSIM) between the two images. The leaves, the model's own Gaussians,
//! never change, so a cut that reaches them is the full model as before.
//!
//! Adam runs on the host ([`super::refine_adam`]), from random cameras
//! ([`super::refine_cameras`]). Afterwards every interior node's bounding sphere is rebuilt from
//! the leaves up ([`super::tree::rebuild_spheres`]) so that the spheres still nest.

use super::cut_reference;
use super::quality::supersampled;
use super::refine_adam::NodeAdam;
use super::refine_cameras::{frame_of, random_camera};
use super::tree::{LodTree, Skeleton, copy_leaf, rebuild_spheres};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::loss::{LossOptions, loss_and_grad};
use crate::rng::SplitMix64;
use crate::splat::backward::{BackwardOptions, record_backward};
use crate::splat::forward::{RenderOptions, render};
use crate::splat::reference::CpuGaussians;
use crate::splat::{Camera, GaussianTensors};

/// Steps `wgsplat lod`, `merge --lod` and `bench lod` refine for unless told (docs/lod.md gives
/// the quality for each budget).
pub const DEFAULT_STEPS: usize = 400;

/// [`RefineOptions::target_scale`] unless told.
pub const DEFAULT_TARGET_SCALE: u32 = 4;

/// How a level of detail's interior nodes are optimised.
#[derive(Clone, Debug, PartialEq)]
pub struct RefineOptions {
    /// Optimisation steps (0: none).
    pub steps: usize,
    /// Cameras the full model is rendered from as targets; the steps cycle through them.
    pub views: usize,
    /// Side of the square images in pixels.
    pub size: u32,
    /// A step's splat budget is drawn log-uniformly from this range of fractions of the leaves.
    pub budget_fractions: (f64, f64),
    /// The world's up: cameras look down from above the ground at 15–75°. `None`: from anywhere.
    pub up: Option<[f64; 3]>,
    /// Seed of the cameras and budgets.
    pub seed: u64,
    /// Multiplies every learning rate.
    pub learning_rate_scale: f32,
    /// The targets are the full model rendered this many times larger along each side and
    /// area-downsampled (1: at the views' own size). A view's own size aliases where the model's
    /// Gaussians are smaller than a pixel, and a cut fitted to that aliasing draws it too.
    pub target_scale: u32,
}

impl Default for RefineOptions {
    fn default() -> Self {
        RefineOptions {
            steps: 0,
            views: 24,
            size: 128,
            budget_fractions: (0.02, 0.5),
            up: None,
            seed: 0,
            learning_rate_scale: 1.0,
            target_scale: DEFAULT_TARGET_SCALE,
        }
    }
}

/// What a refinement did, with the held-out views' scores before and after.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefineReport {
    /// Steps run.
    pub steps: usize,
    /// Interior nodes that were in at least one step's cut.
    pub nodes_updated: usize,
    /// Mean PSNR (dB) of the held-out views' cuts against the full model, before.
    pub held_out_psnr_before: f64,
    /// The same after.
    pub held_out_psnr_after: f64,
}

/// Held-out cameras scored before and after, at a tenth of the leaves.
const HELD_OUT_VIEWS: usize = 4;
const HELD_OUT_BUDGET: f64 = 0.1;
/// The cut's threshold in pixels while refining (the renderers' default).
const TAU_PIXELS: f32 = 0.25;

/// The rows `nodes` of `g`, as a model of their own.
fn gather(g: &CpuGaussians, nodes: impl Iterator<Item = usize>) -> CpuGaussians {
    let mut out = CpuGaussians::default();
    for n in nodes {
        copy_leaf(&mut out, g, n);
    }
    out
}

fn upload(ctx: &GpuContext, g: &CpuGaussians, sh_degree: u32) -> Result<GaussianTensors> {
    let mut enc = ctx.encoder("lod refine: upload");
    let t = GaussianTensors::upload(
        &mut enc,
        g,
        sh_degree,
        MemoryCategory::Parameters,
        "lod refine",
    )?;
    ctx.submit(enc)?;
    Ok(t)
}

fn render_options(sh_degree: u32) -> RenderOptions {
    RenderOptions {
        sh_degree,
        ..Default::default()
    }
}

/// The cut of `budget` nodes from `camera`, every page resident (`one_page`: every node on
/// page 0, made once per refinement).
fn cut_nodes(s: &Skeleton, one_page: &[u32], camera: &Camera, budget: u64) -> Vec<u32> {
    cut_reference::cut(s, one_page, &[true], camera, TAU_PIXELS, budget.max(1)).1
}

fn rgb(image: &[f32]) -> impl Iterator<Item = f32> + '_ {
    image
        .chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]].map(|v| v.clamp(0.0, 1.0)))
}

fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for (x, y) in rgb(a).zip(rgb(b)) {
        sum += f64::from(x - y).powi(2);
        n += 1;
    }
    let mse = sum / n.max(1) as f64;
    if mse <= 1e-12 {
        120.0
    } else {
        -10.0 * mse.log10()
    }
}

/// Mean PSNR of each camera's cut at `fraction` of the leaves against its full render.
fn score(
    ctx: &GpuContext,
    tree: &LodTree,
    cameras: &[Camera],
    targets: &[Vec<f32>],
    fraction: f64,
    one_page: &[u32],
) -> Result<f64> {
    let leaves = tree.skeleton.leaves() as f64;
    let mut total = 0.0;
    for (camera, target) in cameras.iter().zip(targets) {
        let nodes = cut_nodes(&tree.skeleton, one_page, camera, (leaves * fraction) as u64);
        let cut = gather(&tree.gaussians, nodes.iter().map(|&n| n as usize));
        let g = upload(ctx, &cut, tree.sh_degree)?;
        let image = render(ctx, &g, camera, render_options(tree.sh_degree))?
            .image
            .read::<f32>(ctx)?;
        total += psnr(&image, target);
    }
    Ok(total / cameras.len().max(1) as f64)
}

impl RefineOptions {
    /// Fails on options outside their ranges, naming the value.
    pub fn check(&self) -> Result<()> {
        check(self)
    }
}

fn check(options: &RefineOptions) -> Result<()> {
    let (lo, hi) = options.budget_fractions;
    let problem = if options.views == 0 {
        Some("needs at least one view".to_string())
    } else if !(options.size >= 16 && options.size <= 4096) {
        Some(format!(
            "an image side of {} px is outside 16–4096",
            options.size
        ))
    } else if !(lo > 0.0 && lo <= hi && hi <= 1.0) {
        Some(format!(
            "budget fractions {lo}–{hi} must satisfy 0 < low ≤ high ≤ 1"
        ))
    } else if !(1..=8).contains(&options.target_scale)
        || u64::from(options.size) * u64::from(options.target_scale) > 8192
    {
        Some(format!(
            "a target scale of {} is outside 1–8 or makes targets wider than 8192 px",
            options.target_scale
        ))
    } else if !(options.learning_rate_scale.is_finite() && options.learning_rate_scale > 0.0) {
        Some(format!(
            "a learning-rate scale of {} must be positive",
            options.learning_rate_scale
        ))
    } else {
        None
    };
    match problem {
        Some(detail) => Err(Error::InvalidArgument {
            op: "lod refine",
            detail,
        }),
        None => Ok(()),
    }
}

/// Optimises `tree`'s interior nodes for `options.steps` steps (module docs); `on_step` hears
/// each step's number and loss. The leaves are not changed.
pub fn refine_tree(
    ctx: &GpuContext,
    tree: &mut LodTree,
    options: &RefineOptions,
    on_step: &mut dyn FnMut(usize, f32),
) -> Result<RefineReport> {
    check(options)?;
    let frame = frame_of(tree);
    let mut rng = SplitMix64::new(options.seed ^ 0x10D_0F1E);
    let leaves: Vec<usize> = (0..tree.skeleton.len())
        .filter(|&n| tree.skeleton.child_count[n] == 0)
        .collect();
    let full = upload(
        ctx,
        &gather(&tree.gaussians, leaves.iter().copied()),
        tree.sh_degree,
    )?;
    let sh = tree.sh_degree;
    let render_full = |camera: &Camera| supersampled(ctx, &full, camera, options.target_scale, sh);
    let cameras: Vec<Camera> = (0..options.views)
        .map(|_| random_camera(&mut rng, &frame, options.up, options.size))
        .collect();
    let targets = cameras
        .iter()
        .map(render_full)
        .collect::<Result<Vec<_>>>()?;
    let held_out: Vec<Camera> = (0..HELD_OUT_VIEWS)
        .map(|_| random_camera(&mut rng, &frame, options.up, options.size))
        .collect();
    let held_out_targets = held_out
        .iter()
        .map(|c| render_full(c)?.read::<f32>(ctx))
        .collect::<Result<Vec<_>>>()?;
    drop(full);
    let one_page = vec![0u32; tree.skeleton.len()];
    let held_out_psnr = |tree: &LodTree| {
        score(
            ctx,
            tree,
            &held_out,
            &held_out_targets,
            HELD_OUT_BUDGET,
            &one_page,
        )
    };
    let before = held_out_psnr(tree)?;

    let mut adam = NodeAdam::new(&tree.skeleton, tree.sh_degree);
    let (lo, hi) = options.budget_fractions;
    let loss_options = LossOptions::default();
    for step in 0..options.steps {
        let view = step % cameras.len();
        let camera = &cameras[view];
        let fraction = lo * (hi / lo).powf(f64::from(rng.unit()));
        let budget = (leaves.len() as f64 * fraction) as u64;
        let nodes = cut_nodes(&tree.skeleton, &one_page, camera, budget);
        if !nodes
            .iter()
            .any(|&n| tree.skeleton.child_count[n as usize] > 0)
        {
            on_step(step, 0.0);
            continue;
        }
        let cut = gather(&tree.gaussians, nodes.iter().map(|&n| n as usize));
        let g = upload(ctx, &cut, sh)?;
        let fwd = render(ctx, &g, camera, render_options(sh))?;
        let mut enc = ctx.encoder("lod refine: loss and backward");
        let loss = loss_and_grad(&mut enc, &fwd.image, &targets[view], &loss_options)?;
        let grads = GaussianTensors::zeros_like(
            &mut enc,
            &g,
            MemoryCategory::Gradients,
            "lod refine grads",
        )?;
        record_backward(
            &mut enc,
            &g,
            &fwd,
            &loss.grad,
            &grads,
            None,
            BackwardOptions::default(),
        )?;
        // The loss is read back with the gradients' submission, not after it in one of its own.
        let loss_read = loss.loss.record_read(&mut enc)?;
        ctx.submit(enc)?;
        drop(fwd);
        let grads = grads.download(ctx)?;
        let value = loss_read
            .wait::<f32>(ctx)?
            .first()
            .copied()
            .unwrap_or(f32::NAN);
        for (row, &n) in nodes.iter().enumerate() {
            if tree.skeleton.child_count[n as usize] > 0 {
                adam.step(
                    &mut tree.gaussians,
                    n as usize,
                    &grads,
                    row,
                    options.learning_rate_scale,
                );
            }
        }
        on_step(step, value);
    }
    rebuild_spheres(tree);
    let after = held_out_psnr(tree)?;
    Ok(RefineReport {
        steps: options.steps,
        nodes_updated: adam.nodes_updated(),
        held_out_psnr_before: before,
        held_out_psnr_after: after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_outside_their_ranges_are_refused() {
        let bad = [
            RefineOptions {
                views: 0,
                ..Default::default()
            },
            RefineOptions {
                size: 8,
                ..Default::default()
            },
            RefineOptions {
                budget_fractions: (0.5, 0.1),
                ..Default::default()
            },
            RefineOptions {
                learning_rate_scale: f32::NAN,
                ..Default::default()
            },
        ];
        for options in bad {
            let err = check(&options).unwrap_err().to_string();
            assert!(err.contains("lod refine"), "{err}");
        }
        check(&RefineOptions::default()).unwrap();
    }
}
