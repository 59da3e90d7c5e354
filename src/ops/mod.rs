//! Generic tensor operations, each a WGSL kernel with a CPU reference in the tests. Every op records
//! into the caller's [`Encoder`](crate::gpu::Encoder) and works page by page, so tensors larger than
//! one binding are handled everywhere.

pub mod compact;
pub mod count;
pub mod elementwise;
mod elementwise_codes;
pub mod fill;
pub mod gather;
pub mod radix_sort;
pub mod reduce;
pub mod scan;

pub use compact::{Compacted, compact, compact_blocking, compact_indices};
pub use count::{count_nonzero, count_nonzero_blocking};
pub use elementwise::{
    BinaryOp, UnaryOp, add, add_inplace, add_scalar_inplace, axpy, binary, binary_inplace,
    clamp_inplace, copy, copy_range, div, div_inplace, maximum, minimum, mul, mul_inplace,
    scale_inplace, sub, sub_inplace, unary, unary_inplace,
};
pub use fill::{arange, fill};
pub use gather::{append, concat, gather, gather_rows, gather_rows_into, scatter, scatter_rows};
pub use radix_sort::{sort_keys, sort_pairs, sort_pairs_consuming};
pub use reduce::{
    ReduceOp, max_f32, max_f32_value, min_f32, min_f32_value, reduce, reduce_value, sum_f32,
    sum_f32_value,
};
pub use scan::{
    ScanKind, exclusive_scan, exclusive_scan_flags, exclusive_scan_u32,
    exclusive_scan_u32_in_place, inclusive_scan, inclusive_scan_u32, inclusive_scan_u32_in_place,
    scan_u32, scan_u32_in_place, scan_with_total,
};

use crate::error::Result;
use crate::gpu::{Encoder, WorkgroupGrid};

/// A grid covering `items` items with `per_workgroup` items per workgroup on this encoder's device.
pub(crate) fn grid(enc: &Encoder, items: u64, per_workgroup: u32) -> Result<WorkgroupGrid> {
    WorkgroupGrid::for_items(
        items,
        per_workgroup,
        enc.ctx().max_workgroups_per_dimension(),
    )
}
