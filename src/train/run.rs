//! Driving a trainer: [`Trainer::run`] and [`Trainer::run_until`] step it and turn what
//! happens into the [`TrainEvent`] stream the CLI and the viewer consume.

use super::events::TrainEvent;
use super::trainer::{LossReport, Trainer};
use crate::error::Result;

impl Trainer {
    /// Emits `Started`, then runs to the configured iteration count, reporting through `sink`.
    pub fn run(&mut self, sink: &mut dyn FnMut(TrainEvent), stop: &dyn Fn() -> bool) -> Result<()> {
        sink(TrainEvent::Started {
            iterations: self.config.iterations,
            gaussians: self.state.params.len(),
            adapter: self.ctx.info().name.clone(),
        });
        self.run_until(self.config.iterations, sink, stop)
    }

    /// Runs until `target` iterations are done (or `stop` says so), reporting through `sink`.
    pub fn run_until(
        &mut self,
        target: u64,
        sink: &mut dyn FnMut(TrainEvent),
        stop: &dyn Fn() -> bool,
    ) -> Result<()> {
        let start = std::time::Instant::now();
        let first = self.iteration;
        while self.iteration < target.min(self.config.iterations) && !stop() {
            let before = self.state.params.len();
            if let Some(LossReport {
                iteration,
                loss,
                train_psnr,
            }) = self.step()?
            {
                let rate =
                    (self.iteration - first) as f64 / start.elapsed().as_secs_f64().max(1e-9);
                let gpu_bytes = self.ctx.memory_report().total.live_bytes;
                sink(TrainEvent::Progress {
                    iteration,
                    loss,
                    train_psnr,
                    gaussians: self.state.params.len(),
                    iterations_per_second: rate,
                    gpu_bytes,
                });
            }
            if self.state.params.len() != before {
                sink(TrainEvent::Densified {
                    iteration: self.refined_through,
                    before,
                    after: self.state.params.len(),
                });
            }
            if let Some(scores) = self.due_evaluation.take() {
                sink(TrainEvent::Evaluated {
                    iteration: self.iteration,
                    scores,
                });
            }
        }
        Ok(())
    }
}

/// Where a run from `iteration` towards `last` pauses to write its next periodic checkpoint: the
/// next multiple of `save_every` (or `last` when `save_every` is 0), never past `last`.
pub fn next_checkpoint_pause(iteration: u64, last: u64, save_every: u64) -> u64 {
    match iteration.checked_div(save_every) {
        Some(chunks) => ((chunks + 1) * save_every).min(last),
        None => last,
    }
}
