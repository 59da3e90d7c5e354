//! Layer 2, splatting. So far: the camera, spherical harmonics and the CPU reference renderer that
//! the GPU rasterizer will be tested against.

pub mod camera;
pub mod reference;
pub mod sh;

pub use camera::Camera;
pub mod gaussians;
pub mod uniform;

pub use gaussians::GaussianTensors;
pub use uniform::{AlphaMode, RenderUniform};

pub mod backward;
pub mod forward;
pub mod raster;
