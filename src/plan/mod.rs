//! Scale-out: a scene too large for one GPU is split into spatial blocks on its ground plane, each
//! trained as an independent job by a cluster engine people already run (Slurm job arrays,
//! Kubernetes Indexed Jobs), then merged into one model. wgsplat plans, trains one block per
//! process and merges; the engine schedules, retries and places the jobs.
//!
//! - [`engines`]: the Slurm scripts and Kubernetes manifests beside a plan, ready to submit.
//! - [`manifest`]: `PLAN/plan.json`, the versioned record of the partition and the settings every
//!   block trains with.

pub mod engines;
pub mod manifest;

pub use engines::{EngineArgs, EngineOptions, KubernetesOptions, SlurmOptions, write_engine_files};
pub use manifest::{BlockPlan, Cell, GroundFrame, PLAN_VERSION, PlanData, PlanManifest};
