//! Surface meshes from depth maps: depth maps of any source (the rasterizer's median depth, or
//! the ray tracer's exact depth in [`truth`]) are fused into a truncated signed distance field
//! over a sparse grid of voxel blocks ([`tsdf`]), its zero level set is extracted as a welded,
//! coloured triangle mesh ([`marching`]), small disconnected pieces are dropped ([`clean`]), and
//! the mesh is written as PLY, OBJ or binary glTF ([`write`]) and scored against the true surface
//! (Chamfer distance, precision, recall and F-score: [`score`]).
//!
//! ```text
//! let mut volume = TsdfVolume::new(TsdfOptions::new(voxel))?;
//! for (depth, camera) in views { volume.integrate(&depth, w, h, &camera, None)?; }
//! let mut mesh = volume.extract()?;
//! mesh.keep_largest_components(0.05);
//! write_mesh(path, &mesh)?;
//! ```

pub mod clean;
mod frame;
pub mod marching;
pub mod score;
pub mod truth;
pub mod tsdf;
pub mod write;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;

pub use score::{MeshScore, fit_sphere, fit_sphere_near, sample_surface, score};
pub use tsdf::{CropBox, IntegrationReport, TsdfOptions, TsdfVolume};
pub use write::{MESH_EXTENSIONS, write_mesh};

use crate::splat::Camera;

/// An indexed triangle mesh with one colour per vertex. Triangles wind counter-clockwise seen
/// from outside (their normals point from the inside of the fused surface to the free space the
/// cameras looked through).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions (world space).
    pub positions: Vec<[f32; 3]>,
    /// Vertex colours (sRGB bytes, as the images), one per position.
    pub colours: Vec<[u8; 3]>,
    /// Triangles as three indices into `positions`.
    pub triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// True when the mesh has no triangle.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The total area of the triangles.
    pub fn area(&self) -> f64 {
        self.triangles.iter().map(|t| triangle_area(self, *t)).sum()
    }

    /// The smallest and largest corner of the box around the vertices (`None` without any).
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let first = *self.positions.first()?;
        Some(self.positions.iter().fold((first, first), |(lo, hi), p| {
            (
                [0, 1, 2].map(|k| lo[k].min(p[k])),
                [0, 1, 2].map(|k| hi[k].max(p[k])),
            )
        }))
    }
}

/// The area of triangle `t` of `mesh`, in f64.
pub(crate) fn triangle_area(mesh: &Mesh, t: [u32; 3]) -> f64 {
    let p = t.map(|i| glam::DVec3::from(mesh.positions[i as usize].map(f64::from)));
    0.5 * (p[1] - p[0]).cross(p[2] - p[0]).length()
}

/// A voxel size for a scene inside the box `bounds` (smallest and largest corner) seen by
/// `cameras`: the box's diagonal / 256, but no finer than half the footprint of a pixel of the
/// median camera at its distance from the box's centre (finer voxels than the depth maps resolve
/// only add holes). Falls back to the diagonal rule without cameras; `None` for an empty or
/// non-finite box.
pub fn default_voxel_size(bounds: ([f32; 3], [f32; 3]), cameras: &[Camera]) -> Option<f32> {
    let (lo, hi) = (glam::Vec3::from(bounds.0), glam::Vec3::from(bounds.1));
    let diagonal = (hi - lo).length();
    if !diagonal.is_finite() || diagonal <= 0.0 || (hi - lo).min_element() < 0.0 {
        return None;
    }
    let centre = 0.5 * (lo + hi);
    let mut footprints: Vec<f32> = cameras
        .iter()
        .map(|c| glam::Vec3::from(c.position()).distance(centre) / c.fx.max(c.fy))
        .filter(|f| f.is_finite() && *f > 0.0)
        .collect();
    let by_size = diagonal / 256.0;
    if footprints.is_empty() {
        return Some(by_size);
    }
    let middle = footprints.len() / 2;
    let (_, median, _) = footprints.select_nth_unstable_by(middle, f32::total_cmp);
    Some(by_size.max(0.5 * *median))
}
