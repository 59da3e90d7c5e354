//! Level of detail for large models: a tree of merged Gaussians over a model ([`tree`],
//! [`merge`]), stored as a folder of pages that any cut can read page by page ([`format`],
//! [`write`], [`read`]), and the cut chosen each frame on the GPU under a splat budget.
//!
//! See `docs/lod.md` for the format and the measured quality for each budget.

pub mod check;
pub mod city;
pub mod cut;
pub mod cut_reference;
mod emit;
pub mod format;
pub mod merge;
pub mod pool;
pub mod quality;
pub mod read;
pub mod refine;
mod refine_adam;
mod refine_cameras;
pub mod render;
pub mod tree;
pub mod write;

pub use cut::{CutOptions, LodGpu};
pub use format::{LodIndex, PageEncoding, PageRecord};
pub use read::LodScene;
pub use refine::{RefineOptions, RefineReport, refine_tree};
pub use render::{FrameReport, Loading, LodRenderer};
pub use tree::{LodTree, Skeleton, build_tree};
pub use write::{WriteOptions, write_lod};

#[cfg(test)]
mod cut_tests;
#[cfg(test)]
mod folder_tests;
