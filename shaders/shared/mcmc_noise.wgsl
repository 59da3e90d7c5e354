// Shared by the MCMC regulariser and position noise (src/train/mcmc_step.rs fills the generated `NoiseParams`).

struct NoiseParams {
    // Gaussians in this page.
    count: u32,
    // Global index of the page's first Gaussian.
    page_offset: u32,
    // Seed of this iteration's noise.
    seed: u32,
    _pad0: u32,
    // noise_lr × the current position learning rate.
    noise_scale: f32,
    // λ_opacity / N: gradient of λ mean(opacity) per unit d(opacity).
    opacity_reg: f32,
    // λ_scale / (3N): gradient of λ mean(scale) per unit d(scale).
    scale_reg: f32,
    _pad1: u32,
}
