//! How far a model read or write has got, for a front end to draw (`wgsplat convert` shows it as a
//! progress bar). Readers and writers update it from any thread; a reader of the counters polls.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// A phase name and a done / total count (Gaussians, or steps where a format works in steps).
#[derive(Debug, Default)]
pub struct Progress {
    phase: Mutex<String>,
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// A fresh counter at phase "", 0 of 0.
    pub fn new() -> Progress {
        Progress::default()
    }

    /// Starts `phase` with `total` units to go.
    pub fn begin(&self, phase: &str, total: u64) {
        if let Ok(mut p) = self.phase.lock() {
            p.clear();
            p.push_str(phase);
        }
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// Counts `units` more done.
    pub fn advance(&self, units: u64) {
        self.done.fetch_add(units, Ordering::Relaxed);
    }

    /// Marks the phase complete.
    pub fn finish(&self) {
        self.done
            .store(self.total.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The phase, units done and total.
    pub fn snapshot(&self) -> (String, u64, u64) {
        let phase = self.phase.lock().map(|p| p.clone()).unwrap_or_default();
        let total = self.total.load(Ordering::Relaxed);
        (phase, self.done.load(Ordering::Relaxed).min(total), total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_count_and_finish() {
        let p = Progress::new();
        p.begin("reading", 10);
        p.advance(3);
        assert_eq!(p.snapshot(), ("reading".into(), 3, 10));
        p.advance(30);
        assert_eq!(p.snapshot().1, 10, "done never passes total");
        p.begin("writing", 4);
        assert_eq!(p.snapshot(), ("writing".into(), 0, 4));
        p.finish();
        assert_eq!(p.snapshot(), ("writing".into(), 4, 4));
    }
}
