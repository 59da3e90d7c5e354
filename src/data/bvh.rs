//! A bounding volume hierarchy over the ray tracer's shapes, so that a scene of thousands of
//! objects (the town) traces as fast as a handful: built top-down with a binned surface-area
//! heuristic, traversed iteratively (an explicit stack, nearer child first).
//!
//! Traversal is exact, not approximate: a ray's nearest hit is the one a test of every object
//! would find, with the same object and the same distance (ties go to the lower object index, as
//! in a linear scan). Node boxes are padded a little, so that rounding in the box test can only
//! make it visit more, never skip an object the linear scan would hit.

/// An axis-aligned bounding box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Smallest corner.
    pub min: [f32; 3],
    /// Largest corner.
    pub max: [f32; 3],
}

impl Aabb {
    /// The box containing nothing (the identity of [`Aabb::union`]).
    pub const EMPTY: Aabb = Aabb {
        min: [f32::INFINITY; 3],
        max: [f32::NEG_INFINITY; 3],
    };

    /// The smallest box containing both.
    pub fn union(self, other: Aabb) -> Aabb {
        Aabb {
            min: [0, 1, 2].map(|k| self.min[k].min(other.min[k])),
            max: [0, 1, 2].map(|k| self.max[k].max(other.max[k])),
        }
    }

    /// The centre.
    pub fn centroid(&self) -> [f32; 3] {
        [0, 1, 2].map(|k| 0.5 * (self.min[k] + self.max[k]))
    }

    /// Half the surface area (what the heuristic compares; 0 for an empty box).
    fn half_area(&self) -> f32 {
        let e = [0, 1, 2].map(|k| (self.max[k] - self.min[k]).max(0.0));
        e[0] * e[1] + e[1] * e[2] + e[0] * e[2]
    }

    /// The box grown by a margin that covers rounding in the intersection tests.
    fn padded(self) -> Aabb {
        let size = (0..3)
            .map(|k| self.min[k].abs().max(self.max[k].abs()))
            .fold(1.0f32, f32::max);
        let pad = 1e-5 * size;
        Aabb {
            min: self.min.map(|v| v - pad),
            max: self.max.map(|v| v + pad),
        }
    }

    /// True when `p` lies in the box (boundary included).
    pub fn contains(&self, p: [f32; 3]) -> bool {
        (0..3).all(|k| p[k] >= self.min[k] && p[k] <= self.max[k])
    }

    /// The distance at which the ray enters the box (negative from inside), or `None` when it
    /// misses it or the box lies wholly behind the origin.
    pub fn entry(&self, origin: [f32; 3], direction: [f32; 3]) -> Option<f32> {
        let (mut t_near, mut t_far) = (f32::NEG_INFINITY, f32::INFINITY);
        for k in 0..3 {
            if direction[k].abs() < 1e-12 {
                if origin[k] < self.min[k] || origin[k] > self.max[k] {
                    return None;
                }
                continue;
            }
            let t0 = (self.min[k] - origin[k]) / direction[k];
            let t1 = (self.max[k] - origin[k]) / direction[k];
            t_near = t_near.max(t0.min(t1));
            t_far = t_far.min(t0.max(t1));
        }
        (t_near <= t_far && t_far >= 0.0).then_some(t_near)
    }
}

/// A node: a leaf holds `count > 0` objects (`items[first..first + count]`); an inner node has
/// `count == 0` and its two children at `nodes[first]` and `nodes[first + 1]`.
#[derive(Clone, Debug, PartialEq)]
struct Node {
    bounds: Aabb,
    first: u32,
    count: u32,
}

/// Objects per leaf below which a node is never split.
const LEAF_SIZE: usize = 2;
/// Bins of the surface-area heuristic.
const BINS: usize = 12;

/// A bounding volume hierarchy over objects given by their boxes (object `i` has box `i`).
#[derive(Clone, Debug, PartialEq)]
pub struct Bvh {
    nodes: Vec<Node>,
    items: Vec<u32>,
}

impl Bvh {
    /// Builds the hierarchy over `boxes`.
    pub fn build(boxes: &[Aabb]) -> Bvh {
        let boxes: Vec<Aabb> = boxes.iter().map(|b| b.padded()).collect();
        let mut bvh = Bvh {
            nodes: vec![Node {
                bounds: Aabb::EMPTY,
                first: 0,
                count: 0,
            }],
            items: (0..boxes.len() as u32).collect(),
        };
        bvh.split(0, 0, boxes.len(), &boxes);
        bvh
    }

    /// Number of nodes (for tests and statistics).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Fills node `node` with items `start..end` and splits it while the heuristic says so.
    fn split(&mut self, node: usize, start: usize, end: usize, boxes: &[Aabb]) {
        let items = &mut self.items[start..end];
        let bounds = items
            .iter()
            .fold(Aabb::EMPTY, |b, &i| b.union(boxes[i as usize]));
        self.nodes[node] = Node {
            bounds,
            first: start as u32,
            count: items.len() as u32,
        };
        if items.len() <= LEAF_SIZE {
            return;
        }
        let centroids = items.iter().fold(Aabb::EMPTY, |b, &i| {
            let c = boxes[i as usize].centroid();
            b.union(Aabb { min: c, max: c })
        });
        let extent = [0, 1, 2].map(|k| centroids.max[k] - centroids.min[k]);
        let axis = (0..3).fold(0, |a, k| if extent[k] > extent[a] { k } else { a });
        if extent[axis] <= 0.0 {
            return;
        }
        let bin_of = |i: u32| {
            let c = boxes[i as usize].centroid()[axis];
            let b = ((c - centroids.min[axis]) / extent[axis] * BINS as f32) as usize;
            b.min(BINS - 1)
        };
        let mut bins = [(Aabb::EMPTY, 0usize); BINS];
        for &i in items.iter() {
            let b = &mut bins[bin_of(i)];
            *b = (b.0.union(boxes[i as usize]), b.1 + 1);
        }
        // Cost of splitting after bin `s`: area-weighted counts on either side.
        let (mut best_cost, mut best_split) = (f32::INFINITY, 0);
        for s in 0..BINS - 1 {
            let (left, right) = bins.split_at(s + 1);
            let side = |part: &[(Aabb, usize)]| {
                part.iter()
                    .fold((Aabb::EMPTY, 0), |(b, n), (bb, nn)| (b.union(*bb), n + nn))
            };
            let ((lb, ln), (rb, rn)) = (side(left), side(right));
            if ln == 0 || rn == 0 {
                continue;
            }
            let cost = lb.half_area() * ln as f32 + rb.half_area() * rn as f32;
            if cost < best_cost {
                (best_cost, best_split) = (cost, s);
            }
        }
        let leaf_cost = bounds.half_area() * items.len() as f32;
        if best_cost.is_infinite() || (best_cost >= leaf_cost && items.len() <= 8) {
            return;
        }
        // Partition in place: items in bins <= best_split first, order otherwise kept.
        items.sort_by_key(|&i| bin_of(i) > best_split);
        let middle = start + items.iter().filter(|&&i| bin_of(i) <= best_split).count();
        let first = self.nodes.len();
        let empty = Node {
            bounds: Aabb::EMPTY,
            first: 0,
            count: 0,
        };
        self.nodes.extend([empty.clone(), empty]);
        self.nodes[node].first = first as u32;
        self.nodes[node].count = 0;
        self.split(first, start, middle, boxes);
        self.split(first + 1, middle, end, boxes);
    }

    /// The nearest hit along a ray: `test(i)` intersects object `i` and returns its distance and
    /// whatever else the caller needs. The result equals a linear scan that keeps the smallest
    /// distance (the lowest index among equal distances).
    pub fn closest<T>(
        &self,
        origin: [f32; 3],
        direction: [f32; 3],
        mut test: impl FnMut(usize) -> Option<(f32, T)>,
    ) -> Option<(usize, f32, T)> {
        let mut best: Option<(usize, f32, T)> = None;
        let mut stack: Vec<(u32, f32)> = Vec::with_capacity(64);
        if self.items.is_empty() {
            return None;
        }
        if let Some(t) = self.nodes[0].bounds.entry(origin, direction) {
            stack.push((0, t));
        }
        while let Some((index, t_enter)) = stack.pop() {
            if best.as_ref().is_some_and(|b| t_enter > b.1) {
                continue;
            }
            let node = &self.nodes[index as usize];
            if node.count > 0 {
                let range = node.first as usize..(node.first + node.count) as usize;
                for &item in &self.items[range] {
                    let item = item as usize;
                    if let Some((t, extra)) = test(item)
                        && best
                            .as_ref()
                            .is_none_or(|b| t < b.1 || (t == b.1 && item < b.0))
                    {
                        best = Some((item, t, extra));
                    }
                }
                continue;
            }
            let children = [node.first, node.first + 1];
            let entries = children.map(|c| self.nodes[c as usize].bounds.entry(origin, direction));
            // Push the farther child first, so the nearer one is visited first.
            let order = match entries {
                [Some(a), Some(b)] if a < b => [1, 0],
                _ => [0, 1],
            };
            for k in order {
                if let Some(t) = entries[k] {
                    stack.push((children[k], t));
                }
            }
        }
        best
    }

    /// True when `test(i)` holds for some object `i` whose box the ray meets (any hit: the
    /// search stops at the first).
    pub fn any(
        &self,
        origin: [f32; 3],
        direction: [f32; 3],
        mut test: impl FnMut(usize) -> bool,
    ) -> bool {
        self.any_node(
            |bounds| bounds.entry(origin, direction).is_some(),
            &mut test,
        )
    }

    /// True when `test(i)` holds for some object `i` whose box contains `point`.
    pub fn any_at(&self, point: [f32; 3], mut test: impl FnMut(usize) -> bool) -> bool {
        self.any_node(|bounds| bounds.contains(point), &mut test)
    }

    fn any_node(
        &self,
        enter: impl Fn(&Aabb) -> bool,
        test: &mut impl FnMut(usize) -> bool,
    ) -> bool {
        if self.items.is_empty() {
            return false;
        }
        let mut stack: Vec<u32> = vec![0];
        while let Some(index) = stack.pop() {
            let node = &self.nodes[index as usize];
            if !enter(&node.bounds) {
                continue;
            }
            if node.count > 0 {
                let range = node.first as usize..(node.first + node.count) as usize;
                if self.items[range].iter().any(|&i| test(i as usize)) {
                    return true;
                }
            } else {
                stack.extend([node.first, node.first + 1]);
            }
        }
        false
    }
}
