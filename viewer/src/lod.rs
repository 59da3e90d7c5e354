//! A level-of-detail folder (`SCENE.lod/` from `wgsplat lod`) in the scene view: each frame the
//! cut for the camera, at most a few pages loaded per frame (read from disk by the desktop
//! viewer, fetched over HTTP by the page), and what is resident drawn while the rest arrives.
//! The pages stay in the library's fixed pool of slots under the memory budget, evicted least
//! recently used first; [`LodStats`] records what every frame did, for the panel and for tests.

use anyhow::Context as _;
use serde::Serialize;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::io::lod::render::Settling;
use wgsplat::io::lod::{CutOptions, Loading, LodGpu, LodScene};
use wgsplat::splat::{Camera, GaussianTensors};

/// Pages a frame loads by default: enough to fill in quickly, few enough to keep frames short.
pub const LOADS_PER_FRAME: usize = 4;

/// What the frames of a level of detail did: the figures the panel shows and a test checks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LodStats {
    /// Frames whose cut was computed.
    pub frames: u64,
    /// Gaussians drawn by the last frame.
    pub gaussians: u64,
    /// Leaves of the tree (the full model's Gaussians).
    pub leaves: u64,
    /// The threshold the last cut used, in pixels.
    pub tau_pixels: f32,
    /// Whether the splat budget raised the last cut's threshold above the asked one.
    pub budget_raised: bool,
    /// Pages in the folder.
    pub pages_total: usize,
    /// Pages resident after the last frame.
    pub pages_resident: usize,
    /// Pages the last cut wanted and did not have.
    pub pages_missing: usize,
    /// Bytes one page takes in the pool.
    pub page_bytes: u64,
    /// Bytes of the resident pages now.
    pub resident_bytes: u64,
    /// The most bytes of resident pages at any moment so far.
    pub max_resident_bytes: u64,
    /// The memory budget (`--lod-memory`).
    pub budget_bytes: u64,
    /// Device bytes of the pool's slots (allocated once, within the budget).
    pub pool_bytes: u64,
    /// Device bytes of the tree's skeleton and page table (outside the budget).
    pub skeleton_bytes: u64,
    /// Page loads so far (a page evicted and loaded again counts twice).
    pub pages_loaded: u64,
    /// Page evictions so far.
    pub pages_evicted: u64,
    /// Pages loaded in the last frame.
    pub last_loaded: usize,
    /// Every page loaded so far.
    pub loaded: BTreeSet<u32>,
    /// Every page some cut wanted (to refine into) so far.
    pub wanted: BTreeSet<u32>,
    /// Every page some cut read so far.
    pub used: BTreeSet<u32>,
}

/// An opened level of detail streaming into its page pool.
pub struct LodStream {
    /// The folder's index and skeleton.
    pub scene: LodScene,
    /// The skeleton and page pool on the GPU.
    pub gpu: LodGpu,
    /// The threshold and splat budget of each cut.
    pub options: CutOptions,
    /// Most pages one frame loads.
    pub loads_per_frame: usize,
    /// What the frames did.
    pub stats: LodStats,
    /// The last frame's camera, options and Gaussians (reused while nothing changes).
    last: Option<(Camera, CutOptions, Arc<GaussianTensors>)>,
    /// A failed load leaves the pool out of step with the GPU: later frames report it.
    broken: Option<String>,
    /// The pages loaded for the current view (the library's residency keeps them).
    settling: Settling,
}

/// Checks that `budget_bytes` holds at least two pages of `scene` (the pool's least).
pub fn check_budget(scene: &LodScene, budget_bytes: u64) -> anyhow::Result<()> {
    Ok(wgsplat::io::lod::pool::check_budget(scene, budget_bytes)?)
}

pub use wgsplat::io::lod::pool::page_bytes;

impl LodStream {
    /// A stream over `scene` whose GPU state `gpu` was made with `budget_bytes` (checked with
    /// [`check_budget`] first).
    pub fn new(scene: LodScene, gpu: LodGpu, options: CutOptions, budget_bytes: u64) -> Self {
        let page = page_bytes(&scene);
        let pool_bytes = gpu.pool.slots() as u64 * page;
        let stats = LodStats {
            leaves: scene.index.leaves,
            pages_total: scene.page_count(),
            page_bytes: page,
            budget_bytes,
            pool_bytes,
            skeleton_bytes: gpu.resident_bytes().saturating_sub(pool_bytes),
            pages_resident: gpu.pool.resident_count(),
            resident_bytes: gpu.pool.resident_count() as u64 * page,
            max_resident_bytes: gpu.pool.resident_count() as u64 * page,
            loaded: BTreeSet::from([0]),
            pages_loaded: 1,
            ..LodStats::default()
        };
        LodStream {
            scene,
            gpu,
            options,
            loads_per_frame: LOADS_PER_FRAME,
            stats,
            last: None,
            broken: None,
            settling: Settling::default(),
        }
    }

    /// Centre and radius of the whole model (the root's bounding sphere).
    pub fn bounds(&self) -> ([f32; 3], f32) {
        let root = self
            .scene
            .skeleton
            .spheres
            .first()
            .copied()
            .unwrap_or([0.0; 4]);
        ([root[0], root[1], root[2]], root[3].max(1e-3))
    }

    /// Whether another frame would load more: pages are missing and the last frame made
    /// progress (a full pool that cannot evict makes none until the camera moves).
    pub fn needs_more(&self) -> bool {
        self.broken.is_none() && self.stats.pages_missing > 0 && self.stats.last_loaded > 0
    }

    fn note_resident(&mut self) {
        let resident = self.gpu.pool.resident_count();
        self.stats.pages_resident = resident;
        self.stats.resident_bytes = resident as u64 * self.stats.page_bytes;
        self.stats.max_resident_bytes =
            self.stats.max_resident_bytes.max(self.stats.resident_bytes);
    }

    /// The Gaussians to draw from `camera`: the cut over what is resident after loading at
    /// most [`LodStream::loads_per_frame`] pages the cut wants. `read(page, file)` returns the
    /// bytes of a page's file (`file` as the index names it, relative to the folder).
    pub async fn frame<R, F>(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        read: R,
    ) -> anyhow::Result<Arc<GaussianTensors>>
    where
        R: FnMut(u32, String) -> F,
        F: Future<Output = anyhow::Result<Vec<u8>>>,
    {
        if let Some(message) = &self.broken {
            anyhow::bail!("{message}");
        }
        if let Some((c, o, g)) = &self.last
            && c == camera
            && *o == self.options
            && !self.needs_more()
        {
            return Ok(g.clone());
        }
        match self.load_and_cut(ctx, camera, read).await {
            Ok(g) => Ok(g),
            Err(e) => {
                let message = format!("{e:#}");
                self.broken = Some(message.clone());
                anyhow::bail!("{message}")
            }
        }
    }

    async fn load_and_cut<R, F>(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        mut read: R,
    ) -> anyhow::Result<Arc<GaussianTensors>>
    where
        R: FnMut(u32, String) -> F,
        F: Future<Output = anyhow::Result<Vec<u8>>>,
    {
        let options = self.options;
        let scene = &self.scene;
        let read_page = |page: u32| {
            let file = scene.index.pages[page as usize].file.clone();
            let bytes = read(page, file.clone());
            async move {
                let bytes = bytes
                    .await
                    .with_context(|| format!("loading page {page} ({file})"))?;
                Ok::<_, anyhow::Error>(scene.decode_page(page as usize, &bytes)?)
            }
        };
        let loading = Loading::AtMost(self.loads_per_frame.max(1));
        let (cut, report) = self
            .gpu
            .load_and_cut(ctx, &mut self.settling, camera, options, loading, read_page)
            .await?;
        self.stats.wanted.extend(&report.wanted);
        self.stats.used.extend(&report.used);
        self.stats.loaded.extend(&report.loaded);
        self.stats.pages_loaded += report.pages_loaded as u64;
        self.stats.pages_evicted += report.pages_evicted as u64;
        self.stats.last_loaded = report.pages_loaded;
        let gaussians = Arc::new(self.gpu.emit(ctx, camera, options, &cut)?);
        self.stats.frames += 1;
        self.stats.gaussians = cut.count;
        self.stats.tau_pixels = cut.tau_pixels;
        self.stats.budget_raised = cut.budget_raised;
        self.stats.pages_missing = report.pages_missing;
        self.note_resident();
        self.last = Some((camera.clone(), options, gaussians.clone()));
        Ok(gaussians)
    }
}
