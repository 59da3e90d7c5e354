//! A bound on the host memory that work running on several threads holds at once: each item
//! takes a permit for the bytes it will need before it allocates them, and waits while the
//! permits already out would exceed the limit (one item alone always runs, so an item larger
//! than the limit is not refused here: the per-image limit bounds that).

use std::sync::{Condvar, Mutex};

/// A byte budget shared by worker threads.
#[derive(Debug)]
pub struct MemoryGate {
    limit: u64,
    in_use: Mutex<u64>,
    released: Condvar,
}

/// Bytes held from a [`MemoryGate`]; returned when dropped.
#[derive(Debug)]
pub struct MemoryPermit<'a> {
    gate: &'a MemoryGate,
    bytes: u64,
}

impl MemoryGate {
    /// A gate that lets at most `limit` bytes be held at once.
    pub fn new(limit: u64) -> MemoryGate {
        MemoryGate {
            limit,
            in_use: Mutex::new(0),
            released: Condvar::new(),
        }
    }

    /// The limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Waits until `bytes` more fit under the limit (or nothing else is held), then holds them.
    pub fn acquire(&self, bytes: u64) -> MemoryPermit<'_> {
        let mut in_use = self.in_use.lock().unwrap_or_else(|p| p.into_inner());
        while *in_use > 0 && in_use.saturating_add(bytes) > self.limit {
            in_use = self
                .released
                .wait(in_use)
                .unwrap_or_else(|p| p.into_inner());
        }
        *in_use += bytes;
        MemoryPermit { gate: self, bytes }
    }

    /// The bytes held now.
    pub fn in_use(&self) -> u64 {
        *self.in_use.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for MemoryPermit<'_> {
    fn drop(&mut self) {
        let mut in_use = self.gate.in_use.lock().unwrap_or_else(|p| p.into_inner());
        *in_use -= self.bytes;
        self.gate.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn holders_never_exceed_the_limit_and_an_oversized_item_runs_alone() {
        let gate = MemoryGate::new(100);
        let peak = AtomicU64::new(0);
        std::thread::scope(|scope| {
            for i in 0..8u64 {
                let (gate, peak) = (&gate, &peak);
                scope.spawn(move || {
                    let bytes = if i == 3 { 250 } else { 30 + i };
                    let _permit = gate.acquire(bytes);
                    let held = gate.in_use();
                    peak.fetch_max(held, Ordering::SeqCst);
                    assert!(
                        held <= 100 || held == bytes,
                        "{held} bytes held with {bytes}"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(5));
                });
            }
        });
        assert_eq!(gate.in_use(), 0);
        assert!(peak.load(Ordering::SeqCst) >= 250);
    }
}
