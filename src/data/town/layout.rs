//! The town's geometry: a square grid of blocks between roads on a wide ground, each block built
//! up as houses (boxes of varied footprints and heights with window, brick and roof textures,
//! some with a rooftop structure), a park (a lawn with trees and perhaps a pond) or a plaza
//! (a round tower among trees); cars on the roads. Everything is drawn from one seeded generator.

use super::{BLOCK_PITCH, ROAD_WIDTH, TownOptions, ground_half_size};
use crate::data::raytrace::{Facade, Object, Scene, Shape, Streets, Texture};
use crate::rng::SplitMix64;

/// Wall colour and whether the wall is brick.
const WALLS: [([f32; 3], bool); 6] = [
    ([0.62, 0.3, 0.22], true),
    ([0.82, 0.74, 0.6], false),
    ([0.6, 0.6, 0.6], false),
    ([0.88, 0.87, 0.84], false),
    ([0.55, 0.65, 0.75], false),
    ([0.76, 0.58, 0.32], true),
];
const WINDOWS: [[f32; 3]; 3] = [[0.15, 0.2, 0.3], [0.25, 0.3, 0.36], [0.12, 0.25, 0.28]];
const ROOFS: [[f32; 3]; 4] = [
    [0.3, 0.3, 0.32],
    [0.58, 0.3, 0.22],
    [0.36, 0.46, 0.3],
    [0.5, 0.5, 0.52],
];
const CARS: [[f32; 3]; 5] = [
    [0.8, 0.1, 0.1],
    [0.1, 0.2, 0.7],
    [0.9, 0.9, 0.9],
    [0.1, 0.1, 0.1],
    [0.9, 0.75, 0.1],
];
const GRASS: [f32; 3] = [0.3, 0.52, 0.2];
const LEAVES: [[f32; 3]; 3] = [[0.16, 0.4, 0.12], [0.25, 0.45, 0.15], [0.2, 0.33, 0.1]];
const BARK: [f32; 3] = [0.35, 0.24, 0.15];
const WATER: [f32; 3] = [0.15, 0.3, 0.45];

/// A building's height: mostly low and mid-rise, a few towers.
const HEIGHTS: (f32, f32) = (0.1, 0.45);
const TOWER_HEIGHTS: (f32, f32) = (0.5, 0.7);

/// Collects a town's objects, drawing every choice from one generator.
struct Builder {
    rng: SplitMix64,
    objects: Vec<Object>,
}

impl Builder {
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        self.rng.range(lo, hi)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f32) -> bool {
        self.rng.unit() < p
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.rng.unit() * items.len() as f32) as usize % items.len()]
    }

    fn add(&mut self, shape: Shape, texture: Texture) {
        self.objects.push(Object { shape, texture });
    }

    /// A random facade for a building `height` tall: wall (with or without brick courses),
    /// windows, roof, storey height and bay width.
    fn facade(&mut self, height: f32) -> Facade {
        let (wall, bricks) = self.pick(&WALLS);
        Facade {
            wall,
            window: self.pick(&WINDOWS),
            roof: self.pick(&ROOFS),
            roof_height: height,
            storey: self.uniform(0.035, 0.05),
            bay: self.uniform(0.04, 0.065),
            bricks,
        }
    }

    /// A building on the footprint `min..max` (x, y), `height` tall, with a random facade and
    /// perhaps a small structure on its roof.
    fn building(&mut self, min: [f32; 2], max: [f32; 2], height: f32) {
        let facade = self.facade(height);
        self.add(
            Shape::Cuboid {
                min: [min[0], min[1], 0.0],
                max: [max[0], max[1], height],
            },
            Texture::Facade(facade),
        );
        if self.chance(0.35) {
            let side = self.uniform(0.05, 0.09).min(0.5 * (max[0] - min[0]));
            let centre = [0, 1].map(|k| self.uniform(min[k] + side, max[k] - side));
            let top = height + self.uniform(0.025, 0.05);
            self.add(
                Shape::Cuboid {
                    min: [centre[0] - 0.5 * side, centre[1] - 0.5 * side, height],
                    max: [centre[0] + 0.5 * side, centre[1] + 0.5 * side, top],
                },
                Texture::Speckle {
                    base: [0.55, 0.55, 0.55],
                    variation: 0.1,
                    cell: 0.01,
                },
            );
        }
    }

    /// A tree at ground position `at`: a trunk and a round crown.
    fn tree(&mut self, at: [f32; 2]) {
        let trunk = self.uniform(0.05, 0.09);
        let crown = self.uniform(0.045, 0.08);
        let radius = self.uniform(0.01, 0.016);
        self.add(
            Shape::Cylinder {
                base: [at[0], at[1], 0.0],
                radius,
                height: trunk + 0.5 * crown,
            },
            Texture::Solid(BARK),
        );
        let leaves = self.pick(&LEAVES);
        self.add(
            Shape::Sphere {
                center: [at[0], at[1], trunk + crown],
                radius: crown,
            },
            Texture::Speckle {
                base: leaves,
                variation: 0.3,
                cell: 0.012,
            },
        );
    }

    /// A block of houses on the square `min..min + size`: four lots, each a building (sometimes
    /// two lots joined into one long building) or a tree.
    fn houses(&mut self, min: [f32; 2], size: f32) {
        let lot = 0.5 * size;
        let joined = if self.chance(0.25) {
            Some(self.chance(0.5))
        } else {
            None
        };
        for (i, j) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let lot_min = [min[0] + i as f32 * lot, min[1] + j as f32 * lot];
            let height = if self.chance(0.08) {
                self.uniform(TOWER_HEIGHTS.0, TOWER_HEIGHTS.1)
            } else {
                self.uniform(HEIGHTS.0, HEIGHTS.1)
            };
            match joined {
                // Lots (0, j) and (1, j) joined along x: built once, from the first.
                Some(true) if i == 0 => {
                    let inset = self.uniform(0.03, 0.08);
                    self.building(
                        [lot_min[0] + inset, lot_min[1] + inset],
                        [lot_min[0] + 2.0 * lot - inset, lot_min[1] + lot - inset],
                        height,
                    );
                }
                Some(false) if j == 0 => {
                    let inset = self.uniform(0.03, 0.08);
                    self.building(
                        [lot_min[0] + inset, lot_min[1] + inset],
                        [lot_min[0] + lot - inset, lot_min[1] + 2.0 * lot - inset],
                        height,
                    );
                }
                Some(_) => {}
                None if self.chance(0.12) => {
                    self.tree([lot_min[0] + 0.5 * lot, lot_min[1] + 0.5 * lot]);
                }
                None => {
                    let w = self.uniform(0.55, 0.85) * lot;
                    let d = self.uniform(0.55, 0.85) * lot;
                    let x = lot_min[0] + self.uniform(0.05 * lot, 0.95 * lot - w);
                    let y = lot_min[1] + self.uniform(0.05 * lot, 0.95 * lot - d);
                    self.building([x, y], [x + w, y + d], height);
                }
            }
        }
    }

    /// A park on the square `min..min + size`: a lawn, trees, perhaps a pond.
    fn park(&mut self, min: [f32; 2], size: f32) {
        self.add(
            Shape::Cuboid {
                min: [min[0], min[1], 0.0],
                max: [min[0] + size, min[1] + size, 0.004],
            },
            Texture::Speckle {
                base: GRASS,
                variation: 0.15,
                cell: 0.015,
            },
        );
        let centre = [min[0] + 0.5 * size, min[1] + 0.5 * size];
        let pond = self.chance(0.4);
        if pond {
            self.add(
                Shape::Cylinder {
                    base: [centre[0], centre[1], 0.0],
                    radius: 0.18 * size,
                    height: 0.006,
                },
                Texture::Solid(WATER),
            );
        }
        let trees = 4 + (self.rng.unit() * 6.0) as usize;
        for _ in 0..trees {
            let at = [0, 1].map(|k| self.uniform(min[k] + 0.08, min[k] + size - 0.08));
            let near_pond = (at[0] - centre[0]).hypot(at[1] - centre[1]) < 0.3 * size;
            if !(pond && near_pond) {
                self.tree(at);
            }
        }
    }

    /// A plaza on the square `min..min + size`: a round tower at the centre, trees at the corners.
    fn plaza(&mut self, min: [f32; 2], size: f32) {
        let height = self.uniform(TOWER_HEIGHTS.0, TOWER_HEIGHTS.1);
        let facade = Facade {
            bricks: false,
            ..self.facade(height)
        };
        let radius = self.uniform(0.18, 0.26) * size;
        self.add(
            Shape::Cylinder {
                base: [min[0] + 0.5 * size, min[1] + 0.5 * size, 0.0],
                radius,
                height,
            },
            Texture::Facade(facade),
        );
        for (i, j) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let at = [i, j].map(|k| if k == 0 { 0.12 } else { size - 0.12 });
            self.tree([min[0] + at[0], min[1] + at[1]]);
        }
    }

    /// Cars on the road segments between blocks: one in either lane, now and then.
    fn cars(&mut self, blocks: u32, half: f32) {
        let (length, width, height) = (0.07, 0.035, 0.03);
        for road in 0..=blocks {
            let centre = -half + 0.5 * ROAD_WIDTH + road as f32 * BLOCK_PITCH;
            for segment in 0..blocks {
                for along_x in [true, false] {
                    if self.chance(0.5) {
                        continue;
                    }
                    let start = -half + ROAD_WIDTH + segment as f32 * BLOCK_PITCH;
                    let s = self.uniform(start + 0.05, start + BLOCK_PITCH - ROAD_WIDTH - 0.12);
                    let lane = if self.chance(0.5) { -0.05 } else { 0.05 };
                    let (x, y, dx, dy) = if along_x {
                        (s, centre + lane, length, width)
                    } else {
                        (centre + lane, s, width, length)
                    };
                    let colour = self.pick(&CARS);
                    self.add(
                        Shape::Cuboid {
                            min: [x - 0.5 * dx, y - 0.5 * dy, 0.0],
                            max: [x + 0.5 * dx, y + 0.5 * dy, height],
                        },
                        Texture::Solid(colour),
                    );
                }
            }
        }
    }
}

/// The town of `options` (its blocks, seed): the ground first, then the blocks row by row, then
/// the cars. The same options give the same scene.
pub fn scene(options: &TownOptions) -> Scene {
    let streets = Streets {
        blocks: options.blocks_per_side,
        pitch: BLOCK_PITCH,
        road_width: ROAD_WIDTH,
    };
    let half = streets.half_size();
    let ground = ground_half_size(options.blocks_per_side);
    let mut builder = Builder {
        rng: SplitMix64::new(options.seed),
        objects: Vec::new(),
    };
    builder.add(
        Shape::Cuboid {
            min: [-ground, -ground, -0.05],
            max: [ground, ground, 0.0],
        },
        Texture::Streets(streets),
    );
    // Inside a block: the pavement (0.035 wide) and a small setback.
    let setback = 0.05;
    let size = BLOCK_PITCH - ROAD_WIDTH - 2.0 * setback;
    for by in 0..options.blocks_per_side {
        for bx in 0..options.blocks_per_side {
            let min = [bx, by].map(|b| -half + ROAD_WIDTH + setback + b as f32 * BLOCK_PITCH);
            let kind = builder.rng.unit();
            if kind < 0.14 {
                builder.park(min, size);
            } else if kind < 0.22 {
                builder.plaza(min, size);
            } else {
                builder.houses(min, size);
            }
        }
    }
    builder.cars(options.blocks_per_side, half);
    Scene::new(
        builder.objects,
        glam::Vec3::new(0.45, 0.3, 1.0).normalize().to_array(),
        0.35,
    )
}
