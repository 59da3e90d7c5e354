//! Layer 4, training: configuration, the trainer, 3DGS densification, initialisation and the
//! message stream the front ends consume.

pub mod bounds;
pub mod budget;
pub mod byte_size;
pub mod clearance;
pub mod config;
pub mod densify;
pub mod evaluate;
pub mod events;
pub mod geometry;
mod gradient_step;
pub mod image_cache;
pub mod init;
pub mod mcmc;
mod mcmc_step;
pub mod options;
pub mod pose;
pub mod profile;
pub mod resume;
#[cfg(not(target_arch = "wasm32"))]
pub mod run;
pub mod setup;
pub mod state;
pub mod strategy;
pub mod trainer;

pub use config::{Background, StrategyKind, TrainConfig};
pub use events::{Evaluation, ScoredViews, TrainEvent, ViewScore};
pub use trainer::{LossReport, Trainer};
