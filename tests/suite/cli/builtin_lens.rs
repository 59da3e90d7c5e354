//! `wgsplat builtin --camera-model MODEL --fov DEGREES`: the scenes written through a lens as
//! COLMAP folders whose cameras.txt carries the designed lens and whose masks mark the image
//! circle; options that make no sense together are refused with errors that say why.

use super::*;
use wgsplat::data::image::read_image;
use wgsplat::data::lens::CameraModel;
use wgsplat::data::lens_design::design_lens;

/// The single camera line of `dir`'s cameras.txt: model, width, height and parameters.
fn camera_line(dir: &Path) -> (String, u32, u32, Vec<f64>) {
    let text = std::fs::read_to_string(dir.join("sparse/0/cameras.txt")).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 1, "{text}");
    let tokens: Vec<&str> = lines[0].split_whitespace().collect();
    let params = tokens[4..].iter().map(|t| t.parse().unwrap()).collect();
    (
        tokens[1].to_string(),
        tokens[2].parse().unwrap(),
        tokens[3].parse().unwrap(),
        params,
    )
}

#[test]
fn builtin_writes_the_objects_through_a_fisheye_and_an_opencv_lens() {
    let dir = temp_dir("builtin-lens");
    for (model, fov) in [
        (CameraModel::OpenCvFisheye, 190.0),
        (CameraModel::OpenCv, 90.0),
    ] {
        let out = dir.join(model.name());
        let run = wgsplat(&[
            "builtin",
            "objects",
            "--out",
            out.to_str().unwrap(),
            "--builtin-resolution",
            "32",
            "--views",
            "7",
            "--points",
            "100",
            "--camera-model",
            model.name(),
            "--fov",
            &fov.to_string(),
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let (name, width, height, params) = camera_line(&out);
        assert_eq!((name.as_str(), width, height), (model.name(), 32, 32));
        let want = design_lens(model, fov, 32, 32)
            .unwrap()
            .lens
            .colmap_params();
        assert_eq!(params.len(), want.len());
        for (got, want) in params.iter().zip(&want) {
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{params:?} against {want:?}"
            );
        }
        // Every image has its mask; the fisheye's corners lie outside its image circle.
        let images: Vec<_> = std::fs::read_dir(out.join("images")).unwrap().collect();
        assert_eq!(images.len(), 8);
        for entry in images {
            let name = entry.unwrap().file_name();
            let mask = read_image(&out.join("masks").join(&name)).unwrap();
            let at = |x: u32, y: u32| mask.pixels[((y * 32 + x) * 4) as usize];
            let corner = if model == CameraModel::OpenCvFisheye {
                0
            } else {
                255
            };
            assert_eq!(
                (at(0, 0), at(31, 31), at(16, 16)),
                (corner, corner, 255),
                "{name:?}"
            );
            // Outside the mask the image is black and empty.
            let image = read_image(&out.join("images").join(&name)).unwrap();
            for (m, pixel) in mask
                .pixels
                .chunks_exact(4)
                .zip(image.pixels.chunks_exact(4))
            {
                if m[0] == 0 {
                    assert_eq!(pixel, [0, 0, 0, 0]);
                }
            }
        }
    }
    // The town through a lens: one camera of that model, every view masked.
    let town = dir.join("town");
    let run = wgsplat(&[
        "builtin",
        "town",
        "--out",
        town.to_str().unwrap(),
        "--builtin-resolution",
        "24",
        "--height",
        "16",
        "--views",
        "8",
        "--blocks",
        "2",
        "--points",
        "50",
        "--rays-per-pixel",
        "1",
        "--camera-model",
        "thin_prism_fisheye",
        "--fov",
        "200",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let (name, width, height, params) = camera_line(&town);
    assert_eq!(
        (name.as_str(), width, height, params.len()),
        ("THIN_PRISM_FISHEYE", 24, 16, 12)
    );
    assert_eq!(std::fs::read_dir(town.join("masks")).unwrap().count(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn builtin_refuses_lens_options_that_make_no_sense() {
    let dir = temp_dir("builtin-lens-refusals");
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let base = [
        "builtin",
        "objects",
        "--out",
        out,
        "--builtin-resolution",
        "16",
    ];
    let refusals: [(&[&str], &[&str]); 4] = [
        (&["--fov", "90"], &["--fov", "--camera-model"]),
        (
            &["--camera-model", "OPENCV", "--fov", "170"],
            &["OPENCV", "170", "fisheye"],
        ),
        (
            &["--camera-model", "OPENCV_FISHEYE", "--fov", "301"],
            &["OPENCV_FISHEYE", "301"],
        ),
        (
            &["--camera-model", "KANNALA", "--fov", "90"],
            &["KANNALA", "OPENCV_FISHEYE"],
        ),
    ];
    for (extra, words) in refusals {
        let args = [&base[..], extra].concat();
        let err = expect_failure(&args);
        for word in words {
            assert!(err.contains(word), "{args:?}: {word:?} not in\n{err}");
        }
    }
    assert!(!Path::new(out).exists(), "a refused run wrote {out}");
    let _ = std::fs::remove_dir_all(&dir);
}
