//! A level-of-detail folder over HTTP (`?lod=URL/SCENE.lod/`): the index and skeleton fetched
//! first, then each frame the cut for the camera with the pages it wants fetched as it needs
//! them (a few per frame), kept in the pool under the memory budget (`?lod-memory=`) and evicted
//! least recently used first, and what is resident drawn while the rest arrives. Each frame runs
//! as a task of its own (the stream moves into it and back), since the cut's readback and the
//! fetches are awaited.

use crate::page::{self, Query};
use anyhow::Context as _;
use eframe::egui;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::io::lod::{CutOptions, LodGpu, LodIndex, LodScene};
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat_viewer::lod::{LodStats, LodStream, check_budget};

/// What a task hands back: the opened stream, or a stream after a frame with its Gaussians.
enum Arrival {
    Opened(anyhow::Result<Box<LodStream>>),
    Frame(Box<LodStream>, anyhow::Result<Arc<GaussianTensors>>),
}

/// The page's level of detail.
pub struct LodView {
    /// The folder's address.
    pub url: String,
    /// The threshold and splat budget the next frame uses (the panel edits them).
    pub options: CutOptions,
    /// What the frames did so far.
    pub stats: LodStats,
    /// The largest SH degree of its Gaussians, once opened.
    pub sh_degree: Option<u32>,
    /// The model's centre and radius, once opened (taken by the app to place its camera).
    pub bounds: Option<([f32; 3], f32)>,
    stream: Option<Box<LodStream>>,
    inbox: Rc<RefCell<Option<Arrival>>>,
    /// A task (opening, or a frame) is running.
    in_flight: bool,
    /// The last frame's cut wants pages it did not get yet.
    loading: bool,
    last: Option<(Camera, CutOptions)>,
}

/// `file` in the folder at `base`.
fn join(base: &str, file: &str) -> String {
    format!("{}/{file}", base.trim_end_matches('/'))
}

/// Opens the folder at `url`: index, skeleton and root page, checked, with the pool made.
async fn open(ctx: &GpuContext, url: &str, query: &Query) -> anyhow::Result<Box<LodStream>> {
    let index_url = join(url, "index.json");
    let index_bytes = page::fetch_bytes(&index_url).await?;
    let index: LodIndex = serde_json::from_slice(&index_bytes)
        .with_context(|| format!("{index_url} is not a level-of-detail index"))?;
    index.check(std::path::Path::new(&index_url))?;
    let tree = page::fetch_bytes(&join(url, &index.tree_file)).await?;
    let scene = LodScene::from_bytes(url, &index_bytes, &tree)?;
    check_budget(&scene, query.lod_memory)?;
    let root = page::fetch_bytes(&join(url, &scene.index.pages[0].file)).await?;
    let root = scene.decode_page(0, &root)?;
    let gpu = LodGpu::with_root_page(ctx, &scene, query.lod_memory, root)?;
    // The cut's Gaussians must fit one storage binding: the budget never asks for more.
    let fits = ctx.rows_per_page(48);
    let options = CutOptions {
        tau_pixels: query.tau,
        splat_budget: query.splat_budget.unwrap_or(fits).clamp(1, fits),
    };
    let mut stream = LodStream::new(scene, gpu, options, query.lod_memory);
    stream.loads_per_frame = query.lod_loads;
    Ok(Box::new(stream))
}

/// Writes the figures a test reads into the page's data attributes.
fn publish(stats: &LodStats) {
    let list = |pages: &std::collections::BTreeSet<u32>| {
        pages
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    for (name, value) in [
        ("lod-frames", stats.frames.to_string()),
        ("lod-gaussians", stats.gaussians.to_string()),
        ("lod-leaves", stats.leaves.to_string()),
        ("lod-pages-total", stats.pages_total.to_string()),
        ("lod-pages-resident", stats.pages_resident.to_string()),
        ("lod-pages-missing", stats.pages_missing.to_string()),
        ("lod-page-bytes", stats.page_bytes.to_string()),
        (
            "lod-max-resident-bytes",
            stats.max_resident_bytes.to_string(),
        ),
        ("lod-budget-bytes", stats.budget_bytes.to_string()),
        ("lod-pool-bytes", stats.pool_bytes.to_string()),
        ("lod-loaded", list(&stats.loaded)),
        ("lod-wanted", list(&stats.wanted)),
    ] {
        page::set_data(name, &value);
    }
}

impl LodView {
    /// Starts opening the folder at `url` (`query` holds the budget, τ and memory).
    pub fn start(ctx: &GpuContext, url: String, query: &Query, egui_ctx: &egui::Context) -> Self {
        let inbox: Rc<RefCell<Option<Arrival>>> = Rc::default();
        let (ctx, slot, wake, address, asked) = (
            ctx.clone(),
            inbox.clone(),
            egui_ctx.clone(),
            url.clone(),
            query.clone(),
        );
        wasm_bindgen_futures::spawn_local(async move {
            let opened = open(&ctx, &address, &asked).await;
            *slot.borrow_mut() = Some(Arrival::Opened(opened));
            wake.request_repaint();
        });
        LodView {
            url,
            options: CutOptions {
                tau_pixels: query.tau,
                splat_budget: query.splat_budget.unwrap_or(u64::MAX),
            },
            stats: LodStats::default(),
            sh_degree: None,
            bounds: None,
            stream: None,
            inbox,
            in_flight: true,
            loading: false,
            last: None,
        }
    }

    /// Whether work is under way: opening, a frame, or pages still arriving for the view.
    pub fn busy(&self) -> bool {
        self.in_flight || self.loading
    }

    /// Takes what arrived (new Gaussians to draw, when a frame finished) and starts a frame for
    /// `camera` when the view or the options changed or pages are still missing.
    pub fn step(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
        egui_ctx: &egui::Context,
    ) -> anyhow::Result<Option<Arc<GaussianTensors>>> {
        let mut drawn = None;
        match self.inbox.borrow_mut().take() {
            None => {}
            Some(Arrival::Opened(opened)) => {
                let stream = opened.with_context(|| format!("opening {}", self.url))?;
                self.options = stream.options;
                self.stats = stream.stats.clone();
                self.sh_degree = Some(stream.scene.index.sh_degree);
                self.bounds = Some(stream.bounds());
                self.stream = Some(stream);
                self.in_flight = false;
                // The first frame waits for the app to place its camera over the model.
                egui_ctx.request_repaint();
                return Ok(None);
            }
            Some(Arrival::Frame(stream, gaussians)) => {
                self.stats = stream.stats.clone();
                self.loading = stream.needs_more();
                self.stream = Some(stream);
                self.in_flight = false;
                publish(&self.stats);
                drawn = Some(gaussians?);
            }
        }
        let wanted = Some((camera.clone(), self.options));
        if self.in_flight || (self.last == wanted && !self.loading) {
            return Ok(drawn);
        }
        let Some(mut stream) = self.stream.take() else {
            return Ok(drawn);
        };
        self.last = wanted;
        self.in_flight = true;
        stream.options = self.options;
        let (ctx, slot, wake, base, camera) = (
            ctx.clone(),
            self.inbox.clone(),
            egui_ctx.clone(),
            self.url.clone(),
            camera.clone(),
        );
        wasm_bindgen_futures::spawn_local(async move {
            let read = |_page: u32, file: String| {
                let address = join(&base, &file);
                async move { page::fetch_bytes(&address).await }
            };
            let gaussians = stream.frame(&ctx, &camera, read).await;
            *slot.borrow_mut() = Some(Arrival::Frame(stream, gaussians));
            wake.request_repaint();
        });
        Ok(drawn)
    }
}
