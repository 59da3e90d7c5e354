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
use crate::gpu::{Encoder, GpuBuffer, MemoryCategory};
use crate::mirror;
use crate::tensor::{DType, Tensor};
use std::num::NonZeroU64;

const HISTOGRAM_FILE: &str = "radix_sort_histogram.wgsl";
const SCAN_FILE: &str = "radix_sort_scan.wgsl";
const SCATTER_FILE: &str = "radix_sort_scatter.wgsl";

/// Bits of the key sorted per pass.
pub const DIGIT_BITS: u32 = 4;
/// Bins of one digit.
const RADIX: u64 = 1 << DIGIT_BITS;
/// Keys per sort block (one workgroup) and entries per scan block; `BLOCK` in
/// shaders/radix_sort_common.wgsl.
pub const BLOCK: u64 = 2048;

/// Uniform parameters of the histogram and scatter kernels (`RadixPassParams` in both files).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RadixPassParams {
    n: u32,
    block_base: u32,
    num_blocks: u32,
    shift: u32,
    digit_mask: u32,
    dst_start: u32,
    dst_len: u32,
    _pad0: u32,
}

/// Uniform parameters of the digit-table scan kernels.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RadixScanParams {
    n: u32,
    add_block_sums: u32,
    _pad0: u32,
    _pad1: u32,
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    let pass_fields = |file| {
        mirror!(
            RadixPassParams,
            file,
            "RadixPassParams",
            [
                n, block_base, num_blocks, shift, digit_mask, dst_start, dst_len, _pad0
            ]
        )
    };
    vec![
        pass_fields(HISTOGRAM_FILE),
        pass_fields(SCATTER_FILE),
        mirror!(
            RadixScanParams,
            SCAN_FILE,
            "RadixScanParams",
            [n, add_block_sums, _pad0, _pad1]
        ),
    ]
}

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

fn whole(buffer: &GpuBuffer) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding {
        buffer: buffer.raw(),
        offset: 0,
        size: NonZeroU64::new(buffer.requested()),
    }
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
    let table_bytes = BlockLayout::of(keys).num_blocks * RADIX * 4;
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

/// The scratch of the digit-table scan: one block-sum buffer per level above the table, and a
/// placeholder bound where a kernel has no block sums to read.
struct TableScan {
    levels: Vec<(u64, GpuBuffer)>,
    placeholder: GpuBuffer,
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
        let placeholder = enc.alloc(
            16,
            MemoryCategory::SortScratch,
            "radix sort scan placeholder",
        )?;
        Ok(TableScan {
            levels,
            placeholder,
        })
    }

    /// Records the exclusive scan of the first `entries` entries of `table`.
    fn record(&self, enc: &mut Encoder, table: &GpuBuffer, entries: u64) -> Result<()> {
        let reduce = enc.ctx().kernel(SCAN_FILE, "reduce_blocks")?;
        let scan = enc.ctx().kernel(SCAN_FILE, "scan_blocks")?;
        // Reduce level by level, scan the top block, then scan back down adding block sums.
        let mut below: Vec<(&GpuBuffer, u64)> = vec![(table, entries)];
        for (n, sums) in &self.levels {
            let (data, data_n) = below[below.len() - 1];
            let params = RadixScanParams {
                n: data_n as u32,
                ..Default::default()
            };
            let grid = super::grid(enc, data_n, BLOCK as u32)?;
            enc.dispatch(&reduce, &params, &[whole(data), whole(sums)], grid)?;
            below.push((sums, *n));
        }
        let (top, top_n) = below[below.len() - 1];
        let params = RadixScanParams {
            n: top_n as u32,
            ..Default::default()
        };
        enc.dispatch(
            &scan,
            &params,
            &[whole(top), whole(&self.placeholder)],
            super::grid(enc, top_n, BLOCK as u32)?,
        )?;
        for level in (0..below.len() - 1).rev() {
            let (data, data_n) = below[level];
            let sums = below[level + 1].0;
            let params = RadixScanParams {
                n: data_n as u32,
                add_block_sums: 1,
                ..Default::default()
            };
            enc.dispatch(
                &scan,
                &params,
                &[whole(data), whole(sums)],
                super::grid(enc, data_n, BLOCK as u32)?,
            )?;
        }
        Ok(())
    }
}

fn sort(
    enc: &mut Encoder,
    keys: &Tensor,
    values: Option<&Tensor>,
    bits: u32,
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
    let table_entries = layout.num_blocks * RADIX;
    let table = enc.alloc(
        table_entries * 4,
        MemoryCategory::SortScratch,
        "radix sort digit table",
    )?;
    let table_scan = TableScan::new(enc, table_entries)?;
    let histogram = enc.ctx().kernel(HISTOGRAM_FILE, "count_digits")?;
    let scatter = enc.ctx().kernel(
        SCATTER_FILE,
        if values.is_some() {
            "scatter_pairs"
        } else {
            "scatter_keys"
        },
    )?;

    // Pass i writes targets[i % 2]; a single pass needs no second pair.
    let mut targets = vec![scratch_pair(enc, "radix sort ping")?];
    if passes > 1 {
        targets.push(scratch_pair(enc, "radix sort pong")?);
    }
    let mut source: (Tensor, Option<Tensor>) = (keys.clone(), values.cloned());
    for pass in 0..passes {
        let shift = pass * DIGIT_BITS;
        let digit_mask = (1u32 << (bits - shift).min(DIGIT_BITS)) - 1;
        let base = RadixPassParams {
            num_blocks: layout.num_blocks as u32,
            shift,
            digit_mask,
            ..Default::default()
        };
        let (src_keys, src_values) = &source;
        let (dst_keys, dst_values) = &targets[pass as usize % targets.len()];
        for page in 0..src_keys.num_pages() {
            let params = RadixPassParams {
                n: src_keys.page_len(page) as u32,
                block_base: (page as u64 * layout.blocks_per_page) as u32,
                ..base
            };
            let grid = super::grid(enc, src_keys.page_len(page), BLOCK as u32)?;
            enc.dispatch(
                &histogram,
                &params,
                &[src_keys.page_binding(page), whole(&table)],
                grid,
            )?;
        }
        table_scan.record(enc, &table, table_entries)?;
        for page in 0..src_keys.num_pages() {
            let grid = super::grid(enc, src_keys.page_len(page), BLOCK as u32)?;
            for dst_page in 0..dst_keys.num_pages() {
                let params = RadixPassParams {
                    n: src_keys.page_len(page) as u32,
                    block_base: (page as u64 * layout.blocks_per_page) as u32,
                    dst_start: dst_keys.page_start(dst_page) as u32,
                    dst_len: dst_keys.page_len(dst_page) as u32,
                    ..base
                };
                let mut bindings = vec![
                    src_keys.page_binding(page),
                    whole(&table),
                    dst_keys.page_binding(dst_page),
                ];
                if let (Some(src_v), Some(dst_v)) = (src_values, dst_values) {
                    bindings.push(src_v.page_binding(page));
                    bindings.push(dst_v.page_binding(dst_page));
                }
                enc.dispatch(&scatter, &params, &bindings, grid)?;
            }
        }
        source = targets[pass as usize % targets.len()].clone();
    }
    // The other pair is scratch: dropping it returns it to the pool after the recorded work.
    Ok(source)
}
