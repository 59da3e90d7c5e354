//! Stable stream compaction (shaders/compact.wgsl): the elements whose flag is nonzero, in their
//! original order, packed at the front of a new tensor; or their indices (`x_from_y` maps).
//!
//! The destination of every kept element is the exclusive scan of the flags
//! ([`exclusive_scan_flags`](super::scan::exclusive_scan_flags)), whose total is the kept count.
//! Kept elements only move towards lower indices, so the elements of source page `s` land in
//! destination pages `0..=s`; the scatter runs once per such pair of pages and each run writes only
//! the positions inside its destination page. Nothing is read back to the CPU.

use crate::error::{Error, Result};
use crate::gpu::kernels::{self, Arg};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};

/// The result of a compaction, still on the GPU.
#[derive(Clone, Debug)]
pub struct Compacted {
    /// The kept elements (or indices) at the front, in their original order. It has the input's
    /// length; elements from `count` on are unspecified.
    pub values: Tensor,
    /// One u32: the number of kept elements.
    pub count: Tensor,
}

impl Compacted {
    /// Reads the number of kept elements (submit the encoder that compacted first).
    pub fn read_count(&self, ctx: &GpuContext) -> Result<u64> {
        Ok(u64::from(self.count.read::<u32>(ctx)?[0]))
    }

    /// Reads the kept count and returns a view of exactly the kept elements (submit first).
    pub fn kept(&self, ctx: &GpuContext) -> Result<Tensor> {
        self.values.prefix(self.read_count(ctx)?)
    }
}

/// Records the scatter of kept elements: `source` is `values` (or, for indices, `None`).
fn compact_into(
    enc: &mut Encoder,
    op: &'static str,
    source: Option<&Tensor>,
    flags: &Tensor,
) -> Result<Compacted> {
    flags.expect_dtype(op, DType::U32)?;
    if flags.len() > u64::from(u32::MAX) {
        return Err(Error::Overflow {
            what: format!("{op} of {} elements", flags.len()),
            needed: flags.len(),
            max: u64::from(u32::MAX),
            hint: "destinations are 32-bit; compact in several pieces".into(),
        });
    }
    let n = flags.len() as usize;
    let (dtype, category) = match source {
        Some(values) => {
            values.expect_same_len(op, flags)?;
            (values.dtype(), values.category())
        }
        None => (DType::U32, flags.category()),
    };
    // The positions share the flags' page layout (model tensors are paged by rows).
    let positions = Tensor::uninit_rows(
        enc,
        DType::U32,
        &[n],
        flags.page_elems(),
        MemoryCategory::SortScratch,
        "wgsplat/compact-positions",
    )?;
    let count = Tensor::uninit(
        enc,
        DType::U32,
        &[1],
        MemoryCategory::Other,
        "wgsplat/compact-count",
    )?;
    super::scan::exclusive_scan_flags(enc, flags, &positions, Some(&count))?;
    let out = Tensor::uninit(enc, dtype, &[n], category, "wgsplat/compacted")?;
    let kernel = enc.ctx().typed::<kernels::compact::ScatterKept>()?;
    for source_page in 0..flags.num_pages() {
        let len = flags.page_len(source_page);
        let grid = super::grid(enc, len, kernel.threads())?;
        // Kept elements of this source page land below its end, so only output pages starting
        // there can receive any (the output may be paged differently from the flags).
        let source_end = flags.page_start(source_page) + len;
        for dest_page in (0..out.num_pages()).take_while(|&p| out.page_start(p) < source_end) {
            let params = kernels::compact::CompactParams {
                n: len as u32,
                source_start: flags.page_start(source_page) as u32,
                dest_start: out.page_start(dest_page) as u32,
                dest_len: out.page_len(dest_page) as u32,
                write_indices: u32::from(source.is_none()),
                ..Default::default()
            };
            // Values move as 32-bit patterns of any dtype (bound raw); indices need none.
            let bindings = kernels::compact::ScatterKeptBindings {
                flags: flags.page_arg(source_page),
                positions: positions.page_arg(source_page),
                values: source.map_or(Arg::Absent, |v| v.page_raw(source_page)),
                out: out.page_raw(dest_page),
            };
            enc.run(&kernel, &params, bindings, grid)?;
        }
    }
    Ok(Compacted { values: out, count })
}

/// Records a stable compaction of `values` (any 32-bit dtype) by `flags` (u32, kept where
/// nonzero, same length): kept elements keep their order.
pub fn compact(enc: &mut Encoder, values: &Tensor, flags: &Tensor) -> Result<Compacted> {
    compact_into(enc, "compact", Some(values), flags)
}

/// Records a compaction of the indices `i` where `flags[i] != 0`, ascending, as u32: an index
/// map from kept elements to their source positions.
pub fn compact_indices(enc: &mut Encoder, flags: &Tensor) -> Result<Compacted> {
    compact_into(enc, "compact_indices", None, flags)
}

/// Compacts `values` by `flags`, submits, and returns a view of exactly the kept elements.
pub fn compact_blocking(ctx: &GpuContext, values: &Tensor, flags: &Tensor) -> Result<Tensor> {
    let mut enc = ctx.encoder("compact");
    let compacted = compact(&mut enc, values, flags)?;
    ctx.submit(enc)?;
    compacted.kept(ctx)
}
