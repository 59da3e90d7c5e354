//! Solid (3D) procedural textures for the ray tracer ([`super::raytrace`]): albedo as a function
//! of the world position alone, so that every surface of a shape is textured without
//! parameterising it. The simple patterns serve the objects scene; the facade, street and foliage
//! patterns serve the town ([`super::town`]).

use glam::Vec3;

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
    /// The walls and flat roof of a building (z up).
    Facade(Facade),
    /// The ground of a town: a square grid of roads with dashed centre lines, pavements along
    /// them, paved blocks, and patchwork fields outside the town.
    Streets(Streets),
    /// `base` scaled by a random factor in `1 ± variation`, constant on cubes of side `cell`
    /// (leaves, grass, gravel).
    Speckle {
        /// Mean colour.
        base: [f32; 3],
        /// Relative brightness variation, in [0, 1].
        variation: f32,
        /// Side of the cubes of constant colour.
        cell: f32,
    },
}

/// A building's facade: storeys of windows (or brick courses between them) on every wall, a roof
/// colour at and above `roof_height`.
#[derive(Clone, Debug, PartialEq)]
pub struct Facade {
    /// Wall colour (the bricks' mean colour when `bricks`).
    pub wall: [f32; 3],
    /// Glass colour.
    pub window: [f32; 3],
    /// Roof colour (speckled like gravel).
    pub roof: [f32; 3],
    /// Height of the roof: points at or above it are roof.
    pub roof_height: f32,
    /// Height of one storey (one row of windows).
    pub storey: f32,
    /// Horizontal period of the windows along a wall.
    pub bay: f32,
    /// Brick courses with mortar lines instead of a plain wall.
    pub bricks: bool,
}

/// A town's ground: `blocks` × `blocks` blocks of side `pitch − road_width`, centred on the
/// origin, separated and surrounded by roads `road_width` wide.
#[derive(Clone, Debug, PartialEq)]
pub struct Streets {
    /// Blocks per side.
    pub blocks: u32,
    /// Distance between the centre lines of neighbouring roads.
    pub pitch: f32,
    /// Width of a road.
    pub road_width: f32,
}

const ASPHALT: [f32; 3] = [0.22, 0.22, 0.24];
const MARKING: [f32; 3] = [0.95, 0.9, 0.6];
const PAVEMENT: [f32; 3] = [0.62, 0.6, 0.57];
const PAVING: [f32; 3] = [0.72, 0.68, 0.6];
const MORTAR: [f32; 3] = [0.8, 0.78, 0.74];
const FIELDS: [[f32; 3]; 4] = [
    [0.35, 0.55, 0.2],
    [0.6, 0.55, 0.25],
    [0.28, 0.45, 0.22],
    [0.5, 0.38, 0.22],
];

/// A deterministic hash of an integer cell to [0, 1).
pub fn cell_hash(cell: [i64; 3]) -> f32 {
    let mut z = (cell[0] as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (cell[1] as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ (cell[2] as u64).wrapping_mul(0x1656_67B1_9E37_79F9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
}

fn shade(colour: [f32; 3], factor: f32) -> [f32; 3] {
    colour.map(|c| (c * factor).clamp(0.0, 1.0))
}

fn speckle(base: [f32; 3], variation: f32, cell: f32, p: [f32; 3]) -> [f32; 3] {
    let index = p.map(|v| (v / cell).floor() as i64);
    shade(base, 1.0 - variation + 2.0 * variation * cell_hash(index))
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
                let band = (Vec3::from(p).dot(Vec3::from(*axis)) / period).floor() as i64;
                if band.rem_euclid(2) == 0 { *even } else { *odd }
            }
            Texture::Gradient {
                from,
                to,
                axis,
                start,
                end,
            } => {
                let t = ((Vec3::from(p).dot(Vec3::from(*axis)) - start) / (end - start))
                    .clamp(0.0, 1.0);
                [0, 1, 2].map(|k| from[k] + (to[k] - from[k]) * t)
            }
            Texture::Facade(facade) => facade.albedo(p),
            Texture::Streets(streets) => streets.albedo(p),
            Texture::Speckle {
                base,
                variation,
                cell,
            } => speckle(*base, *variation, *cell, p),
        }
    }
}

impl Facade {
    /// Albedo at `p`: roof gravel on top; on the walls (axis-aligned or round), a coordinate
    /// along the wall (`x + y`) and the height choose window, brick, mortar or plain wall.
    fn albedo(&self, p: [f32; 3]) -> [f32; 3] {
        if p[2] >= self.roof_height - 1e-4 {
            return speckle(self.roof, 0.12, 0.015, p);
        }
        let along = p[0] + p[1];
        let level = p[2] / self.storey;
        let in_storey = level.fract();
        let in_bay = (along / self.bay).rem_euclid(1.0);
        let top_storey = (self.roof_height / self.storey).floor();
        if level >= 0.9
            && level.floor() < top_storey
            && (0.3..0.78).contains(&in_storey)
            && (0.22..0.78).contains(&in_bay)
        {
            // Glass, a little lighter on some panes (reflections).
            let pane = [(along / self.bay).floor() as i64, level.floor() as i64, 7];
            return shade(self.window, 0.85 + 0.4 * cell_hash(pane));
        }
        if !self.bricks {
            return speckle(self.wall, 0.04, 0.02, p);
        }
        let course = self.storey / 6.0;
        let row = (p[2] / course).floor();
        let brick = along / (2.5 * course) + 0.5 * row.rem_euclid(2.0);
        if (p[2] / course).fract() < 0.18 || brick.rem_euclid(1.0) < 0.08 {
            return MORTAR;
        }
        shade(
            self.wall,
            0.85 + 0.3 * cell_hash([brick.floor() as i64, row as i64, 3]),
        )
    }
}

impl Streets {
    /// Half the side of the town (roads included).
    pub fn half_size(&self) -> f32 {
        0.5 * (self.blocks as f32 * self.pitch + self.road_width)
    }

    /// Albedo at `p`: asphalt with dashed centre lines on the roads, pavement along their edges,
    /// paving stones inside the blocks, fields outside the town.
    fn albedo(&self, p: [f32; 3]) -> [f32; 3] {
        let half = self.half_size();
        if p[0].abs() > half || p[1].abs() > half {
            // Fields of 1.5 units, each one crop colour with rows along x or y.
            let field = [(p[0] / 1.5).floor() as i64, (p[1] / 1.5).floor() as i64, 11];
            let h = cell_hash(field);
            let colour = FIELDS[(h * 4.0) as usize % 4];
            let across = if h < 0.5 { p[0] } else { p[1] };
            let row = (across / 0.06).rem_euclid(1.0);
            return speckle(shade(colour, 0.85 + 0.25 * row), 0.08, 0.03, p);
        }
        // Position inside the road grid: road centre lines at -half + road/2 + k * pitch.
        let origin = -half + 0.5 * self.road_width;
        let local = [0, 1].map(|k| (p[k] - origin).rem_euclid(self.pitch));
        let from_centre = local.map(|l| l.min(self.pitch - l));
        let half_road = 0.5 * self.road_width;
        let on_road = [0, 1].map(|k| from_centre[k] < half_road);
        if on_road[0] || on_road[1] {
            // A dashed centre line on roads that are not crossings.
            for k in 0..2 {
                let other = 1 - k;
                if on_road[k]
                    && !on_road[other]
                    && from_centre[k] < 0.008
                    && (p[other] / 0.08).rem_euclid(1.0) < 0.5
                {
                    return MARKING;
                }
            }
            return speckle(ASPHALT, 0.1, 0.01, p);
        }
        if from_centre[0] < half_road + 0.035 || from_centre[1] < half_road + 0.035 {
            return speckle(PAVEMENT, 0.05, 0.02, p);
        }
        let tile = [
            (p[0] / 0.04).floor() as i64,
            (p[1] / 0.04).floor() as i64,
            5,
        ];
        shade(PAVING, 0.88 + 0.24 * cell_hash(tile))
    }
}
