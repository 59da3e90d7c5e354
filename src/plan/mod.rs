//! Scale-out: a scene too large for one GPU is split into spatial blocks on its ground plane, each
//! trained as an independent job by a cluster engine people already run (Slurm job arrays,
//! Kubernetes Indexed Jobs), then merged into one model. wgsplat plans, trains one block per
//! process and merges; the engine schedules, retries and places the jobs.
//!
//! - [`engines`]: the Slurm scripts and Kubernetes manifests beside a plan, ready to submit.
//! - [`manifest`]: `PLAN/plan.json`, the versioned record of the partition and the settings every
//!   block trains with.
//! - [`ground`]: the ground frame, from the camera centres and their up direction.
//! - [`partition`]: the cells (quantile splits), their margins, and each block's views.
//! - [`create`]: the grid and the memory estimate of each block; the manifest.
//! - [`block`]: training one block (`wgsplat train --plan`), resumable and idempotent.
//! - [`outputs`]: a block's files and `done.json`.
//! - [`merge`]: one model from the blocks' cores.

pub mod block;
pub mod create;
pub mod engines;
pub mod ground;
pub mod manifest;
pub mod merge;
pub mod outputs;
pub mod partition;

pub use block::{BlockOutcome, BlockStop, block_from_env, load_plan_dataset, train_block};
pub use create::{PartitionRequest, plan_partition};
pub use engines::{EngineArgs, EngineOptions, KubernetesOptions, SlurmOptions, write_engine_files};
pub use manifest::{BlockPlan, Cell, GroundFrame, PLAN_VERSION, PlanData, PlanManifest};
pub use merge::{MergeReport, merge_plan};
pub use partition::{Balance, Grid, PartitionSettings};
