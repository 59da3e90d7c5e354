//! wgsplat: a portable GPU tensor runtime and 3D Gaussian Splatting trainer. Every kernel is WGSL,
//! run through wgpu on Vulkan, Metal or DX12.
//!
//! Layers, each using only those below it:
//! 1. [`gpu`], [`tensor`], [`ops`], [`rng`], [`linalg`], [`geometry`]: device, memory accounting,
//!    paged tensors, generic kernels, the pseudo-random generator, 3×3 linear algebra, and
//!    nearest neighbours and segment-to-ellipsoid distances; beside them `external` (not in the
//!    browser build) finds and runs the programs [`sfm`] and [`show`] drive (COLMAP, ffmpeg).
//! 2. [`splat`]: projection, binning, sorting, rasterization and their backward passes.
//! 3. [`loss`] (L1 + D-SSIM, metrics), [`knn`] (k-NN initial scales), [`optim`] (Adam, schedules,
//!    row surgery for densification).
//! 4. [`train`] (the trainer and densification), fed by [`data`] (datasets) and writing through
//!    [`io`] (PLY models, checkpoints); [`plan`] splits a large scene into blocks trained as
//!    cluster jobs and merges them; [`sfm`] turns photographs and videos into a dataset by
//!    driving COLMAP.
//!    [`mesh`] fuses depth maps of a model's views into a surface mesh and scores it.
//! 5. The front ends: the `wgsplat` CLI (`src/cli/`) and the viewer crate (`viewer/`).

pub mod data;
pub mod error;
#[cfg(not(target_arch = "wasm32"))]
pub mod external;
pub mod geometry;
pub mod gpu;
pub mod io;
pub mod knn;
pub mod linalg;
pub mod loss;
pub mod mesh;
pub mod ops;
pub mod optim;
#[cfg(not(target_arch = "wasm32"))]
pub mod plan;
pub mod rng;
#[cfg(not(target_arch = "wasm32"))]
pub mod sfm;
pub mod show;
pub mod splat;
pub mod tensor;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;
pub mod train;

pub use error::{Error, Result};
pub use gpu::{ContextOptions, Encoder, GpuContext, MemoryCategory, MemoryReport};
pub use tensor::{DType, Element, Tensor};
