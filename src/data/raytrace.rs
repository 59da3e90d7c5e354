//! A small CPU ray tracer over analytic shapes (spheres and axis-aligned boxes) with procedural
//! solid textures, diffuse + ambient shading and hard shadows from one directional light. It is
//! independent of the splat rasterizer, so images it makes are honest ground truth.

use super::RgbaImage;
use super::lens::Lens;
use crate::splat::Camera;

/// Sub-pixel sample offsets (a rotated grid) used for every pixel; deterministic antialiasing.
pub const PIXEL_SAMPLES: [[f32; 2]; 4] = [
    [0.375, 0.125],
    [0.875, 0.375],
    [0.125, 0.625],
    [0.625, 0.875],
];

/// A solid (3D) procedural texture: albedo as a function of the world position.
#[derive(Clone, Debug, PartialEq)]
pub enum Texture {
    /// One colour.
    Solid([f32; 3]),
    /// A 3D checkerboard of cubes with side `size`, cells offset by a quarter so that planes at
    /// multiples of `size` never lie on a cell boundary: cell = `floor(p / size + 0.25)`.
    Checker {
        /// Colour of cells whose index sum is even.
        even: [f32; 3],
        /// Colour of cells whose index sum is odd.
        odd: [f32; 3],
        /// Cell side.
        size: f32,
    },
    /// Bands across `axis`: band `floor(dot(p, axis) / period)`, even bands `even`, odd bands `odd`.
    Stripes {
        /// Colour of even bands.
        even: [f32; 3],
        /// Colour of odd bands.
        odd: [f32; 3],
        /// Direction across the bands (unit length).
        axis: [f32; 3],
        /// Width of one band.
        period: f32,
    },
    /// A linear blend from `from` (at `dot(p, axis) <= start`) to `to` (at `>= end`).
    Gradient {
        /// Colour at the start.
        from: [f32; 3],
        /// Colour at the end.
        to: [f32; 3],
        /// Direction of the blend (unit length).
        axis: [f32; 3],
        /// Coordinate along `axis` where the blend starts.
        start: f32,
        /// Coordinate along `axis` where it ends.
        end: f32,
    },
}

impl Texture {
    /// Albedo at world position `p`.
    pub fn albedo(&self, p: [f32; 3]) -> [f32; 3] {
        match self {
            Texture::Solid(c) => *c,
            Texture::Checker { even, odd, size } => {
                let cell: i64 = p.iter().map(|&v| (v / size + 0.25).floor() as i64).sum();
                if cell.rem_euclid(2) == 0 { *even } else { *odd }
            }
            Texture::Stripes {
                even,
                odd,
                axis,
                period,
            } => {
                let band = (dot(p, *axis) / period).floor() as i64;
                if band.rem_euclid(2) == 0 { *even } else { *odd }
            }
            Texture::Gradient {
                from,
                to,
                axis,
                start,
                end,
            } => {
                let t = ((dot(p, *axis) - start) / (end - start)).clamp(0.0, 1.0);
                [0, 1, 2].map(|k| from[k] + (to[k] - from[k]) * t)
            }
        }
    }
}

/// An analytic shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A sphere.
    Sphere {
        /// Centre.
        center: [f32; 3],
        /// Radius.
        radius: f32,
    },
    /// An axis-aligned box.
    Cuboid {
        /// Smallest corner.
        min: [f32; 3],
        /// Largest corner.
        max: [f32; 3],
    },
}

impl Shape {
    /// Distance along the unit ray `origin + t * direction` to the nearest surface with
    /// `t > t_min`, and the outward normal there.
    pub fn intersect(
        &self,
        origin: [f32; 3],
        direction: [f32; 3],
        t_min: f32,
    ) -> Option<(f32, [f32; 3])> {
        match self {
            Shape::Sphere { center, radius } => {
                let oc = sub(origin, *center);
                let b = dot(oc, direction);
                let c = dot(oc, oc) - radius * radius;
                let disc = b * b - c;
                if disc < 0.0 {
                    return None;
                }
                let root = disc.sqrt();
                let t = [-b - root, -b + root].into_iter().find(|&t| t > t_min)?;
                let p = add(origin, scale(direction, t));
                Some((t, scale(sub(p, *center), 1.0 / radius)))
            }
            Shape::Cuboid { min, max } => {
                let (mut t_near, mut t_far) = (f32::NEG_INFINITY, f32::INFINITY);
                let (mut near_axis, mut far_axis) = (0, 0);
                for k in 0..3 {
                    if direction[k].abs() < 1e-12 {
                        if origin[k] < min[k] || origin[k] > max[k] {
                            return None;
                        }
                        continue;
                    }
                    let (mut t0, mut t1) = (
                        (min[k] - origin[k]) / direction[k],
                        (max[k] - origin[k]) / direction[k],
                    );
                    if t0 > t1 {
                        std::mem::swap(&mut t0, &mut t1);
                    }
                    if t0 > t_near {
                        (t_near, near_axis) = (t0, k);
                    }
                    if t1 < t_far {
                        (t_far, far_axis) = (t1, k);
                    }
                }
                if t_near > t_far {
                    return None;
                }
                let (t, axis, entering) = if t_near > t_min {
                    (t_near, near_axis, true)
                } else if t_far > t_min {
                    (t_far, far_axis, false)
                } else {
                    return None;
                };
                let mut normal = [0.0; 3];
                // Entering: the normal faces against the ray; leaving: along it.
                normal[axis] = if (direction[axis] < 0.0) == entering {
                    1.0
                } else {
                    -1.0
                };
                Some((t, normal))
            }
        }
    }

    /// True when `p` is inside the shape by more than `margin`.
    pub fn contains(&self, p: [f32; 3], margin: f32) -> bool {
        match self {
            Shape::Sphere { center, radius } => length(sub(p, *center)) < radius - margin,
            Shape::Cuboid { min, max } => {
                (0..3).all(|k| p[k] > min[k] + margin && p[k] < max[k] - margin)
            }
        }
    }
}

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

/// Objects lit by one directional light plus ambient light.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// The objects.
    pub objects: Vec<Object>,
    /// Unit direction towards the light.
    pub light_direction: [f32; 3],
    /// Ambient fraction: radiance = albedo · (ambient + (1 − ambient) · max(0, n·l) · lit).
    pub ambient: f32,
}

impl Scene {
    /// The nearest hit along the unit ray, if any.
    pub fn intersect(&self, origin: [f32; 3], direction: [f32; 3]) -> Option<Hit> {
        let mut best: Option<Hit> = None;
        for (object, o) in self.objects.iter().enumerate() {
            if let Some((t, normal)) = o.shape.intersect(origin, direction, 1e-5)
                && best.is_none_or(|b| t < b.t)
            {
                best = Some(Hit {
                    t,
                    position: add(origin, scale(direction, t)),
                    normal,
                    object,
                });
            }
        }
        best
    }

    /// Radiance leaving the surface of `object` at `position` with normal `normal` (view
    /// independent: diffuse with a shadow test towards the light, plus ambient).
    pub fn radiance(&self, object: usize, position: [f32; 3], normal: [f32; 3]) -> [f32; 3] {
        let albedo = self.objects[object].texture.albedo(position);
        let facing = dot(normal, self.light_direction).max(0.0);
        let lit = facing > 0.0
            && self
                .intersect(add(position, scale(normal, 1e-4)), self.light_direction)
                .is_none();
        let light = self.ambient + (1.0 - self.ambient) * if lit { facing } else { 0.0 };
        albedo.map(|a| a * light)
    }

    /// Renders the view of `camera` (OpenCV convention, pixel centres at +0.5) with
    /// [`PIXEL_SAMPLES`] rays per pixel: straight-alpha RGBA with alpha = covered fraction and
    /// colour = mean radiance of the rays that hit (0 where none did).
    pub fn render(&self, camera: &Camera) -> RgbaImage {
        let pinhole = Lens::pinhole(
            f64::from(camera.fx),
            f64::from(camera.fy),
            f64::from(camera.cx),
            f64::from(camera.cy),
        );
        self.render_through(camera, &pinhole)
    }

    /// [`Scene::render`] through a distorted `lens` (replacing the camera's pinhole intrinsics):
    /// each sample's ray is the lens's undistorted direction of its pixel position, so the image
    /// is what that lens photographs. Samples with no ray (a fisheye past 90°) miss.
    pub fn render_through(&self, camera: &Camera, lens: &Lens) -> RgbaImage {
        let mut image = RgbaImage::new(camera.width, camera.height);
        let origin = camera.position();
        let r = camera.rotation;
        for y in 0..camera.height {
            for x in 0..camera.width {
                let (mut sum, mut hits) = ([0.0f32; 3], 0u32);
                for [dx, dy] in PIXEL_SAMPLES {
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
                    // World direction = Rᵀ · local.
                    let world = [0, 1, 2]
                        .map(|c| r[0][c] * local[0] + r[1][c] * local[1] + r[2][c] * local[2]);
                    if let Some(hit) = self.intersect(origin, normalize(world)) {
                        let radiance = self.radiance(hit.object, hit.position, hit.normal);
                        sum = add(sum, radiance);
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
                pixel[3] = to_u8(hits as f32 / PIXEL_SAMPLES.len() as f32);
            }
        }
        image
    }
}

/// A [0, 1] value as a rounded byte.
pub fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0).round() as u8
}

pub(crate) fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(crate) fn add(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

pub(crate) fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn scale(a: [f32; 3], s: f32) -> [f32; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}

pub(crate) fn length(a: [f32; 3]) -> f32 {
    dot(a, a).sqrt()
}

pub(crate) fn normalize(a: [f32; 3]) -> [f32; 3] {
    scale(a, 1.0 / length(a))
}

pub(crate) fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
