//! Layer 2, splatting: the camera, spherical harmonics, projection, binning, sorting, the tiled
//! rasterizer and its backward pass, and the CPU reference renderer they are tested against.

pub mod camera;
pub mod lens;
pub mod reference;
pub mod sh;

pub use camera::Camera;
pub use lens::{CameraLens, LensKind};
pub mod gaussians;
pub mod uniform;

pub use gaussians::GaussianTensors;
pub use uniform::{AlphaMode, RasterMode, RenderUniform};

pub mod backward;
pub mod forward;
pub mod geometry;
pub mod pose;
pub mod raster;
