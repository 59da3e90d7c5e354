//! Layer 3, optimisation: a fused Adam kernel with f32 moments or both packed into one word, the per-Gaussian
//! optimizer, the 3DGS learning-rate schedules, and the row surgery densification needs (keep
//! rows by index, append rows) applied to parameters and moments together so they stay aligned.

pub mod adam;
pub mod bf16;
pub mod optimizer;
pub mod packed;
pub mod rows;
pub mod schedule;

pub use adam::{AdamConfig, LearningRates, MomentStorage, adam_step};
pub use optimizer::{GaussianOptimizer, Moments};
pub use rows::{scatter_gaussian_rows, select_gaussian_rows};
pub use schedule::{ExponentialDecay, LearningRateSchedule};
