//! The cut of a level-of-detail tree on the GPU (`shaders/lod_cut.wgsl`, `shaders/lod_emit.wgsl`)
//! and the page pool it reads: the skeleton stays in GPU memory, the pages the cut reads live in
//! a fixed pool of slots ([`super::pool`]), and each frame's cut is written as the renderer's
//! tensors, blended towards the parents near the threshold ([`super::emit`]).

use super::cut_reference::{BINS, FINE};
use super::pool::{LoadPlan, NOT_RESIDENT, PagePool};
use super::read::LodScene;
use crate::error::{Error, Result};
use crate::gpu::kernels;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::ops;
use crate::splat::Camera;
use crate::splat::reference::CpuGaussians;
use crate::tensor::{DType, Tensor};

/// What a frame's cut is asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CutOptions {
    /// Nodes whose projected radius is below this many pixels are not refined.
    pub tau_pixels: f32,
    /// Most Gaussians in the cut: the threshold rises until the cut fits.
    pub splat_budget: u64,
}

/// A frame's cut, on the GPU, with what the CPU needs to know about it.
#[derive(Debug)]
pub struct Cut {
    /// The cut's nodes, ascending (the first `count` elements).
    pub nodes: Tensor,
    /// Nodes in the cut.
    pub count: u64,
    /// The threshold in fine steps, [`FINE`] per size bin (see [`super::cut_reference`]).
    pub threshold: u32,
    /// The cut's state as the GPU chose it (bin first), which the resolve stage reads.
    pub(super) state: Tensor,
    /// The threshold used, in pixels (the asked one, or above it to meet the budget).
    pub tau_pixels: f32,
    /// Whether the budget raised the threshold.
    pub budget_raised: bool,
    /// Pages the cut would refine into but are not resident.
    pub wanted_pages: Vec<u32>,
    /// Pages the cut read.
    pub used_pages: Vec<u32>,
}

/// An opened tree's GPU state: skeleton, page table and page pool.
pub struct LodGpu {
    pub(super) spheres: Tensor,
    pub(super) links: Tensor,
    pub(super) pages_info: Tensor,
    first_nodes: Vec<u32>,
    pub(super) pool_buffers: Vec<Tensor>,
    pub(super) rows_per_buffer: u64,
    /// Residency of every page.
    pub pool: PagePool,
    nodes: u32,
    page_nodes: u32,
    pub(super) row_width: u32,
    pub(super) sh_degree: u32,
}

/// Floats per pool row for SH degree `degree`: mean, log scale, rotation, opacity, SH.
pub fn row_width(degree: u32) -> u32 {
    11 + 3 * (degree + 1) * (degree + 1)
}

pub(super) fn single_page(ctx: &GpuContext, t: &Tensor, what: &str) -> Result<()> {
    if t.num_pages() > 1 {
        return Err(Error::Overflow {
            what: format!("level-of-detail {what}"),
            needed: t.len() * 4,
            max: ctx.page_bytes(),
            hint: "the tree's skeleton must fit one storage binding of this adapter: build the \
                   level of detail per block of the scene"
                .into(),
        });
    }
    Ok(())
}

impl LodGpu {
    /// Uploads `scene`'s skeleton and makes a pool of pages within `pool_bytes` (at least two
    /// pages' worth); loads page 0 from the folder.
    pub fn new(ctx: &GpuContext, scene: &LodScene, pool_bytes: u64) -> Result<LodGpu> {
        Self::with_root_page(ctx, scene, pool_bytes, scene.read_page(0)?)
    }

    /// [`LodGpu::new`] with page 0 already read (a page fetches it over HTTP and decodes it
    /// with [`LodScene::decode_page`]).
    pub fn with_root_page(
        ctx: &GpuContext,
        scene: &LodScene,
        pool_bytes: u64,
        root: CpuGaussians,
    ) -> Result<LodGpu> {
        let s = &scene.skeleton;
        let n = s.len();
        let mut spheres = Vec::with_capacity(8 * n);
        let mut links = Vec::with_capacity(4 * n);
        for node in 0..n {
            spheres.extend_from_slice(&s.spheres[node]);
            let parent = s.parent[node];
            let parent_sphere = if parent == super::tree::NO_NODE {
                [0.0; 4]
            } else {
                s.spheres[parent as usize]
            };
            spheres.extend_from_slice(&parent_sphere);
            let child_page = if s.child_count[node] > 0 {
                scene.node_page[s.first_child[node] as usize]
            } else {
                0
            };
            links.extend_from_slice(&[
                parent,
                scene.node_page[node],
                child_page,
                s.child_count[node],
            ]);
        }
        let row_width = row_width(scene.index.sh_degree);
        let page_nodes = scene.index.page_nodes;
        let page_bytes = page_nodes * u64::from(row_width) * 4;
        let pages_per_buffer = ctx.page_bytes() / page_bytes;
        if pages_per_buffer == 0 {
            return Err(Error::Overflow {
                what: "level-of-detail page".into(),
                needed: page_bytes,
                max: ctx.page_bytes(),
                hint: "rebuild the tree with smaller pages (`wgsplat lod --page-nodes`)".into(),
            });
        }
        // Never more slots than pages: a small tree takes only what it needs.
        let slots = (pool_bytes / page_bytes).clamp(2, scene.page_count().max(2) as u64);
        let first_nodes: Vec<u32> = scene
            .index
            .pages
            .iter()
            .map(|p| p.first_node as u32)
            .collect();
        let mut enc = ctx.encoder("lod-open");
        let spheres = Tensor::from_slice(
            &mut enc,
            &spheres,
            &[8 * n],
            MemoryCategory::Parameters,
            "wgsplat/lod-spheres",
        )?;
        let links = Tensor::from_slice(
            &mut enc,
            &links,
            &[4 * n],
            MemoryCategory::Parameters,
            "wgsplat/lod-links",
        )?;
        single_page(ctx, &spheres, "skeleton")?;
        single_page(ctx, &links, "skeleton")?;
        let pages_info = Tensor::zeros(
            &mut enc,
            DType::U32,
            &[2 * first_nodes.len()],
            MemoryCategory::Parameters,
            "wgsplat/lod-pages",
        )?;
        let mut pool_buffers = Vec::new();
        let mut left = slots;
        while left > 0 {
            let here = left.min(pages_per_buffer);
            let len = (here * page_nodes * u64::from(row_width)) as usize;
            pool_buffers.push(Tensor::uninit(
                &mut enc,
                DType::F32,
                &[len],
                MemoryCategory::Parameters,
                "wgsplat/lod-pool",
            )?);
            left -= here;
        }
        ctx.submit(enc)?;
        let mut gpu = LodGpu {
            spheres,
            links,
            pages_info,
            first_nodes,
            pool_buffers,
            rows_per_buffer: pages_per_buffer * page_nodes,
            pool: PagePool::new(scene, slots as usize),
            nodes: n as u32,
            page_nodes: page_nodes as u32,
            row_width,
            sh_degree: scene.index.sh_degree,
        };
        let plan = gpu.pool.plan_loads(&[0], 1);
        let mut root = Some(root);
        gpu.upload(ctx, &plan, |p| match root.take() {
            Some(g) if p == 0 => Ok(g),
            _ => scene.read_page(p as usize),
        })?;
        Ok(gpu)
    }

    /// Device bytes held: skeleton, page table and pool.
    pub fn resident_bytes(&self) -> u64 {
        let pool: u64 = self.pool_buffers.iter().map(|t| t.len() * 4).sum();
        (self.spheres.len() + self.links.len() + self.pages_info.len()) * 4 + pool
    }

    /// Uploads the pages of `plan` (read through `read`) into their slots and the page table.
    pub fn upload(
        &mut self,
        ctx: &GpuContext,
        plan: &LoadPlan,
        mut read: impl FnMut(u32) -> Result<CpuGaussians>,
    ) -> Result<()> {
        let mut enc = ctx.encoder("lod-pages");
        let width = self.row_width as usize;
        for &(page, slot) in &plan.loads {
            let g = read(page)?;
            let mut rows = vec![0f32; g.means.len() * width];
            for (i, row) in rows.chunks_exact_mut(width).enumerate() {
                row[0..3].copy_from_slice(&g.means[i]);
                row[3..6].copy_from_slice(&g.log_scales[i]);
                row[6..10].copy_from_slice(&g.quats[i]);
                row[10] = g.opacity_logits[i];
                for (k, c) in g.sh[i].iter().take((width - 11) / 3).enumerate() {
                    row[11 + 3 * k..14 + 3 * k].copy_from_slice(c);
                }
            }
            let first_row = u64::from(slot) * u64::from(self.page_nodes);
            let buffer = (first_row / self.rows_per_buffer) as usize;
            let offset = (first_row % self.rows_per_buffer) * width as u64 * 4;
            enc.upload(
                self.pool_buffers[buffer].page(0).raw(),
                offset,
                bytemuck::cast_slice(&rows),
            )?;
        }
        let table: Vec<u32> = self
            .first_nodes
            .iter()
            .zip(self.pool.slot_table())
            .flat_map(|(&first, &slot)| [first, slot])
            .collect();
        self.pages_info.write(&mut enc, &table)?;
        ctx.submit(enc)?;
        Ok(())
    }

    pub(super) fn cut_params(
        &self,
        camera: &Camera,
        options: CutOptions,
        cut_count: u32,
    ) -> kernels::shared_lod::CutParams {
        let r = &camera.rotation;
        let t = &camera.translation;
        kernels::shared_lod::CutParams {
            rot0: [r[0][0], r[0][1], r[0][2], t[0]],
            rot1: [r[1][0], r[1][1], r[1][2], t[1]],
            rot2: [r[2][0], r[2][1], r[2][2], t[2]],
            focal: [camera.fx, camera.fy, camera.cx, camera.cy],
            view: [
                camera.width as f32,
                camera.height as f32,
                camera.near,
                options.tau_pixels,
            ],
            nodes: self.nodes,
            pages: self.first_nodes.len() as u32,
            budget: options.splat_budget.min(u64::from(u32::MAX)) as u32,
            cut_count,
            page_nodes: self.page_nodes,
            ..Default::default()
        }
    }

    /// Computes the cut for `camera` on the GPU and reads back its size and page marks,
    /// blocking until the GPU has finished (a browser page uses [`LodGpu::cut_async`]).
    pub fn cut(&self, ctx: &GpuContext, camera: &Camera, options: CutOptions) -> Result<Cut> {
        crate::gpu::readback::blocking("level-of-detail cut", self.cut_async(ctx, camera, options))
    }

    /// [`LodGpu::cut`] in the form that also runs in a browser: the readbacks are awaited.
    pub async fn cut_async(
        &self,
        ctx: &GpuContext,
        camera: &Camera,
        options: CutOptions,
    ) -> Result<Cut> {
        use kernels::lod_cut as k;
        let mut enc = ctx.encoder("lod-cut");
        let params = self.cut_params(camera, options, 0);
        let pages = self.first_nodes.len();
        let histogram = Tensor::zeros(
            &mut enc,
            DType::U32,
            &[2 * BINS as usize],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-histogram",
        )?;
        let state = Tensor::zeros(
            &mut enc,
            DType::U32,
            &[8],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-cut-state",
        )?;
        let fine_histogram = Tensor::zeros(
            &mut enc,
            DType::U32,
            &[2 * FINE as usize],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-fine-histogram",
        )?;
        let flags = Tensor::uninit(
            &mut enc,
            DType::U32,
            &[self.nodes as usize],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-flags",
        )?;
        single_page(ctx, &flags, "cut flags")?;
        let marks = Tensor::zeros(
            &mut enc,
            DType::U32,
            &[2 * pages],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-page-marks",
        )?;
        let histogram_kernel = ctx.typed::<k::CutHistogram>()?;
        let per_group = histogram_kernel.threads() * k::ITEMS;
        let grid = ops::grid(&enc, u64::from(self.nodes), per_group)?;
        enc.run(
            &histogram_kernel,
            &params,
            k::CutHistogramBindings {
                spheres: self.spheres.page_arg(0),
                links: self.links.page_arg(0),
                pages_info: self.pages_info.page_arg(0),
                histogram: histogram.page_arg(0),
            },
            grid,
        )?;
        let threshold = ctx.typed::<k::CutThreshold>()?;
        enc.run(
            &threshold,
            &params,
            k::CutThresholdBindings {
                histogram: histogram.page_arg(0),
                cut_state: state.page_arg(0),
            },
            ops::grid(&enc, 1, 1)?,
        )?;
        let fine_kernel = ctx.typed::<k::CutFineHistogram>()?;
        let per_group = fine_kernel.threads() * k::ITEMS;
        let grid = ops::grid(&enc, u64::from(self.nodes), per_group)?;
        enc.run(
            &fine_kernel,
            &params,
            k::CutFineHistogramBindings {
                spheres: self.spheres.page_arg(0),
                links: self.links.page_arg(0),
                pages_info: self.pages_info.page_arg(0),
                cut_state: state.page_arg(0),
                fine_histogram: fine_histogram.page_arg(0),
            },
            grid,
        )?;
        let fine_threshold = ctx.typed::<k::CutFineThreshold>()?;
        enc.run(
            &fine_threshold,
            &params,
            k::CutFineThresholdBindings {
                cut_state: state.page_arg(0),
                fine_histogram: fine_histogram.page_arg(0),
            },
            ops::grid(&enc, 1, 1)?,
        )?;
        let select = ctx.typed::<k::CutSelect>()?;
        let grid = ops::grid(&enc, u64::from(self.nodes), select.threads())?;
        enc.run(
            &select,
            &params,
            k::CutSelectBindings {
                spheres: self.spheres.page_arg(0),
                links: self.links.page_arg(0),
                pages_info: self.pages_info.page_arg(0),
                cut_state: state.page_arg(0),
                flags: flags.page_arg(0),
                page_marks: marks.page_arg(0),
            },
            grid,
        )?;
        let compacted = ops::compact::compact_indices(&mut enc, &flags)?;
        let state_read = state.record_read(&mut enc)?;
        let marks_read = marks.record_read(&mut enc)?;
        let count_read = compacted.count.record_read(&mut enc)?;
        ctx.submit(enc)?;
        let state_words = state_read.fetch::<u32>(ctx).await?;
        let marks = marks_read.fetch::<u32>(ctx).await?;
        let count = u64::from(count_read.fetch::<u32>(ctx).await?[0]);
        let listed = |range: std::ops::Range<usize>| -> Vec<u32> {
            range
                .clone()
                .filter(|&p| marks[p] != 0)
                .map(|p| (p - range.start) as u32)
                .collect()
        };
        Ok(Cut {
            nodes: compacted.values,
            count,
            threshold: state_words[5],
            state,
            tau_pixels: f32::from_bits(state_words[2]),
            budget_raised: state_words[3] != 0,
            wanted_pages: listed(0..pages),
            used_pages: listed(pages..2 * pages),
        })
    }

    /// Whether a page is resident (for tests and statistics).
    pub fn is_resident(&self, page: u32) -> bool {
        self.pool.slot_table()[page as usize] != NOT_RESIDENT
    }
}
