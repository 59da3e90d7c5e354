//! Dispatch maths in one typed place: how many workgroups cover a number of items, and how that
//! count is laid out on a 2D grid when it exceeds the per-dimension limit. Integer arithmetic only.
//!
//! Kernels recover their linear workgroup index with `workgroup_index(wid, nwg)` from
//! `shaders/shared/dispatch.wgsl`: `wid.x + wid.y * nwg.x`. Workgroups past the requested count
//! (the 2D grid rounds up) see an item index `>= n` and return.

use crate::error::{Error, Result};

/// A dispatch grid: `x * y` workgroups, with `x` and `y` each within the adapter's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkgroupGrid {
    /// Workgroups along x.
    pub x: u32,
    /// Workgroups along y.
    pub y: u32,
}

impl WorkgroupGrid {
    /// An empty grid (nothing to dispatch).
    pub const EMPTY: WorkgroupGrid = WorkgroupGrid { x: 0, y: 0 };

    /// A grid of at least `count` workgroups, 1D when it fits, otherwise 2D.
    pub fn for_workgroups(count: u64, max_per_dimension: u32) -> Result<Self> {
        let max = u64::from(max_per_dimension.max(1));
        if count == 0 {
            return Ok(Self::EMPTY);
        }
        if count <= max {
            return Ok(WorkgroupGrid {
                x: count as u32,
                y: 1,
            });
        }
        let y = count.div_ceil(max);
        if y > max {
            return Err(Error::Overflow {
                what: "dispatch".into(),
                needed: count,
                max: max * max,
                hint: "split the work into several dispatches".into(),
            });
        }
        // Balance the rows so the padding stays below one row.
        let x = count.div_ceil(y);
        Ok(WorkgroupGrid {
            x: x as u32,
            y: y as u32,
        })
    }

    /// A grid covering `items`, each workgroup taking `items_per_workgroup`.
    pub fn for_items(items: u64, items_per_workgroup: u32, max_per_dimension: u32) -> Result<Self> {
        Self::for_workgroups(
            items.div_ceil(u64::from(items_per_workgroup.max(1))),
            max_per_dimension,
        )
    }

    /// Total workgroups launched (at least the count asked for).
    pub fn total(self) -> u64 {
        u64::from(self.x) * u64::from(self.y)
    }

    /// Whether there is nothing to launch.
    pub fn is_empty(self) -> bool {
        self.x == 0 || self.y == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_counts_within_limits() {
        for count in [
            0u64,
            1,
            255,
            65_535,
            65_536,
            65_537,
            1 << 20,
            (1 << 26) + 3,
            65_535 * 65_535,
        ] {
            let g = WorkgroupGrid::for_workgroups(count, 65_535).expect("fits");
            assert!(g.total() >= count, "{count}: {g:?}");
            assert!(g.x <= 65_535 && g.y <= 65_535);
            if count > 0 {
                assert!(
                    g.total() - count < u64::from(g.x),
                    "padding below one row for {count}"
                );
            }
        }
        assert!(WorkgroupGrid::for_workgroups(65_535 * 65_535 + 65_536, 65_535).is_err());
        assert_eq!(
            WorkgroupGrid::for_items(257, 256, 65_535).expect("fits"),
            WorkgroupGrid { x: 2, y: 1 }
        );
    }
}
