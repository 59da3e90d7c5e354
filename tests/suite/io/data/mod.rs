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

mod builtin_scene;
mod colmap_folders;
mod initialisation;
mod nerfstudio_folders;

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

/// Writes a `width` x `height` RGB image of a seeded byte pattern (format from the extension).
fn write_image(path: &Path, width: u32, height: u32, seed: u8) {
    let pixels: Vec<u8> = (0..width * height * 3)
        .map(|i| (i as u8).wrapping_mul(seed))
        .collect();
    let image = image::RgbImage::from_raw(width, height, pixels).unwrap();
    image.save(path).unwrap();
}
