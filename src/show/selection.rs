//! Selecting and deleting Gaussians with undo and redo, as the viewer's editing panel does: a
//! selection made inside a crop box, inside a screen rectangle or under a brush (the Gaussians
//! whose centre projects there, through the camera the scene was rendered with:
//! [`super::edit::project_centre`]), inverted, cleared or deleted. Every edit that changes
//! something is recorded, and undo restores the exact state before it. The model itself is never
//! changed: [`EditSession::edited`] gives the Gaussians that remain, [`EditSession::highlighted`]
//! the same with the selection tinted for display.

use super::edit::{CropBox, project_centre, retain};
use crate::splat::Camera;
use crate::splat::reference::CpuGaussians;

/// Edits kept for undo; the oldest is forgotten past this.
pub const UNDO_LIMIT: usize = 100;

/// The zeroth-order spherical harmonic's constant: colour = 0.5 + `SH_C0` × DC.
const SH_C0: f32 = 0.282_094_8;

/// How a new selection combines with the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectMode {
    /// The new selection replaces the old.
    Replace,
    /// The new selection is added to the old.
    Add,
    /// The new selection is taken out of the old.
    Remove,
}

/// One recorded state: the selection and the deletions, one bit per Gaussian.
#[derive(Clone, Debug, PartialEq)]
struct Snapshot {
    selected: Vec<u64>,
    deleted: Vec<u64>,
    what: String,
}

fn pack(flags: &[bool]) -> Vec<u64> {
    let mut words = vec![0u64; flags.len().div_ceil(64)];
    for (i, _) in flags.iter().enumerate().filter(|(_, f)| **f) {
        words[i / 64] |= 1 << (i % 64);
    }
    words
}

fn unpack(words: &[u64], len: usize) -> Vec<bool> {
    (0..len)
        .map(|i| words[i / 64] >> (i % 64) & 1 == 1)
        .collect()
}

/// The selection and deletions over a model of a fixed number of Gaussians, with their history.
#[derive(Clone, Debug)]
pub struct EditSession {
    selected: Vec<bool>,
    deleted: Vec<bool>,
    undo: Vec<Snapshot>,
    redo: Vec<Snapshot>,
}

/// Which of `means` project inside the image rectangle `[x0, y0, x1, y1]` (pixels, `x0 <= u <
/// x1`, `y0 <= v < y1`) of `camera`, between its near and far planes.
pub fn in_rect(means: &[[f32; 3]], camera: &Camera, rect: [f32; 4]) -> Vec<bool> {
    let [x0, y0, x1, y1] = rect;
    let (x0, x1, y0, y1) = (x0.min(x1), x0.max(x1), y0.min(y1), y0.max(y1));
    means
        .iter()
        .map(|p| {
            project_centre(camera, *p).is_some_and(|[u, v]| u >= x0 && u < x1 && v >= y0 && v < y1)
        })
        .collect()
}

/// Which of `means` project within any of the `circles` (image centre in pixels, radius in
/// pixels) of `camera`, between its near and far planes: the dabs of one brush stroke.
pub fn in_circles(means: &[[f32; 3]], camera: &Camera, circles: &[([f32; 2], f32)]) -> Vec<bool> {
    means
        .iter()
        .map(|p| {
            project_centre(camera, *p).is_some_and(|[u, v]| {
                circles
                    .iter()
                    .any(|([x, y], r)| (u - x).powi(2) + (v - y).powi(2) <= r * r)
            })
        })
        .collect()
}

/// Which of `means` lie inside `crop` (its faces included).
pub fn in_box(means: &[[f32; 3]], crop: &CropBox) -> Vec<bool> {
    means.iter().map(|p| crop.contains(*p)).collect()
}

impl EditSession {
    /// Nothing selected or deleted among `count` Gaussians.
    pub fn new(count: usize) -> EditSession {
        EditSession {
            selected: vec![false; count],
            deleted: vec![false; count],
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }

    /// Gaussians of the model edited (deleted ones included).
    pub fn len(&self) -> usize {
        self.selected.len()
    }

    /// True for a model without Gaussians.
    pub fn is_empty(&self) -> bool {
        self.selected.is_empty()
    }

    /// Per Gaussian: selected now (never a deleted one).
    pub fn selected(&self) -> &[bool] {
        &self.selected
    }

    /// Per Gaussian: deleted now.
    pub fn deleted(&self) -> &[bool] {
        &self.deleted
    }

    /// Gaussians selected.
    pub fn selected_count(&self) -> usize {
        self.selected.iter().filter(|s| **s).count()
    }

    /// Gaussians not deleted.
    pub fn remaining(&self) -> usize {
        self.deleted.iter().filter(|d| !**d).count()
    }

    /// What the next undo would undo, if anything.
    pub fn undo_name(&self) -> Option<&str> {
        self.undo.last().map(|s| s.what.as_str())
    }

    /// What the next redo would redo, if anything.
    pub fn redo_name(&self) -> Option<&str> {
        self.redo.last().map(|s| s.what.as_str())
    }

    fn snapshot(&self, what: &str) -> Snapshot {
        Snapshot {
            selected: pack(&self.selected),
            deleted: pack(&self.deleted),
            what: what.to_owned(),
        }
    }

    fn restore(&mut self, snapshot: &Snapshot) {
        self.selected = unpack(&snapshot.selected, self.len());
        self.deleted = unpack(&snapshot.deleted, self.len());
    }

    /// Records the state before an edit called `what` (and forgets what could be redone).
    fn record(&mut self, what: &str) {
        if self.undo.len() >= UNDO_LIMIT {
            self.undo.remove(0);
        }
        self.undo.push(self.snapshot(what));
        self.redo.clear();
    }

    /// Sets the selection to `selected` (deleted Gaussians left out) as the edit `what`; false,
    /// and nothing recorded, when that changes nothing.
    fn set_selection(&mut self, mut selected: Vec<bool>, what: &str) -> bool {
        for (s, d) in selected.iter_mut().zip(&self.deleted) {
            *s &= !*d;
        }
        if selected == self.selected {
            return false;
        }
        self.record(what);
        self.selected = selected;
        true
    }

    /// Combines `hits` (one flag per Gaussian) with the selection by `mode`, as the edit `what`;
    /// returns whether the selection changed.
    pub fn select(&mut self, hits: &[bool], mode: SelectMode, what: &str) -> bool {
        let selected = (self.selected.iter().enumerate())
            .map(|(i, &old)| {
                let hit = hits.get(i).copied().unwrap_or(false);
                match mode {
                    SelectMode::Replace => hit,
                    SelectMode::Add => old || hit,
                    SelectMode::Remove => old && !hit,
                }
            })
            .collect();
        self.set_selection(selected, what)
    }

    /// Selects every Gaussian not deleted that is not selected, and deselects the rest.
    pub fn invert(&mut self) -> bool {
        let selected = self.selected.iter().map(|s| !s).collect();
        self.set_selection(selected, "invert selection")
    }

    /// Deselects everything.
    pub fn clear_selection(&mut self) -> bool {
        let selected = vec![false; self.len()];
        self.set_selection(selected, "clear selection")
    }

    /// Deletes the selected Gaussians (the selection empties); returns how many.
    pub fn delete_selected(&mut self) -> usize {
        let count = self.selected_count();
        if count == 0 {
            return 0;
        }
        self.record("delete");
        for (d, s) in self.deleted.iter_mut().zip(&mut self.selected) {
            *d |= *s;
            *s = false;
        }
        count
    }

    /// Undoes the last edit; returns its name, or `None` when there is nothing to undo.
    pub fn undo(&mut self) -> Option<String> {
        let before = self.undo.pop()?;
        let now = self.snapshot(&before.what);
        self.restore(&before);
        self.redo.push(now);
        Some(before.what)
    }

    /// Redoes the last edit undone; returns its name, or `None` when there is nothing to redo.
    pub fn redo(&mut self) -> Option<String> {
        let after = self.redo.pop()?;
        let now = self.snapshot(&after.what);
        self.restore(&after);
        self.undo.push(now);
        Some(after.what)
    }

    /// The Gaussians of `model` that are not deleted, in their order, every attribute kept.
    pub fn edited(&self, model: &CpuGaussians) -> CpuGaussians {
        let mut kept = model.clone();
        let keep: Vec<bool> = self.deleted.iter().map(|d| !d).collect();
        retain(&mut kept, &keep);
        kept
    }

    /// [`EditSession::edited`] with the selected Gaussians' colour moved 60% of the way to
    /// `tint` (RGB in [0, 1]) and their view-dependent colour damped, to show the selection.
    pub fn highlighted(&self, model: &CpuGaussians, tint: [f32; 3]) -> CpuGaussians {
        let mut shown = model.clone();
        for (sh, _) in (shown.sh.iter_mut())
            .zip(&self.selected)
            .filter(|(_, selected)| **selected)
        {
            for c in 0..3 {
                let colour = 0.5 + SH_C0 * sh[0][c];
                let mixed = 0.4 * colour + 0.6 * tint[c];
                sh[0][c] = (mixed - 0.5) / SH_C0;
                for band in sh.iter_mut().skip(1) {
                    band[c] *= 0.4;
                }
            }
        }
        self.edited(&shown)
    }
}
