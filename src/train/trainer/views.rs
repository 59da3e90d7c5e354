//! The training views as the trainer uses them: which view an iteration trains on, its camera,
//! image, background and loss options, and the check that every view fits one GPU binding.

use super::Trainer;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::gpu::{Encoder, GpuContext};
use crate::loss::LossOptions;
use crate::rng::SplitMix64;
use crate::splat::Camera;
use crate::splat::forward::image_bytes;
use crate::tensor::Tensor;
use crate::train::config::Background;

impl Trainer {
    /// The camera training view `view` renders with: the dataset's, moved by its learned
    /// correction when pose refinement is on.
    pub fn training_camera(&self, view: usize) -> Camera {
        let base = &self.dataset.train[view].camera;
        match &self.poses {
            Some(poses) => poses.camera(view, base),
            None => base.clone(),
        }
    }

    /// The random stream of one iteration: a pure function of the seed and the iteration, so a
    /// resumed run makes exactly the same choices as an uninterrupted one.
    pub(super) fn iteration_rng(&self, iteration: u64) -> SplitMix64 {
        SplitMix64::new(self.config.seed ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// The training view of an iteration: epoch `e` visits every view once, in an order shuffled
    /// from the seed and `e`.
    pub fn view_for(&self, iteration: u64) -> usize {
        let n = self.dataset.train.len();
        let epoch = iteration / n as u64;
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = SplitMix64::new(
            self.config
                .seed
                .wrapping_add(epoch.wrapping_mul(0xD1B5_4A32_D192_ED03)),
        );
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order[(iteration % n as u64) as usize]
    }

    /// Training view `view_index`'s image on the GPU, from the cache (a miss records its upload
    /// into `enc`; see [`ImageCache::resident`]).
    pub(super) fn training_image(
        &mut self,
        enc: &mut Encoder,
        view_index: usize,
    ) -> Result<Tensor> {
        let view = &self.dataset.train[view_index];
        self.image_cache.resident(enc, view_index, view)
    }

    pub(super) fn background(&self, rng: &mut SplitMix64) -> [f32; 3] {
        match self.config.background {
            Background::Random => [rng.unit(), rng.unit(), rng.unit()],
            fixed => crate::train::setup::background_color(fixed),
        }
    }
}

/// Refuses, before any image is uploaded, a dataset whose largest view (train or test) renders
/// into more than one storage binding of this adapter (the rasterizer's rule, `image_bytes` in
/// [`crate::splat::forward`]), naming the view and how much smaller it must be: a photograph
/// trained at full size (`-r 1`) can pass a mobile or browser adapter's 128 MiB binding limit,
/// where the 1,600-px default would not.
pub(super) fn check_views_fit_one_binding(ctx: &GpuContext, dataset: &Dataset) -> Result<()> {
    let bytes = |v: &crate::data::View| image_bytes(v.camera.width, v.camera.height);
    let Some(view) = dataset.views().max_by_key(|v| bytes(v)) else {
        return Ok(());
    };
    let max = ctx.page_bytes();
    let needed = bytes(view);
    if needed <= max {
        return Ok(());
    }
    let (width, height) = (view.camera.width, view.camera.height);
    let shrink = (2u32..)
        .find(|k| image_bytes(width.div_ceil(*k), height.div_ceil(*k)) <= max)
        .unwrap_or(u32::MAX);
    Err(Error::Overflow {
        what: format!(
            "view {} ({width}×{height}): the bytes of its render target ({} per pixel) in one GPU binding",
            view.name,
            image_bytes(1, 1)
        ),
        needed,
        max,
        hint: format!(
            "this adapter binds at most {} pixels per image; train at a lower resolution, {shrink}× \
             smaller on each side or more (a larger -r, or no -r for photographs: they are \
             then capped at 1,600 px wide)",
            max / image_bytes(1, 1)
        ),
    })
}

/// How a view's ground truth enters the loss and the metrics: composited on `background` by its
/// alpha, or (masked views) taken as it is with the alpha as each pixel's weight (masked pixels
/// count nowhere; see [`crate::loss`]).
pub fn view_loss_options(view: &crate::data::View, background: [f32; 3]) -> LossOptions {
    if view.is_masked() {
        LossOptions {
            background: None,
            mask_by_alpha: true,
            ..Default::default()
        }
    } else {
        LossOptions {
            background: Some(background),
            ..Default::default()
        }
    }
}
