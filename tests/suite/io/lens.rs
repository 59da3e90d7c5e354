//! The lens models against OpenCV (`tests/fixtures/lens/opencv_reference.json`, written by the
//! committed `make_opencv_reference.py` with `opencv-python-headless`): projection
//! (`cv2.projectPoints`, `cv2.fisheye.distortPoints`), its inverse (`cv2.undistortPoints`,
//! `cv2.fisheye.undistortPoints`) and the undistortion map (`initUndistortRectifyMap`) to within
//! 1e-3 px, and the resampled image (`cv2.remap`, bicubic) to within OpenCV's fixed-point
//! interpolation error. Also: every model's inverse undoes its projection, every model's ray
//! (`Lens::ray`) is the direction its projection sends to that pixel, a fisheye's beyond 90° from
//! the axis too, parameters are checked with errors that name them, and the undistorted camera
//! follows COLMAP's choices.

use serde_json::Value;
use wgsplat::data::image::read_image;
use wgsplat::data::lens::{CameraModel, Lens};
use wgsplat::data::undistort::{MAX_HALF_FOV_DEGREES, Undistortion};
use wgsplat::testing::compare_close;

/// The tolerance the issue asks of the geometry, in pixels.
const PIXEL_TOLERANCE: f32 = 1e-3;

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lens")
}

fn reference() -> Value {
    let text = std::fs::read_to_string(fixture_dir().join("opencv_reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn lens_of(case: &Value) -> (Lens, u32, u32) {
    let model = CameraModel::from_name(case["model"].as_str().unwrap()).unwrap();
    let lens = Lens::from_params(model, &numbers(&case["params"])).unwrap();
    let size = |k: &str| case[k].as_u64().unwrap() as u32;
    (lens, size("width"), size("height"))
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(numbers).collect()
}

#[test]
fn projection_matches_opencv() {
    for case in reference()["cases"].as_array().unwrap() {
        let (lens, _, _) = lens_of(case);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for row in rows(&case["project"]) {
            let p = lens.project([row[0], row[1]]);
            got.extend(p.map(|v| v as f32));
            want.extend([row[2] as f32, row[3] as f32]);
        }
        let what = format!("{} projection (pixels)", case["model"]);
        compare_close(&what, &got, &want, PIXEL_TOLERANCE, 0.0).unwrap();
    }
}

#[test]
fn inverse_matches_opencv() {
    for case in reference()["cases"].as_array().unwrap() {
        let (lens, _, _) = lens_of(case);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for row in rows(&case["unproject"]) {
            let n = lens.unproject([row[0], row[1]]).unwrap_or_else(|| {
                panic!("{}: no inverse at pixel {:?}", case["model"], &row[..2])
            });
            // In pixels of the undistorted image (normalised units times the focal length).
            got.extend([(n[0] * lens.fx) as f32, (n[1] * lens.fy) as f32]);
            want.extend([(row[2] * lens.fx) as f32, (row[3] * lens.fy) as f32]);
        }
        let what = format!("{} undistorted points (pixels)", case["model"]);
        compare_close(&what, &got, &want, PIXEL_TOLERANCE, 1e-9).unwrap();
    }
}

#[test]
fn undistortion_map_and_image_match_opencv() {
    let source = read_image(&fixture_dir().join("source.png")).unwrap();
    for case in reference()["cases"].as_array().unwrap() {
        let (lens, width, height) = lens_of(case);
        let target = Lens::pinhole(lens.fx, lens.fy, lens.cx, lens.cy);
        let undistortion = Undistortion::between(&lens, (width, height), target, (width, height));
        let step = case["map_step"].as_u64().unwrap() as u32;
        let want_map = rows(&case["map"]);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        let mut i = 0;
        for row in (0..height).step_by(step as usize) {
            for col in (0..width).step_by(step as usize) {
                got.extend(undistortion.source_position(col, row));
                want.extend([want_map[i][0] as f32, want_map[i][1] as f32]);
                i += 1;
            }
        }
        let what = format!("{} undistortion map (pixels)", case["model"]);
        compare_close(&what, &got, &want, PIXEL_TOLERANCE, 0.0).unwrap();

        // The image (both bicubic, a = -0.75): OpenCV quantises positions to 1/32 px and its
        // weights to fixed point, so values may differ by a level or two; compare where both
        // have all sixteen taps inside the source.
        let file = case["undistorted_image"].as_str().unwrap();
        let opencv = read_image(&fixture_dir().join(file)).unwrap();
        let (ours, _) = undistortion.apply(&source).unwrap();
        let (mut got, mut want, mut compared) = (Vec::new(), Vec::new(), 0);
        for row in 0..height {
            for col in 0..width {
                let [sx, sy] = undistortion.source_position(col, row);
                let inside =
                    sx >= 1.5 && sy >= 1.5 && sx < width as f32 - 1.5 && sy < height as f32 - 1.5;
                if !inside {
                    continue;
                }
                compared += 1;
                got.extend(ours.pixel(col, row)[..3].iter().map(|&v| f32::from(v)));
                want.extend(opencv.pixel(col, row)[..3].iter().map(|&v| f32::from(v)));
            }
        }
        assert!(
            compared * 2 > (width * height) as usize,
            "{}: only {compared} pixels compared",
            case["model"]
        );
        let what = format!("{} undistorted image (8-bit levels)", case["model"]);
        compare_close(&what, &got, &want, 2.0, 0.0).unwrap();
    }
}

#[test]
fn comparisons_fail_on_corrupted_geometry() {
    // The helper the tests above rely on rejects a 2e-3 px error at the 1e-3 px tolerance.
    let case = &reference()["cases"][0];
    let (lens, _, _) = lens_of(case);
    let row = &rows(&case["project"])[5];
    let p = lens.project([row[0], row[1]]);
    let got = [p[0] as f32 + 2e-3, p[1] as f32];
    let want = [row[2] as f32, row[3] as f32];
    assert!(compare_close("corrupted", &got, &want, PIXEL_TOLERANCE, 0.0).is_err());
    // A wrong coefficient is far outside the tolerance.
    let mut params = numbers(&case["params"]);
    params[4] += 1e-3;
    let wrong = Lens::from_params(lens.model, &params).unwrap();
    let q = wrong.project([row[0], row[1]]);
    assert!(compare_close("k1 off", &q.map(|v| v as f32), &want, PIXEL_TOLERANCE, 0.0).is_err());
}

/// Parameters for every supported model (COLMAP order) with moderate distortion.
fn every_model() -> Vec<(CameraModel, Vec<f64>)> {
    use CameraModel::*;
    vec![
        (SimplePinhole, vec![50.0, 32.0, 24.0]),
        (Pinhole, vec![50.0, 52.0, 32.0, 24.0]),
        (SimpleRadial, vec![50.0, 32.0, 24.0, -0.08]),
        (Radial, vec![50.0, 32.0, 24.0, -0.1, 0.02]),
        (
            OpenCv,
            vec![50.0, 52.0, 32.0, 24.0, -0.1, 0.02, 0.001, -0.002],
        ),
        (
            FullOpenCv,
            vec![
                50.0, 52.0, 32.0, 24.0, -0.1, 0.02, 0.001, -0.002, 0.003, 0.02, -0.004, 0.001,
            ],
        ),
        (
            OpenCvFisheye,
            vec![30.0, 31.0, 32.0, 24.0, 0.05, -0.01, 0.002, -0.0005],
        ),
        (Fov, vec![40.0, 41.0, 32.0, 24.0, 0.9]),
        (SimpleRadialFisheye, vec![30.0, 32.0, 24.0, 0.03]),
        (RadialFisheye, vec![30.0, 32.0, 24.0, 0.03, -0.005]),
        (
            ThinPrismFisheye,
            vec![
                30.0, 31.0, 32.0, 24.0, 0.05, -0.01, 0.001, -0.001, 0.002, -0.0005, 0.001, -0.002,
            ],
        ),
    ]
}

#[test]
fn every_model_inverts_its_projection() {
    for (model, params) in every_model() {
        let lens = Lens::from_params(model, &params).unwrap();
        let mut worst = 0.0f64;
        for i in -8..=8 {
            for j in -6..=6 {
                let pixel = [32.0 + 3.5 * f64::from(i), 24.0 + 3.5 * f64::from(j)];
                let n = lens
                    .unproject(pixel)
                    .unwrap_or_else(|| panic!("{model:?} at {pixel:?}"));
                let back = lens.project(n);
                worst = worst.max((back[0] - pixel[0]).hypot(back[1] - pixel[1]));
            }
        }
        assert!(
            worst < 1e-7,
            "{}: round trip off by {worst} px",
            model.name()
        );
    }
}

/// The unit direction at angle `theta` from the axis and azimuth `phi` (OpenCV axes).
fn direction(theta: f64, phi: f64) -> [f64; 3] {
    [
        theta.sin() * phi.cos(),
        theta.sin() * phi.sin(),
        theta.cos(),
    ]
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn every_model_rays_are_the_directions_its_projection_sends_there() {
    for (model, params) in every_model() {
        let lens = Lens::from_params(model, &params).unwrap();
        let (mut worst_ray, mut worst_pixel) = (0.0f64, 0.0f64);
        // Directions up to 40° from the axis, inside every model's valid region here.
        for i in 0..=8 {
            for j in 0..12 {
                let theta = (40.0 * f64::from(i) / 8.0).to_radians();
                let d = direction(theta, std::f64::consts::TAU * f64::from(j) / 12.0);
                let pixel = lens.project([d[0] / d[2], d[1] / d[2]]);
                let ray = lens
                    .ray(pixel)
                    .unwrap_or_else(|| panic!("{} has no ray at {pixel:?}", model.name()));
                worst_ray = worst_ray.max(distance(&ray, &d));
                // project_ray is the same projection, and a ray of any length projects alike.
                let scaled = d.map(|v| 3.0 * v);
                worst_pixel = worst_pixel.max(distance(&lens.project_ray(scaled).unwrap(), &pixel));
            }
        }
        assert!(worst_ray < 1e-9, "{}: ray off by {worst_ray}", model.name());
        assert!(
            worst_pixel < 1e-9,
            "{}: project_ray off by {worst_pixel} px",
            model.name()
        );
        // Behind a perspective camera there is no pixel.
        if !lens.is_fisheye() {
            assert_eq!(lens.project_ray([0.1, 0.0, -1.0]), None, "{}", model.name());
        }
    }
}

#[test]
fn a_fisheye_ray_lies_beyond_90_degrees_where_unproject_has_none() {
    let (k1, k2, k3, k4) = (-0.01, -0.001, 0.0001, -0.000005);
    let (fx, fy, cx, cy) = (40.0, 41.0, 64.0, 60.0);
    let lens = Lens::from_params(
        CameraModel::OpenCvFisheye,
        &[fx, fy, cx, cy, k1, k2, k3, k4],
    )
    .unwrap();
    for degrees in [100.0f64, 135.0, 170.0] {
        let (theta, phi) = (degrees.to_radians(), 0.5f64);
        // OpenCV's fisheye model by hand: θd = θ (1 + k1 θ² + k2 θ⁴ + k3 θ⁶ + k4 θ⁸).
        let t2 = theta * theta;
        let theta_d = theta * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))));
        let pixel = [fx * theta_d * phi.cos() + cx, fy * theta_d * phi.sin() + cy];
        let want = direction(theta, phi);
        let ray = lens.ray(pixel).expect("a ray beyond 90°");
        assert!(
            distance(&ray, &want) < 1e-9,
            "{degrees}°: {ray:?} against {want:?}"
        );
        assert!((ray[2].acos().to_degrees() - degrees).abs() < 1e-7);
        assert!(distance(&lens.project_ray(want).unwrap(), &pixel) < 1e-9);
        assert_eq!(
            lens.unproject(pixel),
            None,
            "{degrees}°: no normalised point behind 90°"
        );
    }
    // At 180° and past it, a fisheye has no ray.
    let theta = std::f64::consts::PI * 1.01;
    let t2 = theta * theta;
    let theta_d = theta * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))));
    assert_eq!(lens.ray([fx * theta_d + cx, cy]), None);
    assert_eq!(lens.project_ray([0.0, 0.0, -1.0]), None);
}

#[test]
fn parameters_are_checked_by_name() {
    let err = Lens::from_params(CameraModel::OpenCv, &[50.0, 50.0, 32.0, 24.0, 0.1]).unwrap_err();
    assert!(
        err.contains("OPENCV") && err.contains("8 parameters") && err.contains("p2"),
        "{err}"
    );
    let err = Lens::from_params(
        CameraModel::OpenCvFisheye,
        &[30.0, 30.0, 32.0, 24.0, 0.1, f64::NAN, 0.0, 0.0],
    )
    .unwrap_err();
    assert!(err.contains("k2") && err.contains("NaN"), "{err}");
    let err = Lens::from_params(CameraModel::Pinhole, &[50.0, -1.0, 32.0, 24.0]).unwrap_err();
    assert!(err.contains("fy"), "{err}");
    let err = Lens::from_params(CameraModel::Fov, &[50.0, 50.0, 32.0, 24.0, 4.0]).unwrap_err();
    assert!(err.contains("omega"), "{err}");
    let aria = vec![1.0; 16];
    let err = Lens::from_params(CameraModel::RadTanThinPrismFisheye, &aria).unwrap_err();
    assert!(err.contains("not supported"), "{err}");
    for (id, model) in CameraModel::ALL.iter().enumerate() {
        assert_eq!(CameraModel::from_id(id as u32), Some(*model));
        assert_eq!(CameraModel::from_name(model.name()), Some(*model));
    }
}

#[test]
fn undistorted_camera_follows_colmap() {
    // Barrel distortion: the focal length stays, every kept pixel has a source, and the
    // principal point keeps its relative position.
    let lens = Lens::from_params(
        CameraModel::OpenCv,
        &[50.0, 50.0, 32.0, 24.0, -0.2, 0.03, 0.0, 0.0],
    )
    .unwrap();
    let u = Undistortion::new(&lens, 64, 48).unwrap();
    assert_eq!((u.target.fx, u.target.fy), (50.0, 50.0));
    let (w, h) = u.target_size;
    assert!((u.target.cx / f64::from(w) - 0.5).abs() < 0.02, "{u:?}");
    assert!((u.target.cy / f64::from(h) - 0.5).abs() < 0.02, "{u:?}");
    for row in 0..h {
        for col in 0..w {
            let [x, y] = u.source_position(col, row);
            assert!(
                x >= 0.0 && y >= 0.0 && x <= 64.0 && y <= 48.0,
                "({col}, {row}) -> ({x}, {y})"
            );
        }
    }
    assert!(
        u.fov_crop.is_none() && u.dropped_fraction < 0.2,
        "{}",
        u.describe()
    );
    // A 190-degree fisheye is cropped to the documented field of view, and says how much it
    // dropped.
    let f = 160.0 / 95f64.to_radians();
    let wide = Lens::from_params(
        CameraModel::OpenCvFisheye,
        &[f, f, 160.0, 120.0, 0.0, 0.0, 0.0, 0.0],
    )
    .unwrap();
    let u = Undistortion::new(&wide, 320, 240).unwrap();
    let crop = u.fov_crop.expect("a 190-degree fisheye must be cropped");
    assert!((crop.source_degrees[0] - 190.0).abs() < 1.0, "{crop:?}");
    let limit = 2.0 * MAX_HALF_FOV_DEGREES;
    assert!(
        crop.kept_degrees[0] <= limit + 0.5 && crop.kept_degrees[0] > limit - 5.0,
        "{crop:?}"
    );
    assert!(u.dropped_fraction > 0.3, "{}", u.describe());
}

/// The rasterizer's lens (`splat::CameraLens`, single-precision coefficients) projects every
/// model like `data::lens` (the reference) to within 1e-3 px over each model's view, and like
/// OpenCV on the fixture's points; a fisheye's points past 90° land where `data::lens`'s angle
/// inverse sends them back.
#[test]
fn the_rasterizers_lens_projects_like_the_reference() {
    let models: [(CameraModel, Vec<f64>); 9] = [
        (CameraModel::SimpleRadial, vec![500.0, 320.0, 240.0, -0.12]),
        (CameraModel::Radial, vec![500.0, 320.0, 240.0, -0.15, 0.03]),
        (
            CameraModel::OpenCv,
            vec![510.0, 495.0, 322.0, 238.0, -0.21, 0.06, 0.002, -0.001],
        ),
        (
            CameraModel::FullOpenCv,
            vec![
                500.0, 505.0, 320.0, 240.0, -0.25, 0.08, 0.002, 0.001, -0.01, 0.05, 0.01, 0.002,
            ],
        ),
        (
            CameraModel::OpenCvFisheye,
            vec![300.0, 300.0, 320.0, 240.0, 0.03, -0.004, 0.0005, -0.00005],
        ),
        (
            CameraModel::SimpleRadialFisheye,
            vec![300.0, 320.0, 240.0, 0.02],
        ),
        (
            CameraModel::RadialFisheye,
            vec![300.0, 320.0, 240.0, 0.02, -0.003],
        ),
        (
            CameraModel::ThinPrismFisheye,
            vec![
                300.0, 300.0, 320.0, 240.0, 0.02, -0.005, 0.001, -0.002, 0.001, 0.0, 0.003, 0.001,
            ],
        ),
        (CameraModel::Fov, vec![400.0, 400.0, 320.0, 240.0, 0.8]),
    ];
    for (model, params) in models {
        let lens = Lens::from_params(model, &params).unwrap();
        let raster = lens.camera_lens();
        // The camera's lens writes back as a COLMAP model that reads as the same lens.
        let camera = wgsplat::splat::Camera {
            fx: lens.fx as f32,
            fy: lens.fy as f32,
            cx: lens.cx as f32,
            cy: lens.cy as f32,
            lens: raster,
            ..wgsplat::splat::Camera::facing_origin(640, 480, 3.0, [0.0; 3])
        };
        let written = Lens::of_camera(&camera);
        let read = Lens::from_params(written.model, &written.colmap_params()).unwrap();
        assert_eq!(
            read.camera_lens(),
            raster,
            "{} written as {}",
            model.name(),
            written.model.name()
        );
        let (focal, principal) = ([lens.fx, lens.fy], [lens.cx, lens.cy]);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for i in 0..200 {
            // Directions up to 50° off the axis (the perspective models), 115° (fisheyes).
            let widest = if lens.is_fisheye() { 115f64 } else { 50.0 };
            let theta = (widest * (i as f64 + 0.5) / 200.0).to_radians();
            let phi = i as f64 * 2.399;
            let p = [
                theta.sin() * phi.cos(),
                theta.sin() * phi.sin(),
                theta.cos(),
            ]
            .map(|v| 3.0 * v);
            let pixel = raster
                .project(focal, principal, p)
                .unwrap_or_else(|| panic!("{} does not see {theta} rad off its axis", model.name()))
                .pixel;
            got.extend(pixel.map(|v| v as f32));
            if theta < 80f64.to_radians() {
                want.extend(lens.project([p[0] / p[2], p[1] / p[2]]).map(|v| v as f32));
            } else {
                // Past 80° compare angles: the reference's angle inverse of the pixel.
                let n = [
                    (pixel[0] - lens.cx) / lens.fx,
                    (pixel[1] - lens.cy) / lens.fy,
                ];
                let [u, v] = lens.undistort_angle(n).unwrap();
                let back = (u * u + v * v).sqrt();
                got.truncate(got.len() - 2);
                got.extend([back as f32, (v.atan2(u)) as f32]);
                let r = (p[0] * p[0] + p[1] * p[1]).sqrt();
                want.extend([r.atan2(p[2]) as f32, p[1].atan2(p[0]) as f32]);
            }
        }
        compare_close(
            &format!("{} (rasterizer vs reference)", model.name()),
            &got,
            &want,
            PIXEL_TOLERANCE,
            1e-6,
        )
        .unwrap();
    }
    for case in reference()["cases"].as_array().unwrap() {
        let (lens, _, _) = lens_of(case);
        let raster = lens.camera_lens();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for row in rows(&case["project"]) {
            let p = [row[0], row[1], 1.0];
            let pixel = raster
                .project([lens.fx, lens.fy], [lens.cx, lens.cy], p)
                .unwrap()
                .pixel;
            got.extend(pixel.map(|v| v as f32));
            want.extend([row[2] as f32, row[3] as f32]);
        }
        let what = format!("{} rasterizer projection vs OpenCV (pixels)", case["model"]);
        compare_close(&what, &got, &want, PIXEL_TOLERANCE, 1e-6).unwrap();
    }
}
