//! The built-in scenes photographed through designed lenses (`wgsplat::data::lens_design`,
//! `wgsplat::data::lens_capture`): every model's lens sees the field of view it was designed
//! for, with no fold, and refuses fields it cannot see; a 190° fisheye photographs the objects
//! scene beside and behind its axis; a capture reads back through the COLMAP loader with its
//! lens, masks and test split.

use wgsplat::data::builtin::{BuiltinOptions, scene};
use wgsplat::data::colmap::read_cameras_text;
use wgsplat::data::lens::{CameraModel, Lens};
use wgsplat::data::lens_capture::{objects_cameras, pixel_angle, write_objects_through};
use wgsplat::data::lens_design::{FieldLens, design_lens, is_fisheye_model};
use wgsplat::data::raytrace::{PIXEL_SAMPLES, RayTable};
use wgsplat::data::{Dataset, LoadOptions, Split};

use super::TempDir;

/// Every model a scene can be photographed through.
const MODELS: [CameraModel; 11] = [
    CameraModel::SimplePinhole,
    CameraModel::Pinhole,
    CameraModel::SimpleRadial,
    CameraModel::Radial,
    CameraModel::OpenCv,
    CameraModel::FullOpenCv,
    CameraModel::Fov,
    CameraModel::SimpleRadialFisheye,
    CameraModel::RadialFisheye,
    CameraModel::OpenCvFisheye,
    CameraModel::ThinPrismFisheye,
];

/// The angle of the ray of pixel position `pixel` from the axis, in degrees.
fn angle(lens: &Lens, pixel: [f64; 2]) -> f64 {
    let d = lens.ray(pixel).expect("a ray at the image edge");
    d[2].clamp(-1.0, 1.0).acos().to_degrees()
}

#[test]
fn designed_lenses_see_their_field_of_view_and_refuse_what_they_cannot() {
    for model in MODELS {
        let fisheye = is_fisheye_model(model);
        let fovs: &[f64] = if fisheye {
            &[40.0, 90.0, 150.0, 190.0, 250.0, 300.0]
        } else {
            &[40.0, 90.0, 150.0, 169.0]
        };
        for &fov in fovs {
            for (width, height) in [(64, 64), (96, 72)] {
                let what = format!("{} at {fov}° on {width}x{height}", model.name());
                let field = design_lens(model, fov, width, height).unwrap_or_else(|e| {
                    panic!("{what}: {e}");
                });
                let lens = field.lens;
                assert_eq!(lens.model, model);
                let (w, h) = (f64::from(width), f64::from(height));
                assert_eq!([lens.cx, lens.cy], [0.5 * w, 0.5 * h], "{what}");
                // The two edge rays of the middle row span the field of view.
                let across = angle(&lens, [0.0, 0.5 * h]) + angle(&lens, [w, 0.5 * h]);
                assert!((across - fov).abs() < 1e-4, "{what}: sees {across}°");
                // Every distorted model has non-zero coefficients, and COLMAP's parameters
                // describe the same lens.
                let params = lens.colmap_params();
                let head = if model.param_names()[1] == "fy" { 4 } else { 3 };
                let distortion = &params[head..];
                if !matches!(model, CameraModel::SimplePinhole | CameraModel::Pinhole) {
                    assert!(distortion.iter().all(|&c| c != 0.0), "{what}: {params:?}");
                }
                assert_eq!(Lens::from_params(model, &params).unwrap(), lens, "{what}");
                // Fisheyes end at their image circle, the others see their frame.
                let limit = if fisheye {
                    0.5 * fov.to_radians()
                } else {
                    std::f64::consts::PI
                };
                assert_eq!(field.field_limit, limit, "{what}");
            }
        }
        let too_wide = if fisheye { 301.0 } else { 170.0 };
        let err = design_lens(model, too_wide, 64, 64).unwrap_err();
        assert!(
            err.contains(model.name()) && err.contains("out of range"),
            "{err}"
        );
        assert!(design_lens(model, 0.5, 64, 64).is_err());
        assert!(design_lens(model, f64::NAN, 64, 64).is_err());
    }
    // A wide perspective lens on a very tall image folds before the corner: refused by name.
    let err = design_lens(CameraModel::SimpleRadial, 150.0, 32, 160).unwrap_err();
    assert!(
        err.contains("SIMPLE_RADIAL") && err.contains("--fov"),
        "{err}"
    );
}

/// The objects scene as the wide-lens tests photograph it: 48² images, 7 training views.
fn small_objects() -> BuiltinOptions {
    BuiltinOptions {
        resolution: 48,
        train_views: 7,
        points: 300,
        ..BuiltinOptions::default()
    }
}

#[test]
fn a_190_degree_fisheye_photographs_the_objects_beside_and_behind_its_axis() {
    let options = small_objects();
    let size = options.resolution;
    let field: FieldLens = design_lens(CameraModel::OpenCvFisheye, 190.0, size, size).unwrap();
    let rays =
        RayTable::new(&field.lens, size, size, &PIXEL_SAMPLES, field.field_limit).whole_pixels();
    let views = objects_cameras(&options, &field);
    assert_eq!(views.len(), 8);
    let scene = scene();
    let (mut hits, mut beyond) = (0usize, 0usize);
    for (name, camera, _) in &views {
        let image = scene.render_rays(camera, &rays);
        let (mut view_hits, mut view_beyond) = (0usize, 0usize);
        for y in 0..size {
            for x in 0..size {
                if image.pixels[((y * size + x) * 4 + 3) as usize] == 0 {
                    continue;
                }
                view_hits += 1;
                let theta = pixel_angle(&field, x, y).expect("a hit pixel has a ray");
                assert!(
                    theta <= field.field_limit + 0.05,
                    "{name}: hit outside the circle"
                );
                if theta > std::f64::consts::FRAC_PI_2 {
                    view_beyond += 1;
                }
            }
        }
        assert!(
            view_beyond > 0,
            "{name}: nothing beyond 90° of {view_hits} hits"
        );
        hits += view_hits;
        beyond += view_beyond;
    }
    let share = beyond as f64 / hits as f64;
    assert!(
        share >= 0.05,
        "{beyond} of {hits} hit pixels ({:.1}%) lie beyond 90° from the axis",
        100.0 * share
    );
}

#[test]
fn lens_captures_read_back_with_their_lens_masks_and_test_split() {
    let options = BuiltinOptions {
        resolution: 32,
        ..small_objects()
    };
    for (model, fov) in [
        (CameraModel::OpenCv, 90.0),
        (CameraModel::OpenCvFisheye, 190.0),
    ] {
        let dir = TempDir::new("lens-capture");
        let field = design_lens(model, fov, 32, 32).unwrap();
        let capture = write_objects_through(&dir.0, &options, &field).unwrap();
        assert_eq!(capture.views.len(), 8);
        assert_eq!(capture.points, 300);
        let cameras = read_cameras_text(&dir.0.join("sparse/0/cameras.txt")).unwrap();
        assert_eq!(cameras.len(), 1);
        assert_eq!(cameras[0].lens.model, model);
        for (read, written) in cameras[0]
            .lens
            .colmap_params()
            .iter()
            .zip(field.lens.colmap_params())
        {
            assert!((read - written).abs() <= 1e-12 * written.abs().max(1.0));
        }
        let eval = LoadOptions {
            split: Split::Default,
            ..LoadOptions::default()
        };
        let loaded = Dataset::load(&dir.0, &eval).unwrap();
        assert_eq!(
            (loaded.train.len(), loaded.test.len()),
            (7, 1),
            "{}",
            model.name()
        );
        assert_eq!(loaded.test[0].name, "objects_0000.png");
        assert!(loaded.views().all(|v| v.is_masked()), "{}", model.name());
        let mask = wgsplat::data::image::read_image(&dir.0.join("masks/objects_0003.png")).unwrap();
        let at = |x: u32, y: u32| mask.pixels[((y * 32 + x) * 4) as usize];
        assert_eq!(at(16, 16), 255);
        // A 190° fisheye's corners lie outside its image circle; an OPENCV lens sees its frame.
        let corner = if model == CameraModel::OpenCvFisheye {
            0
        } else {
            255
        };
        assert_eq!([at(0, 0), at(31, 0), at(0, 31), at(31, 31)], [corner; 4]);
    }
}
