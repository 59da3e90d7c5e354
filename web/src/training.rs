//! Training the built-in scene in the page: the library's own trainer and recipe, stepped by a
//! task that awaits every readback, so the page stays live; the app shows the model as it trains
//! and plots the loss.

use crate::page;
use eframe::egui;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use web_time::Instant;
use wgsplat::GpuContext;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::splat::GaussianTensors;
use wgsplat::train::init::initial_gaussians_async;
use wgsplat::train::setup::apply_builtin_recipe;
use wgsplat::train::{TrainConfig, Trainer};
use wgsplat_viewer::views::DatasetViews;

/// What the training task shares with the app.
#[derive(Default)]
pub struct Progress {
    /// Iterations done.
    pub iteration: u64,
    /// Iterations the run goes to.
    pub iterations: u64,
    /// Gaussians in the model now.
    pub gaussians: u64,
    /// `[iteration, loss]` of every loss read back.
    pub losses: Vec<[f64; 2]>,
    /// The training PSNR of the last loss read back.
    pub train_psnr: Option<f32>,
    /// The model to draw: the trainer's parameters, republished a few times a second.
    pub snapshot: Option<Arc<GaussianTensors>>,
    /// The scene's cameras and images, for the View panel (taken by the app once).
    pub views: Option<DatasetViews>,
    /// The near plane the trainer draws with, once it has started (the page draws with it).
    pub near_plane: Option<f32>,
    /// Seconds since the first step.
    pub seconds: f64,
    /// What the task is doing, when not stepping ("generating the scene", "done", ...).
    pub phase: String,
    /// The run ended (done, stopped or failed).
    pub finished: bool,
    /// Why it failed.
    pub error: Option<String>,
    /// Set by the app to stop the run after the current step.
    pub stop: bool,
}

/// Starts training the built-in scene at `resolution`² for `iterations`; `wake` repaints.
pub fn start(
    ctx: GpuContext,
    resolution: u32,
    iterations: u64,
    wake: egui::Context,
) -> Rc<RefCell<Progress>> {
    let progress = Rc::new(RefCell::new(Progress {
        iterations,
        phase: "generating the built-in scene".into(),
        ..Default::default()
    }));
    let shared = progress.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let outcome = run(&ctx, &shared, resolution, iterations, &wake).await;
        let mut p = shared.borrow_mut();
        p.finished = true;
        match outcome {
            Ok(()) => p.phase = "done".into(),
            Err(err) => {
                p.phase = "failed".into();
                p.error = Some(format!("{err:#}"));
            }
        }
        wake.request_repaint();
    });
    progress
}

async fn run(
    ctx: &GpuContext,
    shared: &Rc<RefCell<Progress>>,
    resolution: u32,
    iterations: u64,
    wake: &egui::Context,
) -> anyhow::Result<()> {
    // Let the page draw "generating" before the ray tracer holds the thread.
    page::next_tick().await;
    let dataset = generate(&BuiltinOptions {
        resolution,
        ..BuiltinOptions::default()
    })?;
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    config.iterations = iterations;
    config.lpips = false;
    config.eval_every = 0;
    shared.borrow_mut().views = Some(DatasetViews::new(
        Some(&dataset),
        (dataset.center, dataset.extent),
    ));
    shared.borrow_mut().phase = "starting".into();
    let params = initial_gaussians_async(ctx, &dataset, &config).await?;
    let mut trainer = Trainer::new(ctx, dataset, params, config)?;
    shared.borrow_mut().near_plane = Some(trainer.near_plane());
    let started = Instant::now();
    let mut published = Instant::now();
    loop {
        let (done, stop) = {
            let p = shared.borrow();
            (trainer.iteration() >= iterations, p.stop)
        };
        if done || stop {
            break;
        }
        let report = trainer.step_async().await?;
        let mut p = shared.borrow_mut();
        p.iteration = trainer.iteration();
        p.gaussians = trainer.params().len();
        p.seconds = started.elapsed().as_secs_f64();
        p.phase = "training".into();
        if let Some(report) = report {
            p.losses
                .push([report.iteration as f64, f64::from(report.loss)]);
            p.train_psnr = Some(report.train_psnr);
        }
        if p.snapshot.is_none() || published.elapsed().as_secs_f64() > 0.25 {
            p.snapshot = Some(Arc::new(trainer.params().clone()));
            published = Instant::now();
            wake.request_repaint();
        }
    }
    let mut p = shared.borrow_mut();
    p.snapshot = Some(Arc::new(trainer.params().clone()));
    p.seconds = started.elapsed().as_secs_f64();
    Ok(())
}
