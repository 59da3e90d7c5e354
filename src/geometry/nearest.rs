//! The nearest point of a fixed set to any query point: a k-d tree split at the median of its
//! widest axis (as [`neighbours`](super::neighbours)' tree, but owning its points and answering
//! queries that are not among them), so that N points cost O(N log N) to build and about
//! O(log N) distance evaluations per query. The mesh scores' nearest-point distances use it.

/// A k-d tree over a set of points, built once and queried for the nearest point to any
/// position. Non-finite points are left out (never found).
#[derive(Clone, Debug)]
pub struct PointTree {
    points: Vec<[f32; 3]>,
    /// Indices into `points`: the range `order[lo..hi]` is a node whose point is at its middle,
    /// split on `axes[mid]`, the points before it not above it on that axis, those after not below.
    order: Vec<u32>,
    axes: Vec<u8>,
}

impl PointTree {
    /// A tree over `points` (copied).
    pub fn new(points: &[[f32; 3]]) -> PointTree {
        let (order, axes) = balanced_layout(points);
        PointTree {
            points: points.to_vec(),
            order,
            axes,
        }
    }

    /// How many (finite) points the tree holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when the tree holds no point.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The distance to the nearest point of the set and that point's index in the slice the tree
    /// was built from (the lowest index among equal distances is not guaranteed); `None` for an
    /// empty tree or a non-finite query.
    pub fn nearest(&self, query: [f32; 3]) -> Option<(f32, u32)> {
        if self.order.is_empty() || !query.iter().all(|v| v.is_finite()) {
            return None;
        }
        let mut best = (f32::INFINITY, u32::MAX);
        // Depth-first with an explicit stack of (lo, hi, lower bound on the node's distance²).
        let mut stack = vec![(0usize, self.order.len(), 0f32)];
        while let Some((lo, hi, bound)) = stack.pop() {
            if lo >= hi || bound >= best.0 {
                continue;
            }
            let mid = (lo + hi) / 2;
            let index = self.order[mid];
            let point = self.points[index as usize];
            let d2 = (0..3).map(|k| (query[k] - point[k]).powi(2)).sum::<f32>();
            if d2 < best.0 {
                best = (d2, index);
            }
            let axis = self.axes[mid] as usize;
            let gap = query[axis] - point[axis];
            let (near, far) = match gap < 0.0 {
                true => ((lo, mid), (mid + 1, hi)),
                false => ((mid + 1, hi), (lo, mid)),
            };
            // The far side is pushed first so that the near side is searched first.
            stack.push((far.0, far.1, gap * gap));
            stack.push((near.0, near.1, 0.0));
        }
        Some((best.0.sqrt(), best.1))
    }
}

/// The balanced k-d layout of the finite points of `points`: their indices in tree order (each
/// range's median at its middle, split along the range's widest axis) and each position's split
/// axis. Both trees of this module's room (`PointTree`, and the camera neighbours') build on it.
pub(super) fn balanced_layout(points: &[[f32; 3]]) -> (Vec<u32>, Vec<u8>) {
    let mut order: Vec<u32> = (0..points.len() as u32)
        .filter(|&i| points[i as usize].iter().all(|v| v.is_finite()))
        .collect();
    let mut axes = vec![0u8; order.len()];
    let mut ranges = vec![(0, order.len())];
    while let Some((lo, hi)) = ranges.pop() {
        if hi - lo < 2 {
            continue;
        }
        let axis = widest_axis(points, &order[lo..hi]);
        let mid = (lo + hi) / 2;
        order[lo..hi].select_nth_unstable_by(mid - lo, |&a, &b| {
            points[a as usize][axis].total_cmp(&points[b as usize][axis])
        });
        axes[mid] = axis as u8;
        ranges.push((lo, mid));
        ranges.push((mid + 1, hi));
    }
    (order, axes)
}

fn widest_axis(points: &[[f32; 3]], order: &[u32]) -> usize {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for &i in order {
        for k in 0..3 {
            lo[k] = lo[k].min(points[i as usize][k]);
            hi[k] = hi[k].max(points[i as usize][k]);
        }
    }
    (0..3)
        .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn the_tree_finds_what_checking_every_point_finds() {
        let mut rng = SplitMix64::new(7);
        let mut points: Vec<[f32; 3]> = (0..500)
            .map(|_| [rng.unit(), rng.unit(), rng.unit() * 0.1])
            .collect();
        points.push([f32::NAN, 0.0, 0.0]);
        let tree = PointTree::new(&points);
        assert_eq!(tree.len(), 500);
        for _ in 0..300 {
            let q = [
                rng.range(-0.5, 1.5),
                rng.range(-0.5, 1.5),
                rng.range(-0.5, 0.5),
            ];
            let brute = points[..500]
                .iter()
                .map(|p| (0..3).map(|k| (q[k] - p[k]).powi(2)).sum::<f32>().sqrt())
                .fold(f32::INFINITY, f32::min);
            let (d, i) = tree.nearest(q).unwrap();
            assert_eq!(d, brute, "query {q:?}");
            let p = points[i as usize];
            let again = (0..3).map(|k| (q[k] - p[k]).powi(2)).sum::<f32>().sqrt();
            assert_eq!(again, d);
        }
        assert!(PointTree::new(&[]).nearest([0.0; 3]).is_none());
        assert!(tree.nearest([f32::INFINITY, 0.0, 0.0]).is_none());
    }
}
