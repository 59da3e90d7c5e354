//! The nearest other points of every point of a set (camera centres): a k-d tree split at the
//! median of its widest axis by `select_nth_unstable_by`, so that N points cost O(N log N) to
//! build and about O(log N) distance evaluations per query, on every target (wasm32 included).

/// Each point's nearest other points, as [`nearest_others`] finds them.
#[derive(Clone, Debug, PartialEq)]
pub struct NearestOthers {
    /// For each point, up to `k` (distance, index) pairs of other points, nearest first, ties by
    /// index; empty for a non-finite point.
    pub lists: Vec<Vec<(f32, u32)>>,
    /// How many point-to-point distances the queries evaluated (for the cost's tests).
    pub distances_evaluated: u64,
}

impl NearestOthers {
    /// Each point's distance to its nearest other point; `None` where it has none.
    pub fn spacings(&self) -> Vec<Option<f32>> {
        self.lists
            .iter()
            .map(|list| list.first().map(|&(d, _)| d))
            .collect()
    }

    /// The median of the points' nearest-neighbour distances (the upper middle of an even
    /// count); `None` when no point has a neighbour.
    pub fn median_spacing(&self) -> Option<f32> {
        let mut spacing: Vec<f32> = self.spacings().into_iter().flatten().collect();
        if spacing.is_empty() {
            return None;
        }
        let middle = spacing.len() / 2;
        let (_, median, _) = spacing.select_nth_unstable_by(middle, f32::total_cmp);
        Some(*median)
    }
}

/// The distance the neighbour lists rank by: the square root of the f32 sum of squared
/// differences.
pub fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    glam::Vec3::from(a).distance(glam::Vec3::from(b))
}

/// For every point of `points`, its `k` nearest other points at a positive, finite distance
/// (points at the same position are not neighbours), nearest first, equal distances by index:
/// what sorting every other point by distance would give, at a fraction of the cost. Non-finite
/// points have no neighbours and are no one's.
pub fn nearest_others(points: &[[f32; 3]], k: usize) -> NearestOthers {
    let tree = Tree::build(points);
    let mut distances_evaluated = 0;
    let lists = points
        .iter()
        .enumerate()
        .map(|(i, &p)| match k > 0 && finite(p) {
            true => {
                let mut best = Vec::with_capacity(k + 1);
                tree.visit(
                    0,
                    tree.order.len(),
                    p,
                    i as u32,
                    k,
                    &mut best,
                    &mut distances_evaluated,
                );
                best
            }
            false => Vec::new(),
        })
        .collect();
    NearestOthers {
        lists,
        distances_evaluated,
    }
}

fn finite(p: [f32; 3]) -> bool {
    p.iter().all(|v| v.is_finite())
}

/// An implicit k-d tree: the range `order[lo..hi]` is a node whose point is at its middle,
/// `mid = (lo + hi) / 2`, split on `axes[mid]`, the points before it not above it on that axis
/// and those after it not below.
struct Tree<'a> {
    points: &'a [[f32; 3]],
    order: Vec<u32>,
    axes: Vec<u8>,
}

impl<'a> Tree<'a> {
    fn build(points: &'a [[f32; 3]]) -> Self {
        let (order, axes) = super::nearest::balanced_layout(points);
        Tree {
            points,
            order,
            axes,
        }
    }

    /// Adds the points of `order[lo..hi]` nearer than the `k`-th of `best` to it.
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &self,
        lo: usize,
        hi: usize,
        query: [f32; 3],
        own: u32,
        k: usize,
        best: &mut Vec<(f32, u32)>,
        evaluated: &mut u64,
    ) {
        if lo >= hi {
            return;
        }
        let mid = (lo + hi) / 2;
        let index = self.order[mid];
        let point = self.points[index as usize];
        if index != own {
            *evaluated += 1;
            let d = distance(query, point);
            if d > 0.0 && d.is_finite() {
                let entry = (d, index);
                let place = best.partition_point(|&e| less(e, entry));
                if place < k {
                    best.insert(place, entry);
                    best.truncate(k);
                }
            }
        }
        let axis = self.axes[mid] as usize;
        let gap = query[axis] - point[axis];
        let (near, far) = match gap < 0.0 {
            true => ((lo, mid), (mid + 1, hi)),
            false => ((mid + 1, hi), (lo, mid)),
        };
        self.visit(near.0, near.1, query, own, k, best, evaluated);
        // The far side's points are at least |gap| away (a little less in rounding: the margin
        // keeps a point at exactly the k-th distance, which may win on its index).
        let worst = match best.len() < k {
            true => f32::INFINITY,
            false => best[k - 1].0,
        };
        if gap.abs() <= worst * (1.0 + 1e-5) {
            self.visit(far.0, far.1, query, own, k, best, evaluated);
        }
    }
}

/// Lexicographic order on (distance, index).
fn less(a: (f32, u32), b: (f32, u32)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pseudo_random(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32) / (1u64 << 24) as f32
    }

    /// Every other point sorted by distance (a stable sort: equal distances by index), the first
    /// `k` of those at a positive, finite distance.
    fn brute_force(points: &[[f32; 3]], k: usize) -> Vec<Vec<(f32, u32)>> {
        points
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let mut others: Vec<(f32, u32)> = points
                    .iter()
                    .enumerate()
                    .map(|(j, &b)| (distance(a, b), j as u32))
                    .filter(|&(d, j)| j as usize != i && d > 0.0 && d.is_finite())
                    .collect();
                others.sort_by(|x, y| x.0.total_cmp(&y.0));
                others.truncate(k);
                others
            })
            .collect()
    }

    #[test]
    fn the_tree_finds_what_sorting_every_point_finds() {
        let mut seed = 5;
        for case in 0..60 {
            let mut r = || pseudo_random(&mut seed);
            let n = 1 + (r() * 300.0) as usize;
            let k = 1 + case % 6;
            let mut points: Vec<[f32; 3]> = (0..n)
                .map(|_| match case % 4 {
                    // A cloud, a walk on a plane, a ring, a coarse lattice full of equal
                    // distances and repeated positions.
                    0 => [10.0 * r(), 10.0 * r(), 10.0 * r()],
                    1 => [10.0 * r(), 1.5, 10.0 * r()],
                    2 => {
                        let a = r() * std::f32::consts::TAU;
                        [4.0 * a.cos(), 1.0, 4.0 * a.sin()]
                    }
                    _ => [
                        (r() * 4.0).floor(),
                        (r() * 3.0).floor(),
                        0.5 * (r() * 2.0).floor(),
                    ],
                })
                .collect();
            if case % 5 == 0 && n > 3 {
                points[1] = [f32::NAN, 0.0, 0.0];
                points[2] = [f32::INFINITY, 1.0, 1.0];
            }
            let fast = nearest_others(&points, k);
            assert_eq!(
                fast.lists,
                brute_force(&points, k),
                "case {case}: {n} points, k {k}"
            );
        }
    }

    #[test]
    fn twenty_thousand_cameras_cost_under_a_hundred_distances_each() {
        // A walk of 20,000 cameras on a wavy plane (a large capture), and the same shuffled.
        let mut seed = 3;
        let points: Vec<[f32; 3]> = (0..20_000)
            .map(|i| {
                let (row, column) = ((i / 200) as f32, (i % 200) as f32);
                let jitter = 0.3 * pseudo_random(&mut seed);
                [column + jitter, 1.5 + (0.1 * column).sin(), row - jitter]
            })
            .collect();
        let started = std::time::Instant::now();
        let found = nearest_others(&points, 4);
        let elapsed = started.elapsed();
        let per_query = found.distances_evaluated as f64 / points.len() as f64;
        // Sorting every camera for every camera evaluates 20,000 distances per query.
        assert!(per_query < 100.0, "{per_query:.1} distances per camera");
        assert!(elapsed.as_secs_f64() < 10.0, "{elapsed:?}");
        assert!(found.lists.iter().all(|l| l.len() == 4));
        let spacing = found.median_spacing().unwrap();
        assert!((0.6..1.0).contains(&spacing), "median spacing {spacing}");
    }

    #[test]
    fn spacing_of_degenerate_sets() {
        assert_eq!(nearest_others(&[], 4).median_spacing(), None);
        assert_eq!(nearest_others(&[[1.0; 3]; 5], 4).median_spacing(), None);
        let two = nearest_others(&[[0.0; 3], [3.0, 4.0, 0.0], [f32::NAN; 3]], 4);
        assert_eq!(two.lists, vec![vec![(5.0, 1)], vec![(5.0, 0)], vec![]]);
        assert_eq!(two.median_spacing(), Some(5.0));
        assert!(
            nearest_others(&[[0.0; 3], [1.0; 3]], 0)
                .lists
                .iter()
                .all(Vec::is_empty)
        );
    }
}
