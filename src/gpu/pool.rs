//! The allocator's free-buffer pool, aware of open encoders.
//!
//! A buffer dropped while encoders are still being recorded may be used by commands that have not
//! been submitted yet. Handing it to *another* encoder that is submitted first would let the
//! earlier-recorded commands overwrite that encoder's results when they finally run. So a buffer
//! released while encoders are open waits as *pending*:
//! - if exactly one encoder was open, that encoder may reuse it at once (its commands run in
//!   recording order, so the earlier use is finished by then);
//! - any other encoder gets it only after every encoder that was open at release time has been
//!   submitted or dropped (later submissions run after them on the queue).
//!
//! Free and pending buffers together are bounded by `limit` bytes; the oldest are evicted first.

use crate::gpu::allocator::BufferKind;
use std::collections::{BTreeSet, HashMap};

/// Pool key: usage kind and size class.
pub(crate) type PoolKey = (BufferKind, u64);

struct Pending {
    key: PoolKey,
    sequence: u64,
    buffer: wgpu::Buffer,
    /// The only encoder open at release time, which may reuse the buffer immediately.
    owner: Option<u64>,
    /// The newest encoder open at release time; free once every encoder up to it has closed.
    barrier: u64,
}

/// Free buffers by key, pending buffers, and the set of open encoders.
pub(crate) struct FreePool {
    free: HashMap<PoolKey, Vec<(u64, wgpu::Buffer)>>,
    pending: Vec<Pending>,
    open_encoders: BTreeSet<u64>,
    next_encoder: u64,
    sequence: u64,
    limit: u64,
    /// Bytes held (free and pending).
    pub(crate) bytes: u64,
    /// Buffers held (free and pending).
    pub(crate) buffers: u64,
}

impl FreePool {
    pub(crate) fn new(limit: u64) -> Self {
        FreePool {
            free: HashMap::new(),
            pending: Vec::new(),
            open_encoders: BTreeSet::new(),
            next_encoder: 0,
            sequence: 0,
            limit,
            bytes: 0,
            buffers: 0,
        }
    }

    /// The byte limit.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Registers a new encoder and returns its id.
    pub(crate) fn open_encoder(&mut self) -> u64 {
        self.next_encoder += 1;
        self.open_encoders.insert(self.next_encoder);
        self.next_encoder
    }

    /// Marks an encoder submitted or dropped and frees the pending buffers nothing can touch now.
    pub(crate) fn close_encoder(&mut self, id: u64) {
        self.open_encoders.remove(&id);
        let oldest_open = self.open_encoders.first().copied().unwrap_or(u64::MAX);
        let mut index = 0;
        while index < self.pending.len() {
            if self.pending[index].barrier < oldest_open {
                let p = self.pending.swap_remove(index);
                self.free
                    .entry(p.key)
                    .or_default()
                    .push((p.sequence, p.buffer));
            } else {
                if self.pending[index]
                    .owner
                    .is_some_and(|o| !self.open_encoders.contains(&o))
                {
                    self.pending[index].owner = None;
                }
                index += 1;
            }
        }
    }

    /// Takes a buffer for `key`: one the encoder itself released, else a free one.
    pub(crate) fn take(&mut self, key: PoolKey, encoder: Option<u64>) -> Option<wgpu::Buffer> {
        let own = encoder.and_then(|e| {
            self.pending
                .iter()
                .rposition(|p| p.key == key && p.owner == Some(e))
        });
        let buffer = if let Some(index) = own {
            Some(self.pending.swap_remove(index).buffer)
        } else {
            let list = self.free.get_mut(&key)?;
            let (_, buffer) = list.pop()?;
            if list.is_empty() {
                self.free.remove(&key);
            }
            Some(buffer)
        };
        if buffer.is_some() {
            self.bytes -= key.1;
            self.buffers -= 1;
        }
        buffer
    }

    /// Gives a buffer back. Buffers larger than the limit are dropped (freeing them).
    pub(crate) fn release(&mut self, key: PoolKey, buffer: wgpu::Buffer) {
        if key.1 > self.limit {
            return;
        }
        while self.bytes + key.1 > self.limit && self.evict_oldest() {}
        self.sequence += 1;
        self.bytes += key.1;
        self.buffers += 1;
        match (self.open_encoders.len(), self.open_encoders.last().copied()) {
            (0, _) | (_, None) => self
                .free
                .entry(key)
                .or_default()
                .push((self.sequence, buffer)),
            (count, Some(newest)) => self.pending.push(Pending {
                key,
                sequence: self.sequence,
                buffer,
                owner: (count == 1).then_some(newest),
                barrier: newest,
            }),
        }
    }

    /// Drops the oldest held buffer (free first, then pending). Returns false when empty.
    fn evict_oldest(&mut self) -> bool {
        let oldest_free = self
            .free
            .iter()
            .filter_map(|(key, list)| list.first().map(|(seq, _)| (*seq, *key)))
            .min_by_key(|(seq, _)| *seq);
        if let Some((_, key)) = oldest_free {
            let list = self.free.get_mut(&key).expect("key was just found");
            list.remove(0);
            if list.is_empty() {
                self.free.remove(&key);
            }
            self.bytes -= key.1;
            self.buffers -= 1;
            return true;
        }
        if let Some(index) = (0..self.pending.len()).min_by_key(|&i| self.pending[i].sequence) {
            // Dropping a wgpu::Buffer that pending commands use is safe: wgpu keeps it alive
            // until they have run.
            let p = self.pending.swap_remove(index);
            self.bytes -= p.key.1;
            self.buffers -= 1;
            return true;
        }
        false
    }

    /// Drops everything held; returns the bytes released.
    pub(crate) fn clear(&mut self) -> u64 {
        let released = self.bytes;
        self.free.clear();
        self.pending.clear();
        self.bytes = 0;
        self.buffers = 0;
        released
    }
}
