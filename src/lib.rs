//! wgsplat: a portable GPU tensor runtime and 3D Gaussian Splatting trainer. Every kernel is WGSL,
//! run through wgpu on Vulkan, Metal or DX12.
//!
//! Layers, each using only those below it:
//! 1. [`gpu`], [`tensor`], [`ops`]: device, memory accounting, paged tensors and generic kernels.
//! 2. [`splat`]: projection, binning, sorting, rasterization and their backward passes.
//! 3. [`knn`]: k-nearest-neighbour initialisation of Gaussian scales.

pub mod error;
pub mod gpu;
pub mod knn;
pub mod ops;
pub mod splat;
pub mod tensor;
pub mod testing;

pub use error::{Error, Result};
pub use gpu::{ContextOptions, Encoder, GpuContext, MemoryCategory, MemoryReport};
pub use tensor::{DType, Element, Tensor};

/// Every Rust struct in the library that mirrors a WGSL struct (checked against naga in the tests).
pub fn mirrored_structs() -> Vec<gpu::mirror::Mirror> {
    let mut all = ops::mirrors();
    all.extend(splat::uniform::mirrors());
    all.extend(knn::mirrors());
    all
}
