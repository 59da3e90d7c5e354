//! The training images on the GPU: a bounded cache of slots, filled from the decoded images in
//! host memory (`Dataset::train[i].image.pixels`, RGBA8) as training asks for them.
//!
//! Every slot is one `u32` tensor as long as the largest training view's pixel count, so views of
//! any size (1600×1200 beside 1200×1600) share slots: a view in a slot is the slot's prefix of its
//! pixel count, shaped `[height, width]`, each pixel packed as [`crate::data::image::pack_rgba8`]
//! packs it. A miss takes a slot not yet allocated, or evicts the least recently used view, and
//! records the upload into the caller's encoder, ordered with the work recorded before it. When
//! every training view fits ([`ImageCachePlan::all_resident`]) each is uploaded once, at its first
//! use. How many slots there are is [`crate::train::budget::image_cache_slots`]'s rule.

use crate::data::View;
use crate::error::{Error, Result};
use crate::gpu::memory::format_bytes;
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};
use crate::train::budget::image_cache_slots;
use serde::Serialize;

/// How the GPU cache of training images is sized: by [`image_cache_slots`] from the training
/// views, a memory budget and `--image-cache`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageCachePlan {
    /// Training views.
    pub views: usize,
    /// The largest training view, `(width, height)`: each slot holds its pixels.
    pub slot_size: (u32, u32),
    /// Device bytes of one slot ([`Tensor::planned_bytes`] of the largest view, packed RGBA8).
    pub slot_bytes: u64,
    /// Host bytes of every training view as RGBA8.
    pub host_bytes: u64,
    /// The explicit size (`--image-cache`), which overrides a budget's share.
    pub explicit: Option<u64>,
    /// Slots: how many views are on the GPU at once.
    pub slots: usize,
}

impl ImageCachePlan {
    /// The cache for training views of `sizes` (`(width, height)` each) under `budget` and
    /// `explicit` (`--image-cache`), sized by [`image_cache_slots`].
    pub fn for_views(
        ctx: &GpuContext,
        sizes: impl IntoIterator<Item = (u32, u32)>,
        budget: Option<u64>,
        explicit: Option<u64>,
    ) -> ImageCachePlan {
        let (mut views, mut host_bytes, mut slot_size) = (0, 0, (0, 0));
        for size in sizes {
            views += 1;
            host_bytes += pixels(size) * 4;
            if pixels(size) > pixels(slot_size) {
                slot_size = size;
            }
        }
        let plan = ImageCachePlan {
            views,
            slot_size,
            slot_bytes: Tensor::planned_bytes(ctx, DType::U32, pixels(slot_size)),
            host_bytes,
            explicit,
            slots: 0,
        };
        plan.at_budget(budget)
    }

    /// The same cache under another budget (`None`: none), by [`image_cache_slots`].
    pub fn at_budget(self, budget: Option<u64>) -> ImageCachePlan {
        ImageCachePlan {
            slots: image_cache_slots(self.views, self.slot_bytes, budget, self.explicit),
            ..self
        }
    }

    /// Device bytes of the cache's slots.
    pub fn bytes(&self) -> u64 {
        self.slots as u64 * self.slot_bytes
    }

    /// Whether every training view has a slot of its own (each is uploaded once).
    pub fn all_resident(&self) -> bool {
        self.slots >= self.views
    }

    /// The staging of one image's upload (a miss), live while the step that made it records.
    pub fn upload_bytes(&self) -> u64 {
        crate::gpu::encoder::upload_staging_bytes(pixels(self.slot_size) * 4)
    }
}

fn pixels((width, height): (u32, u32)) -> u64 {
    u64::from(width) * u64::from(height)
}

/// What the cache did since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImageCacheStats {
    /// Views uploaded (misses).
    pub uploads: u64,
    /// Views found resident.
    pub hits: u64,
    /// Views evicted to make room for another.
    pub evictions: u64,
    /// Uploads whose pixels were read from disk first (views not kept in host memory:
    /// [`View::is_streamed`]).
    pub disk_reads: u64,
}

/// One slot and the view it holds.
struct Slot {
    tensor: Tensor,
    view: usize,
    last_used: u64,
}

/// The GPU cache of training images (see the module's documentation).
pub struct ImageCache {
    plan: ImageCachePlan,
    /// Allocated on first use, at most `plan.slots`.
    slots: Vec<Slot>,
    /// The slot holding each training view.
    slot_of: Vec<Option<usize>>,
    /// Counts uses, for least-recently-used eviction.
    clock: u64,
    stats: ImageCacheStats,
}

impl ImageCache {
    /// An empty cache of `plan.slots` slots for `plan.views` training views; nothing is
    /// allocated until a view is asked for.
    pub fn new(plan: ImageCachePlan) -> ImageCache {
        ImageCache {
            plan,
            slots: Vec::with_capacity(plan.slots),
            slot_of: vec![None; plan.views],
            clock: 0,
            stats: ImageCacheStats::default(),
        }
    }

    /// Training view `view_index` (`view`, its image) on the GPU, `[height, width]` packed RGBA8.
    /// A miss records its upload into `enc`, so the upload runs after the work recorded before it
    /// and before the work recorded after. The tensor stays valid until a later call evicts its
    /// slot: record its uses before asking for another view.
    pub fn resident(
        &mut self,
        enc: &mut Encoder,
        view_index: usize,
        view: &View,
    ) -> Result<Tensor> {
        self.check(view_index, view)?;
        self.clock += 1;
        if let Some(slot) = self.slot_of[view_index] {
            self.stats.hits += 1;
            self.slots[slot].last_used = self.clock;
            return shaped(&self.slots[slot].tensor, view);
        }
        // A view not kept in host memory is read before any slot changes hands.
        let streamed = view.is_streamed();
        let with_pixels = view.resident()?;
        let slot = if self.slots.len() < self.plan.slots {
            let len = pixels(self.plan.slot_size) as usize;
            let tensor = Tensor::uninit(
                enc,
                DType::U32,
                &[len],
                MemoryCategory::Other,
                "dataset/image_cache",
            )?;
            self.slots.push(Slot {
                tensor,
                view: view_index,
                last_used: 0,
            });
            self.slots.len() - 1
        } else {
            let lru = (0..self.slots.len())
                .min_by_key(|&i| self.slots[i].last_used)
                .ok_or_else(|| Error::InvalidArgument {
                    op: "image cache",
                    detail: "the cache has no slots; size it with ImageCachePlan::for_views, \
                             which gives at least one per dataset with views"
                        .into(),
                })?;
            self.slot_of[self.slots[lru].view] = None;
            self.stats.evictions += 1;
            lru
        };
        let tensor = shaped(&self.slots[slot].tensor, view)?;
        tensor.write_bytes(enc, &with_pixels.image.pixels)?;
        self.stats.uploads += 1;
        self.stats.disk_reads += u64::from(streamed);
        self.slot_of[view_index] = Some(slot);
        self.slots[slot].view = view_index;
        self.slots[slot].last_used = self.clock;
        Ok(tensor)
    }

    /// Training view `view_index` if it is resident, without counting a use or changing the
    /// eviction order (evaluation scores training views through this).
    pub fn peek(&self, view_index: usize, view: &View) -> Result<Option<Tensor>> {
        self.check(view_index, view)?;
        self.slot_of[view_index]
            .map(|slot| shaped(&self.slots[slot].tensor, view))
            .transpose()
    }

    /// The resident views, most recently used first.
    pub fn resident_views(&self) -> Vec<usize> {
        let mut slots: Vec<&Slot> = self.slots.iter().collect();
        slots.sort_by_key(|s| std::cmp::Reverse(s.last_used));
        slots.iter().map(|s| s.view).collect()
    }

    /// Slots allocated so far (at most [`ImageCache::capacity_slots`]).
    pub fn slots_in_use(&self) -> usize {
        self.slots.len()
    }

    /// The most slots the cache allocates.
    pub fn capacity_slots(&self) -> usize {
        self.plan.slots
    }

    /// Device bytes of every slot the cache may allocate.
    pub fn capacity_bytes(&self) -> u64 {
        self.plan.bytes()
    }

    /// How the cache was sized.
    pub fn plan(&self) -> &ImageCachePlan {
        &self.plan
    }

    /// Uploads, hits and evictions so far.
    pub fn stats(&self) -> ImageCacheStats {
        self.stats
    }

    /// The `image_cache` object of `metrics.json`: slots, bytes, uploads, hits, evictions.
    pub fn metrics(&self) -> serde_json::Value {
        serde_json::json!({
            "slots": self.plan.slots,
            "bytes": self.plan.bytes(),
            "views": self.plan.views,
            "uploads": self.stats.uploads,
            "hits": self.stats.hits,
            "evictions": self.stats.evictions,
            "disk_reads": self.stats.disk_reads,
        })
    }

    /// One line for the start of training: the views, their host bytes and the GPU cache.
    pub fn summary(&self) -> String {
        let p = &self.plan;
        let plural = if p.slots == 1 { "" } else { "s" };
        let (slots, bytes) = (p.slots, format_bytes(p.bytes()));
        let gpu = match p.all_resident() {
            true => format!("all resident on the GPU, uploaded on first use ({bytes})"),
            false => format!(
                "GPU cache of {slots} slot{plural} ({bytes}), the rest streamed from host memory"
            ),
        };
        format!(
            "training images: {} views, {} as RGBA8; {gpu}",
            p.views,
            format_bytes(p.host_bytes)
        )
    }

    /// Refuses a view the cache was not sized for.
    fn check(&self, view_index: usize, view: &View) -> Result<()> {
        let size = (view.image.width, view.image.height);
        if view_index >= self.plan.views || pixels(size) > pixels(self.plan.slot_size) {
            return Err(Error::InvalidArgument {
                op: "image cache",
                detail: format!(
                    "view {view_index} ({}x{}) is not among the {} training views of at most {}x{} \
                     pixels the cache was sized for; size it from the dataset it serves",
                    size.0, size.1, self.plan.views, self.plan.slot_size.0, self.plan.slot_size.1
                ),
            });
        }
        Ok(())
    }
}

/// The first `width × height` words of `slot`, shaped `[height, width]`.
fn shaped(slot: &Tensor, view: &View) -> Result<Tensor> {
    let (width, height) = (view.image.width as usize, view.image.height as usize);
    slot.prefix((width * height) as u64)?
        .reshape(&[height, width])
}
