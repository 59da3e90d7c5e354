//! What a render draws: a model held whole on the GPU, or a level-of-detail folder whose cut is
//! chosen for each camera under a splat budget (every page the cut wants is loaded first).

use crate::GpuContext;
use crate::error::Result;
use crate::io::lod::{CutOptions, FrameReport, Loading, LodRenderer};
use crate::splat::{Camera, GaussianTensors};

/// A model to draw from any camera.
pub enum Drawn {
    /// Every Gaussian, every frame.
    Model(Box<GaussianTensors>),
    /// A level of detail: each frame draws the cut for its camera.
    Lod {
        /// The opened folder and its page pool.
        renderer: Box<LodRenderer>,
        /// The threshold and splat budget.
        options: CutOptions,
        /// What the last frame's cut did.
        last: Option<FrameReport>,
        /// The frames drawn so far, and those drawn without pages their cut wanted.
        shortfall: Shortfall,
    },
}

/// The frames of a level of detail drawn without every page their cut wanted (the page pool was
/// too small for the view): they show coarser nodes where the missing pages' would be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shortfall {
    /// Frames drawn.
    pub frames: usize,
    /// Frames drawn without some page their cut wanted.
    pub incomplete: usize,
    /// The most pages one frame missed.
    pub most_missing: usize,
    /// The most pages one frame wanted resident: those resident then plus those missing.
    pub most_needed: usize,
    /// Slots in the page pool.
    pub slots: usize,
    /// Bytes of one page in the pool.
    pub page_bytes: u64,
}

impl Shortfall {
    /// A warning naming the frames drawn incomplete and the memory that would hold their pages;
    /// `None` when every frame had its pages.
    pub fn warning(&self) -> Option<String> {
        if self.incomplete == 0 {
            return None;
        }
        Some(format!(
            "{} of {} frames were drawn without pages their cut wanted (up to {} missing): the \
             page pool holds {} pages of {} bytes, so those frames show coarser nodes than the \
             splat budget allows; give --lod-memory {} bytes or more to draw them complete",
            self.incomplete,
            self.frames,
            self.most_missing,
            self.slots,
            self.page_bytes,
            self.most_needed as u64 * self.page_bytes
        ))
    }
}

impl Drawn {
    /// A level of detail drawn from `renderer`'s folder with `options`.
    pub fn lod(renderer: LodRenderer, options: CutOptions) -> Drawn {
        let shortfall = Shortfall {
            slots: renderer.gpu.pool.slots(),
            page_bytes: crate::io::lod::pool::page_bytes(&renderer.scene),
            ..Default::default()
        };
        Drawn::Lod {
            renderer: Box::new(renderer),
            options,
            last: None,
            shortfall,
        }
    }

    /// The frames drawn so far without pages they wanted (`None` for a model).
    pub fn shortfall(&self) -> Option<Shortfall> {
        match self {
            Drawn::Model(_) => None,
            Drawn::Lod { shortfall, .. } => Some(*shortfall),
        }
    }

    /// The Gaussians to draw from `camera`.
    pub fn gaussians_for(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<GaussianTensors> {
        match self {
            Drawn::Model(g) => Ok((**g).clone()),
            Drawn::Lod {
                renderer,
                options,
                last,
                shortfall,
            } => {
                let (g, report) = renderer.prepare(ctx, camera, *options, Loading::Complete)?;
                shortfall.frames += 1;
                if report.pages_missing > 0 {
                    shortfall.incomplete += 1;
                    shortfall.most_missing = shortfall.most_missing.max(report.pages_missing);
                    shortfall.most_needed = shortfall
                        .most_needed
                        .max(report.pages_resident + report.pages_missing);
                }
                *last = Some(report);
                Ok(g)
            }
        }
    }

    /// The largest SH degree drawn.
    pub fn max_sh_degree(&self) -> u32 {
        match self {
            Drawn::Model(g) => g.max_sh_degree(),
            Drawn::Lod { renderer, .. } => renderer.scene.index.sh_degree,
        }
    }
}
