//! wgsplat: a portable GPU tensor runtime and 3D Gaussian Splatting trainer. Every kernel is WGSL,
//! run through wgpu on Vulkan, Metal or DX12.
//!
//! Layers, each using only those below it:
//! 1. [`gpu`], [`tensor`], [`ops`]: device, memory accounting, paged tensors and generic kernels.
//! 2. [`splat`]: projection, binning, sorting, rasterization and their backward passes.
//! 4. [`data`]: datasets for the trainer (COLMAP, NeRF-synthetic, nerfstudio, the built-in scene).
//! 3. [`optim`]: Adam, learning-rate schedules and row surgery for densification; [`io`]: PLY
//!    models and training checkpoints.

pub mod data;
pub mod error;
pub mod gpu;
pub mod loss;
pub mod io;
pub mod ops;
pub mod optim;
pub mod splat;
pub mod train;
pub mod tensor;
pub mod testing;

pub use error::{Error, Result};
pub use gpu::{ContextOptions, Encoder, GpuContext, MemoryCategory, MemoryReport};
pub use tensor::{DType, Element, Tensor};

/// Every Rust struct in the library that mirrors a WGSL struct (checked against naga in the tests).
pub fn mirrored_structs() -> Vec<gpu::mirror::Mirror> {
    let mut all = ops::mirrors();
    all.extend(splat::uniform::mirrors());
    all.extend(train::densify::mirrors());
    all.extend(loss::mirrors());
    all.extend(optim::mirrors());
    all
}
