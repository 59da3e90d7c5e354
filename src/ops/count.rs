//! Exact count of nonzero flags (shaders/count.wgsl), as a 64-bit value on the GPU.
//!
//! `count_blocks` counts every block of a page into a (count, 0) pair; `reduce_pairs` sums blocks of
//! pairs with carry until one workgroup is left, which adds its sum into the result. The result
//! tensor holds the count as two u32 words, low then high; no step goes through floats.

use crate::error::Result;
use crate::gpu::kernels::{self, Arg, TypedKernel};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};

/// Sums `pairs` 64-bit values stored as (lo, hi) u32 pairs in `input` and adds the sum, with
/// carry, into `result` (2 u32 words: lo, hi).
fn accumulate_pairs(
    enc: &mut Encoder,
    reduce: &TypedKernel<kernels::count::ReducePairs>,
    input: wgpu::BufferBinding<'_>,
    pairs: u64,
    result: &Tensor,
) -> Result<()> {
    let block = reduce.threads() * kernels::count::COUNT_ITEMS;
    let mut level = input;
    let mut remaining = pairs;
    // Keeps the current level's scratch alive while `level` borrows it.
    let mut scratch;
    while remaining > u64::from(block) {
        let next_pairs = remaining.div_ceil(u64::from(block));
        let next = enc.alloc(next_pairs * 8, MemoryCategory::Other, "wgsplat/count-pairs")?;
        let params = kernels::count::CountParams {
            n: remaining as u32,
            accumulate: 0,
            ..Default::default()
        };
        let grid = super::grid(enc, remaining, block)?;
        let bindings = kernels::count::ReducePairsBindings {
            input: Arg::Raw(level),
            output: Arg::raw(next.raw()),
        };
        enc.run(reduce, &params, bindings, grid)?;
        scratch = next;
        level = scratch.raw().as_entire_buffer_binding();
        remaining = next_pairs;
    }
    let params = kernels::count::CountParams {
        n: remaining as u32,
        accumulate: 1,
        ..Default::default()
    };
    let grid = super::grid(enc, remaining, block)?;
    let bindings = kernels::count::ReducePairsBindings {
        input: Arg::Raw(level),
        output: result.page_arg(0),
    };
    enc.run(reduce, &params, bindings, grid)
}

/// Records an exact count of the nonzero elements of the u32 tensor `flags`. Returns a new
/// 2-element u32 tensor holding the count as (low word, high word).
pub fn count_nonzero(enc: &mut Encoder, flags: &Tensor) -> Result<Tensor> {
    flags.expect_dtype("count_nonzero", DType::U32)?;
    let result = Tensor::zeros(
        enc,
        DType::U32,
        &[2],
        MemoryCategory::Other,
        "wgsplat/count",
    )?;
    let count_blocks = enc.ctx().typed::<kernels::count::CountBlocks>()?;
    let reduce = enc.ctx().typed::<kernels::count::ReducePairs>()?;
    let block = count_blocks.threads() * kernels::count::COUNT_ITEMS;
    for page in 0..flags.num_pages() {
        let n = flags.page_len(page);
        let blocks = n.div_ceil(u64::from(block));
        let counts = enc.alloc(blocks * 8, MemoryCategory::Other, "wgsplat/count-pairs")?;
        let params = kernels::count::CountParams {
            n: n as u32,
            ..Default::default()
        };
        let grid = super::grid(enc, n, block)?;
        let bindings = kernels::count::CountBlocksBindings {
            input: flags.page_arg(page),
            output: Arg::raw(counts.raw()),
        };
        enc.run(&count_blocks, &params, bindings, grid)?;
        accumulate_pairs(
            enc,
            &reduce,
            counts.raw().as_entire_buffer_binding(),
            blocks,
            &result,
        )?;
    }
    Ok(result)
}

/// Reads a (low word, high word) u32 pair tensor, such as [`count_nonzero`]'s result, as a u64.
/// Submit the encoder that computed it first.
pub fn read_u64(ctx: &GpuContext, pair: &Tensor) -> Result<u64> {
    pair.expect_dtype("read_u64", DType::U32)?;
    let words = pair.prefix(2)?.read::<u32>(ctx)?;
    Ok(u64::from(words[0]) | (u64::from(words[1]) << 32))
}

/// Counts the nonzero elements of `flags` on the GPU, submits, and waits for the count.
pub fn count_nonzero_blocking(ctx: &GpuContext, flags: &Tensor) -> Result<u64> {
    let mut enc = ctx.encoder("count_nonzero");
    let result = count_nonzero(&mut enc, flags)?;
    ctx.submit(enc)?;
    read_u64(ctx, &result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{TestRng, both_paths};

    #[test]
    fn pair_sums_carry_into_the_high_word() {
        for ctx in both_paths() {
            // Several levels of pairs, each pair near 2^33, so low words overflow everywhere.
            for pairs in [1usize, 4096, 4097, 70_000] {
                let mut rng = TestRng::new(pairs as u64);
                let data: Vec<u32> = (0..pairs)
                    .flat_map(|_| [u32::MAX - rng.next_u32() % 16, 1])
                    .collect();
                let want: u64 = data
                    .chunks(2)
                    .map(|p| u64::from(p[0]) | (u64::from(p[1]) << 32))
                    .sum();
                let mut enc = ctx.encoder("test");
                let input = Tensor::from_slice(
                    &mut enc,
                    &data,
                    &[data.len()],
                    MemoryCategory::Other,
                    "pairs",
                )
                .unwrap();
                let result =
                    Tensor::zeros(&mut enc, DType::U32, &[2], MemoryCategory::Other, "result")
                        .unwrap();
                let reduce = ctx.typed::<kernels::count::ReducePairs>().unwrap();
                accumulate_pairs(
                    &mut enc,
                    &reduce,
                    input.page_binding(0),
                    pairs as u64,
                    &result,
                )
                .unwrap();
                // Accumulating twice doubles the result, carrying across the words again.
                accumulate_pairs(
                    &mut enc,
                    &reduce,
                    input.page_binding(0),
                    pairs as u64,
                    &result,
                )
                .unwrap();
                ctx.submit(enc).unwrap();
                assert_eq!(
                    read_u64(ctx, &result).unwrap(),
                    want * 2,
                    "{pairs} pairs, {}",
                    ctx.info().kernel_path()
                );
            }
        }
    }
}
