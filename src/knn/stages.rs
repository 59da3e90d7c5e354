//! The kernels of the k-NN pipeline, one function per stage, with their uniform parameters
//! (mirrored from the WGSL and checked by the shader tests).

use super::tree::BoxLevels;
use super::{MIN_MEAN_SQ_DIST, NEIGHBOURS};
use crate::error::Result;
use crate::gpu::{Encoder, GpuBuffer, MemoryCategory};
use crate::mirror;
use crate::tensor::{DType, Tensor};
use std::num::NonZeroU64;

const UNPACK_FILE: &str = "knn_unpack.wgsl";
const KEYS_FILE: &str = "knn_keys.wgsl";
const GATHER_FILE: &str = "knn_gather.wgsl";
const BOXES_FILE: &str = "knn_boxes.wgsl";
const SEARCH_FILE: &str = "knn_search.wgsl";

/// Uniform parameters of `knn_unpack.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KnnUnpackParams {
    page_len: u32,
    page_start: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Uniform parameters of `knn_keys.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KnnKeyParams {
    page_len: u32,
    word: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Uniform parameters of `knn_gather.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KnnGatherParams {
    page_len: u32,
    page_start: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Uniform parameters of `knn_boxes.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KnnBoxParams {
    level: u32,
    num_points: u32,
    node_offset: u32,
    node_count: u32,
    child_offset: u32,
    child_count: u32,
    _pad0: u32,
    _pad1: u32,
}

/// Uniform parameters of `knn_search.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct KnnSearchParams {
    num_points: u32,
    page_start: u32,
    page_len: u32,
    neighbours: u32,
    num_levels: u32,
    infinity_bits: u32,
    inv_neighbours: f32,
    min_value: f32,
    level_offset: [[u32; 4]; 4],
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    vec![
        mirror!(
            KnnUnpackParams,
            UNPACK_FILE,
            "KnnUnpackParams",
            [page_len, page_start, _pad0, _pad1]
        ),
        mirror!(
            KnnKeyParams,
            KEYS_FILE,
            "KnnKeyParams",
            [page_len, word, _pad0, _pad1]
        ),
        mirror!(
            KnnGatherParams,
            GATHER_FILE,
            "KnnGatherParams",
            [page_len, page_start, _pad0, _pad1]
        ),
        mirror!(
            KnnBoxParams,
            BOXES_FILE,
            "KnnBoxParams",
            [
                level,
                num_points,
                node_offset,
                node_count,
                child_offset,
                child_count,
                _pad0,
                _pad1
            ]
        ),
        mirror!(
            KnnSearchParams,
            SEARCH_FILE,
            "KnnSearchParams",
            [
                num_points,
                page_start,
                page_len,
                neighbours,
                num_levels,
                infinity_bits,
                inv_neighbours,
                min_value,
                level_offset
            ]
        ),
    ]
}

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

    fn bindings(&self) -> [wgpu::BufferBinding<'_>; 3] {
        [whole(&self.0[0]), whole(&self.0[1]), whole(&self.0[2])]
    }
}

/// Lower and upper corners of every box of the hierarchy, as `vec4<f32>`.
pub(crate) struct Boxes {
    lo: GpuBuffer,
    hi: GpuBuffer,
}

fn whole(buffer: &GpuBuffer) -> wgpu::BufferBinding<'_> {
    wgpu::BufferBinding {
        buffer: buffer.raw(),
        offset: 0,
        size: NonZeroU64::new(buffer.requested()),
    }
}

/// Splits `points` ([N, 3] f32, any paging) into x, y and z arrays in point order and computes
/// their bounding box.
pub(crate) fn unpack(enc: &mut Encoder, points: &Tensor, num_points: u64) -> Result<Unpacked> {
    let coords = Coordinates::alloc(enc, num_points, "knn coordinates")?;
    let bounds = enc.alloc(6 * 4, MemoryCategory::Other, "knn bounding box")?;
    enc.clear(bounds.raw(), 0, bounds.size());
    let kernel = enc.ctx().kernel(UNPACK_FILE, "unpack_points")?;
    for page in 0..points.num_pages() {
        let len = points.page_len(page);
        let params = KnnUnpackParams {
            page_len: len as u32,
            page_start: points.page_start(page) as u32,
            ..Default::default()
        };
        let [x, y, z] = coords.bindings();
        let grid = crate::ops::grid(enc, len, kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[points.page_binding(page), x, y, z, whole(&bounds)],
            grid,
        )?;
    }
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
    let kernel = enc.ctx().kernel(KEYS_FILE, "sort_key_word")?;
    for page in 0..keys.num_pages() {
        let len = keys.page_len(page);
        let params = KnnKeyParams {
            page_len: len as u32,
            word,
            ..Default::default()
        };
        let [x, y, z] = unpacked.coords.bindings();
        let bindings = [
            point_from_position.page_binding(page),
            x,
            y,
            z,
            whole(&unpacked.bounds),
            keys.page_binding(page),
        ];
        let grid = crate::ops::grid(enc, len, kernel.threads())?;
        enc.dispatch(&kernel, &params, &bindings, grid)?;
    }
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
    let kernel = enc.ctx().kernel(GATHER_FILE, "gather_sorted")?;
    for page in 0..point_from_position.num_pages() {
        let len = point_from_position.page_len(page);
        let params = KnnGatherParams {
            page_len: len as u32,
            page_start: point_from_position.page_start(page) as u32,
            ..Default::default()
        };
        let [x, y, z] = coords.bindings();
        let [sx, sy, sz] = sorted.bindings();
        let grid = crate::ops::grid(enc, len, kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[point_from_position.page_binding(page), x, y, z, sx, sy, sz],
            grid,
        )?;
    }
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
    let kernel = enc.ctx().kernel(BOXES_FILE, "build_boxes")?;
    for level in 0..levels.num_levels() {
        let (child_offset, child_count) = if level == 0 {
            (0, 0)
        } else {
            (levels.offset(level - 1), levels.count(level - 1))
        };
        let params = KnnBoxParams {
            level: level as u32,
            num_points: num_points as u32,
            node_offset: levels.offset(level) as u32,
            node_count: levels.count(level) as u32,
            child_offset: child_offset as u32,
            child_count: child_count as u32,
            ..Default::default()
        };
        let [x, y, z] = sorted.bindings();
        let grid = crate::ops::grid(enc, levels.count(level), kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[x, y, z, whole(&boxes.lo), whole(&boxes.hi)],
            grid,
        )?;
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
    let base = KnnSearchParams {
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
    let kernel = enc.ctx().kernel(SEARCH_FILE, "search")?;
    for page in 0..result.num_pages() {
        let len = result.page_len(page);
        let params = KnnSearchParams {
            page_start: result.page_start(page) as u32,
            page_len: len as u32,
            ..base
        };
        let [x, y, z] = sorted.bindings();
        let grid = crate::ops::grid(enc, len, kernel.threads())?;
        enc.dispatch(
            &kernel,
            &params,
            &[
                x,
                y,
                z,
                whole(&boxes.lo),
                whole(&boxes.hi),
                result.page_binding(page),
            ],
            grid,
        )?;
    }
    Ok(result)
}
