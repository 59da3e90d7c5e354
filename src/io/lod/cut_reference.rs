//! The cut on the CPU, node by node, as `shaders/lod_cut.wgsl` computes it on the GPU: the
//! reference its tests compare with, and the rule in plain Rust.
//!
//! With `t` the threshold, a node is *refined* when it is in view, has children whose page is
//! resident and its size is above `t`; it is in the cut when its parent is refined (or it is the
//! root) and it is not. Sizes are bounding-sphere radii projected to pixels, on a log scale of
//! [`BINS_PER_OCTAVE`] bins per doubling with 1 px at bin [`BIN_ONE_PIXEL`], each bin split into
//! [`FINE`] steps. The threshold is the smallest bin at or above the asked one whose cut fits the
//! splat budget; when the budget raised it to bin `b`, it is then lowered step by step within `b`
//! while the cut still fits, so that the budget refines the nodes of bin `b` in the order of their
//! exact projected size instead of none of them (a budget that fell inside a crowded bin
//! refined no node of it, and wherever the tree's nodes of one size class fell into two bins,
//! one part of the view was drawn finer than another at equal distance).

use super::tree::{NO_NODE, Skeleton};
use crate::splat::Camera;

/// Size bins.
pub const BINS: u32 = 256;
/// The bin of 1 pixel.
pub const BIN_ONE_PIXEL: f32 = 128.0;
/// Bins per doubling of the projected size.
pub const BINS_PER_OCTAVE: f32 = 16.0;
/// Steps of the threshold within one bin.
pub const FINE: u32 = 256;

/// The threshold in pixels at the top of bin `b`.
pub fn bin_pixels(b: u32) -> f32 {
    ((b as f32 - BIN_ONE_PIXEL) / BINS_PER_OCTAVE).exp2()
}

/// The smallest bin whose threshold is at least `pixels`.
pub fn pixels_bin(pixels: f32) -> u32 {
    level_bin(pixels.max(1e-30).log2() * BINS_PER_OCTAVE + BIN_ONE_PIXEL)
}

fn level_bin(level: f32) -> u32 {
    level.ceil().clamp(0.0, BINS as f32) as u32
}

/// The smallest fine step at or above a continuous level (as `shared/lod.wgsl`'s `level_fine`).
fn level_fine(level: f32) -> u32 {
    (level * FINE as f32)
        .ceil()
        .clamp(0.0, (BINS * FINE) as f32) as u32
}

/// The smallest bin at or above fine step `f`.
fn fine_to_bin(f: u32) -> u32 {
    f.div_ceil(FINE)
}

/// Whether a sphere reaches into `camera`'s view frustum.
pub fn in_view(camera: &Camera, s: [f32; 4]) -> bool {
    let c = camera.to_camera([s[0], s[1], s[2]]);
    let r = s[3];
    let right = (camera.width as f32 - camera.cx) / camera.fx;
    let left = camera.cx / camera.fx;
    let down = (camera.height as f32 - camera.cy) / camera.fy;
    let up = camera.cy / camera.fy;
    let plane = |x: f32, t: f32| (x - t * c[2]) / (1.0 + t * t).sqrt() <= r;
    c[2] + r > camera.near
        && plane(c[0], right)
        && plane(-c[0], left)
        && plane(c[1], down)
        && plane(-c[1], up)
}

/// A sphere's projected radius as a continuous bin level.
pub fn size_level(camera: &Camera, s: [f32; 4]) -> f32 {
    let c = camera.to_camera([s[0], s[1], s[2]]);
    let length = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    let d = (length - s[3]).max(camera.near);
    let px = camera.fx.max(camera.fy) * s[3] / d;
    px.max(1e-30).log2() * BINS_PER_OCTAVE + BIN_ONE_PIXEL
}

/// The fine steps `[lo, hi)` for which node `n` is in the cut (empty when it never is), given
/// which pages are resident.
pub fn node_range(
    s: &Skeleton,
    node_page: &[u32],
    resident: &[bool],
    camera: &Camera,
    n: usize,
) -> (u32, u32) {
    let own = s.spheres[n];
    if !in_view(camera, own) {
        return (0, 0);
    }
    let children = s.child_count[n] as usize;
    let refinable = children > 0 && resident[node_page[s.first_child[n] as usize] as usize];
    let lo = if refinable {
        level_fine(size_level(camera, own))
    } else {
        0
    };
    let parent = s.parent[n];
    let hi = if parent == NO_NODE {
        BINS * FINE
    } else {
        let ps = s.spheres[parent as usize];
        if in_view(camera, ps) && resident[node_page[n] as usize] {
            level_fine(size_level(camera, ps))
        } else {
            0
        }
    };
    (lo, hi)
}

/// The cut for a threshold at or above `tau` pixels whose size fits `budget` (module docs): its
/// threshold in fine steps and its nodes, ascending.
pub fn cut(
    s: &Skeleton,
    node_page: &[u32],
    resident: &[bool],
    camera: &Camera,
    tau: f32,
    budget: u64,
) -> (u32, Vec<u32>) {
    let ranges: Vec<(u32, u32)> = (0..s.len())
        .map(|n| node_range(s, node_page, resident, camera, n))
        .collect();
    let mut diff = vec![0i64; BINS as usize + 1];
    for &(lo, hi) in &ranges {
        let (lo, hi) = (fine_to_bin(lo), fine_to_bin(hi));
        if lo < hi {
            diff[lo as usize] += 1;
            diff[hi as usize] -= 1;
        }
    }
    let asked = pixels_bin(tau);
    let mut count = 0i64;
    let mut chosen = None;
    for b in 0..BINS {
        let before = count;
        count += diff[b as usize];
        if b >= asked && count as u64 <= budget {
            chosen = Some((b, before));
            break;
        }
    }
    let threshold = match chosen {
        None => (BINS - 1) * FINE,
        Some((b, _)) if b <= asked || b == 0 => b * FINE,
        Some((b, below)) => {
            // Within bin b: the first step whose cut fits.
            let base = (b - 1) * FINE;
            let mut fine = vec![0i64; FINE as usize + 1];
            for &(lo, hi) in &ranges {
                if lo < hi {
                    if lo > base && lo <= base + FINE {
                        fine[(lo - base) as usize] += 1;
                    }
                    if hi > base && hi <= base + FINE {
                        fine[(hi - base) as usize] -= 1;
                    }
                }
            }
            let mut count = below;
            let mut t = b * FINE;
            for j in 1..=FINE {
                count += fine[j as usize];
                if count as u64 <= budget {
                    t = base + j;
                    break;
                }
            }
            t
        }
    };
    let nodes = (0..s.len() as u32)
        .filter(|&n| {
            let (lo, hi) = ranges[n as usize];
            lo <= threshold && threshold < hi
        })
        .collect();
    (threshold, nodes)
}
