//! A partition plan over its scene (`wgsplat view PLAN/`): the overlay that draws the blocks'
//! cells, training bounds, labels and cameras over the rendered image, its geometry, and the
//! "Plan" panel.

pub mod geometry;
pub mod overlay;
mod panel;

#[cfg(test)]
mod geometry_tests;
#[cfg(test)]
pub(crate) mod overlay_tests;
