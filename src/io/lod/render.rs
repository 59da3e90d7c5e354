//! Rendering a level-of-detail folder: each frame, the cut on the GPU, the pages it asks for
//! loaded into the pool (all of them, or a few per frame while the rest arrive), the cut's
//! Gaussians written out and drawn by the ordinary renderer.
//!
//! [`LodGpu::load_and_cut`] is the one implementation of a frame's page residency: `render`
//! ([`LodRenderer`], pages read from disk) and the viewer and page (pages read from disk or
//! fetched over HTTP) all call it.

use super::cut::{Cut, CutOptions, LodGpu};
use super::read::LodScene;
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::splat::forward::{ForwardOutput, RenderOptions, render};
use crate::splat::reference::CpuGaussians;
use crate::splat::{Camera, GaussianTensors};
use std::collections::BTreeSet;
use std::future::Future;
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
    /// Pages the cut still wants (the pool is full, or the frame's loads ran out): the frame was
    /// drawn coarser than asked where these pages' nodes would have been.
    pub pages_missing: usize,
    /// Pages resident after the frame.
    pub pages_resident: usize,
    /// The pages loaded for this frame, in order.
    pub loaded: Vec<u32>,
    /// Every page one of the frame's cuts wanted, ascending.
    pub wanted: Vec<u32>,
    /// Every page one of the frame's cuts read, ascending.
    pub used: Vec<u32>,
}

/// Most cut-and-load rounds in one frame (one per level of the tree is enough).
const MAX_ROUNDS: usize = 64;

/// The pages loaded since the camera or the cut's options last changed. They count as read while
/// the view stays, so that a cut wanting more pages than the pool holds fills it and stops,
/// instead of evicting each round or frame what the one before loaded (a page of children that
/// fall outside the view is wanted but never read).
#[derive(Clone, Debug, Default)]
pub struct Settling {
    key: Option<(Camera, CutOptions)>,
    pages: BTreeSet<u32>,
}

impl LodGpu {
    /// Marks `used` and the resident pages loaded for this view as read by a new frame.
    fn mark_used_settling(&mut self, used: &[u32], settling: &Settling) {
        let mut pages = used.to_vec();
        pages.extend(settling.pages.iter().filter(|&&p| self.is_resident(p)));
        self.pool.mark_used(&pages);
    }

    /// The cut for `camera` after loading the pages it wants, as many as `loading` allows, each
    /// read by `read(page)`: the one implementation of a frame's page residency. Pages are loaded
    /// coarsest first, round after round (each round's cut asks for the next level), evicting
    /// least recently used pages that this view did not read or load.
    pub async fn load_and_cut<R, F, E>(
        &mut self,
        ctx: &GpuContext,
        settling: &mut Settling,
        camera: &Camera,
        options: CutOptions,
        loading: Loading,
        mut read: R,
    ) -> std::result::Result<(Cut, FrameReport), E>
    where
        R: FnMut(u32) -> F,
        F: Future<Output = std::result::Result<CpuGaussians, E>>,
        E: From<Error>,
    {
        let key = Some((camera.clone(), options));
        if settling.key != key {
            settling.key = key;
            settling.pages.clear();
        }
        let mut report = FrameReport::default();
        let mut allowance = match loading {
            Loading::Complete => usize::MAX,
            Loading::AtMost(n) => n.max(1),
        };
        let (mut wanted, mut used) = (BTreeSet::new(), BTreeSet::new());
        let mut cut = self.cut_async(ctx, camera, options).await?;
        for round in 0..=MAX_ROUNDS {
            wanted.extend(&cut.wanted_pages);
            used.extend(&cut.used_pages);
            if cut.wanted_pages.is_empty() || allowance == 0 || round == MAX_ROUNDS {
                break;
            }
            self.mark_used_settling(&cut.used_pages, settling);
            let plan = self.pool.plan_loads(&cut.wanted_pages, allowance);
            if plan.loads.is_empty() {
                break;
            }
            allowance = allowance.saturating_sub(plan.loads.len());
            let mut pages: Vec<(u32, CpuGaussians)> = Vec::with_capacity(plan.loads.len());
            for &(page, _) in &plan.loads {
                pages.push((page, read(page).await?));
            }
            self.upload(ctx, &plan, |page| {
                let at = pages.iter().position(|(p, _)| *p == page);
                Ok(at.map(|i| pages.swap_remove(i).1).unwrap_or_default())
            })?;
            report.loaded.extend(plan.loads.iter().map(|(p, _)| *p));
            settling.pages.extend(plan.loads.iter().map(|(p, _)| *p));
            report.pages_loaded += plan.loads.len();
            report.pages_evicted += plan.evicted.len();
            cut = self.cut_async(ctx, camera, options).await?;
        }
        self.mark_used_settling(&cut.used_pages, settling);
        report.cut_nodes = cut.count;
        report.tau_pixels = cut.tau_pixels;
        report.budget_raised = cut.budget_raised;
        report.pages_missing = cut.wanted_pages.len();
        report.pages_resident = self.pool.resident_count();
        report.wanted = wanted.into_iter().collect();
        report.used = used.into_iter().collect();
        Ok((cut, report))
    }
}

/// An opened level-of-detail folder ready to draw.
pub struct LodRenderer {
    /// The folder's index and skeleton.
    pub scene: LodScene,
    /// Its GPU state.
    pub gpu: LodGpu,
    settling: Settling,
}

impl LodRenderer {
    /// Opens `dir` with a page pool of `pool_bytes`.
    pub fn open(ctx: &GpuContext, dir: &Path, pool_bytes: u64) -> Result<LodRenderer> {
        let scene = LodScene::open(dir)?;
        let gpu = LodGpu::new(ctx, &scene, pool_bytes)?;
        Ok(LodRenderer {
            scene,
            gpu,
            settling: Settling::default(),
        })
    }

    /// The cut for `camera`, loading pages from the folder as `loading` allows
    /// ([`LodGpu::load_and_cut`]); returns its Gaussians.
    pub fn prepare(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        options: CutOptions,
        loading: Loading,
    ) -> Result<(GaussianTensors, FrameReport)> {
        let scene = &self.scene;
        let read = |page: u32| std::future::ready(scene.read_page(page as usize));
        let frame = self
            .gpu
            .load_and_cut(ctx, &mut self.settling, camera, options, loading, read);
        let (cut, report) = crate::gpu::readback::blocking("level-of-detail frame", frame)?;
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
