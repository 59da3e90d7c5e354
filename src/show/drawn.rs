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
    },
}

impl Drawn {
    /// The Gaussians to draw from `camera`.
    pub fn gaussians_for(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<GaussianTensors> {
        match self {
            Drawn::Model(g) => Ok((**g).clone()),
            Drawn::Lod {
                renderer,
                options,
                last,
            } => {
                let (g, report) = renderer.prepare(ctx, camera, *options, Loading::Complete)?;
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
