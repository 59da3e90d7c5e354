//! COLMAP's camera models: names, ids and parameter lists (`src/colmap/sensor/models.h`); the
//! projection of each is in [`super::lens`].

/// A COLMAP camera model, in COLMAP's model-id order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CameraModel {
    /// `f, cx, cy`.
    SimplePinhole,
    /// `fx, fy, cx, cy`.
    Pinhole,
    /// `f, cx, cy, k`.
    SimpleRadial,
    /// `f, cx, cy, k1, k2`.
    Radial,
    /// `fx, fy, cx, cy, k1, k2, p1, p2`.
    OpenCv,
    /// `fx, fy, cx, cy, k1, k2, k3, k4`.
    OpenCvFisheye,
    /// `fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, k5, k6`.
    FullOpenCv,
    /// `fx, fy, cx, cy, omega`.
    Fov,
    /// `f, cx, cy, k`.
    SimpleRadialFisheye,
    /// `f, cx, cy, k1, k2`.
    RadialFisheye,
    /// `fx, fy, cx, cy, k1, k2, p1, p2, k3, k4, sx1, sy1`.
    ThinPrismFisheye,
    /// `fx, fy, cx, cy, k0..k5, p0, p1, s0..s3` (Project Aria); read but not supported.
    RadTanThinPrismFisheye,
}

impl CameraModel {
    /// Every model, index = COLMAP model id.
    pub const ALL: [CameraModel; 12] = [
        CameraModel::SimplePinhole,
        CameraModel::Pinhole,
        CameraModel::SimpleRadial,
        CameraModel::Radial,
        CameraModel::OpenCv,
        CameraModel::OpenCvFisheye,
        CameraModel::FullOpenCv,
        CameraModel::Fov,
        CameraModel::SimpleRadialFisheye,
        CameraModel::RadialFisheye,
        CameraModel::ThinPrismFisheye,
        CameraModel::RadTanThinPrismFisheye,
    ];

    /// The model with COLMAP model id `id`.
    pub fn from_id(id: u32) -> Option<CameraModel> {
        Self::ALL.get(id as usize).copied()
    }

    /// The model COLMAP (or nerfstudio's `camera_model`) calls `name`.
    pub fn from_name(name: &str) -> Option<CameraModel> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// COLMAP's name of the model.
    pub fn name(self) -> &'static str {
        match self {
            CameraModel::SimplePinhole => "SIMPLE_PINHOLE",
            CameraModel::Pinhole => "PINHOLE",
            CameraModel::SimpleRadial => "SIMPLE_RADIAL",
            CameraModel::Radial => "RADIAL",
            CameraModel::OpenCv => "OPENCV",
            CameraModel::OpenCvFisheye => "OPENCV_FISHEYE",
            CameraModel::FullOpenCv => "FULL_OPENCV",
            CameraModel::Fov => "FOV",
            CameraModel::SimpleRadialFisheye => "SIMPLE_RADIAL_FISHEYE",
            CameraModel::RadialFisheye => "RADIAL_FISHEYE",
            CameraModel::ThinPrismFisheye => "THIN_PRISM_FISHEYE",
            CameraModel::RadTanThinPrismFisheye => "RAD_TAN_THIN_PRISM_FISHEYE",
        }
    }

    /// The parameter names, in COLMAP's order.
    pub fn param_names(self) -> &'static [&'static str] {
        match self {
            CameraModel::SimplePinhole => &["f", "cx", "cy"],
            CameraModel::Pinhole => &["fx", "fy", "cx", "cy"],
            CameraModel::SimpleRadial | CameraModel::SimpleRadialFisheye => &["f", "cx", "cy", "k"],
            CameraModel::Radial | CameraModel::RadialFisheye => &["f", "cx", "cy", "k1", "k2"],
            CameraModel::OpenCv => &["fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2"],
            CameraModel::OpenCvFisheye => &["fx", "fy", "cx", "cy", "k1", "k2", "k3", "k4"],
            CameraModel::FullOpenCv => &[
                "fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2", "k3", "k4", "k5", "k6",
            ],
            CameraModel::Fov => &["fx", "fy", "cx", "cy", "omega"],
            CameraModel::ThinPrismFisheye => &[
                "fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2", "k3", "k4", "sx1", "sy1",
            ],
            CameraModel::RadTanThinPrismFisheye => &[
                "fx", "fy", "cx", "cy", "k0", "k1", "k2", "k3", "k4", "k5", "p0", "p1", "s0", "s1",
                "s2", "s3",
            ],
        }
    }
}
