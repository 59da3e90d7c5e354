//! Which pages of a level-of-detail tree are in GPU memory: a fixed number of slots, filled as
//! the cut asks for pages and emptied least-recently-used first.
//!
//! One rule keeps every cut valid: a page is resident only while every page holding the parents
//! of its nodes is, so a node whose children are resident is itself resident, and so on up to the
//! root (page 0, never evicted). Loading a page loads its missing parent pages first; a page is
//! evicted only when no resident page depends on it and the last frame did not read it.

use super::read::LodScene;
use crate::error::{Error, Result};

/// A page's slot when it is not resident (the value the cut kernels test).
pub const NOT_RESIDENT: u32 = u32::MAX;

/// Bytes one page of `scene` takes in the pool.
pub fn page_bytes(scene: &LodScene) -> u64 {
    scene.index.page_nodes * u64::from(super::cut::row_width(scene.index.sh_degree)) * 4
}

/// Fails unless `budget_bytes` holds at least two pages of `scene` (the pool's least; a pool
/// never takes more than the budget asks, so a smaller one would be exceeded).
pub fn check_budget(scene: &LodScene, budget_bytes: u64) -> Result<()> {
    let page = page_bytes(scene);
    if scene.page_count() < 2 || budget_bytes >= 2 * page {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op: "lod",
        detail: format!(
            "a level-of-detail memory budget of {budget_bytes} bytes holds fewer than two pages \
             of {page} bytes ({} Gaussians of SH degree {}): give at least {} bytes \
             (--lod-memory)",
            scene.index.page_nodes,
            scene.index.sh_degree,
            2 * page
        ),
    })
}

/// The residency of every page.
#[derive(Clone, Debug)]
pub struct PagePool {
    /// Each page's slot, or [`NOT_RESIDENT`].
    slot_of: Vec<u32>,
    /// Each slot's page.
    page_in_slot: Vec<Option<u32>>,
    /// The frame each page was last read by a cut.
    last_used: Vec<u64>,
    /// The pages holding each page's nodes' parents, as an inclusive range.
    parent_pages: Vec<(u32, u32)>,
    /// Resident pages that depend on each page.
    dependants: Vec<u32>,
    frame: u64,
}

/// What [`PagePool::plan_loads`] decided: pages to load, each into a slot, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadPlan {
    /// (page, slot) pairs, parents before children.
    pub loads: Vec<(u32, u32)>,
    /// Pages evicted to make room.
    pub evicted: Vec<u32>,
    /// Wanted pages left out because no slot could be freed.
    pub deferred: usize,
}

impl PagePool {
    /// An empty pool of `slots` slots (at least 1) for `scene`'s pages.
    pub fn new(scene: &LodScene, slots: usize) -> PagePool {
        let pages = scene.page_count();
        let s = &scene.skeleton;
        let parent_pages = scene
            .index
            .pages
            .iter()
            .enumerate()
            .map(|(p, page)| {
                let first = page.first_node as usize;
                let last = first + page.nodes as usize - 1;
                let page_of_parent = |n: usize| match s.parent[n] {
                    super::tree::NO_NODE => p as u32,
                    parent => scene.node_page[parent as usize],
                };
                // A page's first node may be the root (page 0): its parents start after it.
                let lo = if first == 0 {
                    p as u32
                } else {
                    page_of_parent(first)
                };
                (lo, page_of_parent(last))
            })
            .collect();
        PagePool {
            slot_of: vec![NOT_RESIDENT; pages],
            page_in_slot: vec![None; slots.max(1)],
            last_used: vec![0; pages],
            parent_pages,
            dependants: vec![0; pages],
            frame: 0,
        }
    }

    /// Slots in the pool.
    pub fn slots(&self) -> usize {
        self.page_in_slot.len()
    }

    /// Each page's slot, or [`NOT_RESIDENT`] (what the GPU's page table holds).
    pub fn slot_table(&self) -> &[u32] {
        &self.slot_of
    }

    /// Whether `page` is resident.
    pub fn is_resident(&self, page: u32) -> bool {
        self.slot_of[page as usize] != NOT_RESIDENT
    }

    /// Resident pages.
    pub fn resident_count(&self) -> usize {
        self.page_in_slot.iter().flatten().count()
    }

    /// Records that a cut read `pages` in a new frame.
    pub fn mark_used(&mut self, pages: &[u32]) {
        self.frame += 1;
        for &p in pages {
            self.last_used[p as usize] = self.frame;
        }
    }

    fn parents_of(&self, page: u32) -> impl Iterator<Item = u32> {
        let (lo, hi) = self.parent_pages[page as usize];
        (lo..=hi).filter(move |&q| q != page)
    }

    /// `page` and its missing ancestors, ancestors first.
    fn with_missing_ancestors(&self, page: u32, out: &mut Vec<u32>) {
        if self.is_resident(page) || out.contains(&page) {
            return;
        }
        let parents: Vec<u32> = self.parents_of(page).collect();
        for q in parents {
            self.with_missing_ancestors(q, out);
        }
        out.push(page);
    }

    fn free_slot(&mut self, protect: &[u32], evicted: &mut Vec<u32>) -> Option<u32> {
        if let Some(slot) = self.page_in_slot.iter().position(Option::is_none) {
            return Some(slot as u32);
        }
        let victim = self
            .page_in_slot
            .iter()
            .flatten()
            .copied()
            .filter(|&p| {
                p != 0
                    && self.dependants[p as usize] == 0
                    && self.last_used[p as usize] < self.frame
                    && !protect.contains(&p)
            })
            .min_by_key(|&p| (self.last_used[p as usize], std::cmp::Reverse(p)))?;
        let slot = self.slot_of[victim as usize];
        self.slot_of[victim as usize] = NOT_RESIDENT;
        self.page_in_slot[slot as usize] = None;
        let parents: Vec<u32> = self.parents_of(victim).collect();
        for q in parents {
            self.dependants[q as usize] -= 1;
        }
        evicted.push(victim);
        Some(slot)
    }

    /// Plans loading `wanted` pages (coarsest first), at most `max_loads`, evicting pages no
    /// longer read to make room, and marks them resident. The caller uploads each planned page
    /// into its slot before the next cut.
    pub fn plan_loads(&mut self, wanted: &[u32], max_loads: usize) -> LoadPlan {
        let mut wanted = wanted.to_vec();
        wanted.sort_unstable();
        let mut plan = LoadPlan::default();
        for (i, &page) in wanted.iter().enumerate() {
            let mut chain = Vec::new();
            self.with_missing_ancestors(page, &mut chain);
            if plan.loads.len() + chain.len() > max_loads {
                plan.deferred = wanted.len() - i;
                break;
            }
            for &p in &chain {
                match self.free_slot(&chain, &mut plan.evicted) {
                    Some(slot) => {
                        self.slot_of[p as usize] = slot;
                        self.page_in_slot[slot as usize] = Some(p);
                        self.last_used[p as usize] = self.frame;
                        let parents: Vec<u32> = self.parents_of(p).collect();
                        for q in parents {
                            self.dependants[q as usize] += 1;
                        }
                        plan.loads.push((p, slot));
                    }
                    None => {
                        plan.deferred = wanted.len() - i;
                        return plan;
                    }
                }
            }
        }
        plan
    }

    /// Checks the pool's rule (every resident page's parent pages are resident); for tests.
    pub fn closed_under_parents(&self) -> bool {
        (0..self.slot_of.len() as u32)
            .filter(|&p| self.is_resident(p))
            .all(|p| self.parents_of(p).all(|q| self.is_resident(q)))
    }
}
