//! COLMAP folders written for the error cases (text models, camera models, missing, mismatched
//! and corrupt files) and the test-view split options.

use super::*;

/// A COLMAP text model with two images (a PNG and a JPEG) of 32x24.
fn write_colmap_text(dir: &Path, model_line: &str) {
    let sparse = dir.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(dir.join("images")).unwrap();
    std::fs::write(
        sparse.join("cameras.txt"),
        format!("# cameras\n{model_line}\n"),
    )
    .unwrap();
    std::fs::write(
        sparse.join("images.txt"),
        "# images\n1 1 0 0 0 0.5 0 3 1 a.png\n\n2 0.7071067811865476 0 0.7071067811865476 0 0 0 2 1 b.jpg\n1.0 2.0 -1\n",
    )
    .unwrap();
    std::fs::write(
        sparse.join("points3D.txt"),
        "1 0.5 0.25 1 255 0 51 0.5 1 0 2 0\n",
    )
    .unwrap();
    write_image(&dir.join("images/a.png"), 32, 24, 3);
    write_image(&dir.join("images/b.jpg"), 32, 24, 5);
}

#[test]
fn colmap_text_with_png_and_jpeg() {
    let dir = TempDir::new("text");
    write_colmap_text(&dir.0, "1 SIMPLE_PINHOLE 32 24 30 16 12");
    let options = LoadOptions {
        split: Split::AllTrain,
        background: [0.5; 3],
        ..LoadOptions::default()
    };
    let dataset = Dataset::load(&dir.0, &options).unwrap();
    assert_eq!(dataset.train.len(), 2);
    let (a, b) = (&dataset.train[0], &dataset.train[1]);
    assert_eq!((a.name.as_str(), b.name.as_str()), ("a.png", "b.jpg"));
    assert_eq!(
        (a.camera.fx, a.camera.fy, a.camera.cx, a.camera.cy),
        (30.0, 30.0, 16.0, 12.0)
    );
    assert_eq!(a.camera.translation, [0.5, 0.0, 3.0]);
    assert_eq!(a.camera.background, [0.5; 3]);
    // 90 degrees about y: world x becomes camera -z.
    let r = b.camera.rotation;
    assert!(
        (r[0][2] - 1.0).abs() < 1e-6
            && (r[2][0] + 1.0).abs() < 1e-6
            && (r[1][1] - 1.0).abs() < 1e-6,
        "{r:?}"
    );
    assert_eq!(
        dataset.points.unwrap(),
        PointCloud {
            positions: vec![[0.5, 0.25, 1.0]],
            colors: vec![[1.0, 0.0, 0.2]]
        }
    );
    // JPEG decoded to opaque RGBA of the right size.
    assert_eq!((b.image.width, b.image.height), (32, 24));
    assert!(!b.image.has_transparency());
}

#[test]
fn colmap_camera_models_are_read_and_checked() {
    let dir = TempDir::new("opencv");
    // A distorted camera loads as it is, with its lens; under `undistort`, undistorted to a
    // pinhole with the same focal length.
    write_colmap_text(&dir.0, "1 OPENCV 32 24 30 30 16 12 0.1 0 0 0");
    let native = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    let camera = &native.test[0].camera;
    assert_eq!(camera.lens.kind, wgsplat::splat::LensKind::Perspective);
    assert_eq!((camera.width, camera.height), (32, 24));
    let undistort = LoadOptions {
        undistort: true,
        ..LoadOptions::default()
    };
    let dataset = Dataset::load(&dir.0, &undistort).unwrap();
    let camera = &dataset.test[0].camera;
    assert!(camera.lens.is_pinhole());
    assert_eq!((camera.fx, camera.fy), (30.0, 30.0));
    assert!(
        dataset
            .notes
            .iter()
            .any(|n| n.starts_with("camera 1: OPENCV 32x24")),
        "{:?}",
        dataset.notes
    );
    // Errors name the file, the camera, the model and the parameter.
    for (line, needles) in [
        (
            "1 OPENCV 32 24 30 30 16 12 0.1 0 0",
            vec!["camera 1", "OPENCV", "8 parameters", "cameras.txt"],
        ),
        (
            "1 OPENCV_FISHEYE 32 24 30 30 16 12 0.1 nan 0 0",
            vec!["camera 1", "k2", "NaN"],
        ),
        ("1 PINHOLE 32 24 30 -3 16 12", vec!["camera 1", "fy"]),
        (
            "1 EQUIRECTANGULAR 32 24 30",
            vec!["camera 1", "EQUIRECTANGULAR", "known models"],
        ),
    ] {
        write_colmap_text(&dir.0, line);
        let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
        for needle in needles {
            assert!(
                text.contains(needle),
                "{line}: {needle:?} missing from {text}"
            );
        }
    }
    // The same checks in binary: model id 4 with a NaN, and an unknown model id.
    write_colmap_text(&dir.0, "1 PINHOLE 32 24 30 30 16 12");
    let sparse = dir.0.join("sparse/0");
    let camera_bin = |model: u32, params: &[f64]| {
        let mut bytes = 1u64.to_le_bytes().to_vec();
        bytes.extend(1u32.to_le_bytes());
        bytes.extend(model.to_le_bytes());
        bytes.extend(32u64.to_le_bytes());
        bytes.extend(24u64.to_le_bytes());
        for p in params {
            bytes.extend(p.to_le_bytes());
        }
        std::fs::write(sparse.join("cameras.bin"), bytes).unwrap();
        wgsplat::data::colmap_binary::read_cameras(&sparse.join("cameras.bin"))
    };
    let read = camera_bin(4, &[30.0, 30.0, 16.0, 12.0, 0.1, 0.0, 0.0, 0.0]).unwrap();
    assert_eq!(read[0].lens.model, wgsplat::data::lens::CameraModel::OpenCv);
    let text = error_text(camera_bin(
        4,
        &[30.0, 30.0, 16.0, 12.0, f64::NAN, 0.0, 0.0, 0.0],
    ));
    assert!(
        text.contains("k1") && text.contains("cameras.bin"),
        "{text}"
    );
    let text = error_text(camera_bin(42, &[30.0, 30.0, 16.0, 12.0]));
    assert!(text.contains("model id 42"), "{text}");
}

#[test]
fn colmap_missing_files_and_images() {
    let dir = TempDir::new("missing");
    write_colmap_text(&dir.0, "1 PINHOLE 32 24 30 30 16 12");
    std::fs::remove_file(dir.0.join("images/b.jpg")).unwrap();
    let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
    assert!(text.contains("b.jpg") && text.contains("missing"), "{text}");
    std::fs::remove_file(dir.0.join("sparse/0/images.txt")).unwrap();
    let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
    assert!(
        text.contains("images.txt") && text.contains("missing"),
        "{text}"
    );
    let text = error_text(Dataset::load(
        dir.0.join("nothing-here"),
        &LoadOptions::default(),
    ));
    assert!(
        text.contains("nothing-here") && text.contains("does not exist"),
        "{text}"
    );
    std::fs::remove_dir_all(dir.0.join("sparse")).unwrap();
    let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
    assert!(text.contains("no dataset found"), "{text}");
}

#[test]
fn colmap_image_size_mismatch() {
    let dir = TempDir::new("size");
    write_colmap_text(&dir.0, "1 PINHOLE 64 48 60 60 32 24");
    // Even when downscaling by 2 (which would give 32x24), the file must match the camera.
    let options = LoadOptions {
        resolution: Resolution::Factor(2),
        ..LoadOptions::default()
    };
    let text = error_text(Dataset::load(&dir.0, &options));
    assert!(
        text.contains("32x24")
            && text.contains("64x48")
            && (text.contains("a.png") || text.contains("b.jpg")),
        "{text}"
    );
}

#[test]
fn colmap_truncated_and_corrupt_binaries() {
    let Some(root) = shared("duck_colmap") else {
        return;
    };
    let dir = TempDir::new("truncated");
    let source = root.join("sparse/0");
    for file in ["cameras.bin", "images.bin", "points3D.bin"] {
        let bytes = std::fs::read(source.join(file)).unwrap();
        let cuts = [0, 5, 8, 9, 30, bytes.len() / 2, bytes.len() - 1];
        for cut in cuts {
            for f in ["cameras.bin", "images.bin", "points3D.bin"] {
                std::fs::copy(source.join(f), dir.0.join(f)).unwrap();
            }
            std::fs::write(dir.0.join(file), &bytes[..cut]).unwrap();
            let text = error_text(colmap::read_model(&dir.0, ModelFormat::Binary));
            assert!(text.contains(file), "{file} cut at {cut}: {text}");
            assert!(
                text.contains("truncated") || text.contains("corrupt"),
                "{file} cut at {cut}: {text}"
            );
        }
        // Trailing bytes and an impossible record count are corrupt too.
        let mut longer = bytes.clone();
        longer.extend([1, 2, 3]);
        std::fs::write(dir.0.join(file), &longer).unwrap();
        assert!(
            error_text(colmap::read_model(&dir.0, ModelFormat::Binary))
                .contains("unexpected bytes")
        );
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(dir.0.join(file), &huge).unwrap();
        assert!(error_text(colmap::read_model(&dir.0, ModelFormat::Binary)).contains("declares"));
        std::fs::write(dir.0.join(file), &bytes).unwrap();
    }
    assert!(colmap::read_model(&dir.0, ModelFormat::Binary).is_ok());
}

/// `--test-list FILE` and `--test-every N` (train, render and eval share these options): the NeRF
/// split of duck_colmap from its committed list, every 5th view, and the errors.
#[test]
fn test_list_and_test_every_choose_the_split() {
    use wgsplat::train::setup::{DataOptions, load_dataset};
    let Some(root) = shared("duck_colmap") else {
        return;
    };
    let base = DataOptions {
        resolution: Some(8),
        ..DataOptions::default()
    };
    let listed = load_dataset(
        Some(&root),
        &DataOptions {
            test_list: Some(root.join("nerf_test_views.txt")),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!((listed.train.len(), listed.test.len()), (100, 25));
    assert!(listed.test.iter().all(|v| v.name.as_str() >= "00100.png"));
    let every5 = load_dataset(
        Some(&root),
        &DataOptions {
            test_every: Some(5),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!((every5.train.len(), every5.test.len()), (100, 25));
    assert_eq!(every5.test[1].name, "00005.png");

    let dir = TempDir::new("test-list");
    let list = dir.0.join("views.txt");
    std::fs::write(&list, "# the NeRF test views\n\n00100.png\n  00101.png  \n").unwrap();
    let two = load_dataset(
        Some(&root),
        &DataOptions {
            test_list: Some(list.clone()),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(two.test.len(), 2);
    std::fs::write(&list, "# nothing\n").unwrap();
    let empty = DataOptions {
        test_list: Some(list.clone()),
        ..base.clone()
    };
    assert!(error_text(load_dataset(Some(&root), &empty)).contains("views.txt"));
    let both = DataOptions {
        test_list: Some(root.join("nerf_test_views.txt")),
        test_every: Some(8),
        ..base
    };
    assert!(error_text(load_dataset(Some(&root), &both)).contains("--test-list"));
}
