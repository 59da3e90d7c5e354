//! Stable LSD radix sort of u32 keys, optionally carrying 32-bit values, over paged tensors
//! (shaders/radix_sort_*.wgsl).
//!
//! Only the low `bits` bits of each key take part: the sort runs `ceil(bits / 4)` passes of one
//! 4-bit digit each, and keys equal in those bits keep their input order (higher bits are carried
//! along untouched but do not affect the order). Each pass:
//! 1. `count_digits`: every block of [`BLOCK`] keys writes its 16-bin digit histogram into the
//!    *digit table*, bin-major: `table[bin * num_blocks + block]`;
//! 2. `reduce_blocks` / `scan_blocks`: a multi-level exclusive scan of the table (its own kernels,
//!    for up to `16 * num_blocks` entries) turns each count into that block's first output
//!    position for the bin;
//! 3. `scatter_pairs` / `scatter_keys`: every block ranks its keys stably by digit in workgroup
//!    memory and writes each key (and value) to `table[digit][block] + rank`. The scatter runs once
//!    per (source page, destination page) pair, each dispatch writing only inside its destination
//!    page, so tensors of any number of pages work without a readback.
//!
//! Passes alternate between two pairs of scratch tensors (category
//! [`MemoryCategory::SortScratch`]); the pair written last is returned. Blocks never straddle a
//! page: page `p` holds blocks `p * blocks_per_page ..`, so the block order is the element order.

use crate::error::{Error, Result};
use crate::gpu::kernels::{
    Arg, TypedKernel, radix_sort_common, radix_sort_histogram, radix_sort_scan, radix_sort_scatter,
};
use crate::gpu::{Encoder, GpuBuffer, MemoryCategory};
use crate::tensor::{DType, Tensor};
use std::num::NonZeroU64;

/// Bits of the key sorted per pass.
pub const DIGIT_BITS: u32 = 4;
const _: () = assert!(1 << DIGIT_BITS == radix_sort_common::RADIX);
/// Keys per sort block (one workgroup) and entries per scan block: `BLOCK` in
/// shaders/radix_sort_common.wgsl.
pub const BLOCK: u64 = radix_sort_common::BLOCK as u64;

/// Sorts `keys` (u32) by their low `bits` bits (1..=32), stably, carrying `values` (any 32-bit
/// dtype, same length) along. Returns new tensors `(sorted_keys, permuted_values)`; the inputs are
/// unchanged.
pub fn sort_pairs(
    enc: &mut Encoder,
    keys: &Tensor,
    values: &Tensor,
    bits: u32,
) -> Result<(Tensor, Tensor)> {
    values.expect_same_len("sort_pairs", keys)?;
    let (sorted_keys, sorted_values) = sort(enc, keys, Some(values), bits)?;
    let sorted_values = sorted_values.ok_or_else(|| Error::InvalidArgument {
        op: "sort_pairs",
        detail: "internal: the values were not sorted".into(),
    })?;
    Ok((sorted_keys, sorted_values))
}

/// [`sort_pairs`] that consumes its inputs: they serve as one of the two pairs the passes
/// alternate between, so the sort needs one pair of scratch instead of two (a third less memory
/// at its peak). `keys` and `values` must have the same paging as a fresh `[n]` tensor.
pub fn sort_pairs_consuming(
    enc: &mut Encoder,
    keys: Tensor,
    values: Tensor,
    bits: u32,
) -> Result<(Tensor, Tensor)> {
    values.expect_same_len("sort_pairs_consuming", &keys)?;
    let fresh = enc.ctx().page_bytes() / 4;
    if keys.page_elems() != fresh || values.page_elems() != fresh {
        return Err(Error::InvalidArgument {
            op: "sort_pairs_consuming",
            detail: format!(
                "inputs paged {} and {} elements a page, not {fresh}; use sort_pairs",
                keys.page_elems(),
                values.page_elems()
            ),
        });
    }
    let (sorted_keys, sorted_values) = sort_with(enc, &keys, Some(&values), bits, true)?;
    let sorted_values = sorted_values.ok_or_else(|| Error::InvalidArgument {
        op: "sort_pairs_consuming",
        detail: "internal: the values were not sorted".into(),
    })?;
    Ok((sorted_keys, sorted_values))
}

/// Sorts `keys` (u32) by their low `bits` bits (1..=32), stably. Returns a new tensor; the input
/// is unchanged.
pub fn sort_keys(enc: &mut Encoder, keys: &Tensor, bits: u32) -> Result<Tensor> {
    Ok(sort(enc, keys, None, bits)?.0)
}

/// Number of passes for `bits` sorted bits.
pub fn passes_for_bits(bits: u32) -> u32 {
    bits.div_ceil(DIGIT_BITS)
}

/// Where the blocks of a paged tensor sit in the digit table.
#[derive(Clone, Copy, Debug)]
struct BlockLayout {
    blocks_per_page: u64,
    num_blocks: u64,
}

impl BlockLayout {
    fn of(t: &Tensor) -> Self {
        let blocks_per_page = t.page_elems().div_ceil(BLOCK);
        let num_blocks = match t.num_pages() {
            0 => 0,
            pages => (pages as u64 - 1) * blocks_per_page + t.page_len(pages - 1).div_ceil(BLOCK),
        };
        BlockLayout {
            blocks_per_page,
            num_blocks,
        }
    }
}

/// The requested bytes of `buffer`, as raw words.
fn whole(buffer: &GpuBuffer) -> Arg<'_> {
    Arg::Raw(wgpu::BufferBinding {
        buffer: buffer.raw(),
        offset: 0,
        size: NonZeroU64::new(buffer.requested()),
    })
}

fn check_arguments(enc: &Encoder, keys: &Tensor, values: Option<&Tensor>, bits: u32) -> Result<()> {
    keys.expect_dtype("radix sort", DType::U32)?;
    if !(1..=32).contains(&bits) {
        return Err(Error::InvalidArgument {
            op: "radix sort",
            detail: format!("bits must be in 1..=32, got {bits}"),
        });
    }
    if keys.len() > u64::from(u32::MAX) {
        return Err(Error::Overflow {
            what: "radix sort length".into(),
            needed: keys.len(),
            max: u64::from(u32::MAX),
            hint: "sort positions are 32-bit; sort fewer keys at a time".into(),
        });
    }
    let table_bytes = BlockLayout::of(keys).num_blocks * u64::from(radix_sort_common::RADIX) * 4;
    let limits = &enc.ctx().info().limits;
    let binding_limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if table_bytes > binding_limit {
        return Err(Error::BindingTooLarge {
            label: "radix sort digit table".into(),
            bytes: table_bytes,
            limit: binding_limit,
        });
    }
    if let Some(v) = values {
        v.expect_same_len("radix sort", keys)?;
    }
    Ok(())
}

/// The scratch of the digit-table scan: one block-sum buffer per level above the table.
struct TableScan {
    levels: Vec<(u64, GpuBuffer)>,
}

impl TableScan {
    fn new(enc: &mut Encoder, entries: u64) -> Result<Self> {
        let mut levels = Vec::new();
        let mut n = entries;
        while n > BLOCK {
            n = n.div_ceil(BLOCK);
            levels.push((
                n,
                enc.alloc(n * 4, MemoryCategory::SortScratch, "radix sort scan sums")?,
            ));
        }
        Ok(TableScan { levels })
    }

    /// Records the exclusive scan of the first `entries` entries of `table`.
    fn record(&self, enc: &mut Encoder, table: &GpuBuffer, entries: u64) -> Result<()> {
        let reduce = enc.ctx().typed::<radix_sort_scan::ReduceBlocks>()?;
        let scan = enc.ctx().typed::<radix_sort_scan::ScanBlocks>()?;
        // Reduce level by level, scan the top block, then scan back down adding block sums.
        let mut below: Vec<(&GpuBuffer, u64)> = vec![(table, entries)];
        for (n, sums) in &self.levels {
            let (data, data_n) = below[below.len() - 1];
            let params = radix_sort_scan::RadixScanParams {
                n: data_n as u32,
                ..Default::default()
            };
            let grid = super::grid(enc, data_n, radix_sort_common::BLOCK)?;
            let bindings = radix_sort_scan::ReduceBlocksBindings {
                entries: whole(data),
                block_sums: whole(sums),
            };
            enc.run(&reduce, &params, bindings, grid)?;
            below.push((sums, *n));
        }
        let (top, top_n) = below[below.len() - 1];
        let params = radix_sort_scan::RadixScanParams {
            n: top_n as u32,
            ..Default::default()
        };
        // The top block starts from zero: it reads no block sums.
        let bindings = radix_sort_scan::ScanBlocksBindings {
            entries: whole(top),
            block_sums: Arg::Absent,
        };
        let grid = super::grid(enc, top_n, radix_sort_common::BLOCK)?;
        enc.run(&scan, &params, bindings, grid)?;
        for level in (0..below.len() - 1).rev() {
            let (data, data_n) = below[level];
            let sums = below[level + 1].0;
            let params = radix_sort_scan::RadixScanParams {
                n: data_n as u32,
                add_block_sums: 1,
                ..Default::default()
            };
            let bindings = radix_sort_scan::ScanBlocksBindings {
                entries: whole(data),
                block_sums: whole(sums),
            };
            let grid = super::grid(enc, data_n, radix_sort_common::BLOCK)?;
            enc.run(&scan, &params, bindings, grid)?;
        }
        Ok(())
    }
}

/// The scatter kernel of a sort: with or without values.
enum Scatter {
    Keys(TypedKernel<radix_sort_scatter::ScatterKeys>),
    Pairs(TypedKernel<radix_sort_scatter::ScatterPairs>),
}

fn sort(
    enc: &mut Encoder,
    keys: &Tensor,
    values: Option<&Tensor>,
    bits: u32,
) -> Result<(Tensor, Option<Tensor>)> {
    sort_with(enc, keys, values, bits, false)
}

/// The sort; with `overwrite_inputs`, odd passes write back into the inputs' storage.
fn sort_with(
    enc: &mut Encoder,
    keys: &Tensor,
    values: Option<&Tensor>,
    bits: u32,
    overwrite_inputs: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    check_arguments(enc, keys, values, bits)?;
    let n = keys.len() as usize;
    let scratch_pair = |enc: &mut Encoder, label: &str| -> Result<(Tensor, Option<Tensor>)> {
        let k = Tensor::uninit(enc, DType::U32, &[n], MemoryCategory::SortScratch, label)?;
        let v = match values {
            Some(v) => Some(Tensor::uninit(
                enc,
                v.dtype(),
                &[n],
                MemoryCategory::SortScratch,
                label,
            )?),
            None => None,
        };
        Ok((k, v))
    };
    let passes = passes_for_bits(bits);
    if n == 0 {
        return scratch_pair(enc, "radix sort output");
    }
    let layout = BlockLayout::of(keys);
    let table_entries = layout.num_blocks * u64::from(radix_sort_common::RADIX);
    let table = enc.alloc(
        table_entries * 4,
        MemoryCategory::SortScratch,
        "radix sort digit table",
    )?;
    let table_scan = TableScan::new(enc, table_entries)?;
    let histogram = enc.ctx().typed::<radix_sort_histogram::CountDigits>()?;
    let scatter = if values.is_some() {
        Scatter::Pairs(enc.ctx().typed()?)
    } else {
        Scatter::Keys(enc.ctx().typed()?)
    };

    // Pass i writes targets[i % 2]; a single pass needs no second pair, and a sort that may
    // overwrite its inputs uses them as the second.
    let mut targets = vec![scratch_pair(enc, "radix sort ping")?];
    if passes > 1 {
        targets.push(match overwrite_inputs {
            true => (keys.clone(), values.cloned()),
            false => scratch_pair(enc, "radix sort pong")?,
        });
    }
    let mut source: (Tensor, Option<Tensor>) = (keys.clone(), values.cloned());
    for pass in 0..passes {
        let shift = pass * DIGIT_BITS;
        let digit_mask = (1u32 << (bits - shift).min(DIGIT_BITS)) - 1;
        let base = radix_sort_common::RadixPassParams {
            num_blocks: layout.num_blocks as u32,
            shift,
            digit_mask,
            ..Default::default()
        };
        let (src_keys, src_values) = &source;
        let (dst_keys, dst_values) = &targets[pass as usize % targets.len()];
        for page in 0..src_keys.num_pages() {
            let params = radix_sort_common::RadixPassParams {
                n: src_keys.page_len(page) as u32,
                block_base: (page as u64 * layout.blocks_per_page) as u32,
                ..base
            };
            let grid = super::grid(enc, src_keys.page_len(page), radix_sort_common::BLOCK)?;
            let bindings = radix_sort_histogram::CountDigitsBindings {
                keys: src_keys.page_arg(page),
                block_counts: whole(&table),
            };
            enc.run(&histogram, &params, bindings, grid)?;
        }
        table_scan.record(enc, &table, table_entries)?;
        for page in 0..src_keys.num_pages() {
            let grid = super::grid(enc, src_keys.page_len(page), radix_sort_common::BLOCK)?;
            for dst_page in 0..dst_keys.num_pages() {
                let params = radix_sort_common::RadixPassParams {
                    n: src_keys.page_len(page) as u32,
                    block_base: (page as u64 * layout.blocks_per_page) as u32,
                    dst_start: dst_keys.page_start(dst_page) as u32,
                    dst_len: dst_keys.page_len(dst_page) as u32,
                    ..base
                };
                match (&scatter, src_values, dst_values) {
                    (Scatter::Keys(kernel), None, None) => {
                        let bindings = radix_sort_scatter::ScatterKeysBindings {
                            keys_in: src_keys.page_arg(page),
                            scanned_counts: whole(&table),
                            keys_out: dst_keys.page_arg(dst_page),
                        };
                        enc.run(kernel, &params, bindings, grid)?;
                    }
                    (Scatter::Pairs(kernel), Some(src_v), Some(dst_v)) => {
                        // Values of any 32-bit dtype move as raw words.
                        let bindings = radix_sort_scatter::ScatterPairsBindings {
                            keys_in: src_keys.page_arg(page),
                            scanned_counts: whole(&table),
                            keys_out: dst_keys.page_arg(dst_page),
                            values_in: src_v.page_raw(page),
                            values_out: dst_v.page_raw(dst_page),
                        };
                        enc.run(kernel, &params, bindings, grid)?;
                    }
                    _ => {
                        return Err(Error::InvalidArgument {
                            op: "radix sort",
                            detail: "internal: the scatter kernel does not match the values".into(),
                        });
                    }
                }
            }
        }
        source = targets[pass as usize % targets.len()].clone();
    }
    // The other pair is scratch: dropping it returns it to the pool after the recorded work.
    Ok(source)
}
