//! The message stream a trainer emits; the CLI and the viewer both consume it.

use crate::gpu::MemoryReport;
use serde::Serialize;

/// Something the trainer reports.
#[derive(Clone, Debug, Serialize)]
pub enum TrainEvent {
    /// Training is about to start.
    Started {
        /// Iterations planned.
        iterations: u64,
        /// Gaussians at the start.
        gaussians: u64,
        /// Adapter name.
        adapter: String,
    },
    /// Progress, at each loss readback.
    Progress {
        /// Iteration just completed.
        iteration: u64,
        /// Training loss read back at that iteration.
        loss: f32,
        /// Its PSNR on the training view.
        train_psnr: f32,
        /// Current number of Gaussians.
        gaussians: u64,
        /// Iterations per second since the start.
        iterations_per_second: f64,
        /// GPU bytes live now.
        gpu_bytes: u64,
    },
    /// Evaluation on the held-out views (or, when the dataset has none, on the training views).
    Evaluated {
        /// Iteration.
        iteration: u64,
        /// The scores.
        scores: Evaluation,
    },
    /// Densification changed the model.
    Densified {
        /// Iteration.
        iteration: u64,
        /// Gaussians before.
        before: u64,
        /// Gaussians after.
        after: u64,
    },
    /// A warning or note.
    Log {
        /// The text.
        message: String,
    },
    /// A file was written.
    Saved {
        /// Its path.
        path: String,
    },
    /// Training finished.
    Finished {
        /// Iterations run.
        iterations: u64,
        /// Seconds.
        seconds: f64,
        /// Gaussians at the end.
        gaussians: u64,
        /// Memory at the end (peaks included).
        memory: Box<MemoryReport>,
    },
}

/// Which views an evaluation scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoredViews {
    /// The held-out test views.
    Test,
    /// The training views (the dataset has no test views).
    Train,
}

impl ScoredViews {
    /// "test" or "train", for messages and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            ScoredViews::Test => "test",
            ScoredViews::Train => "train",
        }
    }
}

/// The scores of one evaluation: means over the scored views.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    /// Which views were scored: [`ScoredViews::Test`] or, without test views,
    /// [`ScoredViews::Train`].
    pub views: ScoredViews,
    /// How many views.
    pub count: usize,
    /// Mean PSNR (dB) of the clamped renders.
    pub psnr: f64,
    /// Mean SSIM.
    pub ssim: f64,
    /// Mean LPIPS (AlexNet), or `None` when disabled (`TrainConfig::lpips`) or when the images
    /// are smaller than AlexNet accepts ([`crate::loss::lpips::MIN_IMAGE_SIDE`]).
    pub lpips: Option<f64>,
    /// How many of the scored views carry a loss mask; their masked pixels are left out of every
    /// score.
    pub masked: usize,
    /// True when exposure compensation was on: each view's colour transform was fitted on its
    /// left half and only its right half scored (INRIA's `--train_test_exp` protocol).
    pub exposure_fitted: bool,
    /// Each scored view's own scores, in the order the views were scored: a mean hides the one
    /// view a floater veils, the worst one shows it.
    pub per_view: Vec<ViewScore>,
}

/// One scored view's PSNR, SSIM and LPIPS.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ViewScore {
    /// The view's name in its dataset.
    pub name: String,
    /// PSNR (dB) of the clamped render.
    pub psnr: f64,
    /// SSIM.
    pub ssim: f64,
    /// LPIPS (AlexNet), when scored.
    pub lpips: Option<f64>,
}

impl Evaluation {
    /// The view with the lowest PSNR, `None` when no view was scored.
    pub fn worst_view(&self) -> Option<&ViewScore> {
        self.per_view
            .iter()
            .min_by(|a, b| a.psnr.total_cmp(&b.psnr))
    }

    /// One line for logs: `test PSNR 30.71 dB, SSIM 0.9600, LPIPS 0.050`.
    pub fn summary(&self) -> String {
        let lpips = self
            .lpips
            .map(|v| format!(", LPIPS {v:.4}"))
            .unwrap_or_default();
        let masked = match self.masked {
            0 => String::new(),
            n => format!(" (masked pixels of {n} views excluded)"),
        };
        let exposure = match self.exposure_fitted {
            true => " (exposure fitted on each view's left half, right half scored)",
            false => "",
        };
        let worst = match (self.per_view.len(), self.worst_view()) {
            (2.., Some(view)) => format!(" (worst view {} at {:.2} dB)", view.name, view.psnr),
            _ => String::new(),
        };
        format!(
            "{} PSNR {:.2} dB, SSIM {:.4}{lpips}{worst}{masked}{exposure}",
            self.views.name(),
            self.psnr,
            self.ssim
        )
    }
}
