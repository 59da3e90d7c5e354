//! Scoring a trainer's model: PSNR, SSIM and LPIPS of its renders of the held-out views (or of
//! the training views when the dataset has none), on the background it trained with.

use super::events::{Evaluation, ScoredViews, ViewScore};
use super::trainer::Trainer;
use super::trainer::view_loss_options;
use crate::data::View;
use crate::data::image::pack_rgba8;
use crate::error::{Error, Result};
use crate::gpu::MemoryCategory;
use crate::loss::lpips::{Lpips, LpipsImage};
use crate::loss::{ImageMetrics, record_metrics};
use crate::splat::forward::{RenderOptions, render};
use crate::tensor::Tensor;
use crate::train::budget::lpips_fits_views;

impl Trainer {
    /// The background test views are scored on: the training background, or black when that is
    /// random.
    pub fn evaluation_background(&self) -> [f32; 3] {
        super::setup::background_color(self.config.background)
    }

    /// Mean PSNR, SSIM and LPIPS over the test views (the training views when there are none; see
    /// [`Trainer::scored_views`]) at the current SH degree, rendered on the training
    /// background (black when it is random) with the RGBA ground truth composited on the same.
    /// A model trained on white has no reason to be transparent where the views are empty, so
    /// scoring it on black would count its (correct) white background as error.
    pub fn evaluate(&self) -> Result<Evaluation> {
        self.evaluate_unless_stopped(&|| false)?
            .ok_or_else(|| stopped_early("evaluate"))
    }

    /// [`Trainer::evaluate`], asking `stop` before each view: `None` when it said to stop (a
    /// signal during a final evaluation that may take minutes on a large scene), with nothing
    /// scored.
    pub fn evaluate_unless_stopped(&self, stop: &dyn Fn() -> bool) -> Result<Option<Evaluation>> {
        self.evaluate_with_degree(self.active_sh_degree(), stop)
    }

    /// Which views [`Trainer::evaluate`] scores: the test views, or the training views when the
    /// dataset has none.
    pub fn scored_views(&self) -> ScoredViews {
        if self.dataset.test.is_empty() {
            ScoredViews::Train
        } else {
            ScoredViews::Test
        }
    }

    /// The views [`Trainer::evaluate`] scores (see [`Trainer::scored_views`]).
    pub fn scored_view_list(&self) -> &[View] {
        match self.scored_views() {
            ScoredViews::Test => &self.dataset.test,
            ScoredViews::Train => &self.dataset.train,
        }
    }

    /// [`Trainer::evaluate`] with every SH band the model has.
    pub fn evaluate_at_full_degree(&self) -> Result<Evaluation> {
        self.evaluate_with_degree(self.state.params.max_sh_degree(), &|| false)?
            .ok_or_else(|| stopped_early("evaluate_at_full_degree"))
    }

    /// The scores at `sh_degree`, or `None` when `stop` said to stop before one of the views.
    fn evaluate_with_degree(
        &self,
        sh_degree: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Evaluation>> {
        let all_views = self.scored_view_list();
        // A view whose mask excludes every pixel has nothing to score (its PSNR would be
        // infinite): it is left out, as the dataset's note says.
        let views: Vec<(usize, &View)> = all_views
            .iter()
            .enumerate()
            .filter(|(_, view)| view.has_valid_pixels())
            .collect();
        if views.is_empty() && !all_views.is_empty() {
            return Err(Error::InvalidArgument {
                op: "evaluate",
                detail: format!(
                    "the masks of all {} {} views exclude every pixel, so there is nothing to score; check the \
                     masks (0 = ignore the pixel) or score other views (--test-every, --test-list)",
                    all_views.len(),
                    self.scored_views().name()
                ),
            });
        }
        let background = self.evaluation_background();
        let lpips = self.lpips_network(all_views)?;
        let mut per_view = Vec::with_capacity(views.len());
        for &(index, view) in &views {
            if stop() {
                return Ok(None);
            }
            // A view not kept in host memory is read for its scores.
            let view_with_pixels = view.resident()?;
            let view: &View = &view_with_pixels;
            // Training views render with their learned pose corrections, test views as given.
            let mut camera = match self.scored_views() {
                ScoredViews::Train => self.training_camera(index),
                ScoredViews::Test => view.camera.clone(),
            };
            camera.background = background;
            // Only the image is kept: the forward's other outputs go before the view is scored,
            // as the memory plan assumes (`train::budget::evaluation`).
            let image = render(
                &self.ctx,
                &self.state.params,
                &camera,
                RenderOptions {
                    sh_degree,
                    raster_mode: self.config.raster_mode,
                    ..Default::default()
                },
            )?
            .image;
            // One submission scores the view: metrics and LPIPS, read back together.
            let mut enc = self.ctx.encoder("evaluation");
            let options = view_loss_options(view, background);
            // With exposure compensation, INRIA's protocol: the view's transform is fitted on
            // its left half, and the right half is scored.
            let (scored, gt) = match self.config.exposure {
                true => exposure_scored(&mut enc, &image, view, background)?,
                false => {
                    let gt = self.ground_truth(&mut enc, index, view)?;
                    (image, gt)
                }
            };
            let stats = record_metrics(&mut enc, &scored, &gt, &options)?.record_read(&mut enc)?;
            let distance = lpips
                .map(|network| {
                    let mask = view.is_masked().then_some(&gt);
                    let rendered = LpipsImage {
                        mask,
                        ..LpipsImage::new(&scored)
                    };
                    let gt = LpipsImage {
                        image: &gt,
                        background: options.background,
                        mask,
                    };
                    network
                        .record(&mut enc, rendered, gt)?
                        .record_read(&mut enc)
                })
                .transpose()?;
            self.ctx.submit(enc)?;
            let metrics = ImageMetrics::from_stats(&stats.wait::<f32>(&self.ctx)?)?;
            let lpips = distance
                .map(|distance| Lpips::value_of(&distance.wait::<f32>(&self.ctx)?))
                .transpose()?;
            per_view.push(ViewScore {
                name: view.name.clone(),
                psnr: metrics.psnr,
                ssim: metrics.ssim,
                lpips,
            });
        }
        let n = views.len().max(1) as f64;
        let mean = |score: fn(&ViewScore) -> f64| per_view.iter().map(score).sum::<f64>() / n;
        Ok(Some(Evaluation {
            masked: views.iter().filter(|(_, v)| v.is_masked()).count(),
            views: self.scored_views(),
            count: views.len(),
            psnr: mean(|v| v.psnr),
            ssim: mean(|v| v.ssim),
            lpips: lpips.map(|_| mean(|v| v.lpips.unwrap_or(0.0))),
            exposure_fitted: self.config.exposure,
            per_view,
        }))
    }

    /// The ground truth of scored view `index`: from the image cache when it is a training view
    /// resident there (without changing what the cache keeps), else uploaded.
    fn ground_truth(
        &self,
        enc: &mut crate::gpu::Encoder,
        index: usize,
        view: &View,
    ) -> Result<Tensor> {
        let resident = match self.scored_views() {
            ScoredViews::Train => self.image_cache.peek(index, view)?,
            ScoredViews::Test => None,
        };
        if let Some(gt) = resident {
            return Ok(gt);
        }
        let (w, h) = (view.image.width as usize, view.image.height as usize);
        Tensor::from_slice(
            enc,
            &pack_rgba8(&view.image.pixels),
            &[h, w],
            MemoryCategory::FrameScratch,
            "eval/gt",
        )
    }

    /// The LPIPS network when this evaluation scores LPIPS: enabled, and every view at least
    /// [`crate::loss::lpips::MIN_IMAGE_SIDE`] on each side of what is scored (the right half
    /// with exposure compensation).
    fn lpips_network(&self, views: &[View]) -> Result<Option<&Lpips>> {
        if !self.config.lpips || !lpips_fits_views(views, self.config.exposure) {
            return Ok(None);
        }
        if let Some(network) = self.lpips.get() {
            return Ok(Some(network));
        }
        let network = Lpips::alexnet(&self.ctx)?;
        Ok(Some(self.lpips.get_or_init(|| network)))
    }
}

/// The error of an evaluation without a stop that stopped all the same (none can: its stop
/// never asks), in place of a panic.
fn stopped_early(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        detail: "the evaluation stopped before scoring every view, though nothing asked it to"
            .into(),
    }
}

/// The right halves of `render` and of `view`'s image, the render through the colour transform
/// that best maps its left half onto the view's (least squares; [`crate::loss::exposure`]).
fn exposure_scored(
    enc: &mut crate::gpu::Encoder,
    render: &Tensor,
    view: &View,
    background: [f32; 3],
) -> Result<(Tensor, Tensor)> {
    use crate::loss::exposure::reference::{apply, fit_left};
    let (w, h) = (view.image.width as usize, view.image.height as usize);
    let rendered: Vec<f32> = render.read(enc.ctx())?;
    let target: Vec<f32> = view
        .rgb_on(background)
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 1.0])
        .collect();
    let exposed = apply(&rendered, &fit_left(&rendered, &target, w, w / 2));
    let (left, right) = (w / 2, w - w / 2);
    let mut scored = Vec::with_capacity(right * h * 4);
    let mut gt = Vec::with_capacity(right * h * 4);
    for row in 0..h {
        let span = (row * w + left) * 4..(row * w + w) * 4;
        scored.extend_from_slice(&exposed[span.clone()]);
        gt.extend_from_slice(&view.image.pixels[span]);
    }
    let scored = Tensor::from_slice(
        enc,
        &scored,
        &[h, right, 4],
        MemoryCategory::FrameScratch,
        "eval/exposed_right_half",
    )?;
    let gt = Tensor::from_slice(
        enc,
        &pack_rgba8(&gt),
        &[h, right],
        MemoryCategory::FrameScratch,
        "eval/gt_right_half",
    )?;
    Ok((scored, gt))
}
