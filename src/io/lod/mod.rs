//! Level of detail for large models: a tree of merged Gaussians over a model ([`tree`],
//! [`merge`]), stored as a folder of pages that any cut can read page by page ([`format`],
//! [`write`], [`read`]), and the cut chosen each frame on the GPU under a splat budget.
//!
//! See `docs/lod.md` for the format and the measured quality for each budget.

pub mod format;
pub mod merge;
pub mod read;
pub mod tree;
pub mod write;

pub use format::{LodIndex, PageEncoding, PageRecord};
pub use read::LodScene;
pub use tree::{LodTree, Skeleton, build_tree};
pub use write::{WriteOptions, write_lod};

#[cfg(test)]
mod folder_tests;
