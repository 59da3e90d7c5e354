//! One depth map as the TSDF volume fuses it: its depths looked up at any projected position,
//! and a confidence per pixel from the angle between the viewing ray and the surface it measured.
//!
//! A depth measured at a grazing angle (near a silhouette, or on a surface seen edge on) says
//! little about the distance of voxels beside the ray: the distance along the ray to such a
//! surface is far more than the distance to it, and voxels just outside an object's silhouette
//! would be pulled behind its surface. Each measurement is therefore weighted by the cosine of
//! the angle between its ray and the surface normal estimated from neighbouring depths (at least
//! [`MIN_WEIGHT`]; pixels with no neighbour on the same surface get that least weight).

use glam::Vec3;

use super::tsdf::Voxel;
use crate::splat::Camera;

/// The least weight of a measurement (a surface seen exactly edge on, or an isolated depth).
pub const MIN_WEIGHT: f32 = 0.05;

/// One depth map prepared for updating voxels.
pub(crate) struct Frame<'a> {
    depth: &'a [f32],
    colour: Option<&'a [[u8; 3]]>,
    camera: &'a Camera,
    truncation: f32,
    weight: Vec<f32>,
}

impl<'a> Frame<'a> {
    /// `depth` (0 where unmeasured) seen by `camera`, with optional colours.
    pub(crate) fn new(
        depth: &'a [f32],
        camera: &'a Camera,
        colour: Option<&'a [[u8; 3]]>,
        truncation: f32,
    ) -> Self {
        let (w, h) = (camera.width as i64, camera.height as i64);
        let point = |x: i64, y: i64| -> Option<Vec3> {
            if x < 0 || y < 0 || x >= w || y >= h {
                return None;
            }
            let d = depth[(y * w + x) as usize];
            (d > 0.0).then(|| {
                Vec3::new(
                    (x as f32 + 0.5 - camera.cx) / camera.fx * d,
                    (y as f32 + 0.5 - camera.cy) / camera.fy * d,
                    d,
                )
            })
        };
        // The tangent along one image axis: a central difference, or one-sided where a
        // neighbour is missing or on another surface (beyond the truncation).
        let tangent = |centre: Vec3, before: Option<Vec3>, after: Option<Vec3>| {
            let near = |p: Option<Vec3>| p.filter(|p| (p.z - centre.z).abs() < truncation);
            match (near(before), near(after)) {
                (Some(a), Some(b)) => Some(b - a),
                (Some(a), None) => Some(centre - a),
                (None, Some(b)) => Some(b - centre),
                (None, None) => None,
            }
        };
        let mut weight = vec![0.0; depth.len()];
        for y in 0..h {
            for x in 0..w {
                let Some(centre) = point(x, y) else {
                    continue;
                };
                let along_x = tangent(centre, point(x - 1, y), point(x + 1, y));
                let along_y = tangent(centre, point(x, y - 1), point(x, y + 1));
                let cosine = match (along_x, along_y) {
                    (Some(a), Some(b)) => {
                        let normal = a.cross(b).normalize_or_zero();
                        normal.dot(centre.normalize()).abs()
                    }
                    _ => 0.0,
                };
                weight[(y * w + x) as usize] = cosine.max(MIN_WEIGHT);
            }
        }
        Frame {
            depth,
            colour,
            camera,
            truncation,
            weight,
        }
    }

    /// The depth at continuous pixel position (`u`, `v`) (pixel centres at +0.5): bilinear
    /// between the four nearest centres when all are measured and agree within the truncation,
    /// else the nearest pixel's; with that pixel's index.
    fn depth_at(&self, u: f32, v: f32) -> Option<(f32, usize)> {
        let (w, h) = (self.camera.width as i64, self.camera.height as i64);
        let (px, py) = (u.floor() as i64, v.floor() as i64);
        if px < 0 || py < 0 || px >= w || py >= h {
            return None;
        }
        let nearest = (py * w + px) as usize;
        let (fx, fy) = (u - 0.5 - (u - 0.5).floor(), v - 0.5 - (v - 0.5).floor());
        let (x0, y0) = ((u - 0.5).floor() as i64, (v - 0.5).floor() as i64);
        let corner = |x: i64, y: i64| -> f32 {
            match x >= 0 && y >= 0 && x < w && y < h {
                true => self.depth[(y * w + x) as usize],
                false => 0.0,
            }
        };
        let d = [
            corner(x0, y0),
            corner(x0 + 1, y0),
            corner(x0, y0 + 1),
            corner(x0 + 1, y0 + 1),
        ];
        let (lo, hi) = d
            .iter()
            .fold((f32::INFINITY, 0f32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if lo > 0.0 && hi - lo < self.truncation {
            let top = d[0] + (d[1] - d[0]) * fx;
            let bottom = d[2] + (d[3] - d[2]) * fx;
            return Some((top + (bottom - top) * fy, nearest));
        }
        let d = self.depth[nearest];
        (d > 0.0).then_some((d, nearest))
    }

    /// Fuses this depth map's measurement of voxel `v` at world position `p`.
    pub(crate) fn update(&self, v: &mut Voxel, p: [f32; 3]) {
        let c = self.camera.to_camera(p);
        if c[2] <= 0.0 {
            return;
        }
        let (x, y) = (c[0] / c[2], c[1] / c[2]);
        let u = self.camera.fx * x + self.camera.cx;
        let w = self.camera.fy * y + self.camera.cy;
        let Some((depth, pixel)) = self.depth_at(u, w) else {
            return;
        };
        let sdf = (depth - c[2]) * (1.0 + x * x + y * y).sqrt();
        if sdf < -self.truncation {
            return;
        }
        let tsdf = (sdf / self.truncation).min(1.0);
        let weight = self.weight[pixel];
        v.sdf = (v.sdf * v.weight + tsdf * weight) / (v.weight + weight);
        v.weight += weight;
        if let Some(colour) = self.colour
            && sdf < self.truncation
        {
            let total = v.colour_weight + weight;
            for (mean, &value) in v.colour.iter_mut().zip(&colour[pixel]) {
                *mean = (*mean * v.colour_weight + f32::from(value) * weight) / total;
            }
            v.colour_weight = total;
        }
    }
}
