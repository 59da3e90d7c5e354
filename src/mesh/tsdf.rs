//! A truncated signed distance field over a sparse grid: blocks of 8³ voxels in a hash map keyed
//! by block coordinates, allocated only within the truncation distance of observed surfaces
//! (along each measured ray), so memory grows with the surface's area, not the scene's volume.
//!
//! Voxel `i = [x, y, z]` samples the field at world position `i · voxel`. Each depth map adds,
//! to every voxel of the blocks its rays touched, the projective distance along the viewing ray
//! from the voxel to the measured surface, divided by the truncation distance and clamped to at
//! most 1 (voxels more than the truncation behind the surface are left alone): a running
//! weighted mean, each measurement weighted by how squarely its ray met the surface (see
//! `frame.rs`), and a running weighted mean colour of the measurements within the truncation
//! distance. Positive is in front of the surface (free space).

use std::collections::{HashMap, HashSet};

use glam::{Mat3, Vec3};
use rayon::prelude::*;

use super::frame::Frame;
use crate::error::{Error, Result};
use crate::splat::Camera;

/// Voxels along each side of a block.
pub const BLOCK_SIDE: i32 = 8;
const BLOCK_VOXELS: usize = (BLOCK_SIDE * BLOCK_SIDE * BLOCK_SIDE) as usize;
/// Bytes one allocated block costs: its voxels, its key and the hash map's entry overhead.
pub const BYTES_PER_BLOCK: u64 =
    (BLOCK_VOXELS * std::mem::size_of::<Voxel>()) as u64 + 12 + 8 + 24 + 16;

/// One voxel's fused state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Voxel {
    /// Truncated signed distance / truncation, in [-1, 1] (positive in front of the surface).
    pub sdf: f32,
    /// Sum of the weights of the measurements fused (0: unobserved).
    pub weight: f32,
    /// Mean colour (0..255 per channel) of the measurements near the surface.
    pub colour: [f32; 3],
    /// Sum of the weights of the measurements in `colour`.
    pub colour_weight: f32,
}

/// An axis-aligned box that limits the volume: voxels outside it are never allocated or updated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropBox {
    /// Smallest corner.
    pub min: [f32; 3],
    /// Largest corner.
    pub max: [f32; 3],
}

impl CropBox {
    /// True when `p` lies inside the box (borders included).
    pub fn contains(&self, p: [f32; 3]) -> bool {
        (0..3).all(|k| p[k] >= self.min[k] && p[k] <= self.max[k])
    }
}

/// The parameters of a [`TsdfVolume`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TsdfOptions {
    /// Voxel edge length (world units).
    pub voxel: f32,
    /// Truncation distance (world units; at least one voxel).
    pub truncation: f32,
    /// The most bytes the blocks may take ([`BYTES_PER_BLOCK`] each).
    pub memory_budget: u64,
    /// Fuse only inside this box.
    pub crop_box: Option<CropBox>,
    /// Depths beyond this are not measurements.
    pub max_depth: Option<f32>,
}

impl TsdfOptions {
    /// Voxels of edge `voxel`, a truncation of 4 voxels, a 2 GiB budget, no crop box and no
    /// depth limit.
    pub fn new(voxel: f32) -> TsdfOptions {
        TsdfOptions {
            voxel,
            truncation: 4.0 * voxel,
            memory_budget: 2 << 30,
            crop_box: None,
            max_depth: None,
        }
    }
}

/// What one [`TsdfVolume::integrate`] call did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntegrationReport {
    /// Pixels with a usable depth.
    pub measurements: usize,
    /// Blocks the depth map's rays touched.
    pub blocks_touched: usize,
    /// Blocks allocated by this depth map.
    pub blocks_added: usize,
    /// Bytes the volume takes afterwards.
    pub bytes_used: u64,
}

/// A sparse truncated signed distance field (module docs).
#[derive(Clone, Debug)]
pub struct TsdfVolume {
    options: TsdfOptions,
    blocks: HashMap<[i32; 3], Vec<Voxel>>,
    views: usize,
    measurements: usize,
}

fn invalid(detail: String) -> Error {
    Error::InvalidArgument {
        op: "TSDF fusion",
        detail,
    }
}

impl TsdfVolume {
    /// An empty volume; errors when the voxel size, truncation or budget cannot be used.
    pub fn new(options: TsdfOptions) -> Result<TsdfVolume> {
        let voxel = options.voxel;
        if !(voxel.is_finite() && voxel > 0.0) {
            return Err(invalid(format!(
                "voxel size {voxel} must be positive and finite (--voxel)"
            )));
        }
        if !(options.truncation.is_finite() && options.truncation >= voxel) {
            return Err(invalid(format!(
                "truncation {} must be finite and at least one voxel ({voxel})",
                options.truncation
            )));
        }
        if options.memory_budget < BYTES_PER_BLOCK {
            return Err(invalid(format!(
                "memory budget {} bytes is below one block ({BYTES_PER_BLOCK} bytes): raise \
                 --memory-budget",
                options.memory_budget
            )));
        }
        if let Some(c) = options.crop_box
            && !(0..3).all(|k| c.min[k].is_finite() && c.max[k].is_finite() && c.min[k] < c.max[k])
        {
            return Err(invalid(format!(
                "crop box {:?}..{:?} must have finite corners, min below max (--crop-box)",
                c.min, c.max
            )));
        }
        Ok(TsdfVolume {
            options,
            blocks: HashMap::new(),
            views: 0,
            measurements: 0,
        })
    }

    /// The options the volume was made with.
    pub fn options(&self) -> &TsdfOptions {
        &self.options
    }

    /// Allocated blocks.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Bytes the allocated blocks take ([`BYTES_PER_BLOCK`] each).
    pub fn bytes_used(&self) -> u64 {
        self.blocks.len() as u64 * BYTES_PER_BLOCK
    }

    /// Depth maps integrated, and the usable depths they held.
    pub fn integrated(&self) -> (usize, usize) {
        (self.views, self.measurements)
    }

    /// The keys of the allocated blocks (block coordinates: voxel index / [`BLOCK_SIDE`]),
    /// sorted.
    pub fn block_keys(&self) -> Vec<[i32; 3]> {
        let mut keys: Vec<_> = self.blocks.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// The voxel of index `i`, `None` where its block is not allocated.
    pub fn voxel(&self, i: [i32; 3]) -> Option<&Voxel> {
        let (key, local) = split_index(i);
        self.blocks.get(&key).map(|b| &b[local])
    }

    /// The world position of voxel `i`.
    pub fn position(&self, i: [i32; 3]) -> [f32; 3] {
        i.map(|v| v as f32 * self.options.voxel)
    }

    /// Fuses one depth map: `depth` holds `width` × `height` distances along the camera's z
    /// (row-major, pixel centres at +0.5; ≤ 0, non-finite or beyond `max_depth` is no
    /// measurement), seen by `camera` (pinhole only) with optional per-pixel `colour`. Errors,
    /// leaving the volume as it was, when the sizes disagree, the lens is not a pinhole, or the
    /// blocks needed would exceed the memory budget.
    pub fn integrate(
        &mut self,
        depth: &[f32],
        width: u32,
        height: u32,
        camera: &Camera,
        colour: Option<&[[u8; 3]]>,
    ) -> Result<IntegrationReport> {
        if !camera.lens.is_pinhole() {
            return Err(invalid(format!(
                "the camera's lens is {:?}; only pinhole cameras can be fused (undistort the \
                 views first)",
                camera.lens.kind
            )));
        }
        let pixels = width as usize * height as usize;
        if depth.len() != pixels || camera.width != width || camera.height != height {
            return Err(invalid(format!(
                "depth map of {} values for a {width}×{height} image (camera {}×{})",
                depth.len(),
                camera.width,
                camera.height
            )));
        }
        if let Some(c) = colour
            && c.len() != pixels
        {
            return Err(invalid(format!(
                "{} colours for a {width}×{height} depth map",
                c.len()
            )));
        }
        let usable =
            |d: f32| d.is_finite() && d > 0.0 && self.options.max_depth.is_none_or(|m| d <= m);
        let depth: Vec<f32> = depth
            .iter()
            .map(|&d| if usable(d) { d } else { 0.0 })
            .collect();
        let (touched, measurements) = self.touched_blocks(&depth, camera);
        let added = touched
            .iter()
            .filter(|k| !self.blocks.contains_key(*k))
            .count();
        let needed = (self.blocks.len() + added) as u64 * BYTES_PER_BLOCK;
        if needed > self.options.memory_budget {
            return Err(Error::Overflow {
                what: format!(
                    "the TSDF volume (after {} depth maps, {} blocks of 8³ voxels of {})",
                    self.views + 1,
                    self.blocks.len() + added,
                    self.options.voxel
                ),
                needed,
                max: self.options.memory_budget,
                hint: "bytes are needed beyond the memory budget: use a larger --voxel (memory \
                       grows as 1/voxel²), raise --memory-budget, or limit the volume with \
                       --crop-box"
                    .into(),
            });
        }
        let frame = Frame::new(&depth, camera, colour, self.options.truncation);
        let voxel = self.options.voxel;
        let crop = self.options.crop_box;
        // The touched blocks are taken out of the map and updated in parallel.
        let mut work: Vec<([i32; 3], Vec<Voxel>)> = touched
            .iter()
            .map(|key| {
                let block = self.blocks.remove(key);
                (
                    *key,
                    block.unwrap_or_else(|| vec![Voxel::default(); BLOCK_VOXELS]),
                )
            })
            .collect();
        work.par_iter_mut().for_each(|(key, block)| {
            for (local, v) in block.iter_mut().enumerate() {
                let p = join_index(*key, local).map(|c| c as f32 * voxel);
                if crop.is_none_or(|c| c.contains(p)) {
                    frame.update(v, p);
                }
            }
        });
        self.blocks.extend(work);
        self.views += 1;
        self.measurements += measurements;
        Ok(IntegrationReport {
            measurements,
            blocks_touched: touched.len(),
            blocks_added: added,
            bytes_used: self.bytes_used(),
        })
    }

    /// The blocks within the truncation distance of each measured depth along its ray (inside
    /// the crop box), sorted, and the number of measurements.
    fn touched_blocks(&self, depth: &[f32], camera: &Camera) -> (Vec<[i32; 3]>, usize) {
        let (voxel, truncation) = (self.options.voxel, self.options.truncation);
        let origin = Vec3::from(camera.position());
        let to_world = Mat3::from_cols_array_2d(&camera.rotation);
        let mut touched = HashSet::new();
        let mut measurements = 0;
        let step = 0.5 * voxel;
        let steps = (2.0 * truncation / step).ceil() as i32;
        for (index, &d) in depth.iter().enumerate() {
            if d <= 0.0 {
                continue;
            }
            measurements += 1;
            let (x, y) = (index as u32 % camera.width, index as u32 / camera.width);
            let local = Vec3::new(
                (x as f32 + 0.5 - camera.cx) / camera.fx,
                (y as f32 + 0.5 - camera.cy) / camera.fy,
                1.0,
            );
            let range = d * local.length();
            let direction = (to_world * local).normalize();
            for s in 0..=steps {
                let p = origin + direction * (range - truncation + s as f32 * step);
                if self
                    .options
                    .crop_box
                    .is_some_and(|c| !c.contains(p.to_array()))
                {
                    continue;
                }
                let i = p.to_array().map(|c| (c / voxel).round() as i32);
                touched.insert(split_index(i).0);
            }
        }
        let mut touched: Vec<_> = touched.into_iter().collect();
        touched.sort_unstable();
        (touched, measurements)
    }
}

/// Block key and index inside the block of voxel `i`.
pub(crate) fn split_index(i: [i32; 3]) -> ([i32; 3], usize) {
    let key = i.map(|c| c.div_euclid(BLOCK_SIDE));
    let l = i.map(|c| c.rem_euclid(BLOCK_SIDE) as usize);
    let side = BLOCK_SIDE as usize;
    (key, (l[2] * side + l[1]) * side + l[0])
}

/// The voxel index of entry `local` of block `key`.
pub(crate) fn join_index(key: [i32; 3], local: usize) -> [i32; 3] {
    let side = BLOCK_SIDE as usize;
    let l = [local % side, (local / side) % side, local / (side * side)];
    [0, 1, 2].map(|k| key[k] * BLOCK_SIDE + l[k] as i32)
}
