//! The projection of a camera path's frames, nerfstudio's `camera_type`, and the image circle of
//! a lens: the pixels it has rays for.
//!
//! nerfstudio builds a path's cameras in `get_path_from_json` (its `render.py`): for
//! `"perspective"` and `"fisheye"` alike the focal length is three.js's
//! `(render_height / 2) / tan(fov / 2)` from the frame's vertical `fov` in degrees, the same in x
//! and y, and the principal point is the image centre; a `"fisheye"` camera then casts rays by
//! the ideal equidistant model, `θ = |(pixel − centre) / f|` from the axis (its `generate_rays`).
//! So a fisheye frame's `fov` is not the angle it sees: it names the focal length a perspective
//! camera of that `fov` would have, and the fisheye sees `(render_height / 2) / f` radians up and
//! down from its axis. Here that camera is [`CameraLens::fisheye`] with no distortion
//! ([`CameraType::lens`]) at that focal length.
//!
//! nerfstudio clips `θ` at 180°, so its pixels farther than `π f` from the centre all look
//! straight back; wgsplat has no ray there: every pixel outside a lens's image circle
//! ([`image_circle`]: the image of [`CameraLens::limit`], just short of 180° for a fisheye) is the
//! background ([`mask_outside_circle`]), as the dataset loader leaves such pixels out of the loss.

use crate::data::image::RgbaImage;
use crate::splat::{Camera, CameraLens, LensKind};

/// The projection of every frame of a camera path: nerfstudio's `camera_type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CameraType {
    /// The pinhole camera (`"perspective"`, also a file without `camera_type`).
    #[default]
    Perspective,
    /// nerfstudio's ideal equidistant fisheye (`"fisheye"`, module docs): pixel radius `f θ`.
    Fisheye,
}

impl CameraType {
    /// The type a `camera_type` names (`None`: the field is absent, a perspective path), or an
    /// error saying which types are rendered.
    pub fn parse(name: Option<&str>) -> Result<CameraType, String> {
        match name {
            None | Some("perspective") => Ok(CameraType::Perspective),
            Some("fisheye") => Ok(CameraType::Fisheye),
            Some(other @ ("equirectangular" | "omnidirectional" | "vr180")) => Err(format!(
                "camera_type {other:?} is a panorama, which wgsplat does not render (its \
                 rasterizer projects through one lens, not onto a sphere); export the path as \
                 \"perspective\" or \"fisheye\""
            )),
            Some(other) => Err(format!(
                "camera_type {other:?} is not a camera wgsplat knows; use \"perspective\" or \
                 \"fisheye\""
            )),
        }
    }

    /// The name nerfstudio writes for it.
    pub fn name(self) -> &'static str {
        match self {
            CameraType::Perspective => "perspective",
            CameraType::Fisheye => "fisheye",
        }
    }

    /// The type of a path made for cameras with `lens`: a fisheye's, else perspective (a path
    /// holds no distortion; the frames keep the camera's focal length, not its coefficients).
    pub fn of_lens(lens: &CameraLens) -> CameraType {
        if lens.kind == LensKind::Fisheye {
            CameraType::Fisheye
        } else {
            CameraType::Perspective
        }
    }

    /// The rasterizer's lens of a frame of this type.
    pub fn lens(self) -> CameraLens {
        match self {
            CameraType::Perspective => CameraLens::PINHOLE,
            CameraType::Fisheye => CameraLens::fisheye([0.0; 4], [0.0; 2], [0.0; 2]),
        }
    }
}

/// The radius of `lens`'s image circle in normalised image units (pixels ÷ focal length): the
/// image of the radius or angle up to which it sees one to one ([`CameraLens::limit`]), along
/// the x axis (as `data::lens` finds it: tangential terms aside). `None` where every pixel has a
/// ray (the pinhole, the FOV model, a perspective lens that never folds).
pub fn image_circle(lens: &CameraLens) -> Option<f64> {
    let limit = f64::from(lens.limit) * (1.0 - 1e-6);
    let point = match lens.kind {
        LensKind::Pinhole | LensKind::Fov => return None,
        LensKind::Perspective if limit >= 1e5 => return None,
        LensKind::Perspective => [limit, 0.0, 1.0],
        LensKind::Fisheye => [limit.sin(), 0.0, limit.cos()],
    };
    let radius = lens.project([1.0; 2], [0.0; 2], point)?.pixel[0];
    (radius.is_finite() && radius > 0.0).then_some(radius)
}

/// Paints every pixel of `image` (rendered by `camera`) outside its lens's image circle
/// ([`image_circle`]) with `camera`'s background, opaque; returns how many were painted. A
/// pixel is outside when its centre is.
pub fn mask_outside_circle(image: &mut RgbaImage, camera: &Camera) -> usize {
    let Some(radius) = image_circle(&camera.lens) else {
        return 0;
    };
    let background = camera
        .background
        .map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
    let (fx, fy) = (f64::from(camera.fx), f64::from(camera.fy));
    let (cx, cy) = (f64::from(camera.cx), f64::from(camera.cy));
    let width = image.width as usize;
    let mut painted = 0;
    for (index, pixel) in image.pixels.chunks_exact_mut(4).enumerate() {
        let x = ((index % width) as f64 + 0.5 - cx) / fx;
        let y = ((index / width) as f64 + 0.5 - cy) / fy;
        if x.hypot(y) > radius {
            pixel.copy_from_slice(&[background[0], background[1], background[2], 255]);
            painted += 1;
        }
    }
    painted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_as_nerfstudio_writes_them() {
        for kind in [CameraType::Perspective, CameraType::Fisheye] {
            assert_eq!(CameraType::parse(Some(kind.name())), Ok(kind));
        }
        assert_eq!(CameraType::parse(None), Ok(CameraType::Perspective));
        let panorama = CameraType::parse(Some("equirectangular")).unwrap_err();
        assert!(panorama.contains("panorama") && panorama.contains("\"fisheye\""));
        let odd = CameraType::parse(Some("orthographic")).unwrap_err();
        assert!(odd.contains("\"orthographic\"") && odd.contains("\"perspective\""));
        assert_eq!(CameraType::Fisheye.lens().kind, LensKind::Fisheye);
        assert!(CameraType::Perspective.lens().is_pinhole());
        assert_eq!(
            CameraType::of_lens(&CameraLens::fisheye(
                [0.1, 0.0, 0.0, 0.0],
                [0.0; 2],
                [0.0; 2]
            )),
            CameraType::Fisheye
        );
        assert_eq!(
            CameraType::of_lens(&CameraLens::perspective(
                [0.1, 0.0, 0.0, 0.0, 0.0, 0.0],
                [0.0; 2]
            )),
            CameraType::Perspective
        );
    }

    /// nerfstudio's fisheye: a ray `θ` from the axis lands `f θ` from the centre, so the image
    /// circle of the ideal fisheye is just short of `π` (180°), and the pinhole has none.
    #[test]
    fn the_ideal_fisheye_is_equidistant_out_to_180_degrees() {
        let lens = CameraType::Fisheye.lens();
        for theta in [0.1f64, 1.0, 2.0, 3.0] {
            let p = [theta.sin() * 0.6, theta.sin() * 0.8, theta.cos()].map(|v| v * 2.5);
            let pixel = lens.project([10.0; 2], [5.0; 2], p).unwrap().pixel;
            let expected = [5.0 + 10.0 * theta * 0.6, 5.0 + 10.0 * theta * 0.8];
            for k in 0..2 {
                assert!((pixel[k] - expected[k]).abs() < 1e-6 * 10.0, "{pixel:?}");
            }
        }
        let circle = image_circle(&lens).unwrap();
        assert!((circle - std::f64::consts::PI).abs() < 0.02 * std::f64::consts::PI);
        assert!(circle < std::f64::consts::PI);
        assert_eq!(image_circle(&CameraLens::PINHOLE), None);
        assert_eq!(image_circle(&CameraLens::fov(0.9)), None);
    }

    #[test]
    fn pixels_outside_the_circle_become_the_background() {
        let mut camera = Camera::facing_origin(40, 30, 3.0, [0.2, 0.4, 1.0]);
        camera.lens = CameraType::Fisheye.lens();
        // A circle of radius ≈ 3.13 f = 9.4 pixels about the centre (20, 15).
        (camera.fx, camera.fy) = (3.0, 3.0);
        let mut image = RgbaImage {
            width: 40,
            height: 30,
            pixels: vec![7; 40 * 30 * 4],
        };
        let painted = mask_outside_circle(&mut image, &camera);
        let radius = image_circle(&camera.lens).unwrap() * 3.0;
        let mut expected = 0;
        for y in 0..30 {
            for x in 0..40 {
                let r = (f64::from(x) + 0.5 - 20.0).hypot(f64::from(y) + 0.5 - 15.0);
                let pixel = &image.pixels[4 * (y * 40 + x) as usize..][..4];
                if r > radius {
                    expected += 1;
                    assert_eq!(pixel, [51, 102, 255, 255], "({x}, {y}) at {r}");
                } else {
                    assert_eq!(pixel, [7; 4], "({x}, {y}) at {r}");
                }
            }
        }
        assert_eq!(painted, expected);
        assert!(expected > 800 && expected < 1200 - 250, "{expected}");
        // A pinhole image is left alone.
        camera.lens = CameraLens::PINHOLE;
        assert_eq!(mask_outside_circle(&mut image, &camera), 0);
    }
}
