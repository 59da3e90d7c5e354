//! Layer 3: Adam ([`adam`]), k-NN scales ([`knn`]), the L1 + SSIM loss and metrics ([`loss`]),
//! LPIPS ([`lpips`]), MCMC densification ([`mcmc`]) and the
//! flattening regulariser ([`geometry`]), the depth–normal and distortion regularisers
//! ([`geometry_loss`]), each against CPU references on both kernel paths.

mod adam;
mod adam_packed;
mod exposure;
mod geometry;
mod geometry_loss;
mod knn;
mod loss;
mod lpips;
mod mcmc;
