//! The ray tracer's analytic shapes: spheres, axis-aligned boxes and upright cylinders, with ray
//! intersection, point containment, bounds, area and uniform surface sampling.

use glam::Vec3;

use super::bvh::Aabb;
use super::init::SplitMix64;

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
    /// A closed cylinder with its axis along +z.
    Cylinder {
        /// Centre of the bottom disc.
        base: [f32; 3],
        /// Radius.
        radius: f32,
        /// Height (the top disc is at `base.z + height`).
        height: f32,
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
                let (center, origin, direction) = (
                    Vec3::from(*center),
                    Vec3::from(origin),
                    Vec3::from(direction),
                );
                let oc = origin - center;
                let b = oc.dot(direction);
                let c = oc.dot(oc) - radius * radius;
                let disc = b * b - c;
                if disc < 0.0 {
                    return None;
                }
                let root = disc.sqrt();
                let t = [-b - root, -b + root].into_iter().find(|&t| t > t_min)?;
                let p = origin + direction * t;
                Some((t, ((p - center) * (1.0 / radius)).to_array()))
            }
            Shape::Cuboid { min, max } => intersect_box(*min, *max, origin, direction, t_min),
            Shape::Cylinder {
                base,
                radius,
                height,
            } => intersect_cylinder(*base, *radius, *height, origin, direction, t_min),
        }
    }

    /// True when `p` is inside the shape by more than `margin`.
    pub fn contains(&self, p: [f32; 3], margin: f32) -> bool {
        match self {
            Shape::Sphere { center, radius } => {
                Vec3::from(p).distance(Vec3::from(*center)) < radius - margin
            }
            Shape::Cuboid { min, max } => {
                (0..3).all(|k| p[k] > min[k] + margin && p[k] < max[k] - margin)
            }
            Shape::Cylinder {
                base,
                radius,
                height,
            } => {
                let r = (p[0] - base[0]).hypot(p[1] - base[1]);
                r < radius - margin && p[2] > base[2] + margin && p[2] < base[2] + height - margin
            }
        }
    }

    /// The axis-aligned box around the shape.
    pub fn bounds(&self) -> Aabb {
        match self {
            Shape::Sphere { center, radius } => Aabb {
                min: center.map(|c| c - radius),
                max: center.map(|c| c + radius),
            },
            Shape::Cuboid { min, max } => Aabb {
                min: *min,
                max: *max,
            },
            Shape::Cylinder {
                base,
                radius,
                height,
            } => Aabb {
                min: [base[0] - radius, base[1] - radius, base[2]],
                max: [base[0] + radius, base[1] + radius, base[2] + height],
            },
        }
    }

    /// Surface area.
    pub fn surface_area(&self) -> f32 {
        match self {
            Shape::Sphere { radius, .. } => 4.0 * std::f32::consts::PI * radius * radius,
            Shape::Cuboid { min, max } => {
                let e = [0, 1, 2].map(|k| max[k] - min[k]);
                2.0 * (e[0] * e[1] + e[1] * e[2] + e[0] * e[2])
            }
            Shape::Cylinder { radius, height, .. } => {
                std::f32::consts::TAU * radius * (radius + height)
            }
        }
    }

    /// A uniform area sample of the surface: position and outward normal.
    pub fn sample_surface(&self, rng: &mut SplitMix64) -> ([f32; 3], [f32; 3]) {
        match self {
            Shape::Sphere { center, radius } => {
                let z = 2.0 * rng.next_f32() - 1.0;
                let phi = std::f32::consts::TAU * rng.next_f32();
                let r = (1.0 - z * z).max(0.0).sqrt();
                let n = [r * phi.cos(), r * phi.sin(), z];
                ([0, 1, 2].map(|k| center[k] + radius * n[k]), n)
            }
            Shape::Cuboid { min, max } => {
                let e = [0, 1, 2].map(|k| max[k] - min[k]);
                let areas = [e[1] * e[2], e[0] * e[2], e[0] * e[1]];
                let pick = rng.next_f32() * 2.0 * (areas[0] + areas[1] + areas[2]);
                let mut axis = 2;
                let mut acc = 0.0;
                for (k, a) in areas.iter().enumerate() {
                    acc += 2.0 * a;
                    if pick < acc {
                        axis = k;
                        break;
                    }
                }
                let positive = rng.next_f32() < 0.5;
                let mut p = [0, 1, 2].map(|k| min[k] + e[k] * rng.next_f32());
                p[axis] = if positive { max[axis] } else { min[axis] };
                let mut n = [0.0; 3];
                n[axis] = if positive { 1.0 } else { -1.0 };
                (p, n)
            }
            Shape::Cylinder {
                base,
                radius,
                height,
            } => {
                let side = height / (radius + height);
                let phi = std::f32::consts::TAU * rng.next_f32();
                let (s, c) = phi.sin_cos();
                if rng.next_f32() < side {
                    let z = base[2] + height * rng.next_f32();
                    ([base[0] + radius * c, base[1] + radius * s, z], [c, s, 0.0])
                } else {
                    let r = radius * rng.next_f32().sqrt();
                    let top = rng.next_f32() < 0.5;
                    let z = if top { base[2] + height } else { base[2] };
                    let n = [0.0, 0.0, if top { 1.0 } else { -1.0 }];
                    ([base[0] + r * c, base[1] + r * s, z], n)
                }
            }
        }
    }
}

/// Slab test of an axis-aligned box: the entry (or, from inside, exit) distance beyond `t_min`
/// and the outward normal there.
fn intersect_box(
    min: [f32; 3],
    max: [f32; 3],
    origin: [f32; 3],
    direction: [f32; 3],
    t_min: f32,
) -> Option<(f32, [f32; 3])> {
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

/// The nearest hit beyond `t_min` of an upright cylinder: its side (a quadratic in x, y) or one of
/// its two discs, whichever comes first.
fn intersect_cylinder(
    base: [f32; 3],
    radius: f32,
    height: f32,
    origin: [f32; 3],
    direction: [f32; 3],
    t_min: f32,
) -> Option<(f32, [f32; 3])> {
    let (z0, z1) = (base[2], base[2] + height);
    let mut best: Option<(f32, [f32; 3])> = None;
    let mut consider = |t: f32, normal: [f32; 3]| {
        if t > t_min && best.is_none_or(|(b, _)| t < b) {
            best = Some((t, normal));
        }
    };
    // Side: |(o + t d - base).xy| = radius.
    let (ox, oy) = (origin[0] - base[0], origin[1] - base[1]);
    let a = direction[0] * direction[0] + direction[1] * direction[1];
    if a > 1e-12 {
        let b = ox * direction[0] + oy * direction[1];
        let c = ox * ox + oy * oy - radius * radius;
        let disc = b * b - a * c;
        if disc >= 0.0 {
            let root = disc.sqrt();
            for t in [(-b - root) / a, (-b + root) / a] {
                let z = origin[2] + t * direction[2];
                if (z0..=z1).contains(&z) {
                    let (x, y) = (ox + t * direction[0], oy + t * direction[1]);
                    consider(t, [x / radius, y / radius, 0.0]);
                }
            }
        }
    }
    // Discs: z = z0 (normal down) and z = z1 (normal up).
    if direction[2].abs() > 1e-12 {
        for (z, nz) in [(z0, -1.0), (z1, 1.0)] {
            let t = (z - origin[2]) / direction[2];
            let (x, y) = (ox + t * direction[0], oy + t * direction[1]);
            if x * x + y * y <= radius * radius {
                consider(t, [0.0, 0.0, nz]);
            }
        }
    }
    best
}
