//! Live training on its own thread: the same `Trainer` and `TrainEvent` stream as the CLI. After
//! each batch of steps (one refresh interval) the thread publishes a GPU copy of the parameters
//! (latest wins); the UI sends pause, resume, save and stop through a channel.

use eframe::egui;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wgsplat::data::Dataset;
use wgsplat::io::model::save_gpu_model_as_ply;
use wgsplat::ops::elementwise::copy;
use wgsplat::splat::GaussianTensors;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::options::TrainOptions;
use wgsplat::train::{TrainConfig, TrainEvent, Trainer};
use wgsplat::{GpuContext, MemoryCategory};

/// A request to the trainer thread.
#[derive(Debug)]
pub enum Command {
    /// Stop stepping until `Resume`.
    Pause,
    /// Continue stepping.
    Resume,
    /// Write the current model as a PLY to this path.
    SavePly(PathBuf),
    /// Finish: write the checkpoint and PLY when an output folder was given, then end the thread.
    Stop,
}

/// How severe a log line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Progress notes.
    Info,
    /// Trainer warnings.
    Warning,
    /// Failures.
    Error,
}

/// Everything the UI reads from the trainer thread.
#[derive(Default)]
pub struct Shared {
    /// The latest parameter snapshot and the iteration it was taken at.
    pub snapshot: Option<(Arc<GaussianTensors>, u64)>,
    /// Iterations done.
    pub iteration: u64,
    /// Iterations the thread will run to.
    pub target: u64,
    /// Recent iterations per second.
    pub iterations_per_second: f64,
    /// Gaussians now.
    pub gaussians: u64,
    /// How the optimizer stores Adam's moments.
    pub optimizer_state: wgsplat::optim::MomentStorage,
    /// Paused by the user.
    pub paused: bool,
    /// No more steps will run (target reached, stopped or failed).
    pub finished: bool,
    /// (iteration, loss) at each loss readback.
    pub loss: Vec<[f64; 2]>,
    /// (iteration, PSNR dB) on the training view.
    pub train_psnr: Vec<[f64; 2]>,
    /// (iteration, PSNR dB) on the test views.
    pub test_psnr: Vec<[f64; 2]>,
    /// (iteration, count) of Gaussians.
    pub gaussian_count: Vec<[f64; 2]>,
    /// Log lines.
    pub log: Vec<(Level, String)>,
    /// The thread has seen `Stop`.
    pub stop_requested: bool,
}

impl Shared {
    fn note(&mut self, level: Level, message: impl Into<String>) {
        self.log.push((level, message.into()));
    }

    fn record(&mut self, event: TrainEvent) {
        match event {
            TrainEvent::Progress {
                iteration,
                loss,
                train_psnr,
                gaussians,
                iterations_per_second,
                ..
            } => {
                let x = iteration as f64;
                self.loss.push([x, f64::from(loss)]);
                self.train_psnr.push([x, f64::from(train_psnr)]);
                self.gaussian_count.push([x, gaussians as f64]);
                self.iterations_per_second = iterations_per_second;
                self.gaussians = gaussians;
            }
            TrainEvent::Evaluated { iteration, scores } => {
                self.test_psnr.push([iteration as f64, scores.psnr]);
                self.note(Level::Info, format!("it {iteration}: {}", scores.summary()));
            }
            TrainEvent::Densified {
                iteration,
                before,
                after,
            } => {
                self.note(
                    Level::Info,
                    format!("it {iteration}: densified {before} -> {after} Gaussians"),
                );
            }
            TrainEvent::Log { message } => self.note(Level::Warning, message),
            TrainEvent::Saved { path } => self.note(Level::Info, format!("wrote {path}")),
            TrainEvent::Started { .. } | TrainEvent::Finished { .. } => {}
        }
    }
}

/// The UI's handle on the trainer thread.
pub struct TrainingHandle {
    commands: Sender<Command>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
}

/// What the trainer thread starts from.
pub struct TrainingJob {
    /// The GPU context (the one egui draws with).
    pub ctx: GpuContext,
    /// The data.
    pub dataset: Dataset,
    /// The settings.
    pub config: TrainConfig,
    /// Stop after this many iterations (default: the configured count).
    pub stop_at: Option<u64>,
    /// Where to write the checkpoint and PLY on exit (and every `save_every` iterations).
    pub out: Option<PathBuf>,
    /// The command line's training options (for `--memory-budget`).
    pub options: TrainOptions,
    /// How often to publish a snapshot.
    pub refresh: Duration,
}

impl TrainingHandle {
    /// Starts training on a new thread; `repaint` is poked whenever there is something new.
    pub fn spawn(job: TrainingJob, repaint: egui::Context) -> anyhow::Result<TrainingHandle> {
        let (commands, inbox) = channel();
        let shared = Arc::new(Mutex::new(Shared {
            target: job
                .stop_at
                .unwrap_or(job.config.iterations)
                .min(job.config.iterations),
            optimizer_state: job.config.optimizer_state,
            ..Shared::default()
        }));
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("wgsplat-trainer".into())
            .spawn(move || {
                if let Err(err) = train_loop(job, &inbox, &state, &repaint) {
                    eprintln!("training failed: {err:#}");
                    let mut s = lock(&state);
                    s.note(Level::Error, format!("training failed: {err:#}"));
                    s.finished = true;
                    let stopping = s.stop_requested;
                    drop(s);
                    repaint.request_repaint();
                    // Keep the thread until the UI says stop.
                    if !stopping {
                        while !matches!(inbox.recv(), Ok(Command::Stop) | Err(_)) {}
                    }
                }
            })?;
        Ok(TrainingHandle {
            commands,
            shared,
            thread: Some(thread),
        })
    }

    /// Sends a command (ignored once the thread has ended).
    pub fn send(&self, command: Command) {
        let _ = self.commands.send(command);
    }

    /// The shared state.
    pub fn shared(&self) -> MutexGuard<'_, Shared> {
        lock(&self.shared)
    }

    /// Asks the thread to stop and waits for it (it writes its outputs first).
    pub fn stop_and_join(&mut self) {
        self.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TrainingHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// A GPU copy of `params` that training can keep changing under.
fn snapshot(ctx: &GpuContext, params: &GaussianTensors) -> anyhow::Result<GaussianTensors> {
    let mut enc = ctx.encoder("viewer: snapshot");
    let out = GaussianTensors::uninit(
        &mut enc,
        params.len() as usize,
        params.max_sh_degree(),
        MemoryCategory::Other,
        "viewer/snapshot",
    )?;
    for (src, dst) in params.attributes().into_iter().zip(out.attributes()) {
        copy(&mut enc, src, dst)?;
    }
    ctx.submit(enc)?;
    Ok(out)
}

fn train_loop(
    job: TrainingJob,
    inbox: &Receiver<Command>,
    state: &Mutex<Shared>,
    repaint: &egui::Context,
) -> anyhow::Result<()> {
    let ctx = job.ctx;
    let target = lock(state).target;
    let mut config = job.config;
    let params = initial_gaussians(&ctx, &job.dataset, &config)?;
    if let Some(plan) =
        job.options
            .apply_memory_budget(&ctx, &job.dataset, params.len(), &mut config)?
    {
        lock(state).note(
            Level::Info,
            format!(
                "memory budget {} bytes: cap {} Gaussians",
                plan.budget, config.max_gaussians
            ),
        );
    }
    // `--save-every` comes with `--out` (checked when the options are read).
    let save_every = config.save_every;
    let mut trainer = Trainer::new(&ctx, job.dataset, params, config)?;
    wgsplat::train::bounds::check_crop_box(&ctx, trainer.params(), trainer.config())?;
    let mut last_saved = 0;
    let mut paused = false;
    let mut published: Option<u64> = None;
    loop {
        if published != Some(trainer.iteration()) {
            let copy = Arc::new(snapshot(&ctx, trainer.params())?);
            lock(state).snapshot = Some((copy, trainer.iteration()));
            published = Some(trainer.iteration());
            repaint.request_repaint();
        }
        {
            let mut s = lock(state);
            s.iteration = trainer.iteration();
            s.gaussians = trainer.params().len();
            s.finished = trainer.iteration() >= target;
            s.paused = paused;
        }
        let idle = paused || trainer.iteration() >= target;
        let command = if idle {
            match inbox.recv_timeout(Duration::from_millis(200)) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => Some(Command::Stop),
            }
        } else {
            inbox.try_recv().ok()
        };
        match command {
            Some(Command::Pause) => paused = true,
            Some(Command::Resume) => paused = false,
            Some(Command::SavePly(path)) => {
                let result = save_gpu_model_as_ply(
                    &ctx,
                    trainer.params(),
                    &path,
                    Some(trainer.near_plane()),
                );
                let mut s = lock(state);
                match result {
                    Ok(()) => s.note(Level::Info, format!("wrote {}", path.display())),
                    Err(e) => s.note(Level::Error, format!("saving {}: {e:#}", path.display())),
                }
            }
            Some(Command::Stop) => {
                lock(state).stop_requested = true;
                break;
            }
            None => {}
        }
        if paused || trainer.iteration() >= target {
            continue;
        }
        let started = Instant::now();
        let stop = || started.elapsed() >= job.refresh;
        let mut sink = |event: TrainEvent| lock(state).record(event);
        // Stop at the next checkpoint iteration, if that comes first.
        let chunk_end = match trainer.iteration().checked_div(save_every) {
            Some(chunks) => ((chunks + 1) * save_every).min(target),
            None => target,
        };
        trainer.run_until(chunk_end, &mut sink, &stop)?;
        if let Some(out) = job.out.as_ref().filter(|_| save_every > 0)
            && trainer.iteration().is_multiple_of(save_every)
            && last_saved != trainer.iteration()
        {
            last_saved = trainer.iteration();
            std::fs::create_dir_all(out)?;
            let path = out.join("checkpoint.bin");
            trainer.save_checkpoint(
                &path,
                &serde_json::json!({ "written_by": "wgsplat-viewer" }),
            )?;
            lock(state).note(
                Level::Info,
                format!("it {}: wrote {}", trainer.iteration(), path.display()),
            );
        }
    }
    lock(state).finished = true;
    if let Some(out) = &job.out {
        std::fs::create_dir_all(out)?;
        trainer.save_checkpoint(
            &out.join("checkpoint.bin"),
            &serde_json::json!({ "written_by": "wgsplat-viewer" }),
        )?;
        let ply = out.join("point_cloud.ply");
        save_gpu_model_as_ply(&ctx, trainer.params(), &ply, Some(trainer.near_plane()))?;
        println!(
            "wrote {} and {}",
            out.join("checkpoint.bin").display(),
            ply.display()
        );
    }
    Ok(())
}
