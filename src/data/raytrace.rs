//! A small CPU ray tracer over analytic shapes ([`Shape`]: spheres, axis-aligned boxes, upright
//! cylinders) with procedural solid textures ([`Texture`]), diffuse + ambient shading and hard
//! shadows from one directional light. Rays find their objects through a bounding volume
//! hierarchy ([`Bvh`]), so large scenes stay fast. It is independent of the splat rasterizer, so
//! images it makes are honest ground truth.

use std::f64::consts::PI;

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
    /// each sample's ray is the lens's direction of its pixel position ([`Lens::ray`]), so the
    /// image is what that lens photographs, fisheyes beside and behind their axis too. Samples
    /// with no ray miss.
    pub fn render_through(&self, camera: &Camera, lens: &Lens) -> RgbaImage {
        let rays = RayTable::new(lens, camera.width, camera.height, &PIXEL_SAMPLES, PI);
        self.render_rays(camera, &rays)
    }

    /// Renders the view of `camera` (its pose; the intrinsics are the table's) through the
    /// camera-space rays of `rays`: straight-alpha RGBA as [`Scene::render`], samples without a
    /// ray missing.
    pub fn render_rays(&self, camera: &Camera, rays: &RayTable) -> RgbaImage {
        let mut image = RgbaImage::new(rays.width, rays.height);
        let origin = camera.position();
        // World direction = Rᵀ · local (the rows of R as columns).
        let to_world = Mat3::from_cols_array_2d(&camera.rotation);
        for (pixel, samples) in image
            .pixels
            .chunks_exact_mut(4)
            .zip(rays.rays.chunks_exact(rays.samples))
        {
            let (mut sum, mut hits) = (Vec3::ZERO, 0u32);
            for local in samples.iter().filter(|d| !d[0].is_nan()) {
                let direction = (to_world * Vec3::from(*local)).normalize().to_array();
                if let Some(hit) = self.intersect(origin, direction) {
                    sum += Vec3::from(self.radiance(hit.object, hit.position, hit.normal));
                    hits += 1;
                }
            }
            if hits > 0 {
                for k in 0..3 {
                    pixel[k] = to_u8(sum[k] / hits as f32);
                }
            }
            pixel[3] = to_u8(hits as f32 / rays.samples as f32);
        }
        image
    }

    /// Traces `samples` rays per pixel through the pinhole `lens`; alpha is the fraction that hit.
    fn trace(&self, camera: &Camera, lens: &Lens, samples: &[[f32; 2]]) -> RgbaImage {
        let mut image = RgbaImage::new(camera.width, camera.height);
        let origin = camera.position();
        let r = camera.rotation;
        for y in 0..camera.height {
            for x in 0..camera.width {
                let (mut sum, mut hits) = (Vec3::ZERO, 0u32);
                for &[dx, dy] in samples {
                    let local = [
                        (x as f32 + dx - lens.cx as f32) / lens.fx as f32,
                        (y as f32 + dy - lens.cy as f32) / lens.fy as f32,
                        1.0,
                    ];
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

/// The camera-space unit rays of every sub-pixel sample of an image through a lens, computed once
/// and shared by every view through that lens. A sample without a ray (the lens has none there,
/// or it lies outside the lens's field) holds NaN.
#[derive(Clone, Debug)]
pub struct RayTable {
    width: u32,
    height: u32,
    samples: usize,
    rays: Vec<[f32; 3]>,
}

impl RayTable {
    /// The rays of `samples` (offsets in [0, 1) from each pixel's corner) in every pixel of a
    /// `width` × `height` image through `lens` ([`Lens::ray`]), those more than `field_limit`
    /// radians from the axis dropped (π keeps every ray).
    pub fn new(
        lens: &Lens,
        width: u32,
        height: u32,
        samples: &[[f32; 2]],
        field_limit: f64,
    ) -> RayTable {
        let none = [f32::NAN; 3];
        let cos_limit = field_limit.cos();
        let mut rays = Vec::with_capacity(width as usize * height as usize * samples.len());
        for y in 0..height {
            for x in 0..width {
                for &[dx, dy] in samples {
                    let pixel = [f64::from(x) + f64::from(dx), f64::from(y) + f64::from(dy)];
                    let ray = lens
                        .ray(pixel)
                        .filter(|d| field_limit >= PI || d[2] >= cos_limit);
                    rays.push(ray.map_or(none, |d| d.map(|v| v as f32)));
                }
            }
        }
        RayTable {
            width,
            height,
            samples: samples.len().max(1),
            rays,
        }
    }

    /// This table with every pixel that lacks a ray for any of its samples losing them all: each
    /// pixel is then wholly inside the lens's field (and photographed) or wholly outside (black,
    /// alpha 0).
    pub fn whole_pixels(mut self) -> RayTable {
        for samples in self.rays.chunks_exact_mut(self.samples) {
            if samples.iter().any(|d| d[0].is_nan()) {
                samples.fill([f32::NAN; 3]);
            }
        }
        self
    }

    /// A mask of the pixels (row-major): 255 where every sample has a ray, 0 elsewhere.
    pub fn mask(&self) -> Vec<u8> {
        self.rays
            .chunks_exact(self.samples)
            .map(|s| {
                if s.iter().all(|d| !d[0].is_nan()) {
                    255
                } else {
                    0
                }
            })
            .collect()
    }

    /// The ray of sample `sample` in pixel (`x`, `y`), `None` where it has none.
    pub fn ray(&self, x: u32, y: u32, sample: usize) -> Option<[f32; 3]> {
        let i = (y as usize * self.width as usize + x as usize) * self.samples + sample;
        self.rays.get(i).copied().filter(|d| !d[0].is_nan())
    }

    /// Image width and height.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }
}

/// A [0, 1] value as a rounded byte.
pub fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}
