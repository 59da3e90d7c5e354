//! The zero level set of a [`TsdfVolume`] as a triangle mesh, by marching tetrahedra: every cell
//! of 2×2×2 voxels whose eight corners are all observed is split into the six tetrahedra of its
//! Kuhn (Freudenthal) triangulation, the ones sharing the diagonal from the cell's lowest corner
//! to its highest, one per order of the three axes. That split is the same in every cell, so the
//! tetrahedra of neighbouring cells (and blocks) meet face to face and the surface needs no case
//! table and has no ambiguous cases: a tetrahedron with one corner on the other side of the
//! surface from the rest gives one triangle, one with two on each side a quad (two triangles).
//!
//! A vertex lies on a tetrahedron edge (a cell edge, a face diagonal or the cell diagonal) where
//! the linear interpolation of the field between its ends is zero, with its colour interpolated
//! alike; it is keyed by the edge's two voxel indices, so every triangle that crosses an edge
//! shares its vertex and the mesh is closed wherever the observed field is. Each triangle faces
//! the positive (free) side: its normal is flipped to point from the tetrahedron's negative
//! corners towards its positive ones.

use std::collections::HashMap;

use super::Mesh;
use super::tsdf::{BLOCK_SIDE, TsdfVolume, Voxel, join_index};
use crate::error::{Error, Result};

/// Corner bits of a cell: bit k set = +1 voxel along axis k.
const TETRAHEDRA: [[usize; 4]; 6] = kuhn_tetrahedra();

/// The six tetrahedra 0 → e_a → e_a + e_b → (1,1,1), one per order (a, b, c) of the axes.
const fn kuhn_tetrahedra() -> [[usize; 4]; 6] {
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut out = [[0; 4]; 6];
    let mut i = 0;
    while i < 6 {
        let [a, b, _] = orders[i];
        out[i] = [0, 1 << a, (1 << a) | (1 << b), 7];
        i += 1;
    }
    out
}

/// One cell corner: voxel index and state.
#[derive(Clone, Copy)]
struct Corner {
    index: [i32; 3],
    voxel: Voxel,
}

/// The mesh being built: vertices keyed by the edge they lie on.
struct Builder<'a> {
    volume: &'a TsdfVolume,
    mesh: Mesh,
    vertices: HashMap<([i32; 3], [i32; 3]), u32>,
}

impl TsdfVolume {
    /// The zero level set as a welded mesh with vertex colours (module docs of
    /// [`marching`](super::marching)). Errors when nothing was fused or the fused field has no
    /// surface.
    pub fn extract(&self) -> Result<Mesh> {
        self.extract_with_progress(&mut |_, _| {})
    }

    /// [`TsdfVolume::extract`], calling `progress(done, total)` after each block of the field.
    pub fn extract_with_progress(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<Mesh> {
        let (views, measurements) = self.integrated();
        if measurements == 0 {
            return Err(Error::InvalidArgument {
                op: "mesh extraction",
                detail: format!(
                    "none of the {views} depth maps fused had a usable depth (positive, finite, \
                     within the maximum depth and crop box): nothing to mesh"
                ),
            });
        }
        let mut builder = Builder {
            volume: self,
            mesh: Mesh::default(),
            vertices: HashMap::new(),
        };
        let side = BLOCK_SIDE as usize;
        let keys = self.block_keys();
        for (done, key) in keys.iter().enumerate() {
            for local in 0..side * side * side {
                builder.cell(join_index(*key, local));
            }
            progress(done + 1, keys.len());
        }
        if builder.mesh.is_empty() {
            return Err(Error::InvalidArgument {
                op: "mesh extraction",
                detail: format!(
                    "the field fused from {views} depth maps ({measurements} depths) has no \
                     surface: check that the depth maps and cameras agree, or use a smaller \
                     --voxel"
                ),
            });
        }
        Ok(builder.mesh)
    }
}

impl Builder<'_> {
    /// Triangulates the cell whose lowest corner is voxel `base`.
    fn cell(&mut self, base: [i32; 3]) {
        let mut corners = [Corner {
            index: base,
            voxel: Voxel::default(),
        }; 8];
        let (mut negative, mut positive) = (false, false);
        for (bits, corner) in corners.iter_mut().enumerate() {
            let index = [0, 1, 2].map(|k| base[k] + ((bits >> k) & 1) as i32);
            let Some(voxel) = self.volume.voxel(index).filter(|v| v.weight > 0.0) else {
                return;
            };
            negative |= voxel.sdf < 0.0;
            positive |= voxel.sdf >= 0.0;
            *corner = Corner {
                index,
                voxel: *voxel,
            };
        }
        if !(negative && positive) {
            return;
        }
        for tetrahedron in TETRAHEDRA {
            self.tetrahedron(tetrahedron.map(|c| corners[c]));
        }
    }

    fn tetrahedron(&mut self, c: [Corner; 4]) {
        let inside: Vec<usize> = (0..4).filter(|&i| c[i].voxel.sdf < 0.0).collect();
        let outside: Vec<usize> = (0..4).filter(|&i| c[i].voxel.sdf >= 0.0).collect();
        if inside.is_empty() || outside.is_empty() {
            return;
        }
        let centre = |set: &[usize]| {
            let p = set.iter().fold(glam::Vec3::ZERO, |s, &i| {
                s + glam::Vec3::from(c[i].index.map(|v| v as f32))
            });
            p / set.len() as f32
        };
        let towards_free = centre(&outside) - centre(&inside);
        let emit = |builder: &mut Self, edges: [(usize, usize); 3]| {
            let t = edges.map(|(a, b)| builder.vertex(c[a], c[b]));
            builder.triangle(t, towards_free);
        };
        match (inside.len(), outside.len()) {
            (1, 3) | (3, 1) => {
                let (lone, others) = match inside.len() {
                    1 => (inside[0], &outside),
                    _ => (outside[0], &inside),
                };
                emit(
                    self,
                    [(lone, others[0]), (lone, others[1]), (lone, others[2])],
                );
            }
            _ => {
                let ([a, b], [p, q]) = ([inside[0], inside[1]], [outside[0], outside[1]]);
                // The quad a-p, a-q, b-q, b-p, cut along a-p .. b-q.
                emit(self, [(a, p), (a, q), (b, q)]);
                emit(self, [(a, p), (b, q), (b, p)]);
            }
        }
    }

    /// The vertex on the edge between corners `a` and `b` (opposite signs), made on first use.
    fn vertex(&mut self, a: Corner, b: Corner) -> u32 {
        let (a, b) = match a.index <= b.index {
            true => (a, b),
            false => (b, a),
        };
        if let Some(&v) = self.vertices.get(&(a.index, b.index)) {
            return v;
        }
        let t = a.voxel.sdf / (a.voxel.sdf - b.voxel.sdf);
        let (pa, pb) = (self.volume.position(a.index), self.volume.position(b.index));
        let position = [0, 1, 2].map(|k| pa[k] + (pb[k] - pa[k]) * t);
        let colour = [0, 1, 2].map(|k| {
            let (ca, cb) = (a.voxel.colour[k], b.voxel.colour[k]);
            (ca + (cb - ca) * t).round().clamp(0.0, 255.0) as u8
        });
        let index = self.mesh.positions.len() as u32;
        self.mesh.positions.push(position);
        self.mesh.colours.push(colour);
        self.vertices.insert((a.index, b.index), index);
        index
    }

    /// Adds triangle `t`, wound so that its normal points along `towards_free` (voxel units).
    fn triangle(&mut self, t: [u32; 3], towards_free: glam::Vec3) {
        let p = t.map(|i| glam::Vec3::from(self.mesh.positions[i as usize]));
        let normal = (p[1] - p[0]).cross(p[2] - p[0]);
        let t = match normal.dot(towards_free) < 0.0 {
            true => [t[0], t[2], t[1]],
            false => t,
        };
        self.mesh.triangles.push(t);
    }
}
