//! [`Trainer::step`]: one training iteration (its stages are listed on the method), and the stage
//! profiler that times them.

use super::*;

/// A loss readback in flight, with one sum per parameter attribute: NaN or infinity anywhere in
/// an attribute makes its sum non-finite, so the model's health is checked with the loss for a
/// few bytes of readback.
struct PendingCheck {
    iteration: u64,
    loss: TensorReadback,
    /// The six attribute sums, in [`ATTRIBUTE_NAMES`](crate::splat::gaussians::ATTRIBUTE_NAMES) order.
    attribute_sums: TensorReadback,
}

impl Trainer {
    /// Runs one iteration. Returns the loss of an earlier iteration when a readback completed
    /// (every `loss_readback_every` iterations).
    ///
    /// Two submissions: the projection (whose 8-byte count readback sizes everything after it),
    /// then binning, rasterization, loss, backward and Adam in one encoder. When `eval_every`
    /// is due, the evaluation runs after the optimizer step and before densification, and
    /// [`Trainer::run_until`] reports it.
    pub fn step(&mut self) -> Result<Option<LossReport>> {
        crate::gpu::readback::blocking("a training step", self.step_async())
    }

    /// [`Trainer::step`] in the form that also runs in a browser page, where every readback (the
    /// projection's counts, the loss, a refinement's counts) is awaited.
    pub async fn step_async(&mut self) -> Result<Option<LossReport>> {
        if let Some(profile) = &mut self.profile {
            profile.begin(&self.ctx)?;
        }
        self.refine_if_due().await?;
        self.lap(Stage::Densify)?;
        let view_index = self.view_for(self.iteration);
        let mut rng = self.iteration_rng(self.iteration);
        let background = self.background(&mut rng);
        self.rng_state = rng.next_u64();
        let mut camera: Camera = self.training_camera(view_index);
        camera.background = background;
        let (regularise, normals) =
            crate::train::geometry::regularises(&self.config, self.iteration);
        let mut enc = self.ctx.encoder("train: projection");
        let projection = record_projection(
            &mut enc,
            &self.state.params,
            &camera,
            RenderOptions {
                sh_degree: self.active_sh_degree(),
                raster_mode: self.config.raster_mode,
                normals,
                ..Default::default()
            },
        )?;
        self.ctx.submit(enc)?;
        let counted = projection.counts(&self.ctx).await?;
        if let Some(profile) = &mut self.profile {
            profile.count(counted.num_visible, counted.num_intersections);
        }
        self.lap(Stage::Project)?;
        let mut enc = self.ctx.encoder("train step");
        let binned = record_binning(&mut enc, counted)?;
        let mut enc = self.boundary(enc, Stage::Sort)?;
        // The geometry regularisers' renders share the colour render's sorts.
        let geometry = match regularise {
            true => {
                let rays = self.geometry_rays.rays(&mut enc, &camera)?;
                crate::train::geometry::record_geometry_gradients(
                    &mut enc,
                    &binned,
                    &rays,
                    &self.config,
                    self.dataset.extent,
                )?
            }
            false => Vec::new(),
        };
        let fwd = record_raster(&mut enc, binned.without_normals())?;
        let mut enc = self.boundary(enc, Stage::Raster)?;
        let loss_options = LossOptions {
            ssim_weight: self.config.ssim_weight,
            ..view_loss_options(&self.dataset.train[view_index], background)
        };
        // With exposure compensation the loss sees the render through the view's transform.
        let exposed = match &self.exposure {
            Some(exposure) => Some(crate::loss::exposure::record_apply(
                &mut enc,
                &fwd.image,
                &exposure.transforms,
                view_index,
            )?),
            None => None,
        };
        let gt = self.training_image(&mut enc, view_index)?;
        let loss = loss_and_grad(
            &mut enc,
            exposed.as_ref().unwrap_or(&fwd.image),
            &gt,
            &loss_options,
        )?;
        drop(exposed);
        let lr = self.exposure_lr() as f32;
        let image_grad = match &mut self.exposure {
            Some(exposure) => {
                exposure.record_step(&mut enc, &fwd.image, &loss.grad, view_index, lr)?
            }
            None => loss.grad.clone(),
        };
        let mut enc = self.boundary(enc, Stage::Loss)?;
        let wants_statistics =
            self.with_step(|strategy, _, _, step| Ok(strategy.wants_statistics(step)))?;
        let pose = self.poses.is_some() && self.iteration >= self.config.pose_opt_from;
        let pose_gradient = self.with_step(|strategy, _, state, step| {
            crate::train::gradient_step::record_gradient_step(
                &mut enc,
                strategy,
                state,
                step,
                fwd,
                &image_grad,
                geometry,
                crate::train::gradient_step::GradientWants {
                    statistics: wants_statistics,
                    pose,
                },
            )
        })?;
        let pose_pending = pose_gradient
            .map(|g| g.record_read(&mut enc))
            .transpose()?
            .map(|readback| (readback, self.pose_lr()));
        let mut enc = self.boundary(enc, Stage::Backward)?;
        self.with_step(|strategy, _, state, step| strategy.after_optimizer(&mut enc, state, step))?;
        self.iteration += 1;
        let mut report = None;
        let mut check = None;
        if self
            .iteration
            .is_multiple_of(self.config.loss_readback_every)
            || self.iteration == self.config.iterations
        {
            let sums = Tensor::uninit(
                &mut enc,
                DType::F32,
                &[6],
                MemoryCategory::Other,
                "train/attribute_sums",
            )?;
            for (i, attribute) in self.state.params.attributes().into_iter().enumerate() {
                let sum = crate::ops::reduce::reduce(
                    &mut enc,
                    attribute,
                    crate::ops::reduce::ReduceOp::Sum,
                )?;
                crate::ops::copy_range(&mut enc, &sum, 0, &sums, i as u64, 1)?;
            }
            check = Some(PendingCheck {
                iteration: self.iteration,
                loss: loss.stats.record_read(&mut enc)?,
                attribute_sums: sums.record_read(&mut enc)?,
            });
        }
        self.ctx.submit(enc)?;
        self.lap(Stage::Adam)?;
        // The correction of this step's view, before the next step renders (see `train::pose`).
        if let (Some((readback, lr)), Some(poses)) = (pose_pending, &mut self.poses) {
            let world = readback.fetch::<f32>(&self.ctx).await?;
            let base = &self.dataset.train[view_index].camera;
            poses.step(view_index, base, &world, lr, f64::from(self.dataset.extent))?;
        }
        if let Some(pending) = check {
            let iteration = pending.iteration;
            let values = pending.loss.fetch::<f32>(&self.ctx).await?;
            let (loss_value, mse) = (values[0], values[3]);
            let sums = pending.attribute_sums.fetch::<f32>(&self.ctx).await?;
            for (&value, name) in sums.iter().zip(crate::splat::gaussians::ATTRIBUTE_NAMES) {
                if !value.is_finite() {
                    return Err(Error::NonFinite {
                        what: format!("the sum of parameter {name} at iteration {iteration}"),
                        value,
                    });
                }
            }
            if !loss_value.is_finite() {
                return Err(Error::NonFinite {
                    what: format!("the training loss at iteration {iteration}"),
                    value: loss_value,
                });
            }
            let psnr = if mse > 0.0 {
                -10.0 * mse.log10()
            } else {
                f32::INFINITY
            };
            report = Some(LossReport {
                iteration,
                loss: loss_value,
                train_psnr: psnr,
            });
        }
        // The model a run ends with lies inside its crop box: Gaussians drift out between
        // densifications and after the last one.
        if self.iteration == self.config.iterations {
            self.crop_to_box().await?;
        }
        // Score the model the optimizer step produced. Its refinement waits for the next step
        // (see `refine_if_due`), so the evaluation never measures a reset or a fresh split.
        self.due_evaluation = None;
        if self.config.eval_every > 0 && self.iteration.is_multiple_of(self.config.eval_every) {
            self.due_evaluation = Some(self.evaluate()?);
        }
        Ok(report)
    }

    /// The exposure transforms' learning rate at the current iteration: INRIA's exponential decay
    /// from `exposure_lr_init` to `exposure_lr_final` over the run.
    fn exposure_lr(&self) -> f64 {
        self.decayed_over_run(self.config.exposure_lr_init, self.config.exposure_lr_final)
    }

    /// The pose corrections' learning rate at the current iteration: an exponential decay from
    /// `pose_lr_init` to `pose_lr_final` over the run.
    fn pose_lr(&self) -> f64 {
        self.decayed_over_run(self.config.pose_lr_init, self.config.pose_lr_final)
    }

    /// A rate decaying exponentially from `init` at the first iteration to `last` at the last,
    /// at the current iteration.
    fn decayed_over_run(&self, init: f64, last: f64) -> f64 {
        ExponentialDecay {
            lr_init: init,
            lr_final: last,
            delay_steps: 0,
            delay_mult: 1.0,
            max_steps: self.config.iterations,
        }
        .at(self.iteration)
    }

    /// Drops the Gaussians outside the configuration's crop box (`--crop-box`; nothing without
    /// one); returns how many were dropped. The last step runs it, so the model a run ends with
    /// lies inside the box; run it before writing a model taken earlier (`--stop-at`).
    pub async fn crop_to_box(&mut self) -> Result<u64> {
        if self.config.crop_box.is_none() {
            return Ok(0);
        }
        let lrs = self.schedule.at(self.iteration);
        let step = super::step_info(
            &self.config,
            &self.dataset,
            self.iteration,
            self.rng_state,
            &lrs,
        );
        let dropped = crate::train::bounds::crop_to_box(&self.ctx, &mut self.state, &step).await?;
        if dropped > 0 {
            self.ctx.trim();
        }
        Ok(dropped)
    }

    /// [`Trainer::crop_to_box`], waiting for its readback.
    pub fn crop_to_box_now(&mut self) -> Result<u64> {
        crate::gpu::readback::blocking("cropping to the crop box", self.crop_to_box())
    }

    /// Runs the refinement (densification, opacity reset, MCMC relocation and growth) due after
    /// the iteration last taken, once, at the start of the next step.
    ///
    /// Deferring it to the next step means that between steps the model is always the one the
    /// optimizer produced: what is scored, saved, shown or written at any stop (the final
    /// iteration, `--stop-at`, a snapshot) is a model someone can use, and the final iteration
    /// never refines since no step follows it. A checkpoint taken between steps records that the
    /// refinement is still pending, so a resumed run takes it exactly where the uninterrupted run
    /// would.
    async fn refine_if_due(&mut self) -> Result<()> {
        self.last_refinement = RefinementReport::default();
        if self.iteration <= self.refined_through {
            return Ok(());
        }
        self.refined_through = self.iteration;
        let count_before = self.state.len();
        if self.iteration < self.config.iterations {
            // As `with_step`, with the hooks awaited.
            let lrs = self.schedule.at(self.iteration);
            let step = super::step_info(
                &self.config,
                &self.dataset,
                self.iteration,
                self.rng_state,
                &lrs,
            );
            self.last_refinement = self
                .strategy
                .after_step(&self.ctx, &mut self.state, &step)
                .await?;
            // At every refinement of the schedule (MCMC's noise moves Gaussians between them).
            let c = &self.config;
            let refinement =
                c.refines_after(self.iteration, c.densify_until.max(c.mcmc_refine_until));
            if let Some(inside) = self.keep_inside.clone().filter(|_| refinement) {
                self.last_refinement.out_of_bounds =
                    crate::train::bounds::prune_outside(&self.ctx, &mut self.state, &step, &inside)
                        .await?;
            }
            if let Some(path) = self.camera_path.as_ref().filter(|_| refinement) {
                self.last_refinement.on_camera_path = crate::train::clearance::prune_on_path(
                    &self.ctx,
                    &mut self.state,
                    &step,
                    path,
                    self.config.path_clearance,
                )
                .await?;
            }
        }
        // The model's tensors of the old size are in the pool now, and no request will ask for
        // that size again: give them back rather than hold them until the pool's limit.
        if self.state.len() != count_before {
            self.ctx.trim();
        }
        Ok(())
    }

    /// Attaches a stage profiler: later iterations drain the device at every stage boundary and
    /// charge the time to that stage (see [`StageProfile`]).
    pub fn enable_profiling(&mut self) {
        self.profile = Some(StageProfile::default());
    }

    /// The stage timings collected since [`Trainer::enable_profiling`].
    pub fn profile(&self) -> Option<&StageProfile> {
        self.profile.as_ref()
    }

    /// With a profiler, submits `enc` and charges the time to `stage`; otherwise returns `enc`.
    fn boundary(&mut self, enc: Encoder, stage: Stage) -> Result<Encoder> {
        match &mut self.profile {
            Some(profile) => profile.boundary(enc, stage),
            None => Ok(enc),
        }
    }

    fn lap(&mut self, stage: Stage) -> Result<()> {
        match &mut self.profile {
            Some(profile) => profile.lap(&self.ctx, stage),
            None => Ok(()),
        }
    }
}
