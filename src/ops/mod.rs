//! Generic tensor operations, each a WGSL kernel with a CPU reference in the tests. Every op records
//! into the caller's [`Encoder`](crate::gpu::Encoder) and works page by page, so tensors larger than
//! one binding are handled everywhere.

pub mod fill;
pub mod radix_sort;

pub use fill::{arange, fill};
pub use radix_sort::{sort_keys, sort_pairs};

use crate::error::Result;
use crate::gpu::{Encoder, WorkgroupGrid};

/// A grid covering `items` items with `per_workgroup` items per workgroup on this encoder's device.
pub(crate) fn grid(enc: &Encoder, items: u64, per_workgroup: u32) -> Result<WorkgroupGrid> {
    WorkgroupGrid::for_items(items, per_workgroup, enc.ctx().max_workgroups_per_dimension())
}

/// Every Rust struct in `ops` that mirrors a WGSL struct.
pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    let mut all = Vec::new();
    all.extend(fill::mirrors());
    all.extend(radix_sort::mirrors());
    all
}
