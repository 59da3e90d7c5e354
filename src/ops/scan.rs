//! Prefix scans of u32 tensors (wrapping addition): exclusive and inclusive, out of place or in
//! place, optionally with the grand total written to a GPU tensor (shaders/scan.wgsl,
//! shaders/scan_in_place.wgsl, shaders/shared/block_scan.wgsl).
//!
//! Each page is scanned by a multi-level scan: `reduce_blocks` sums every block of the page, the
//! block sums are scanned the same way (recursively, in place, in scratch buffers), and
//! `scan_blocks` scans every block again, adding its scanned block sum. The top level of every page
//! is a single block whose base is that page's *carry*: the total of all earlier pages, kept in a
//! small GPU buffer. The top-level kernel also writes the next page's carry, so pages chain without
//! any CPU readback, and the last carry is the grand total.

use crate::error::{Error, Result};
use crate::gpu::allocator::GpuBuffer;
use crate::gpu::kernels::{self, Arg, KernelSpec, TypedKernel};
use crate::gpu::shader::Variant;
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};

/// Which prefix a scan produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// `out[i] = x[0] + ... + x[i - 1]` (so `out[0] = 0`).
    Exclusive,
    /// `out[i] = x[0] + ... + x[i]`.
    Inclusive,
}

/// The three kernels of a scan and the block size they share.
struct ScanKernels {
    reduce: TypedKernel<kernels::scan::ReduceBlocks>,
    scan: TypedKernel<kernels::scan::ScanBlocks>,
    scan_in_place: TypedKernel<kernels::scan_in_place::ScanBlocksInPlace>,
    block: u32,
}

/// Smallest subgroup size the subgroup path of shared/block_scan.wgsl supports (it keeps at most
/// 256 / 4 subgroup totals); adapters that may use smaller subgroups take the portable kernels.
const MIN_SUBGROUP_SIZE: u32 = 4;

/// The kernel `K` in the variant this adapter's subgroups allow.
fn scan_kernel<K: KernelSpec>(ctx: &GpuContext) -> Result<TypedKernel<K>> {
    if ctx.info().limits.min_subgroup_size < MIN_SUBGROUP_SIZE {
        ctx.typed_variant::<K>(Variant::PORTABLE)
    } else {
        ctx.typed::<K>()
    }
}

impl ScanKernels {
    fn new(enc: &Encoder) -> Result<Self> {
        let ctx = enc.ctx();
        let scan = scan_kernel::<kernels::scan::ScanBlocks>(ctx)?;
        let block = scan.threads() * kernels::shared_block_scan::SCAN_ITEMS;
        Ok(ScanKernels {
            reduce: scan_kernel(ctx)?,
            scan,
            scan_in_place: scan_kernel(ctx)?,
            block,
        })
    }
}

/// Where one level of the scan reads and writes.
#[derive(Clone)]
enum Level<'a> {
    /// Reads `input` (as 0/1 flags when `flags_mode`), writes `output`.
    Copy {
        input: Arg<'a>,
        output: Arg<'a>,
        flags_mode: bool,
    },
    /// Scans `data` in place.
    InPlace(Arg<'a>),
}

/// Scans `n` elements of one level. The base of the result is `carry[page]`; the top level stores
/// `carry[page] + total` in `carry[page + 1]`.
fn scan_level(
    enc: &mut Encoder,
    k: &ScanKernels,
    level: Level<'_>,
    n: u64,
    kind: ScanKind,
    carry: &GpuBuffer,
    page: u32,
) -> Result<()> {
    let inclusive = u32::from(kind == ScanKind::Inclusive);
    let single_block = n <= u64::from(k.block);
    let sums = if single_block {
        None
    } else {
        let blocks = n.div_ceil(u64::from(k.block));
        let sums = enc.alloc(
            blocks * 4,
            MemoryCategory::SortScratch,
            "wgsplat/scan-block-sums",
        )?;
        let (input, flags_mode) = match &level {
            Level::Copy {
                input, flags_mode, ..
            } => (input.clone(), *flags_mode),
            Level::InPlace(data) => (data.clone(), false),
        };
        let params = kernels::scan::ScanParams {
            n: n as u32,
            flags_mode: u32::from(flags_mode),
            ..Default::default()
        };
        let grid = super::grid(enc, n, k.block)?;
        enc.run(
            &k.reduce,
            &params,
            kernels::scan::ReduceBlocksBindings {
                input,
                output: Arg::raw(sums.raw()),
            },
            grid,
        )?;
        scan_level(
            enc,
            k,
            Level::InPlace(Arg::raw(sums.raw())),
            blocks,
            ScanKind::Exclusive,
            carry,
            page,
        )?;
        Some(sums)
    };
    // Single block: based on the page's carry; otherwise on the scanned block sums.
    let (offsets, offset_index, write_total) = match &sums {
        None => (Arg::raw(carry.raw()), page, 1),
        Some(sums) => (Arg::raw(sums.raw()), 0, 0),
    };
    let grid = super::grid(enc, n, k.block)?;
    match level {
        Level::Copy {
            input,
            output,
            flags_mode,
        } => {
            let params = kernels::scan::ScanParams {
                n: n as u32,
                inclusive,
                flags_mode: u32::from(flags_mode),
                offset_index,
                write_total,
                ..Default::default()
            };
            let bindings = kernels::scan::ScanBlocksBindings {
                input,
                output,
                offsets,
            };
            enc.run(&k.scan, &params, bindings, grid)
        }
        Level::InPlace(data) => {
            let params = kernels::scan_in_place::ScanInPlaceParams {
                n: n as u32,
                inclusive,
                offset_index,
                write_total,
            };
            let bindings = kernels::scan_in_place::ScanBlocksInPlaceBindings { data, offsets };
            enc.run(&k.scan_in_place, &params, bindings, grid)
        }
    }
}

/// Checks that `total`, when given, is a u32 tensor with room for one element.
fn check_total(op: &'static str, total: Option<&Tensor>) -> Result<()> {
    if let Some(total) = total {
        total.expect_dtype(op, DType::U32)?;
        if total.is_empty() {
            return Err(Error::Shape {
                op,
                detail: "the total tensor needs at least one element".into(),
            });
        }
    }
    Ok(())
}

/// Scans every page of `source` into `target` (the same tensor for in-place scans), chaining the
/// pages through a carry buffer, and copies the grand total into `total[0]` when given.
fn scan_pages(
    enc: &mut Encoder,
    source: &Tensor,
    target: &Tensor,
    kind: ScanKind,
    flags_mode: bool,
    total: Option<&Tensor>,
) -> Result<()> {
    let kernels = ScanKernels::new(enc)?;
    let pages = source.num_pages();
    let carry = enc.alloc(
        (pages as u64 + 1) * 4,
        MemoryCategory::SortScratch,
        "wgsplat/scan-page-carry",
    )?;
    enc.clear(carry.raw(), 0, 4);
    let in_place = source.shares_storage_with(target);
    for page in 0..pages {
        let level = if in_place {
            Level::InPlace(target.page_arg(page))
        } else {
            Level::Copy {
                // Flags may have any 32-bit dtype: the kernel reads them as raw words.
                input: if flags_mode {
                    source.page_raw(page)
                } else {
                    source.page_arg(page)
                },
                output: target.page_arg(page),
                flags_mode,
            }
        };
        scan_level(
            enc,
            &kernels,
            level,
            source.page_len(page),
            kind,
            &carry,
            page as u32,
        )?;
    }
    if let Some(total) = total {
        enc.copy(carry.raw(), pages as u64 * 4, total.page(0).raw(), 0, 4);
    }
    Ok(())
}

/// Checks an out-of-place scan's arguments: u32 (or `input_dtype_any` for flags), equal lengths,
/// separate storage.
fn check_out_of_place(
    op: &'static str,
    input: &Tensor,
    output: &Tensor,
    any_input_dtype: bool,
    total: Option<&Tensor>,
) -> Result<()> {
    if !any_input_dtype {
        input.expect_dtype(op, DType::U32)?;
    }
    output.expect_dtype(op, DType::U32)?;
    input.expect_same_len(op, output)?;
    input.expect_same_layout(op, output)?;
    if input.shares_storage_with(output) {
        return Err(Error::InvalidArgument {
            op,
            detail: "output shares storage with input; use the in-place form (scan_u32_in_place)"
                .into(),
        });
    }
    check_total(op, total)
}

/// Scans `input` into `output` (u32 tensors of equal length, not sharing storage), wrapping on
/// overflow. When `total` is given, its element 0 receives the sum of all of `input`.
pub fn scan_u32(
    enc: &mut Encoder,
    input: &Tensor,
    output: &Tensor,
    kind: ScanKind,
    total: Option<&Tensor>,
) -> Result<()> {
    check_out_of_place("scan_u32", input, output, false, total)?;
    scan_pages(enc, input, output, kind, false, total)
}

/// Scans a u32 tensor in place. When `total` is given, its element 0 receives the sum of all
/// elements (taken before they are overwritten).
pub fn scan_u32_in_place(
    enc: &mut Encoder,
    data: &Tensor,
    kind: ScanKind,
    total: Option<&Tensor>,
) -> Result<()> {
    data.expect_dtype("scan_u32_in_place", DType::U32)?;
    check_total("scan_u32_in_place", total)?;
    scan_pages(enc, data, data, kind, false, total)
}

/// `output[i] = input[0] + ... + input[i - 1]` (wrapping u32).
pub fn exclusive_scan_u32(enc: &mut Encoder, input: &Tensor, output: &Tensor) -> Result<()> {
    scan_u32(enc, input, output, ScanKind::Exclusive, None)
}

/// `output[i] = input[0] + ... + input[i]` (wrapping u32).
pub fn inclusive_scan_u32(enc: &mut Encoder, input: &Tensor, output: &Tensor) -> Result<()> {
    scan_u32(enc, input, output, ScanKind::Inclusive, None)
}

/// Exclusive scan of a u32 tensor in place.
pub fn exclusive_scan_u32_in_place(enc: &mut Encoder, data: &Tensor) -> Result<()> {
    scan_u32_in_place(enc, data, ScanKind::Exclusive, None)
}

/// Inclusive scan of a u32 tensor in place.
pub fn inclusive_scan_u32_in_place(enc: &mut Encoder, data: &Tensor) -> Result<()> {
    scan_u32_in_place(enc, data, ScanKind::Inclusive, None)
}

/// Scans into `output` and writes the grand total (wrapping) into `total[0]`.
pub fn scan_with_total(
    enc: &mut Encoder,
    input: &Tensor,
    output: &Tensor,
    kind: ScanKind,
    total: &Tensor,
) -> Result<()> {
    scan_u32(enc, input, output, kind, Some(total))
}

fn allocate_like(enc: &mut Encoder, input: &Tensor, label: &str) -> Result<Tensor> {
    Tensor::uninit_rows(
        enc,
        DType::U32,
        &[input.len() as usize],
        input.page_elems(),
        input.category(),
        label,
    )
}

/// A new 1-D tensor holding the exclusive scan of `input`.
pub fn exclusive_scan(enc: &mut Encoder, input: &Tensor) -> Result<Tensor> {
    let output = allocate_like(enc, input, "wgsplat/exclusive-scan")?;
    exclusive_scan_u32(enc, input, &output)?;
    Ok(output)
}

/// A new 1-D tensor holding the inclusive scan of `input`.
pub fn inclusive_scan(enc: &mut Encoder, input: &Tensor) -> Result<Tensor> {
    let output = allocate_like(enc, input, "wgsplat/inclusive-scan")?;
    inclusive_scan_u32(enc, input, &output)?;
    Ok(output)
}

/// Exclusive scan of the flags `flags[i] != 0` (as 0 or 1) of a 32-bit tensor of any dtype: the
/// destination of every set flag in a stable compaction. `total[0]`, when given, receives the number
/// of set flags modulo 2^32.
pub fn exclusive_scan_flags(
    enc: &mut Encoder,
    flags: &Tensor,
    output: &Tensor,
    total: Option<&Tensor>,
) -> Result<()> {
    check_out_of_place("exclusive_scan_flags", flags, output, true, total)?;
    scan_pages(enc, flags, output, ScanKind::Exclusive, true, total)
}
