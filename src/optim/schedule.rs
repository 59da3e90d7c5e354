//! Learning-rate schedules of 3D Gaussian Splatting: a log-linear decay for positions (3DGS's
//! `get_expon_lr_func`) and constants for every other attribute.

use super::adam::LearningRates;

/// 3DGS's `get_expon_lr_func`: log-linear interpolation from `lr_init` to `lr_final` over
/// `max_steps`, optionally multiplied during the first `delay_steps` by a factor that eases from
/// `delay_mult` up to 1 along a quarter sine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExponentialDecay {
    /// Rate at step 0.
    pub lr_init: f64,
    /// Rate at `max_steps` and after.
    pub lr_final: f64,
    /// Steps of the warm-up delay (0: none).
    pub delay_steps: u64,
    /// Factor at step 0 of the delay.
    pub delay_mult: f64,
    /// Step at which the rate reaches `lr_final`.
    pub max_steps: u64,
}

impl ExponentialDecay {
    /// The rate at `step`. Both ends zero give 0; if only one end is not positive (no logarithm)
    /// the interpolation is linear instead of log-linear.
    pub fn at(&self, step: u64) -> f64 {
        if self.lr_init == 0.0 && self.lr_final == 0.0 {
            return 0.0;
        }
        let delay_rate = if self.delay_steps > 0 {
            let progress = (step as f64 / self.delay_steps as f64).clamp(0.0, 1.0);
            self.delay_mult
                + (1.0 - self.delay_mult) * (0.5 * std::f64::consts::PI * progress).sin()
        } else {
            1.0
        };
        let t = if self.max_steps == 0 {
            1.0
        } else {
            (step as f64 / self.max_steps as f64).clamp(0.0, 1.0)
        };
        let rate = if self.lr_init > 0.0 && self.lr_final > 0.0 {
            (self.lr_init.ln() * (1.0 - t) + self.lr_final.ln() * t).exp()
        } else {
            self.lr_init * (1.0 - t) + self.lr_final * t
        };
        delay_rate * rate
    }
}

/// The learning rate of every parameter group as a function of the step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LearningRateSchedule {
    /// Positions (decaying).
    pub means: ExponentialDecay,
    /// Log scales.
    pub log_scales: f64,
    /// Rotations.
    pub quats: f64,
    /// Opacity logits.
    pub opacity_logits: f64,
    /// SH DC terms.
    pub sh_dc: f64,
    /// SH coefficients past DC.
    pub sh_rest: f64,
}

impl LearningRateSchedule {
    /// The 3DGS defaults for a scene of radius `scene_extent` (its `spatial_lr_scale`) trained
    /// for `max_steps`: positions 1.6e-4 × extent decaying to 1.6e-6 × extent (delay multiplier
    /// 0.01, no delay steps), SH DC 2.5e-3, SH rest 2.5e-3 / 20, opacity 0.05 (gsplat; see
    /// `TrainConfig::opacity_lr`), scale 5e-3,
    /// rotation 1e-3.
    pub fn three_dgs(scene_extent: f64, max_steps: u64) -> Self {
        LearningRateSchedule {
            means: ExponentialDecay {
                lr_init: 1.6e-4 * scene_extent,
                lr_final: 1.6e-6 * scene_extent,
                delay_steps: 0,
                delay_mult: 0.01,
                max_steps,
            },
            log_scales: 5e-3,
            quats: 1e-3,
            opacity_logits: 0.05,
            sh_dc: 2.5e-3,
            sh_rest: 2.5e-3 / 20.0,
        }
    }

    /// The rates at `step` (3DGS evaluates its schedule at the 1-based iteration number).
    pub fn at(&self, step: u64) -> LearningRates {
        LearningRates {
            means: self.means.at(step) as f32,
            log_scales: self.log_scales as f32,
            quats: self.quats as f32,
            opacity_logits: self.opacity_logits as f32,
            sh_dc: self.sh_dc as f32,
            sh_rest: self.sh_rest as f32,
        }
    }
}
