//! The kernels of the k-NN pipeline, one function per stage (shaders/knn_*.wgsl).

use super::tree::BoxLevels;
use super::{MIN_MEAN_SQ_DIST, NEIGHBOURS};
use crate::error::Result;
use crate::gpu::kernels::{Arg, knn_boxes, knn_gather, knn_keys, knn_search, knn_unpack};
use crate::gpu::{Encoder, GpuBuffer, MemoryCategory};
use crate::tensor::{DType, Tensor};
use std::num::NonZeroU64;

/// Three single-buffer coordinate arrays (x, y, z) of one f32 per point.
pub(crate) struct Coordinates([GpuBuffer; 3]);

/// The points in input order with their bounding box (six u32, see shaders/knn_unpack.wgsl).
pub(crate) struct Unpacked {
    coords: Coordinates,
    bounds: GpuBuffer,
}

impl Coordinates {
    fn alloc(enc: &mut Encoder, num_points: u64, label: &str) -> Result<Self> {
        let bytes = num_points * DType::F32.size();
        Ok(Coordinates([
            enc.alloc(bytes, MemoryCategory::Other, label)?,
            enc.alloc(bytes, MemoryCategory::Other, label)?,
            enc.alloc(bytes, MemoryCategory::Other, label)?,
        ]))
    }

    fn args(&self) -> [Arg<'_>; 3] {
        [whole(&self.0[0]), whole(&self.0[1]), whole(&self.0[2])]
    }
}

/// Lower and upper corners of every box of the hierarchy, as `vec4<f32>`.
pub(crate) struct Boxes {
    lo: GpuBuffer,
    hi: GpuBuffer,
}

/// The requested bytes of `buffer`, as raw words.
fn whole(buffer: &GpuBuffer) -> Arg<'_> {
    Arg::Raw(wgpu::BufferBinding {
        buffer: buffer.raw(),
        offset: 0,
        size: NonZeroU64::new(buffer.requested()),
    })
}

/// Splits `points` ([N, 3] f32, any paging) into x, y and z arrays in point order and computes
/// their bounding box.
pub(crate) fn unpack(enc: &mut Encoder, points: &Tensor, num_points: u64) -> Result<Unpacked> {
    let coords = Coordinates::alloc(enc, num_points, "knn coordinates")?;
    let bounds = enc.alloc(6 * 4, MemoryCategory::Other, "knn bounding box")?;
    enc.clear(bounds.raw(), 0, bounds.size());
    let kernel = enc.ctx().typed::<knn_unpack::UnpackPoints>()?;
    enc.run_pages(&kernel, points.len(), points.page_elems(), |page| {
        let [x, y, z] = coords.args();
        (
            knn_unpack::KnnUnpackParams {
                page_len: page.rows as u32,
                page_start: page.first_row as u32,
                ..Default::default()
            },
            knn_unpack::UnpackPointsBindings {
                points_page: points.page_arg(page.page),
                x_from_point: x,
                y_from_point: y,
                z_from_point: z,
                bounds: whole(&bounds),
            },
        )
    })?;
    Ok(Unpacked { coords, bounds })
}

/// Word `word` (0 = most significant) of the sort key (see shaders/knn_keys.wgsl) of the point at
/// each position of `point_from_position`.
pub(crate) fn sort_key_word(
    enc: &mut Encoder,
    point_from_position: &Tensor,
    unpacked: &Unpacked,
    word: u32,
) -> Result<Tensor> {
    let n = point_from_position.len() as usize;
    let keys = Tensor::uninit(
        enc,
        DType::U32,
        &[n],
        MemoryCategory::SortScratch,
        "knn sort keys",
    )?;
    let kernel = enc.ctx().typed::<knn_keys::SortKeyWord>()?;
    enc.run_pages(&kernel, keys.len(), keys.page_elems(), |page| {
        let [x, y, z] = unpacked.coords.args();
        (
            knn_keys::KnnKeyParams {
                page_len: page.rows as u32,
                word,
                ..Default::default()
            },
            knn_keys::SortKeyWordBindings {
                point_from_position: point_from_position.page_arg(page.page),
                x_from_point: x,
                y_from_point: y,
                z_from_point: z,
                bounds: whole(&unpacked.bounds),
                key_from_position: keys.page_arg(page.page),
            },
        )
    })?;
    Ok(keys)
}

/// The coordinates reordered by `point_from_position`.
pub(crate) fn gather_sorted(
    enc: &mut Encoder,
    point_from_position: &Tensor,
    unpacked: &Unpacked,
) -> Result<Coordinates> {
    let coords = &unpacked.coords;
    let sorted = Coordinates::alloc(enc, point_from_position.len(), "knn sorted coordinates")?;
    let kernel = enc.ctx().typed::<knn_gather::GatherSorted>()?;
    enc.run_pages(
        &kernel,
        point_from_position.len(),
        point_from_position.page_elems(),
        |page| {
            let [x, y, z] = coords.args();
            let [sx, sy, sz] = sorted.args();
            (
                knn_gather::KnnGatherParams {
                    page_len: page.rows as u32,
                    page_start: page.first_row as u32,
                    ..Default::default()
                },
                knn_gather::GatherSortedBindings {
                    point_from_position: point_from_position.page_arg(page.page),
                    x_from_point: x,
                    y_from_point: y,
                    z_from_point: z,
                    x_from_position: sx,
                    y_from_position: sy,
                    z_from_position: sz,
                },
            )
        },
    )?;
    Ok(sorted)
}

/// Builds every level of the box hierarchy over the sorted points, leaves first.
pub(crate) fn build_boxes(
    enc: &mut Encoder,
    sorted: &Coordinates,
    levels: &BoxLevels,
    num_points: u64,
) -> Result<Boxes> {
    let bytes = levels.total() * 16;
    let boxes = Boxes {
        lo: enc.alloc(bytes, MemoryCategory::Other, "knn box lower corners")?,
        hi: enc.alloc(bytes, MemoryCategory::Other, "knn box upper corners")?,
    };
    let kernel = enc.ctx().typed::<knn_boxes::BuildBoxes>()?;
    for level in 0..levels.num_levels() {
        let (child_offset, child_count) = if level == 0 {
            (0, 0)
        } else {
            (levels.offset(level - 1), levels.count(level - 1))
        };
        let params = knn_boxes::KnnBoxParams {
            level: level as u32,
            num_points: num_points as u32,
            node_offset: levels.offset(level) as u32,
            node_count: levels.count(level) as u32,
            child_offset: child_offset as u32,
            child_count: child_count as u32,
            ..Default::default()
        };
        let [x, y, z] = sorted.args();
        let bindings = knn_boxes::BuildBoxesBindings {
            x_from_position: x,
            y_from_position: y,
            z_from_position: z,
            box_lo: whole(&boxes.lo),
            box_hi: whole(&boxes.hi),
        };
        let grid = crate::ops::grid(enc, levels.count(level), kernel.threads())?;
        enc.run(&kernel, &params, bindings, grid)?;
    }
    Ok(boxes)
}

/// The result for every sorted position: the mean squared distance to its nearest other points.
pub(crate) fn search(
    enc: &mut Encoder,
    sorted: &Coordinates,
    boxes: &Boxes,
    levels: &BoxLevels,
    num_points: u64,
) -> Result<Tensor> {
    let result = Tensor::uninit(
        enc,
        DType::F32,
        &[num_points as usize],
        MemoryCategory::Other,
        "knn result (sorted order)",
    )?;
    let neighbours = (num_points - 1).min(NEIGHBOURS as u64) as u32;
    let base = knn_search::KnnSearchParams {
        num_points: num_points as u32,
        neighbours,
        num_levels: levels.num_levels() as u32,
        infinity_bits: f32::INFINITY.to_bits(),
        inv_neighbours: if neighbours == 0 {
            0.0
        } else {
            1.0 / neighbours as f32
        },
        min_value: MIN_MEAN_SQ_DIST,
        level_offset: levels.packed_offsets(),
        ..Default::default()
    };
    let kernel = enc.ctx().typed::<knn_search::Search>()?;
    enc.run_pages(&kernel, result.len(), result.page_elems(), |page| {
        let [x, y, z] = sorted.args();
        (
            knn_search::KnnSearchParams {
                page_start: page.first_row as u32,
                page_len: page.rows as u32,
                ..base
            },
            knn_search::SearchBindings {
                x_from_position: x,
                y_from_position: y,
                z_from_position: z,
                box_lo: whole(&boxes.lo),
                box_hi: whole(&boxes.hi),
                result_page: result.page_arg(page.page),
            },
        )
    })?;
    Ok(result)
}
