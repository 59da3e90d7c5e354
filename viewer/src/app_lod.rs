//! The app's level-of-detail source: each frame's cut read from the folder's pages (a few per
//! frame, drawing what is resident meanwhile), and the scripted flight over it (`--fly N`).

use super::{Model, ViewerApp};
use anyhow::Context as _;
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat_viewer::lod_panel::flight_camera;

impl ViewerApp {
    /// The Gaussians of the level of detail shown, cut for `camera`, loading pages from disk.
    pub(super) fn lod_params(
        model: &mut Model,
        ctx: &GpuContext,
        camera: &Camera,
    ) -> anyhow::Result<Arc<GaussianTensors>> {
        let Model::Lod { stream, .. } = model else {
            anyhow::bail!("no level of detail is open");
        };
        let dir = stream.scene.dir.clone();
        let read = |_page: u32, file: String| {
            let path = dir.join(file);
            std::future::ready(
                std::fs::read(&path).with_context(|| format!("reading {}", path.display())),
            )
        };
        pollster::block_on(stream.frame(ctx, camera, read))
    }

    /// Moves the camera to the flight's next frame when `--fly N` flies over a level of detail;
    /// returns whether the flight is still under way (the screenshot waits for it).
    pub(super) fn fly_step(&mut self) -> bool {
        let (Some(frames), Model::Lod { stream, .. }) = (self.args.fly, &self.model) else {
            return false;
        };
        let (center, radius) = stream.bounds();
        self.camera = flight_camera(center, radius, self.fly_frame, frames);
        self.fly_frame = self.fly_frame.saturating_add(1);
        self.fly_frame < frames
    }
}
