//! The default size of photographs: without `-r`, images wider than 1600 px are used at 1600 px
//! wide with one note saying so; `-r 1` keeps them whole.

use std::path::Path;

use super::TempDir;
use wgsplat::train::setup::{DataOptions, load_dataset};

/// A COLMAP text capture of two views: `wide.png` (2000×1000) and `narrow.png` (1200×600).
fn write_capture(dir: &Path) {
    let sparse = dir.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(dir.join("images")).unwrap();
    std::fs::write(
        sparse.join("cameras.txt"),
        "1 PINHOLE 2000 1000 1800 1800 1000 500\n2 PINHOLE 1200 600 1000 1000 600 300\n",
    )
    .unwrap();
    std::fs::write(
        sparse.join("images.txt"),
        "1 1 0 0 0 0 0 3 1 wide.png\n\n2 1 0 0 0 0.5 0 3 2 narrow.png\n\n",
    )
    .unwrap();
    std::fs::write(sparse.join("points3D.txt"), "1 0 0 0 255 255 255 0\n").unwrap();
    for (name, width, height) in [("wide.png", 2000, 1000), ("narrow.png", 1200, 600)] {
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
        });
        image.save(dir.join("images").join(name)).unwrap();
    }
}

#[test]
fn images_wider_than_1600_px_default_to_1600_and_r_1_keeps_them() {
    let dir = TempDir::new("photo-width");
    write_capture(&dir.0);
    let size = |options: &DataOptions| {
        let dataset = load_dataset(Some(&dir.0), options).unwrap();
        let view = |name: &str| {
            let v = dataset.train.iter().find(|v| v.name == name).unwrap();
            assert_eq!(
                (v.image.width, v.image.height),
                (v.camera.width, v.camera.height)
            );
            (v.camera.width, v.camera.height, v.camera.fx, v.camera.cx)
        };
        (view("wide.png"), view("narrow.png"), dataset.notes.clone())
    };

    let (wide, narrow, notes) = size(&DataOptions::default());
    assert_eq!(wide, (1600, 800, 1440.0, 800.0), "the wide view, capped");
    assert_eq!(narrow, (1200, 600, 1000.0, 600.0), "the narrow view, kept");
    let said: Vec<_> = notes.iter().filter(|n| n.contains("px wide")).collect();
    assert_eq!(
        said,
        [
            "images are 2000 px wide: using them at 1600 px wide (INRIA's default for \
             photographs); pass -r 1 to keep full resolution"
        ],
        "{notes:?}"
    );

    let full = DataOptions {
        resolution: Some(1),
        ..DataOptions::default()
    };
    let (wide, narrow, notes) = size(&full);
    assert_eq!(wide, (2000, 1000, 1800.0, 1000.0), "-r 1 keeps full size");
    assert_eq!(narrow, (1200, 600, 1000.0, 600.0));
    assert!(notes.iter().all(|n| !n.contains("px wide")), "{notes:?}");

    // An explicit factor halves every image, as before.
    let half = DataOptions {
        resolution: Some(2),
        ..DataOptions::default()
    };
    let (wide, narrow, _) = size(&half);
    assert_eq!((wide.0, narrow.0), (1000, 600));
}
