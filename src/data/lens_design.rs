//! Lenses to photograph the built-in scenes through: for a COLMAP camera model and a field of
//! view across the image width, a lens with realistic distortion of that model, its focal length
//! solved so that it sees exactly that field of view, checked to have no fold across its image.
//!
//! **Coefficients.** Each is given as `c` in units of the lens's rim `s`: the model's parameter
//! is `c / sⁿ`, `n` the power of the radius it multiplies (2 for k1 and k4, 4 for k2 and k5, 6
//! for k3 and k6, 8 for a fisheye's k4, 1 for p1, p2, sx1, sy1 relative to the radius). `s` is
//! the rim's normalised radius `tan(fov/2)`, at least 1, for the perspective models (so up to a
//! 90° view the table holds the parameters themselves), and the rim's angle `fov/2`, at least
//! π/2, for the fisheyes (a 180° `OPENCV_FISHEYE` has k1 = −0.05 / (π/2)² = −0.0203). Every lens's
//! rim is then distorted as much as the reference's, and the map stays monotonic.
//!
//! | model | `c` |
//! |---|---|
//! | `SIMPLE_PINHOLE`, `PINHOLE` | none |
//! | `SIMPLE_RADIAL` | k = −0.05 |
//! | `RADIAL` | k1 = −0.12, k2 = 0.015 |
//! | `OPENCV` | k1 = −0.15, k2 = 0.02, p1 = 0.0012, p2 = −0.0008 |
//! | `FULL_OPENCV` | k1 = −0.05, k2 = 0.01, p1 = 0.0012, p2 = −0.0008, k3 = 0.0002, k4 = 0.1, k5 = 0.005, k6 = 0.0001 (rational) |
//! | `FOV` | ω = the field of view (not scaled) |
//! | `SIMPLE_RADIAL_FISHEYE` | k = −0.06 |
//! | `RADIAL_FISHEYE` | k1 = −0.05, k2 = −0.012 |
//! | `OPENCV_FISHEYE` | k1 = −0.05, k2 = −0.015, k3 = 0.004, k4 = −0.001 |
//! | `THIN_PRISM_FISHEYE` | `OPENCV_FISHEYE`'s k1..k4, p1 = 0.002, p2 = −0.0015, sx1 = 0.003, sy1 = −0.002 |
//!
//! Moderate barrel distortion: the perspective models bring the rim 5–13 % closer to the centre
//! than a pinhole of the same focal length, the fisheyes 6 % closer than an equidistant fisheye.
//!
//! **Field of view.** The focal length (`fx = fy`, the principal point at the image centre) is
//! solved so that the rays of the left and right edges of the middle row lie `fov / 2` from the
//! axis each (summed, exactly `fov`). The fisheyes are circular: their image circle spans the
//! width, and pixels whose rays lie more than `fov / 2` from the axis see nothing. The other
//! models see their whole frame where they have a ray; they stop short of 90° from the axis, so
//! they refuse [`MAX_PERSPECTIVE_FOV_DEGREES`] and wider.

use std::f64::consts::{FRAC_PI_2, PI};

use super::lens::{CameraModel, Lens};

/// The narrowest field of view a lens is designed for, in degrees.
pub const MIN_FOV_DEGREES: f64 = 1.0;
/// The perspective models (and `FOV`) see less than this across the width, in degrees: at 170°
/// the rim's normalised radius is already 11.4 times the centre's scale.
pub const MAX_PERSPECTIVE_FOV_DEGREES: f64 = 170.0;
/// The fisheyes see at most this across the width, in degrees (the widest fisheye lenses made see
/// about 280°).
pub const MAX_FISHEYE_FOV_DEGREES: f64 = 300.0;

/// A designed lens and the part of its image that photographs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldLens {
    /// The lens (its focal length solved for the field of view).
    pub lens: Lens,
    /// Rays further than this from the axis (radians) are outside the image circle and see
    /// nothing; π for the models without an image circle.
    pub field_limit: f64,
    /// The field of view across the width it was designed for, in degrees.
    pub fov_degrees: f64,
}

/// True for the models whose distortion is a fisheye's (equidistant angle first).
pub fn is_fisheye_model(model: CameraModel) -> bool {
    matches!(
        model,
        CameraModel::OpenCvFisheye
            | CameraModel::SimpleRadialFisheye
            | CameraModel::RadialFisheye
            | CameraModel::ThinPrismFisheye
    )
}

/// The largest field of view across the width (exclusive, degrees) that `model` can be designed
/// for.
pub fn max_fov_degrees(model: CameraModel) -> f64 {
    if is_fisheye_model(model) {
        MAX_FISHEYE_FOV_DEGREES
    } else {
        MAX_PERSPECTIVE_FOV_DEGREES
    }
}

/// The lens of `model` (coefficients in the module docs) that sees `fov_degrees` across a
/// `width` × `height` image. The error says what is wrong: a field of view out of the model's
/// range, an unsupported model, or a lens that folds or has no ray inside its image (an image
/// much taller than wide through a wide perspective lens).
pub fn design_lens(
    model: CameraModel,
    fov_degrees: f64,
    width: u32,
    height: u32,
) -> Result<FieldLens, String> {
    let max = max_fov_degrees(model);
    let fisheye = is_fisheye_model(model);
    let in_range = fov_degrees >= MIN_FOV_DEGREES
        && if fisheye {
            fov_degrees <= max
        } else {
            fov_degrees < max
        };
    if !in_range {
        return Err(format!(
            "a field of view of {fov_degrees}° is out of range for {}: it takes {MIN_FOV_DEGREES}° to {}{max}°{}",
            model.name(),
            if fisheye { "" } else { "less than " },
            if fisheye {
                ""
            } else {
                " (a perspective model cannot see 90° from its axis); use a fisheye model \
                 (OPENCV_FISHEYE, ...) for wider views"
            }
        ));
    }
    if width == 0 || height == 0 {
        return Err(format!(
            "a {width}x{height} image has no pixels to design a lens for"
        ));
    }
    let half = 0.5 * fov_degrees.to_radians();
    let params = distortion_params(model, half)?;
    let (w, h) = (f64::from(width), f64::from(height));
    let lens_of = |f: f64| {
        let mut all = vec![f, f, 0.5 * w, 0.5 * h];
        if model.param_names()[1] != "fy" {
            all.remove(1);
        }
        all.extend(&params);
        Lens::from_params(model, &all)
    };
    // The summed angles of the two edge rays fall as the focal length grows; bisect on its log.
    let across = |f: f64| -> Option<f64> {
        let lens = lens_of(f).ok()?;
        let angle = |x: f64| lens.ray([x, 0.5 * h]).map(|d| d[2].clamp(-1.0, 1.0).acos());
        Some(angle(0.0)? + angle(w)?)
    };
    let target = fov_degrees.to_radians();
    let (mut lo, mut hi) = ((w * 1e-4).ln(), (w * 1e4).ln());
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        match across(mid.exp()) {
            Some(angle) if angle <= target => hi = mid,
            _ => lo = mid,
        }
    }
    let focal = hi.exp();
    let reached = across(focal).unwrap_or(f64::NAN);
    if (reached - target).abs() >= 1e-6 || reached.is_nan() {
        return Err(format!(
            "no focal length makes the {} lens see {fov_degrees}° across the width (it reaches {:.3}°)",
            model.name(),
            reached.to_degrees()
        ));
    }
    let lens = lens_of(focal)?;
    let field_limit = if fisheye { half } else { PI };
    check_monotonic(&lens, width, height, field_limit)?;
    Ok(FieldLens {
        lens,
        field_limit,
        fov_degrees,
    })
}

/// COLMAP's distortion parameters of `model` (after the focal lengths and principal point) for a
/// lens whose rim lies `half` (radians) from the axis: the module docs' table, scaled.
fn distortion_params(model: CameraModel, half: f64) -> Result<Vec<f64>, String> {
    use CameraModel::*;
    // Perspective: the rim's normalised radius, at least 1. Fisheye: its angle, at least π/2.
    let s = if is_fisheye_model(model) {
        half.max(FRAC_PI_2)
    } else if half < FRAC_PI_2 {
        half.tan().max(1.0)
    } else {
        f64::INFINITY
    };
    let (s2, s4, s6, s8) = (s.powi(2), s.powi(4), s.powi(6), s.powi(8));
    let fisheye = [-0.05 / s2, -0.015 / s4, 0.004 / s6, -0.001 / s8];
    Ok(match model {
        SimplePinhole | Pinhole => vec![],
        SimpleRadial => vec![-0.05 / s2],
        Radial => vec![-0.12 / s2, 0.015 / s4],
        OpenCv => vec![-0.15 / s2, 0.02 / s4, 0.0012 / s, -0.0008 / s],
        FullOpenCv => vec![
            -0.05 / s2,
            0.01 / s4,
            0.0012 / s,
            -0.0008 / s,
            0.0002 / s6,
            0.1 / s2,
            0.005 / s4,
            0.0001 / s6,
        ],
        Fov => vec![2.0 * half],
        SimpleRadialFisheye => vec![-0.06 / s2],
        RadialFisheye => vec![-0.05 / s2, -0.012 / s4],
        OpenCvFisheye => fisheye.to_vec(),
        ThinPrismFisheye => vec![
            fisheye[0],
            fisheye[1],
            0.002 / s,
            -0.0015 / s,
            fisheye[2],
            fisheye[3],
            0.003 / s,
            -0.002 / s,
        ],
        RadTanThinPrismFisheye => {
            return Err(
                "RAD_TAN_THIN_PRISM_FISHEYE is not supported; choose another camera model".into(),
            );
        }
    })
}

/// Checks that `lens` maps the directions its `width` × `height` image sees (out to
/// `field_limit` from the axis, or to the widest ray of its frame) one to one and with a positive
/// Jacobian, on a polar grid of directions: every direction's pixel has that direction as its
/// ray, and the pixel moves outwards and turns with the direction.
fn check_monotonic(lens: &Lens, width: u32, height: u32, field_limit: f64) -> Result<(), String> {
    let (w, h) = (f64::from(width), f64::from(height));
    let corners = [[0.0, 0.0], [w, 0.0], [0.0, h], [w, h]];
    let mut widest = 0.0f64;
    for corner in corners {
        match lens.ray(corner) {
            Some(d) => widest = widest.max(d[2].clamp(-1.0, 1.0).acos()),
            // A circular fisheye's corners lie outside its image circle, the FOV model's beyond
            // the 90° it ends at.
            None if field_limit < PI => widest = field_limit,
            None if lens.model == CameraModel::Fov => widest = widest.max(FRAC_PI_2 - 1e-3),
            None => {
                return Err(format!(
                    "the {} lens has no ray at the image corner ({}, {}) of the {width}x{height} image: \
                     its distortion folds before the corner; use a narrower --fov or a squarer image",
                    lens.model.name(),
                    corner[0],
                    corner[1]
                ));
            }
        }
    }
    let limit = widest.min(field_limit);
    const RINGS: usize = 96;
    const SPOKES: usize = 48;
    let direction = |theta: f64, phi: f64| {
        let (st, ct) = theta.sin_cos();
        let (sp, cp) = phi.sin_cos();
        [st * cp, st * sp, ct]
    };
    for i in 1..=RINGS {
        let theta = limit * i as f64 / RINGS as f64;
        let step = 1e-5 * limit.max(1e-3);
        for j in 0..SPOKES {
            let phi = std::f64::consts::TAU * j as f64 / SPOKES as f64;
            let fold = || {
                format!(
                    "the {} lens folds {:.1}° from its axis; use a narrower --fov",
                    lens.model.name(),
                    theta.to_degrees()
                )
            };
            let d = direction(theta, phi);
            let p = lens.project_ray(d).ok_or_else(fold)?;
            let back = lens.ray(p).ok_or_else(fold)?;
            let error = (0..3).map(|k| (back[k] - d[k]).abs()).fold(0.0, f64::max);
            let inner = lens.project_ray(direction(theta - step, phi));
            let turned = lens.project_ray(direction(theta, phi + 1e-4));
            let (Some(inner), Some(turned)) = (inner, turned) else {
                return Err(fold());
            };
            let out = [p[0] - inner[0], p[1] - inner[1]];
            let around = [turned[0] - p[0], turned[1] - p[1]];
            if error > 1e-7 || out[0] * around[1] - out[1] * around[0] <= 0.0 {
                return Err(fold());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fold_check_finds_a_fisheye_folding_inside_its_circle() {
        // θd = θ (1 − 0.3 θ²) turns back at θ = 1/√0.9 rad, 60.4° from the axis.
        let lens =
            Lens::from_params(CameraModel::SimpleRadialFisheye, &[40.0, 32.0, 32.0, -0.3]).unwrap();
        assert_eq!(check_monotonic(&lens, 64, 64, 55f64.to_radians()), Ok(()));
        let err = check_monotonic(&lens, 64, 64, 80f64.to_radians()).unwrap_err();
        assert!(err.contains("SIMPLE_RADIAL_FISHEYE lens folds"), "{err}");
        // The same lens without the fold is accepted out to 80°.
        let mild = Lens::from_params(CameraModel::SimpleRadialFisheye, &[40.0, 32.0, 32.0, -0.03])
            .unwrap();
        assert_eq!(check_monotonic(&mild, 64, 64, 80f64.to_radians()), Ok(()));
    }
}
