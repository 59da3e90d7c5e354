//! Rendering a level-of-detail folder: each frame, the cut on the GPU, the pages it asks for
//! loaded into the pool (all of them, or a few per frame while the rest arrive), the cut's
//! Gaussians written out and drawn by the ordinary renderer.

use super::cut::{Cut, CutOptions, LodGpu};
use super::read::LodScene;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::splat::forward::{ForwardOutput, RenderOptions, render};
use crate::splat::{Camera, GaussianTensors};
use std::path::Path;

/// How many pages a frame may load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loading {
    /// Every page the cut wants, before drawing (offline renders and videos).
    Complete,
    /// At most this many, drawing what is resident meanwhile (interactive viewers).
    AtMost(usize),
}

/// What one frame did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameReport {
    /// Gaussians drawn.
    pub cut_nodes: u64,
    /// The threshold used, in pixels.
    pub tau_pixels: f32,
    /// Whether the splat budget raised the threshold above the asked one.
    pub budget_raised: bool,
    /// Pages loaded for this frame.
    pub pages_loaded: usize,
    /// Pages evicted for this frame.
    pub pages_evicted: usize,
    /// Pages the cut still wants (the pool is full, or the frame's loads ran out).
    pub pages_missing: usize,
    /// Pages resident after the frame.
    pub pages_resident: usize,
}

/// An opened level-of-detail folder ready to draw.
pub struct LodRenderer {
    /// The folder's index and skeleton.
    pub scene: LodScene,
    /// Its GPU state.
    pub gpu: LodGpu,
}

/// Most cut-and-load rounds of a [`Loading::Complete`] frame (one per level is enough).
const MAX_ROUNDS: usize = 64;

impl LodRenderer {
    /// Opens `dir` with a page pool of `pool_bytes`.
    pub fn open(ctx: &GpuContext, dir: &Path, pool_bytes: u64) -> Result<LodRenderer> {
        let scene = LodScene::open(dir)?;
        let gpu = LodGpu::new(ctx, &scene, pool_bytes)?;
        Ok(LodRenderer { scene, gpu })
    }

    /// The cut for `camera`, loading pages as `loading` allows; returns its Gaussians.
    pub fn prepare(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        options: CutOptions,
        loading: Loading,
    ) -> Result<(GaussianTensors, FrameReport)> {
        let mut report = FrameReport::default();
        let mut allowance = match loading {
            Loading::Complete => usize::MAX,
            Loading::AtMost(n) => n,
        };
        let mut cut: Cut = self.gpu.cut(ctx, camera, options)?;
        for _ in 0..MAX_ROUNDS {
            if cut.wanted_pages.is_empty() || allowance == 0 {
                break;
            }
            self.gpu.pool.mark_used(&cut.used_pages);
            let plan = self.gpu.pool.plan_loads(&cut.wanted_pages, allowance);
            if plan.loads.is_empty() {
                break;
            }
            allowance = allowance.saturating_sub(plan.loads.len());
            report.pages_loaded += plan.loads.len();
            report.pages_evicted += plan.evicted.len();
            let scene = &self.scene;
            self.gpu
                .upload(ctx, &plan, |p| scene.read_page(p as usize))?;
            cut = self.gpu.cut(ctx, camera, options)?;
        }
        self.gpu.pool.mark_used(&cut.used_pages);
        report.cut_nodes = cut.count;
        report.tau_pixels = cut.tau_pixels;
        report.budget_raised = cut.budget_raised;
        report.pages_missing = cut.wanted_pages.len();
        report.pages_resident = self.gpu.pool.resident_count();
        let gaussians = self.gpu.emit(ctx, camera, options, &cut)?;
        Ok((gaussians, report))
    }

    /// Draws the cut for `camera` (see [`LodRenderer::prepare`]).
    pub fn render(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        options: CutOptions,
        loading: Loading,
        render_options: RenderOptions,
    ) -> Result<(ForwardOutput, FrameReport)> {
        let (gaussians, report) = self.prepare(ctx, camera, options, loading)?;
        let out = render(ctx, &gaussians, camera, render_options)?;
        Ok((out, report))
    }
}
