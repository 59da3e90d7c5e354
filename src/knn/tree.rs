//! Layout of the box hierarchy over the sorted points (built by shaders/knn_boxes.wgsl,
//! searched by shaders/knn_search.wgsl).

use crate::error::{Error, Result};

/// Points per leaf box (`LEAF_SIZE` in the WGSL).
pub const LEAF_SIZE: u64 = 8;
/// Children per inner box (`FANOUT` in the WGSL).
pub const FANOUT: u64 = 8;
/// Entries of the search's depth-first stack (`STACK` in shaders/knn_search.wgsl).
const STACK_ENTRIES: u64 = 64;
/// The most levels whose depth-first search fits the stack: `(levels - 1) * (FANOUT - 1) + 1`
/// entries can be pending at once.
pub const MAX_LEVELS: usize = ((STACK_ENTRIES - 1) / (FANOUT - 1) + 1) as usize;
/// Boxes per level are indexed with 27 bits in a stack entry (`INDEX_MASK` in the WGSL).
const MAX_BOXES_PER_LEVEL: u64 = 1 << 27;

/// Where each level of boxes starts in the box arrays: level 0 holds the leaves, each level above
/// has `ceil(below / FANOUT)` boxes, and the top level holds exactly one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BoxLevels {
    /// `offsets[l]` is the first box of level `l`; the last entry is the total box count.
    offsets: Vec<u64>,
}

impl BoxLevels {
    /// The hierarchy over `num_points >= 1` points.
    pub(crate) fn for_points(num_points: u64) -> Result<Self> {
        let mut count = num_points.div_ceil(LEAF_SIZE).max(1);
        if count > MAX_BOXES_PER_LEVEL {
            return Err(Error::Overflow {
                what: "k-NN leaf boxes".into(),
                needed: count,
                max: MAX_BOXES_PER_LEVEL,
                hint: "search fewer points at a time".into(),
            });
        }
        let mut offsets = vec![0, count];
        while count > 1 {
            count = count.div_ceil(FANOUT);
            offsets.push(offsets[offsets.len() - 1] + count);
        }
        let levels = offsets.len() - 1;
        if levels > MAX_LEVELS {
            return Err(Error::Overflow {
                what: "k-NN box hierarchy levels".into(),
                needed: levels as u64,
                max: MAX_LEVELS as u64,
                hint: "search fewer points at a time".into(),
            });
        }
        Ok(BoxLevels { offsets })
    }

    /// Number of levels (leaves included).
    pub(crate) fn num_levels(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Boxes over all levels.
    pub(crate) fn total(&self) -> u64 {
        self.offsets[self.offsets.len() - 1]
    }

    /// First box of `level`.
    pub(crate) fn offset(&self, level: usize) -> u64 {
        self.offsets[level]
    }

    /// Boxes in `level`.
    pub(crate) fn count(&self, level: usize) -> u64 {
        self.offsets[level + 1] - self.offsets[level]
    }

    /// The offsets packed as the search kernel's uniform `array<vec4<u32>, 4>`.
    pub(crate) fn packed_offsets(&self) -> [[u32; 4]; 4] {
        let mut packed = [[0u32; 4]; 4];
        for (l, &offset) in self.offsets.iter().enumerate() {
            packed[l / 4][l % 4] = offset as u32;
        }
        packed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_end_in_one_box() {
        let one = BoxLevels::for_points(1).unwrap();
        assert_eq!((one.num_levels(), one.total()), (1, 1));
        let levels = BoxLevels::for_points(1000).unwrap();
        // 125 leaves, 16, 2, 1.
        assert_eq!(levels.offsets, vec![0, 125, 141, 143, 144]);
        assert_eq!(levels.count(1), 16);
        assert!(BoxLevels::for_points(1 << 30).is_ok());
        assert_eq!(MAX_LEVELS, 10);
    }
}
