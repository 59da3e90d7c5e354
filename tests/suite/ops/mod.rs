//! The generic GPU operations against CPU references: compaction, counts, element-wise ops, fill,
//! gather and scatter, reductions, scans, the radix sort and tensor handles.

mod compact;
mod count;
mod elementwise;
mod fill;
mod gather;
mod radix_sort;
mod reduce;
mod scan;
mod tensor;
