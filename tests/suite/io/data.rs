//! Dataset readers (COLMAP binary/text, NeRF-synthetic, nerfstudio), image handling, initialisation
//! helpers and the built-in ray-traced scene.
//!
//! Field data is read from `../shared/data` (never copied here); tests that need it print a message
//! and pass when it is absent.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use wgsplat::data::colmap::{self, ModelFormat};
use wgsplat::data::init::{self, RandomBox};
use wgsplat::data::raytrace::PIXEL_SAMPLES;
use wgsplat::data::{
    Dataset, LoadOptions, PointCloud, Resolution, RgbaImage, Split, builtin, scene_extent,
};
use wgsplat::splat::Camera;

fn shared(relative: &str) -> Option<PathBuf> {
    wgsplat::testing::shared_data(&format!("data/{relative}"))
}

/// A scratch folder removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("wgsplat-data-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn error_text<T: std::fmt::Debug>(result: wgsplat::Result<T>) -> String {
    let error = result.expect_err("expected an error");
    let text = error.to_string();
    eprintln!("error as reported: {text}");
    text
}

fn nerf_duck() -> Option<&'static Dataset> {
    static DUCK: OnceLock<Option<Dataset>> = OnceLock::new();
    DUCK.get_or_init(|| shared("duck").map(|p| Dataset::load(p, &LoadOptions::default()).unwrap()))
        .as_ref()
}

fn colmap_duck() -> Option<&'static Dataset> {
    static DUCK: OnceLock<Option<Dataset>> = OnceLock::new();
    DUCK.get_or_init(|| {
        let options = LoadOptions {
            split: Split::AllTrain,
            ..LoadOptions::default()
        };
        shared("duck_colmap").map(|p| Dataset::load(p, &options).unwrap())
    })
    .as_ref()
}

fn assert_cameras_close(a: &Camera, b: &Camera, tolerance: f32, what: &str) {
    for r in 0..3 {
        for c in 0..3 {
            let (x, y) = (a.rotation[r][c], b.rotation[r][c]);
            assert!(
                (x - y).abs() <= tolerance,
                "{what}: rotation[{r}][{c}] {x} vs {y}"
            );
        }
        let (x, y) = (a.translation[r], b.translation[r]);
        assert!(
            (x - y).abs() <= tolerance,
            "{what}: translation[{r}] {x} vs {y}"
        );
    }
    for (name, x, y) in [
        ("fx", a.fx, b.fx),
        ("fy", a.fy, b.fy),
        ("cx", a.cx, b.cx),
        ("cy", a.cy, b.cy),
    ] {
        assert!(
            (x - y).abs() <= tolerance * x.abs().max(1.0),
            "{what}: {name} {x} vs {y}"
        );
    }
    assert_eq!((a.width, a.height), (b.width, b.height), "{what}: size");
}

#[test]
fn nerf_duck_loads_with_alpha() {
    let Some(duck) = nerf_duck() else { return };
    assert_eq!((duck.train.len(), duck.test.len()), (100, 25));
    assert_eq!(duck.train[10].name, "./train/r_10", "file order is kept");
    assert!(duck.points.is_none());
    let view = &duck.test[0];
    let camera = &view.camera;
    assert_eq!((camera.width, camera.height), (256, 256));
    assert!(
        (camera.fx - 355.555_53).abs() < 1e-3 && camera.fx == camera.fy,
        "fx {}",
        camera.fx
    );
    assert_eq!((camera.cx, camera.cy), (128.0, 128.0));
    // Every camera is 4 from the origin.
    for v in duck.views() {
        let p = v.camera.position();
        let distance = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        assert!(
            (distance - 4.0).abs() < 1e-4,
            "{}: distance {distance}",
            v.name
        );
    }
    // Alpha is a usable mask and the background shows through it.
    let alpha = view.alpha();
    assert!(alpha.contains(&0.0) && alpha.contains(&1.0));
    let (black, white) = (view.rgb_on([0.0; 3]), view.rgb_on([1.0; 3]));
    let corner = 0; // top-left pixel is background
    assert_eq!(alpha[corner], 0.0);
    assert_eq!((black[0], white[0]), (0.0, 1.0));
    assert_eq!(view.rgb(), black, "default background is black");
    // Extent: getNerfppNorm over the training cameras.
    let cameras: Vec<&Camera> = duck.train.iter().map(|v| &v.camera).collect();
    let mut mean = [0.0f32; 3];
    for c in &cameras {
        let p = c.position();
        (0..3).for_each(|k| mean[k] += p[k] / cameras.len() as f32);
    }
    let radius = cameras
        .iter()
        .map(|c| {
            let p = c.position();
            ((p[0] - mean[0]).powi(2) + (p[1] - mean[1]).powi(2) + (p[2] - mean[2]).powi(2)).sqrt()
        })
        .fold(0.0f32, f32::max);
    assert!(
        (duck.extent - 1.1 * radius).abs() < 1e-4,
        "extent {} vs {}",
        duck.extent,
        1.1 * radius
    );
    assert_eq!(scene_extent(&cameras).1, duck.extent);
    assert!(duck.extent > 4.0 && duck.extent < 1.1 * 8.0);
}

#[test]
fn colmap_duck_binary_and_text_agree() {
    let Some(root) = shared("duck_colmap") else {
        return;
    };
    let sparse = root.join("sparse/0");
    let binary = colmap::read_model(&sparse, ModelFormat::Binary).unwrap();
    let text = colmap::read_model(&sparse, ModelFormat::Text).unwrap();
    assert_eq!(binary.cameras.len(), 1);
    assert_eq!(binary.images.len(), 125);
    assert_eq!(binary.points.as_ref().map(PointCloud::len), Some(10_000));
    assert_eq!(binary, text, "binary and text models differ");
    let camera = &binary.cameras[0];
    assert_eq!(
        (camera.width, camera.height, camera.cx, camera.cy),
        (256, 256, 128.0, 128.0)
    );
    // Cameras built from both are identical too, and the loaded dataset agrees with the model.
    let options = LoadOptions::default();
    for (b, t) in binary.images.iter().zip(&text.images) {
        assert_eq!(b.camera(camera, &options), t.camera(camera, &options));
    }
    let Some(duck) = colmap_duck() else { return };
    assert_eq!(duck.points.as_ref(), binary.points.as_ref());
    let colours = &binary.points.as_ref().unwrap().colors;
    assert!(colours.iter().flatten().all(|c| (0.0..=1.0).contains(c)));
}

#[test]
fn colmap_duck_matches_nerf_duck() {
    let (Some(colmap_duck), Some(nerf_duck)) = (colmap_duck(), nerf_duck()) else {
        return;
    };
    assert_eq!(colmap_duck.train.len(), 125);
    let nerf_views: Vec<_> = nerf_duck.views().collect();
    for (i, (c, n)) in colmap_duck.train.iter().zip(&nerf_views).enumerate() {
        assert_eq!(c.name, format!("{i:05}.png"));
        assert_cameras_close(
            &c.camera,
            &n.camera,
            2e-5,
            &format!("{} vs {}", c.name, n.name),
        );
    }
    // The COLMAP images are the NeRF renders composited on grey 128.
    let grey = 128.0 / 255.0;
    let (c, n) = (
        colmap_duck.train[100].rgb(),
        nerf_duck.test[0].rgb_on([grey; 3]),
    );
    let worst = c
        .iter()
        .zip(&n)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1.5 / 255.0, "worst pixel difference {worst}");
}

#[test]
fn colmap_splits() {
    let Some(root) = shared("duck_colmap") else {
        return;
    };
    // Small images are enough to check the split logic.
    let base = LoadOptions {
        resolution: Resolution::Factor(8),
        ..LoadOptions::default()
    };
    let every8 = Dataset::load(&root, &base).unwrap();
    assert_eq!((every8.train.len(), every8.test.len()), (109, 16));
    assert_eq!(every8.test[0].name, "00000.png");
    assert_eq!(every8.test[1].name, "00008.png");
    assert_eq!(
        (every8.train[0].camera.width, every8.train[0].camera.height),
        (32, 32)
    );
    let names: Vec<String> = (100..125).map(|i| format!("{i:05}.png")).collect();
    let nerf_split = Dataset::load(
        &root,
        &LoadOptions {
            split: Split::TestNames(names),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!((nerf_split.train.len(), nerf_split.test.len()), (100, 25));
    assert_eq!(nerf_split.test[0].name, "00100.png");
    let unknown = LoadOptions {
        split: Split::TestNames(vec!["nope.png".into()]),
        ..base
    };
    assert!(error_text(Dataset::load(&root, &unknown)).contains("nope.png"));
}

#[test]
fn castle_downscaled_by_two() {
    let Some(root) = shared("castle_colmap") else {
        return;
    };
    let options = LoadOptions {
        resolution: Resolution::Factor(2),
        ..LoadOptions::default()
    };
    let castle = Dataset::load(&root, &options).unwrap();
    assert_eq!((castle.train.len(), castle.test.len()), (35, 5));
    assert_eq!(castle.test[1].name, "Image_0009.png");
    assert_eq!(castle.points.as_ref().map(PointCloud::len), Some(20_000));
    let model = colmap::read_model(&root.join("sparse/0"), ModelFormat::Binary).unwrap();
    let full = &model.cameras[0];
    assert_eq!(
        (full.width, full.height, full.fx, full.fy, full.cx, full.cy),
        (640, 480, 700.0, 700.0, 320.0, 240.0)
    );
    for view in castle.views() {
        let c = &view.camera;
        assert_eq!(
            (c.width, c.height, c.fx, c.fy, c.cx, c.cy),
            (320, 240, 350.0, 350.0, 160.0, 120.0)
        );
        assert_eq!((view.image.width, view.image.height), (320, 240));
    }
    // The half-size pixel is the mean of the 2x2 block (grey images, opaque).
    let full_image = wgsplat::data::image::read_image(&root.join("images/Image_0001.png")).unwrap();
    let half = &castle.test[0].image;
    for (x, y) in [(100, 80), (160, 120), (17, 3)] {
        let block: u32 = (0..4)
            .map(|k| full_image.pixel(2 * x + k % 2, 2 * y + k / 2)[0] as u32)
            .sum();
        let expected = (block as f32 / 4.0).round() as i32;
        assert!(
            (half.pixel(x, y)[0] as i32 - expected).abs() <= 1,
            "pixel ({x},{y})"
        );
        assert_eq!(half.pixel(x, y)[3], 255);
    }
    assert!(castle.extent > 0.0 && castle.extent.is_finite());
}

#[test]
fn area_downscale_premultiplies_alpha() {
    // One opaque red pixel and three transparent green ones: the green must not bleed.
    let image = RgbaImage {
        width: 2,
        height: 2,
        pixels: vec![255, 0, 0, 255, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0],
    };
    let half = image.resized_area(1, 1);
    assert_eq!(half.pixels, vec![255, 0, 0, 64]);
    // Non-integer ratio: 3 -> 2 columns, weights 2/3 + 1/3.
    let row = RgbaImage {
        width: 3,
        height: 1,
        pixels: vec![0, 0, 0, 255, 90, 90, 90, 255, 180, 180, 180, 255],
    };
    let resized = row.resized_area(2, 1);
    assert_eq!(resized.pixels, vec![30, 30, 30, 255, 150, 150, 150, 255]);
    assert_eq!(
        Resolution::Width(100).target_size(640, 480).unwrap(),
        (100, 75)
    );
    assert_eq!(
        Resolution::Factor(4).target_size(255, 129).unwrap(),
        (64, 32)
    );
    assert!(Resolution::Factor(0).target_size(8, 8).is_err());
}

// ---- Synthetic COLMAP and NeRF folders for the error cases ----

fn write_image(path: &Path, width: u32, height: u32, seed: u8) {
    let pixels: Vec<u8> = (0..width * height * 3)
        .map(|i| (i as u8).wrapping_mul(seed))
        .collect();
    let image = image::RgbImage::from_raw(width, height, pixels).unwrap();
    image.save(path).unwrap();
}

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
    // A distorted camera loads, undistorted to a pinhole with the same focal length.
    write_colmap_text(&dir.0, "1 OPENCV 32 24 30 30 16 12 0.1 0 0 0");
    let dataset = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    let camera = &dataset.test[0].camera;
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

#[test]
fn nerfstudio_transforms_with_split_lists() {
    let dir = TempDir::new("nerfstudio");
    std::fs::create_dir_all(dir.0.join("images")).unwrap();
    for i in 0..3 {
        write_image(&dir.0.join(format!("images/f{i}.png")), 20, 10, i as u8 + 1);
    }
    let identity = "[[1,0,0,0],[0,1,0,0],[0,0,1,2],[0,0,0,1]]";
    let json = format!(
        r#"{{"fl_x": 15, "fl_y": 16, "cx": 10, "cy": 5, "w": 20, "h": 10, "camera_model": "OPENCV", "k1": 0,
        "frames": [
          {{"file_path": "images/f0.png", "transform_matrix": {identity}}},
          {{"file_path": "images/f1.png", "transform_matrix": {identity}, "fl_x": 17}},
          {{"file_path": "images/f2.png", "transform_matrix": {identity}}}],
        "train_filenames": ["images/f0.png", "images/f2.png"], "test_filenames": ["images/f1.png"]}}"#
    );
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let dataset = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    assert_eq!((dataset.train.len(), dataset.test.len()), (2, 1));
    let test = &dataset.test[0].camera;
    assert_eq!(
        (test.fx, test.fy, test.cx, test.cy, test.width, test.height),
        (17.0, 16.0, 10.0, 5.0, 20, 10)
    );
    // OpenGL camera at z = 2 looking down -z: OpenCV flips y and z.
    assert_eq!(
        test.rotation,
        [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]
    );
    assert_eq!(test.translation, [0.0, 0.0, 2.0]);
    assert_eq!(test.position(), [0.0, 0.0, 2.0]);
    // Downscale by 2 halves size and intrinsics.
    let half = Dataset::load(
        &dir.0,
        &LoadOptions {
            resolution: Resolution::Factor(2),
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let c = &half.test[0].camera;
    assert_eq!(
        (c.fx, c.fy, c.cx, c.cy, c.width, c.height),
        (8.5, 8.0, 5.0, 2.5, 10, 5)
    );
    // Distortion is undistorted at load (the focal length stays; the image shrinks to the
    // region every pixel of which has a source); a distortion key on a pinhole model, an unknown
    // model, a wrong size or a missing image is named.
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k1\": 0", "\"k1\": 0.2"),
    )
    .unwrap();
    let distorted = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    let c = &distorted.test[0].camera;
    assert_eq!((c.fx, c.fy), (17.0, 16.0));
    assert!(c.width < 20 && c.height < 10, "{c:?}");
    assert!(
        distorted
            .notes
            .iter()
            .any(|n| n.contains("undistorted to PINHOLE")),
        "{:?}",
        distorted.notes
    );
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k1\": 0", "\"k1\": 0.2")
            .replace("\"OPENCV\"", "\"PINHOLE\""),
    )
    .unwrap();
    let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
    assert!(text.contains("PINHOLE") && text.contains("k1"), "{text}");
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"OPENCV\"", "\"EQUIRECTANGULAR\""),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("EQUIRECTANGULAR"));
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"w\": 20", "\"w\": 21"),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("21x10"));
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    std::fs::remove_file(dir.0.join("images/f2.png")).unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("images/f2.png"));
}

// ---- Initialisation ----

#[test]
fn init_from_points_and_random() {
    let points = PointCloud {
        positions: vec![[1.0, 2.0, 3.0], [0.0; 3]],
        colors: vec![[1.0, 0.5, 0.0], [0.25; 3]],
    };
    let mut g = init::gaussians_from_points(&points);
    assert_eq!(g.means, points.positions);
    let c0 = 0.282_094_8_f32;
    assert_eq!(g.sh[0][0], [0.5 / c0, 0.0, -0.5 / c0]);
    assert!(g.sh[0][1..].iter().flatten().all(|&v| v == 0.0));
    assert_eq!(g.quats, vec![[1.0, 0.0, 0.0, 0.0]; 2]);
    assert!((g.opacity_logits[1] - (0.1f32 / 0.9).ln()).abs() < 1e-6);
    init::fill_log_scales(&mut g, &[0.04, 0.0]).unwrap();
    assert!((g.log_scales[0][2] - 0.2f32.ln()).abs() < 1e-6);
    assert!((g.log_scales[1][0] - (1e-7f32).sqrt().ln()).abs() < 1e-5);
    assert!(init::fill_log_scales(&mut g, &[1.0]).is_err());

    let bounds = RandomBox {
        center: [1.0, 0.0, -1.0],
        half_size: [0.5, 1.0, 2.0],
    };
    let cloud = init::random_points(1000, bounds, 7);
    assert_eq!(cloud, init::random_points(1000, bounds, 7));
    assert_ne!(cloud, init::random_points(1000, bounds, 8));
    for p in &cloud.positions {
        assert!(
            (0..3).all(|k| (p[k] - bounds.center[k]).abs() <= bounds.half_size[k]),
            "{p:?}"
        );
    }
    // Grey, as INRIA starts them (issue 14): DC coefficients in [0, 1/255], so every colour is
    // within C0 / 255 of 0.5, yet not all the same.
    assert!(
        cloud
            .colors
            .iter()
            .flatten()
            .all(|&c| (0.5..=0.5 + init::SH_C0 / 255.0).contains(&c)),
        "{:?}",
        &cloud.colors[..3]
    );
    assert!(cloud.colors.windows(2).any(|w| w[0] != w[1]));
    assert_eq!(RandomBox::default().half_size, [1.3; 3]);

    // Datasets without points fall back to random ones.
    let empty = Dataset::new(Vec::new(), Vec::new(), None);
    assert_eq!(
        init::initial_points(&empty, 10, bounds, 7),
        init::random_points(10, bounds, 7)
    );
    let with_points = Dataset::new(Vec::new(), Vec::new(), Some(points.clone()));
    assert_eq!(init::initial_points(&with_points, 10, bounds, 7), points);
}

/// Random initialisation fills the region the cameras look at: on the duck (cameras at radius 4
/// aimed at the origin, 39.6° FOV) a cube of about ±1.44 around the origin, like 3DGS's ±1.3.
#[test]
fn random_init_box_is_the_viewed_region() {
    let Some(duck) = nerf_duck() else {
        return;
    };
    let cameras: Vec<_> = duck.train.iter().map(|v| &v.camera).collect();
    let b = RandomBox::viewed_by(&cameras, [9.0; 3], 9.0);
    assert!(b.center.iter().all(|c| c.abs() < 1e-3), "{b:?}");
    let expected = 4.0 * (0.691_111_2f32 / 2.0).tan();
    assert!(
        (b.half_size[0] - expected).abs() < 1e-3,
        "{b:?} vs {expected}"
    );
    // Parallel optical axes have no intersection: the fallback is used.
    let one = &duck.train[0].camera;
    let mut shifted = one.clone();
    shifted.translation[0] += 1.0;
    let parallel = RandomBox::viewed_by(&[one, &shifted], [9.0; 3], 2.0);
    assert_eq!(parallel.center, [9.0; 3]);
    assert_eq!(parallel.half_size, [2.0; 3]);
}

// ---- The built-in scene ----

#[test]
fn builtin_scene_is_deterministic_and_sensible() {
    let options = builtin::BuiltinOptions::default();
    let start = std::time::Instant::now();
    let first = builtin::generate(&options).unwrap();
    eprintln!(
        "built-in scene generated in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    let second = builtin::generate(&options).unwrap();
    assert_eq!(first, second, "two generations differ");
    assert_eq!((first.train.len(), first.test.len()), (48, 8));
    for view in first.views() {
        let alpha = view.alpha();
        let covered = alpha.iter().filter(|&&a| a > 0.0).count();
        assert!(
            covered > alpha.len() / 10 && covered < alpha.len(),
            "{}: {covered} covered pixels",
            view.name
        );
        assert!(alpha.contains(&0.0) && alpha.contains(&1.0));
        let d = view
            .camera
            .position()
            .iter()
            .zip(builtin::LOOK_AT)
            .map(|(p, t)| (p - t) * (p - t))
            .sum::<f32>()
            .sqrt();
        assert!((d - builtin::CAMERA_DISTANCE).abs() < 1e-4);
    }
    let points = first.points.as_ref().unwrap();
    assert_eq!(points.len(), options.points);
    for (p, c) in points.positions.iter().zip(&points.colors) {
        assert!(
            p[0].abs() <= 1.0 + 1e-5
                && p[1].abs() <= 1.0 + 1e-5
                && p[2] >= -0.1 - 1e-5
                && p[2] <= 1.0 + 1e-5,
            "{p:?}"
        );
        assert!(c.iter().all(|v| (0.0..=1.0).contains(v)));
    }
    // Every point projects onto a covered pixel of some training view.
    let on_object = points
        .positions
        .iter()
        .filter(|&&p| {
            first.train.iter().any(|v| {
                let q = v.camera.to_camera(p);
                let (u, w) = (
                    v.camera.fx * q[0] / q[2] + v.camera.cx,
                    v.camera.fy * q[1] / q[2] + v.camera.cy,
                );
                let (x, y) = (u.floor() as i64, w.floor() as i64);
                (0..v.camera.width as i64).contains(&x)
                    && (0..v.camera.height as i64).contains(&y)
                    && v.image.pixel(x as u32, y as u32)[3] > 0
            })
        })
        .count();
    assert_eq!(on_object, points.len());
    assert!(
        first.extent > builtin::CAMERA_DISTANCE * 0.5
            && first.extent < builtin::CAMERA_DISTANCE * 2.2
    );
}

#[test]
fn raytracer_hand_checked_pixels() {
    let scene = builtin::scene();
    // Straight down from (0, 0, 4), odd size so the centre pixel is centred on the axis.
    let size = 129;
    let fx = builtin::focal_length(size);
    let camera = builtin::look_at(
        [0.0, 0.0, 4.0],
        [0.0; 3],
        [0.0, 1.0, 0.0],
        size,
        size,
        fx,
        [0.0; 3],
    );
    let image = scene.render(&camera);
    let light = 0.3 + 0.7 * (1.0 / 1.34f32.sqrt()); // ambient + diffuse with n = +z, l = (0.5, 0.3, 1) / |.|
    let expect = |albedo: [f32; 3]| {
        [albedo[0] * light, albedo[1] * light, albedo[2] * light, 1.0]
            .map(|v| (v * 255.0).round() as i32)
    };
    let check = |x: u32, y: u32, expected: [i32; 4], what: &str| {
        let got = image.pixel(x, y).map(i32::from);
        assert!(
            got.iter().zip(&expected).all(|(g, e)| (g - e).abs() <= 2),
            "{what}: pixel ({x},{y}) {got:?} vs {expected:?}"
        );
    };
    // Centre: the top of the striped sphere, z = 1.0 -> band floor(1.0 / 0.18) = 5, odd: yellow.
    check(64, 64, expect([0.95, 0.85, 0.3]), "sphere top");
    // Platform at world (0.8, 0.8, 0): camera (0.8, -0.8, 4); checker cells floor(3.2 + 0.25) = 3 twice
    // and 0 in z: even sum -> light cell, lit (nothing towards the light).
    let (u, v) = (camera.cx + fx * 0.8 / 4.0, camera.cy - fx * 0.8 / 4.0);
    check(u as u32, v as u32, expect([0.9, 0.9, 0.85]), "platform");
    // The corner looks past the platform: transparent.
    assert_eq!(image.pixel(0, 0), [0, 0, 0, 0]);
    // A point of the platform in the shadow of the big sphere gets ambient light only.
    let shaded = scene.radiance(0, [-0.25, -0.15, 0.0], [0.0, 0.0, 1.0]);
    for (s, a) in shaded.iter().zip([0.9, 0.9, 0.85]) {
        assert!((s - 0.3 * a).abs() < 1e-6, "{shaded:?}");
    }
    // Half-covered pixels: the platform's edge seen from above gives alpha in between.
    // x = 1.0 at depth 4 lies at u = 109.3: one of the four samples (dx = 0.125) is left of it.
    let edge_u = camera.cx + fx * 1.0 / 4.0;
    assert!((edge_u.fract() - 0.3).abs() < 0.05, "edge at {edge_u}");
    let edge = image.pixel(edge_u.floor() as u32, 64)[3];
    let below = PIXEL_SAMPLES
        .iter()
        .filter(|s| s[0] < edge_u.fract())
        .count() as f32;
    assert_eq!(edge as f32, (255.0 * below / 4.0).round(), "edge alpha");
}

#[test]
fn builtin_round_trips_through_nerf_folder() {
    let options = builtin::BuiltinOptions {
        resolution: 32,
        train_views: 5,
        test_views: 2,
        points: 300,
        ..Default::default()
    };
    let dataset = builtin::generate(&options).unwrap();
    let dir = TempDir::new("builtin");
    builtin::write_nerf_synthetic(&dataset, &dir.0).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");
    let loaded = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    assert_eq!((loaded.train.len(), loaded.test.len()), (5, 2));
    for (a, b) in dataset.views().zip(loaded.views()) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.image, b.image, "{}", a.name);
        assert_cameras_close(&a.camera, &b.camera, 1e-5, &a.name);
    }
    let (p, q) = (
        dataset.points.as_ref().unwrap(),
        loaded.points.as_ref().unwrap(),
    );
    assert_eq!(p.positions, q.positions);
    assert!(
        p.colors
            .iter()
            .flatten()
            .zip(q.colors.iter().flatten())
            .all(|(a, b)| (a - b).abs() <= 0.5 / 255.0 + 1e-6)
    );
}

/// Writes the default built-in scene to /tmp/builtin_scene for a look (`-- --ignored dump`).
#[test]
#[ignore]
fn dump_builtin_for_inspection() {
    let dataset = builtin::generate(&builtin::BuiltinOptions::default()).unwrap();
    builtin::write_nerf_synthetic(&dataset, Path::new("/tmp/builtin_scene")).unwrap();
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

#[test]
fn nerfstudio_fisheye_frames_and_mask_paths() {
    let dir = TempDir::new("nerfstudio-fisheye");
    std::fs::create_dir_all(dir.0.join("images")).unwrap();
    std::fs::create_dir_all(dir.0.join("masks")).unwrap();
    for i in 0..2 {
        write_image(&dir.0.join(format!("images/f{i}.png")), 40, 30, i as u8 + 3);
    }
    // f0's mask ignores the left half.
    let mask: Vec<u8> = (0..40 * 30)
        .map(|p| if p % 40 < 20 { 0 } else { 255 })
        .collect();
    image::GrayImage::from_raw(40, 30, mask)
        .unwrap()
        .save(dir.0.join("masks/f0.png"))
        .unwrap();
    let identity = "[[1,0,0,0],[0,1,0,0],[0,0,1,2],[0,0,0,1]]";
    let json = format!(
        r#"{{"fl_x": 20, "fl_y": 20, "cx": 20, "cy": 15, "w": 40, "h": 30,
        "frames": [
          {{"file_path": "images/f0.png", "transform_matrix": {identity}, "mask_path": "masks/f0.png",
            "camera_model": "OPENCV_FISHEYE", "k1": 0.05, "k2": -0.01, "k3": 0.0, "k4": 0.0}},
          {{"file_path": "images/f1.png", "transform_matrix": {identity}}}]}}"#
    );
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let options = LoadOptions {
        split: Split::AllTrain,
        ..LoadOptions::default()
    };
    let dataset = Dataset::load(&dir.0, &options).unwrap();
    let (fisheye, pinhole) = (&dataset.train[0], &dataset.train[1]);
    // The fisheye frame is undistorted (same focal length, its own size) and masked; the
    // pinhole frame is untouched.
    assert_eq!((fisheye.camera.fx, fisheye.camera.fy), (20.0, 20.0));
    assert!(fisheye.is_masked() && !pinhole.is_masked());
    assert_eq!((pinhole.camera.width, pinhole.camera.height), (40, 30));
    let w = fisheye.image.width;
    let left = fisheye.image.pixel(w / 4, fisheye.image.height / 2)[3];
    let right = fisheye.image.pixel(3 * w / 4, fisheye.image.height / 2)[3];
    assert_eq!((left, right), (0, 255), "the mask follows the undistortion");
    assert!(
        dataset.notes.iter().any(|n| n.contains("OPENCV_FISHEYE")),
        "{:?}",
        dataset.notes
    );
    // A missing mask file and a tangential coefficient on a fisheye are named.
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("masks/f0.png", "masks/nope.png"),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &options)).contains("nope.png"));
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k4\": 0.0", "\"k4\": 0.0, \"p1\": 0.01"),
    )
    .unwrap();
    let text = error_text(Dataset::load(&dir.0, &options));
    assert!(
        text.contains("OPENCV_FISHEYE") && text.contains("p1"),
        "{text}"
    );
    // --alpha-as-mask reads the alpha channel as the mask.
    let mut rgba = image::RgbaImage::new(40, 30);
    for (x, _, p) in rgba.enumerate_pixels_mut() {
        *p = image::Rgba([200, 100, 50, if x < 10 { 0 } else { 255 }]);
    }
    rgba.save(dir.0.join("images/f1.png")).unwrap();
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let as_mask = Dataset::load(
        &dir.0,
        &LoadOptions {
            alpha_as_mask: true,
            ..options.clone()
        },
    )
    .unwrap();
    let view = &as_mask.train[1];
    assert!(view.is_masked());
    assert_eq!(
        view.image.pixel(5, 5),
        [200, 100, 50, 0],
        "the colour under the mask is kept as it is"
    );
    assert!(!Dataset::load(&dir.0, &options).unwrap().train[1].is_masked());
}
