//! A small CPU ray tracer over analytic shapes ([`Shape`]: spheres, axis-aligned boxes, upright
//! cylinders) with procedural solid textures ([`Texture`]), diffuse + ambient shading and hard
//! shadows from one directional light. Rays find their objects through a bounding volume
//! hierarchy ([`Bvh`]), so large scenes stay fast. It is independent of the splat rasterizer, so
//! images it makes are honest ground truth.

use glam::{Mat3, Vec3};

use super::RgbaImage;
use super::bvh::Bvh;
use super::lens::Lens;
use crate::splat::Camera;

pub use super::shape::Shape;
pub use super::texture::{Facade, Streets, Texture};

/// Rays start this far along their direction (no self-hits at the surface they leave).
const T_MIN: f32 = 1e-5;

/// Sub-pixel sample offsets (a rotated grid) used for every pixel; deterministic antialiasing.
pub const PIXEL_SAMPLES: [[f32; 2]; 4] = [
    [0.375, 0.125],
    [0.875, 0.375],
    [0.125, 0.625],
    [0.625, 0.875],
];

/// One ray through each pixel's centre: a quarter of [`PIXEL_SAMPLES`]'s work, for captures too
/// large to ray trace four times over (edges alias).
pub const CENTRE_SAMPLE: [[f32; 2]; 1] = [[0.5, 0.5]];

/// A shape with its texture.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// Geometry.
    pub shape: Shape,
    /// Albedo.
    pub texture: Texture,
}

/// The nearest surface a ray hits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Distance along the (unit) ray.
    pub t: f32,
    /// World position.
    pub position: [f32; 3],
    /// Outward unit normal.
    pub normal: [f32; 3],
    /// Index of the object in [`Scene::objects`].
    pub object: usize,
}

/// Objects lit by one directional light plus ambient light, with a [`Bvh`] over the objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    objects: Vec<Object>,
    /// `None`: every ray tests every object (the reference the hierarchy is checked against).
    bvh: Option<Bvh>,
    /// Unit direction towards the light.
    pub light_direction: [f32; 3],
    /// Ambient fraction: radiance = albedo · (ambient + (1 − ambient) · max(0, n·l) · lit).
    pub ambient: f32,
}

impl Scene {
    /// A scene of `objects` (a [`Bvh`] is built over them) lit from unit direction
    /// `light_direction` with ambient fraction `ambient`.
    pub fn new(objects: Vec<Object>, light_direction: [f32; 3], ambient: f32) -> Scene {
        let boxes: Vec<_> = objects.iter().map(|o| o.shape.bounds()).collect();
        Scene {
            bvh: Some(Bvh::build(&boxes)),
            objects,
            light_direction,
            ambient,
        }
    }

    /// The same scene traced without its hierarchy: every ray tests every object. Slow; the
    /// reference for tests.
    pub fn without_bvh(mut self) -> Scene {
        self.bvh = None;
        self
    }

    /// The objects, in index order ([`Hit::object`] indexes them).
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// The nearest hit along the unit ray, if any (the lowest object index among equal
    /// distances).
    pub fn intersect(&self, origin: [f32; 3], direction: [f32; 3]) -> Option<Hit> {
        let Some(bvh) = &self.bvh else {
            return self.intersect_linear(origin, direction);
        };
        let (object, t, normal) = bvh.closest(origin, direction, |i| {
            self.objects[i].shape.intersect(origin, direction, T_MIN)
        })?;
        Some(Hit {
            t,
            position: (Vec3::from(origin) + Vec3::from(direction) * t).to_array(),
            normal,
            object,
        })
    }

    /// [`Scene::intersect`] by testing every object in turn.
    pub fn intersect_linear(&self, origin: [f32; 3], direction: [f32; 3]) -> Option<Hit> {
        let mut best: Option<Hit> = None;
        for (object, o) in self.objects.iter().enumerate() {
            if let Some((t, normal)) = o.shape.intersect(origin, direction, T_MIN)
                && best.is_none_or(|b| t < b.t)
            {
                best = Some(Hit {
                    t,
                    position: (Vec3::from(origin) + Vec3::from(direction) * t).to_array(),
                    normal,
                    object,
                });
            }
        }
        best
    }

    /// True when the unit ray hits anything (the shadow test: any hit, not the nearest).
    pub fn occluded(&self, origin: [f32; 3], direction: [f32; 3]) -> bool {
        let hits = |i: usize| {
            self.objects[i]
                .shape
                .intersect(origin, direction, T_MIN)
                .is_some()
        };
        match &self.bvh {
            Some(bvh) => bvh.any(origin, direction, hits),
            None => (0..self.objects.len()).any(hits),
        }
    }

    /// True when `p` lies inside some object other than `except` by more than `margin` (a point
    /// sampled on one surface and buried in another object).
    pub fn buried(&self, p: [f32; 3], margin: f32, except: usize) -> bool {
        let inside = |i: usize| i != except && self.objects[i].shape.contains(p, margin);
        match &self.bvh {
            Some(bvh) => bvh.any_at(p, inside),
            None => (0..self.objects.len()).any(inside),
        }
    }

    /// Radiance leaving the surface of `object` at `position` with normal `normal` (view
    /// independent: diffuse with a shadow test towards the light, plus ambient).
    pub fn radiance(&self, object: usize, position: [f32; 3], normal: [f32; 3]) -> [f32; 3] {
        let albedo = self.objects[object].texture.albedo(position);
        let normal = Vec3::from(normal);
        let facing = normal.dot(Vec3::from(self.light_direction)).max(0.0);
        let origin = Vec3::from(position) + normal * 1e-4;
        let lit = facing > 0.0 && !self.occluded(origin.to_array(), self.light_direction);
        let light = self.ambient + (1.0 - self.ambient) * if lit { facing } else { 0.0 };
        albedo.map(|a| a * light)
    }

    /// Renders the view of `camera` (OpenCV convention, pixel centres at +0.5) with
    /// [`PIXEL_SAMPLES`] rays per pixel: straight-alpha RGBA with alpha = covered fraction and
    /// colour = mean radiance of the rays that hit (0 where none did).
    pub fn render(&self, camera: &Camera) -> RgbaImage {
        self.render_sampled(camera, &PIXEL_SAMPLES)
    }

    /// [`Scene::render`] with the given sub-pixel sample positions (offsets in [0, 1) from the
    /// pixel's corner), such as [`CENTRE_SAMPLE`].
    pub fn render_sampled(&self, camera: &Camera, samples: &[[f32; 2]]) -> RgbaImage {
        let pinhole = Lens::pinhole(
            f64::from(camera.fx),
            f64::from(camera.fy),
            f64::from(camera.cx),
            f64::from(camera.cy),
        );
        self.trace(camera, &pinhole, samples)
    }

    /// [`Scene::render`] through a distorted `lens` (replacing the camera's pinhole intrinsics):
    /// each sample's ray is the lens's undistorted direction of its pixel position, so the image
    /// is what that lens photographs. Samples with no ray (a fisheye past 90°) miss.
    pub fn render_through(&self, camera: &Camera, lens: &Lens) -> RgbaImage {
        self.trace(camera, lens, &PIXEL_SAMPLES)
    }

    /// Traces `samples` rays per pixel through `lens`; alpha is the fraction that hit.
    fn trace(&self, camera: &Camera, lens: &Lens, samples: &[[f32; 2]]) -> RgbaImage {
        let mut image = RgbaImage::new(camera.width, camera.height);
        let origin = camera.position();
        let r = camera.rotation;
        for y in 0..camera.height {
            for x in 0..camera.width {
                let (mut sum, mut hits) = (Vec3::ZERO, 0u32);
                for &[dx, dy] in samples {
                    let local = if lens.is_pinhole() {
                        [
                            (x as f32 + dx - lens.cx as f32) / lens.fx as f32,
                            (y as f32 + dy - lens.cy as f32) / lens.fy as f32,
                            1.0,
                        ]
                    } else {
                        let pixel = [f64::from(x as f32 + dx), f64::from(y as f32 + dy)];
                        let Some([lx, ly]) = lens.unproject(pixel) else {
                            continue;
                        };
                        [lx as f32, ly as f32, 1.0]
                    };
                    // World direction = Rᵀ · local (the rows of R as columns).
                    let world = Mat3::from_cols_array_2d(&r) * Vec3::from(local);
                    let direction = world.normalize().to_array();
                    if let Some(hit) = self.intersect(origin, direction) {
                        sum += Vec3::from(self.radiance(hit.object, hit.position, hit.normal));
                        hits += 1;
                    }
                }
                let i = (y as usize * camera.width as usize + x as usize) * 4;
                let pixel = &mut image.pixels[i..i + 4];
                if hits > 0 {
                    for k in 0..3 {
                        pixel[k] = to_u8(sum[k] / hits as f32);
                    }
                }
                pixel[3] = to_u8(hits as f32 / samples.len() as f32);
            }
        }
        image
    }
}

/// A [0, 1] value as a rounded byte.
pub fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}
