//! Per-stage timing of training iterations, for `wgsplat bench train`.
//!
//! Profiling changes how an iteration is submitted: at each stage boundary the open encoder is
//! submitted and the device drained, so the wall time between boundaries is the GPU time of that
//! stage plus one submit. Without a profiler attached an iteration is recorded into as few
//! encoders as the data dependencies allow, so the unprofiled iterations per second is the
//! figure to quote for speed, and the stage split tells where that time goes.

use crate::error::Result;
use crate::gpu::{Encoder, GpuContext};
use std::time::Instant;

/// The stages of one training iteration, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Projection, SH colour and the visible/intersection counts (one small readback).
    Project,
    /// Compaction, depth sort, intersection emission, tile sort and tile ranges.
    Sort,
    /// The forward tile rasterizer.
    Raster,
    /// Fused L1 + D-SSIM loss and its image gradient.
    Loss,
    /// Rasterizer, projection and SH backward passes (with the densification statistics).
    Backward,
    /// The fused Adam steps of every parameter group.
    Adam,
    /// Densification, pruning and opacity resets (zero on most iterations).
    Densify,
}

impl Stage {
    /// Every stage, in iteration order.
    pub const ALL: [Stage; 7] = [
        Stage::Project,
        Stage::Sort,
        Stage::Raster,
        Stage::Loss,
        Stage::Backward,
        Stage::Adam,
        Stage::Densify,
    ];

    /// A short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Project => "project",
            Stage::Sort => "sort",
            Stage::Raster => "raster",
            Stage::Loss => "loss",
            Stage::Backward => "backward",
            Stage::Adam => "adam",
            Stage::Densify => "densify",
        }
    }
}

/// Accumulated wall time per stage over profiled iterations.
#[derive(Clone, Debug, Default)]
pub struct StageProfile {
    totals_ms: [f64; 7],
    iterations: u64,
    mark: Option<Instant>,
    visible_total: u64,
    intersections_total: u64,
}

impl StageProfile {
    /// Starts timing an iteration: drains the device so earlier work is not charged to it.
    pub(crate) fn begin(&mut self, ctx: &GpuContext) -> Result<()> {
        ctx.wait_idle()?;
        self.mark = Some(Instant::now());
        Ok(())
    }

    /// Ends `stage`: waits for all submitted work and charges the time since the last mark.
    pub(crate) fn lap(&mut self, ctx: &GpuContext, stage: Stage) -> Result<()> {
        ctx.wait_idle()?;
        let now = Instant::now();
        if let Some(mark) = self.mark {
            self.totals_ms[stage as usize] += (now - mark).as_secs_f64() * 1e3;
        }
        self.mark = Some(now);
        if stage == Stage::Densify {
            self.iterations += 1;
        }
        Ok(())
    }

    /// Submits `enc`, ends `stage`, and returns a fresh encoder for the next one.
    pub(crate) fn boundary(&mut self, enc: Encoder, stage: Stage) -> Result<Encoder> {
        let ctx = enc.ctx().clone();
        ctx.submit(enc)?;
        self.lap(&ctx, stage)?;
        Ok(ctx.encoder("train step (profiled)"))
    }

    /// Records the sizes of one iteration's forward pass.
    pub(crate) fn count(&mut self, visible: u64, intersections: u64) {
        self.visible_total += visible;
        self.intersections_total += intersections;
    }

    /// Mean visible splats and tile intersections per profiled iteration.
    pub fn mean_counts(&self) -> (f64, f64) {
        let n = self.iterations.max(1) as f64;
        (
            self.visible_total as f64 / n,
            self.intersections_total as f64 / n,
        )
    }

    /// Profiled iterations so far.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Mean milliseconds per iteration of each stage, in [`Stage::ALL`] order.
    pub fn mean_ms(&self) -> Vec<(Stage, f64)> {
        let n = self.iterations.max(1) as f64;
        Stage::ALL
            .iter()
            .map(|&s| (s, self.totals_ms[s as usize] / n))
            .collect()
    }
}
