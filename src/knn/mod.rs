//! Layer 3, k-nearest-neighbour initialisation: for each point, the mean of the squared distances
//! to its 3 nearest *other* points, which 3D Gaussian Splatting uses for the initial isotropic
//! scale of each Gaussian (`scale = sqrt(mean)`). A portable, exact replacement for `simple-knn`.
//!
//! # Definition
//! `result[i] = max(mean of the 3 smallest |p_j - p_i|², j != i, MIN_MEAN_SQ_DIST)`, each squared
//! distance computed in f32 as `dx*dx + dy*dy + dz*dz` ([`reference::squared_distance`]).
//! Duplicates count: a copy of `p_i` is a neighbour at distance 0. With fewer than 3 other points
//! the mean is over those that exist; a lone point (N = 1) has mean 0 and so gets
//! [`MIN_MEAN_SQ_DIST`]. N = 0 gives an empty tensor. Points must be finite.
//!
//! # Algorithm (all on the GPU, no readback, portable kernels only)
//! 1. **Unpack** the [N, 3] tensor (any paging; rows may straddle pages) into x, y, z arrays and
//!    compute the bounding box (integer atomics on order-preserving images of the floats).
//! 2. **Sort** the point indices by a 128-bit key (shaders/knn_keys.wgsl), with four stable
//!    [`sort_pairs`](crate::ops::radix_sort::sort_pairs) passes, least significant word first:
//!    - *coarse* (most significant 30 bits): the Hilbert index of the point's cell in a uniform
//!      1024³ grid over the bounding box;
//!    - *fine* (96 bits): the Hilbert index of the three floats' own bits (mapped to u32s that order
//!      like the floats). It orders points within a coarse cell using every bit of the floats, so
//!      only identical points share a key: a dense cluster never collapses into one unordered run,
//!      however far an outlier stretches the bounding box (a key quantised over the box alone
//!      would collapse it, and the search would degrade to O(cluster²)).
//!
//!    Hilbert order keeps runs of consecutive points compact, which halves the search work
//!    compared with Morton order.
//! 3. **Box hierarchy** ([`tree`]). The sorted points are cut into leaves of [`LEAF_SIZE`]
//!    consecutive points; each level above bounds [`FANOUT`] consecutive boxes of the level below,
//!    up to a single top box. The layout is implicit (no pointers).
//! 4. **Search.** One invocation per point (in sorted order, so neighbouring invocations search
//!    neighbouring space) scans its own leaf for an initial bound, then walks the hierarchy
//!    depth-first from the top, opening a box only if its squared distance is below the current
//!    3rd best and visiting the nearest child first; the 3 best distances stay in registers.
//!    Pruning is exact (the box distance uses the same monotone f32 expression as the point
//!    distance), so the result equals brute force.
//! 5. **Scatter** the per-position results back to the input order
//!    ([`ops::scatter`](crate::ops::scatter)).
//!
//! # Cost and worst case
//! On uniform points a query computes about 45 point distances and 85 box distances. A far
//! outlier costs about the same: its nearest boxes are opened first and prune the rest, so there
//! is no ring-by-ring expansion across empty space. Dense clusters cost the same as sparse regions,
//! since the key resolves them fully. The worst case for one query is O(N) box tests, when nearly
//! every box lies closer than its 3rd-nearest point (e.g. the centre of points spread evenly on a
//! sphere); this needs special geometry around each such query and does not arise from density
//! alone. Identical points stop at once (their 3rd-best distance is 0, which prunes everything).
//! Sorting is 32 radix passes over N (key, index) pairs.
//!
//! # Memory
//! O(N): about 36 bytes per point at the peak (during the sorts: x, y, z, the permutation, the
//! keys and the sort's scratch), besides the caller's points and the result. Every intermediate
//! is either a paged tensor or a single buffer of at most 4 bytes per point per binding (three
//! sorted coordinate arrays; box corners take 16 bytes per box, one box per ~7 points), so N can
//! reach `binding limit / 4` points: 33.5 M on an adapter with a 128 MiB binding limit. Larger
//! inputs fail with [`Error::BindingTooLarge`] before anything is recorded.

mod reference;
mod stages;
pub mod tree;

pub use reference::{
    mean_of_nearest, mean_sq_dist_3nn_brute_force, nearest_squared_distances, squared_distance,
};
pub use tree::{FANOUT, LEAF_SIZE};

use crate::error::{Error, Result};
use crate::gpu::kernels::knn_keys;
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::ops;
use crate::tensor::{DType, Tensor};
use tree::BoxLevels;

/// Nearest neighbours averaged per point.
pub const NEIGHBOURS: usize = 3;
/// Lower clamp of the result (as in 3DGS), also the value for a point with no other point.
pub const MIN_MEAN_SQ_DIST: f32 = 1e-7;
/// Bits used of each 32-bit word of the sort key, most significant word first
/// (shaders/knn_keys.wgsl: the coarse word holds `COARSE_BITS` bits per axis); the op runs one
/// radix sort per word.
pub const KEY_BITS: [u32; 4] = [3 * knn_keys::COARSE_BITS, 32, 32, 32];

/// Checks the input and returns the number of points.
fn check_points(enc: &Encoder, points: &Tensor) -> Result<u64> {
    const OP: &str = "mean_sq_dist_3nn";
    points.expect_dtype(OP, DType::F32)?;
    if points.shape().len() != 2 || points.shape()[1] != 3 {
        return Err(Error::Shape {
            op: OP,
            detail: format!("points must have shape [N, 3], got {:?}", points.shape()),
        });
    }
    let n = points.shape()[0] as u64;
    let limits = &enc.ctx().info().limits;
    let binding_limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if n * 3 > u64::from(u32::MAX) {
        return Err(Error::Overflow {
            what: "k-NN point count".into(),
            needed: n,
            max: u64::from(u32::MAX) / 3,
            hint: "indices are 32-bit".into(),
        });
    }
    if n * 4 > binding_limit {
        return Err(Error::BindingTooLarge {
            label: "knn sorted coordinates".into(),
            bytes: n * 4,
            limit: binding_limit,
        });
    }
    if n > 0 {
        let box_bytes = BoxLevels::for_points(n)?.total() * 16;
        if box_bytes > binding_limit {
            return Err(Error::BindingTooLarge {
                label: "knn box corners".into(),
                bytes: box_bytes,
                limit: binding_limit,
            });
        }
    }
    Ok(n)
}

/// For each of the N points of `points` ([N, 3] f32, any paging), the mean squared distance to its
/// 3 nearest other points, clamped below at [`MIN_MEAN_SQ_DIST`] (see the module docs for the
/// exact definition and the small-N cases). Records into `enc`; returns a new [N] f32 tensor.
pub fn mean_sq_dist_3nn(enc: &mut Encoder, points: &Tensor) -> Result<Tensor> {
    let n = check_points(enc, points)?;
    if n == 0 {
        return Tensor::uninit(
            enc,
            DType::F32,
            &[0],
            MemoryCategory::Other,
            "knn mean squared distance",
        );
    }
    let levels = BoxLevels::for_points(n)?;
    let unpacked = stages::unpack(enc, points, n)?;

    // Stable LSD sort by the whole key: least significant word first.
    let mut point_from_position = Tensor::uninit(
        enc,
        DType::U32,
        &[n as usize],
        MemoryCategory::SortScratch,
        "knn permutation",
    )?;
    ops::arange(enc, &point_from_position, 0u32, 1)?;
    for (word, &bits) in KEY_BITS.iter().enumerate().rev() {
        let keys = stages::sort_key_word(enc, &point_from_position, &unpacked, word as u32)?;
        point_from_position =
            ops::radix_sort::sort_pairs(enc, &keys, &point_from_position, bits)?.1;
    }

    let sorted = stages::gather_sorted(enc, &point_from_position, &unpacked)?;
    drop(unpacked);
    let boxes = stages::build_boxes(enc, &sorted, &levels, n)?;
    let result_from_position = stages::search(enc, &sorted, &boxes, &levels, n)?;
    drop((sorted, boxes));

    let result = Tensor::uninit(
        enc,
        DType::F32,
        &[n as usize],
        MemoryCategory::Other,
        "knn mean squared distance",
    )?;
    ops::scatter(enc, &result_from_position, &point_from_position, &result)?;
    Ok(result)
}

/// [`mean_sq_dist_3nn`] in its own encoder, submitted and read back.
pub fn mean_sq_dist_3nn_blocking(ctx: &GpuContext, points: &Tensor) -> Result<Vec<f32>> {
    let mut enc = ctx.encoder("knn");
    let result = mean_sq_dist_3nn(&mut enc, points)?;
    ctx.submit(enc)?;
    result.read::<f32>(ctx)
}

/// Uploads `points` and runs [`mean_sq_dist_3nn_blocking`].
pub fn mean_sq_dist_3nn_of_slice(ctx: &GpuContext, points: &[[f32; 3]]) -> Result<Vec<f32>> {
    crate::gpu::readback::blocking("k-NN distances", mean_sq_dist_3nn_fetch(ctx, points))
}

/// [`mean_sq_dist_3nn_of_slice`] in the form that also runs in a browser, where the result is
/// awaited (see [`crate::gpu::Readback::fetch`]).
pub async fn mean_sq_dist_3nn_fetch(ctx: &GpuContext, points: &[[f32; 3]]) -> Result<Vec<f32>> {
    let mut enc = ctx.encoder("knn upload");
    let flat: &[f32] = bytemuck::cast_slice(points);
    let tensor = Tensor::from_slice(
        &mut enc,
        flat,
        &[points.len(), 3],
        MemoryCategory::Other,
        "knn points",
    )?;
    ctx.submit(enc)?;
    let mut enc = ctx.encoder("knn");
    let result = mean_sq_dist_3nn(&mut enc, &tensor)?;
    ctx.submit(enc)?;
    result.fetch::<f32>(ctx).await
}
