//! Memory accounting: categories, per-label statistics, size classes and the printable,
//! serialisable [`MemoryReport`]. The allocator in [`crate::gpu::allocator`] keeps these numbers;
//! this module only defines them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// What a GPU buffer is used for. Every buffer belongs to exactly one category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MemoryCategory {
    /// Trainable parameters (means, scales, rotations, opacities, SH).
    Parameters,
    /// Gradients: one chunk-sized scratch, alive only inside a training step.
    Gradients,
    /// Optimizer moments and densification statistics.
    OptimizerState,
    /// Per-frame scratch of the renderer and loss.
    FrameScratch,
    /// Keys, values and histograms of sorts.
    SortScratch,
    /// Upload arenas and readback buffers.
    Staging,
    /// Anything else (tests, generic tensors).
    Other,
}

impl MemoryCategory {
    /// All categories, in report order.
    pub const ALL: [MemoryCategory; 7] = [
        MemoryCategory::Parameters,
        MemoryCategory::Gradients,
        MemoryCategory::OptimizerState,
        MemoryCategory::FrameScratch,
        MemoryCategory::SortScratch,
        MemoryCategory::Staging,
        MemoryCategory::Other,
    ];

    /// Index into [`MemoryCategory::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            MemoryCategory::Parameters => "parameters",
            MemoryCategory::Gradients => "gradients",
            MemoryCategory::OptimizerState => "optimizer_state",
            MemoryCategory::FrameScratch => "frame_scratch",
            MemoryCategory::SortScratch => "sort_scratch",
            MemoryCategory::Staging => "staging",
            MemoryCategory::Other => "other",
        }
    }
}

/// Live and peak figures for one category or label. Bytes are the sizes of the GPU buffers
/// actually created (size-class rounded), so they are what the device really holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageStats {
    /// Bytes held by live buffers now.
    pub live_bytes: u64,
    /// Highest `live_bytes` seen since creation or the last peak reset.
    pub peak_bytes: u64,
    /// Number of live buffers now.
    pub live_buffers: u64,
    /// Bytes the callers asked for (before size-class rounding).
    pub requested_bytes: u64,
}

impl UsageStats {
    pub(crate) fn add(&mut self, bytes: u64, requested: u64) {
        self.live_bytes += bytes;
        self.requested_bytes += requested;
        self.live_buffers += 1;
        self.peak_bytes = self.peak_bytes.max(self.live_bytes);
    }

    pub(crate) fn remove(&mut self, bytes: u64, requested: u64) {
        self.live_bytes -= bytes;
        self.requested_bytes -= requested;
        self.live_buffers -= 1;
    }
}

/// One live buffer, as listed by a leak check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveBuffer {
    /// The label given at allocation.
    pub label: String,
    /// Its category.
    pub category: MemoryCategory,
    /// Bytes held on the device.
    pub bytes: u64,
}

/// A snapshot of everything the allocator knows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// Sum over all categories.
    pub total: UsageStats,
    /// Per category, in [`MemoryCategory::ALL`] order (categories with no history are included).
    pub by_category: BTreeMap<MemoryCategory, UsageStats>,
    /// Per label.
    pub by_label: BTreeMap<String, UsageStats>,
    /// Bytes held by free buffers waiting in the pool for reuse.
    pub pooled_bytes: u64,
    /// Number of free buffers in the pool.
    pub pooled_buffers: u64,
    /// The most bytes the pool may hold before it evicts.
    pub pool_limit_bytes: u64,
    /// How many `wgpu::Buffer`s were ever created.
    pub buffers_created: u64,
    /// How many allocations were served from the pool.
    pub pool_hits: u64,
    /// How many times the pool was trimmed.
    pub trims: u64,
}

impl MemoryReport {
    /// Live bytes of one category.
    pub fn live(&self, category: MemoryCategory) -> u64 {
        self.by_category.get(&category).map_or(0, |s| s.live_bytes)
    }

    /// Peak bytes of one category.
    pub fn peak(&self, category: MemoryCategory) -> u64 {
        self.by_category.get(&category).map_or(0, |s| s.peak_bytes)
    }
}

/// Formats a byte count with a binary unit.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>12} {:>12} {:>8}",
            "category", "live", "peak", "buffers"
        )?;
        for cat in MemoryCategory::ALL {
            let s = self.by_category.get(&cat).copied().unwrap_or_default();
            writeln!(
                f,
                "{:<16} {:>12} {:>12} {:>8}",
                cat.name(),
                format_bytes(s.live_bytes),
                format_bytes(s.peak_bytes),
                s.live_buffers
            )?;
        }
        writeln!(
            f,
            "{:<16} {:>12} {:>12} {:>8}",
            "total",
            format_bytes(self.total.live_bytes),
            format_bytes(self.total.peak_bytes),
            self.total.live_buffers
        )?;
        write!(
            f,
            "pool: {} in {} buffers (limit {}); {} buffers created, {} pool hits, {} trims",
            format_bytes(self.pooled_bytes),
            self.pooled_buffers,
            format_bytes(self.pool_limit_bytes),
            self.buffers_created,
            self.pool_hits,
            self.trims
        )
    }
}

/// Smallest buffer the allocator creates.
pub const MIN_BUFFER_BYTES: u64 = 256;

/// Rounds a request up to its size class. Classes are multiples of 256 bytes; above 4 KiB each
/// power-of-two octave is split into 8 steps, so rounding wastes at most 12.5%; exact powers of two
/// and multiples of the step are kept as they are. Frame scratch, whose sizes follow the view,
/// reuses pooled buffers across views of similar size thanks to these wide classes.
pub fn size_class(bytes: u64) -> u64 {
    class_with_steps(bytes, 8)
}

/// The size class of a request of `category`: the model's state (parameters, optimizer state) of
/// [`FINE_CLASSES_FROM`] bytes and more rounds to 64 classes per octave (at most 1.6%; none for an
/// SH-rest page of 45 floats a row, which 8 steps would round up by 6.7%). Its sizes change only
/// when the model does, so wide classes would buy no reuse for their waste.
pub fn size_class_in(bytes: u64, category: MemoryCategory) -> u64 {
    let model_state = matches!(
        category,
        MemoryCategory::Parameters | MemoryCategory::OptimizerState
    );
    match model_state && bytes >= FINE_CLASSES_FROM {
        true => class_with_steps(bytes, 64),
        false => size_class(bytes),
    }
}

/// Model-state requests of at least this many bytes (1 MiB) round to 64 classes per octave.
pub const FINE_CLASSES_FROM: u64 = 1 << 20;

fn class_with_steps(bytes: u64, steps: u64) -> u64 {
    let bytes = bytes.max(MIN_BUFFER_BYTES);
    let aligned = bytes.div_ceil(MIN_BUFFER_BYTES) * MIN_BUFFER_BYTES;
    if aligned <= 4096 {
        return aligned;
    }
    let octave = 63 - aligned.leading_zeros(); // floor(log2)
    let step = ((1u64 << octave) / steps).max(MIN_BUFFER_BYTES);
    aligned.div_ceil(step) * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_round_up_within_bound() {
        for bytes in [
            0u64,
            1,
            255,
            256,
            257,
            4095,
            4097,
            65_537,
            1 << 20,
            (1 << 20) + 3,
            3 << 27,
            1 << 34,
        ] {
            let class = size_class(bytes);
            assert!(class >= bytes.max(MIN_BUFFER_BYTES), "{bytes} -> {class}");
            assert_eq!(class % MIN_BUFFER_BYTES, 0);
            assert!(
                class as f64 <= (bytes.max(MIN_BUFFER_BYTES) as f64) * 1.125 + 256.0,
                "{bytes} -> {class}"
            );
            assert_eq!(size_class(class), class, "classes are fixed points");
            let fine = size_class_in(bytes, MemoryCategory::Parameters);
            assert!(fine >= bytes && fine <= class, "{bytes} -> {fine}");
            if bytes >= FINE_CLASSES_FROM {
                assert!(
                    fine as f64 <= bytes as f64 * (1.0 + 1.0 / 64.0),
                    "{bytes} -> {fine}"
                );
            }
            assert_eq!(size_class_in(bytes, MemoryCategory::FrameScratch), class);
        }
        // An SH-rest page (45 floats x 2^19 rows) is a class of its own for the model's state.
        assert_eq!(
            size_class_in(180 << 19, MemoryCategory::OptimizerState),
            180 << 19
        );
        assert_eq!(size_class(180 << 19), 192 << 19);
        assert_eq!(size_class(128 << 20), 128 << 20);
    }

    #[test]
    fn report_prints_every_category() {
        let text = MemoryReport::default().to_string();
        for cat in MemoryCategory::ALL {
            assert!(text.contains(cat.name()));
        }
    }
}
