//! The parts of the wgsplat viewer that the desktop app and the browser page share: the scene
//! camera and its controls, drawing a model into an egui texture with wgsplat's rasterizer, the
//! view options panel, and streaming a level-of-detail folder with its panel.

pub mod lod;
pub mod lod_panel;
pub mod present;
pub mod render;
pub mod scene;
pub mod views;
