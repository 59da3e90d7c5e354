// Shared by the 3DGS-MCMC stages (src/train/mcmc.rs fills the generated `McmcParams`).
//
// Sources are drawn in proportion to opacity by systematic resampling over an integer CDF: each
// Gaussian's weight is its opacity quantised to `weight_scale` levels (at least 1 when eligible),
// the weights are scanned into an inclusive CDF with total T, and Gaussian i receives
// f(cdf[i]) - f(cdf[i] - w[i]) of the K draws, where f(c) = min(K, floor(c / T * K + offset)).
// f is monotone and evaluated identically for neighbours, so the draws telescope to exactly K.

struct McmcParams {
    // Gaussians in this page.
    count: u32,
    // Global index of the page's first Gaussian.
    page_offset: u32,
    // K, the number of draws.
    samples: u32,
    // 0 = relocation (dead Gaussians have weight 0 and are flagged), 1 = growth (all eligible).
    mode: u32,
    // Integer levels of opacity 1 in the quantised weights.
    weight_scale: f32,
    // Opacity at or below which a Gaussian is dead.
    min_opacity: f32,
    // Systematic sampling offset in [0, 1).
    offset: f32,
    // Floats per row (`mcmc_clear_rows.wgsl`).
    width: u32,
}

const MODE_RELOCATE: u32 = 0u;

fn mcmc_item(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return workgroup_index(wid, nwg) * 256u + lid;
}

// Dead: opacity at or below the threshold, or a non-finite logit.
fn mcmc_is_dead(logit: f32, min_opacity: f32) -> bool {
    return !is_finite_f32(logit) || sigmoid(logit) <= min_opacity;
}
