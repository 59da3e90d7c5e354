//! Careless and hostile dataset files: every one gives an error naming the file, the item and the
//! value (never a silently wrong dataset, a hang or a panic), and atomic writes never follow a
//! planted symbolic link or share a temporary file. The seeded mutation tests of the same readers
//! are in [`super::mutation`]; they build on this file's small datasets.

use std::path::{Path, PathBuf};

use wgsplat::data::{Dataset, LoadOptions, Split};

use super::TempDir;

fn error_text<T: std::fmt::Debug>(result: wgsplat::Result<T>) -> String {
    let text = result.expect_err("expected an error").to_string();
    eprintln!("error as reported: {text}");
    text
}

fn write_png(path: &Path, width: u32, height: u32, value: u8) {
    let pixels: Vec<u8> = (0..width * height * 3)
        .map(|i| (i as u8).wrapping_mul(value))
        .collect();
    image::RgbImage::from_raw(width, height, pixels)
        .unwrap()
        .save(path)
        .unwrap();
}

pub(crate) const CAMERAS_TXT: &str = "1 PINHOLE 8 6 10 10 4 3\n";
pub(crate) const IMAGES_TXT: &str = "# two lines per image\n1 1 0 0 0 0 0 2 1 a.png\n\n2 0.7071 0 0.7071 0 0.1 0 2 1 b.png\n1.0 2.0 -1\n3 1 0 0 0 0 0.2 2 1 c.png\n\n4 1 0 0 0 0.3 0 2 1 d.png\n\n";

/// A COLMAP text dataset of four 8x6 images; `images_txt` replaces the images file.
pub(crate) fn colmap_text_dataset(dir: &Path, images_txt: &str) -> PathBuf {
    let sparse = dir.join("sparse/0");
    std::fs::create_dir_all(&sparse).unwrap();
    std::fs::create_dir_all(dir.join("images")).unwrap();
    std::fs::write(sparse.join("cameras.txt"), CAMERAS_TXT).unwrap();
    std::fs::write(sparse.join("images.txt"), images_txt).unwrap();
    std::fs::write(sparse.join("points3D.txt"), "1 0.5 0.25 1 255 0 51 0.5\n").unwrap();
    for (i, name) in ["a.png", "b.png", "c.png", "d.png"].iter().enumerate() {
        write_png(&dir.join("images").join(name), 8, 6, i as u8 + 3);
    }
    sparse
}

/// `cameras.bin` with one PINHOLE camera of 8x6.
pub(crate) fn cameras_bin() -> Vec<u8> {
    let mut bytes = 1u64.to_le_bytes().to_vec();
    bytes.extend(1u32.to_le_bytes());
    bytes.extend(1u32.to_le_bytes());
    bytes.extend(8u64.to_le_bytes());
    bytes.extend(6u64.to_le_bytes());
    for p in [10.0f64, 10.0, 4.0, 3.0] {
        bytes.extend(p.to_le_bytes());
    }
    bytes
}

/// `images.bin` of images (id, qw qx qy qz tx ty tz, name) on camera 1, without 2D points.
fn images_bin(images: &[(u32, [f64; 7], &str)]) -> Vec<u8> {
    let mut bytes = (images.len() as u64).to_le_bytes().to_vec();
    for (id, pose, name) in images {
        bytes.extend(id.to_le_bytes());
        for v in pose {
            bytes.extend(v.to_le_bytes());
        }
        bytes.extend(1u32.to_le_bytes());
        bytes.extend(name.as_bytes());
        bytes.push(0);
        bytes.extend(0u64.to_le_bytes());
    }
    bytes
}

/// A COLMAP binary dataset of images a.png .. d.png, each with `pose`.
pub(crate) fn colmap_binary_dataset(dir: &Path, poses: [[f64; 7]; 4]) -> PathBuf {
    let sparse = colmap_text_dataset(dir, IMAGES_TXT);
    for stem in ["cameras", "images", "points3D"] {
        let _ = std::fs::remove_file(sparse.join(format!("{stem}.txt")));
    }
    std::fs::write(sparse.join("cameras.bin"), cameras_bin()).unwrap();
    let names = ["a.png", "b.png", "c.png", "d.png"];
    let images: Vec<(u32, [f64; 7], &str)> =
        (0..4).map(|i| (i as u32 + 1, poses[i], names[i])).collect();
    std::fs::write(sparse.join("images.bin"), images_bin(&images)).unwrap();
    sparse
}

pub(crate) fn all_train() -> LoadOptions {
    LoadOptions {
        split: Split::AllTrain,
        ..LoadOptions::default()
    }
}

pub(crate) const IDENTITY_POSE: [f64; 7] = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0];

/// Issue 27: a count that no file could hold is reported as the header's count and what the file
/// holds, never as a wrapped byte count (`needs 18446744073709551615 bytes`).
#[test]
fn colmap_binary_counts_beyond_any_file_are_named_not_wrapped() {
    let dir = TempDir::new("hostile-wrapped-count");
    let sparse = colmap_binary_dataset(&dir.0, [IDENTITY_POSE; 4]);
    let mut bytes = std::fs::read(sparse.join("images.bin")).unwrap();
    // The first image's 2D-point count: the last 8 bytes of its record ("a.png\0" ends the name).
    let name_end = bytes.windows(6).position(|w| w == b"a.png\0").unwrap() + 6;
    bytes[name_end..name_end + 8].copy_from_slice(&(u64::MAX / 3).to_le_bytes());
    let path = sparse.join("images.bin");
    std::fs::write(&path, &bytes).unwrap();
    let text = error_text(wgsplat::data::colmap_binary::read_images(&path));
    assert!(text.contains(&(u64::MAX / 3).to_string()), "{text}");
    assert!(text.contains("more bytes than any file holds"), "{text}");
    assert!(!text.contains("18446744073709551615"), "{text}");
    assert!(text.contains("a.png"), "{text}");
}

#[test]
fn colmap_quaternions_that_are_not_rotations_are_refused() {
    let dir = TempDir::new("hostile-quaternion");
    for (qw, shown) in [("nan", "NaN"), ("0", "0")] {
        let images = IMAGES_TXT.replace("3 1 0 0 0 0 0.2", &format!("3 {qw} 0 0 0 0 0.2"));
        colmap_text_dataset(&dir.0, &images);
        let text = error_text(Dataset::load(&dir.0, &all_train()));
        assert!(
            text.contains("images.txt") && text.contains("c.png") && text.contains("line 6"),
            "{text}"
        );
        assert!(text.contains(&format!("[{shown}, 0, 0, 0]")), "{text}");
    }
    let dir = TempDir::new("hostile-quaternion-bin");
    for bad in [f64::NAN, 0.0] {
        let mut poses = [IDENTITY_POSE; 4];
        poses[1][0] = bad;
        poses[1][2] = 0.0;
        colmap_binary_dataset(&dir.0, poses);
        let text = error_text(Dataset::load(&dir.0, &all_train()));
        assert!(
            text.contains("images.bin") && text.contains("b.png") && text.contains("quaternion"),
            "{text}"
        );
    }
}

#[test]
fn colmap_images_txt_without_points2d_lines_is_refused() {
    let dir = TempDir::new("hostile-points2d");
    let one_line_each = "1 1 0 0 0 0 0 2 1 a.png\n2 1 0 0 0 0.1 0 2 1 b.png\n3 1 0 0 0 0 0.2 2 1 c.png\n4 1 0 0 0 0.3 0 2 1 d.png\n";
    colmap_text_dataset(&dir.0, one_line_each);
    let text = error_text(Dataset::load(&dir.0, &all_train()));
    assert!(
        text.contains("images.txt") && text.contains("line 2") && text.contains("POINTS2D"),
        "{text}"
    );
    // The layout COLMAP writes (blank and non-blank POINTS2D lines) loads every image.
    colmap_text_dataset(&dir.0, IMAGES_TXT);
    assert_eq!(Dataset::load(&dir.0, &all_train()).unwrap().train.len(), 4);
}

#[test]
fn colmap_values_beyond_single_precision_are_named_briefly() {
    let dir = TempDir::new("hostile-huge");
    // A translation finite in f64 but not in f32: the view and the value are named.
    let images = IMAGES_TXT.replace("4 1 0 0 0 0.3 0 2", "4 1 0 0 0 1e300 0 2");
    colmap_text_dataset(&dir.0, &images);
    let text = error_text(Dataset::load(&dir.0, &all_train()));
    assert!(
        text.contains("d.png") && text.contains("1e300") && text.contains("translation"),
        "{text}"
    );
    // A focal length of -1e300 is printed as such, not as 301 digits; +1e300 is named too.
    colmap_text_dataset(&dir.0, IMAGES_TXT);
    for (focal, shown) in [("-1e300", "-1e300"), ("1e300", "1e300")] {
        std::fs::write(
            dir.0.join("sparse/0/cameras.txt"),
            format!("1 PINHOLE 8 6 {focal} 10 4 3\n"),
        )
        .unwrap();
        let text = error_text(Dataset::load(&dir.0, &all_train()));
        assert!(text.contains(shown) && text.len() < 400, "{text}");
    }
}

/// A nerfstudio folder of three 8x6 frames whose `transforms.json` is `json`.
pub(crate) fn nerfstudio_dataset(dir: &Path, json: &str) {
    std::fs::create_dir_all(dir.join("images")).unwrap();
    for i in 0..3 {
        write_png(&dir.join(format!("images/f{i}.png")), 8, 6, i as u8 + 1);
    }
    std::fs::write(dir.join("transforms.json"), json).unwrap();
}

pub(crate) const IDENTITY: &str = "[[1,0,0,0],[0,1,0,0],[0,0,1,2],[0,0,0,1]]";

pub(crate) fn nerfstudio_json(frame1: &str, extra: &str) -> String {
    format!(
        r#"{{"fl_x": 10, "fl_y": 10, "cx": 4, "cy": 3, "w": 8, "h": 6, {extra}
        "frames": [
          {{"file_path": "images/f0.png", "transform_matrix": {IDENTITY}}},
          {{{frame1}}},
          {{"file_path": "images/f2.png", "transform_matrix": {IDENTITY}}}]}}"#
    )
}

#[test]
fn nerf_frames_with_wrong_types_and_reflections_are_named() {
    let dir = TempDir::new("hostile-nerf");
    let good = format!(r#""file_path": "images/f1.png", "transform_matrix": {IDENTITY}"#);
    nerfstudio_dataset(&dir.0, &nerfstudio_json(&good, ""));
    assert_eq!(Dataset::load(&dir.0, &all_train()).unwrap().train.len(), 3);
    let cases = [
        (
            format!(r#""file_path": 7, "transform_matrix": {IDENTITY}"#),
            "",
            vec!["frame 1", "file_path", "7", "a number", "expected a string"],
        ),
        (
            r#""file_path": "images/f1.png", "transform_matrix": "eye(4)""#.to_string(),
            "",
            vec!["images/f1.png", "transform_matrix", "a string"],
        ),
        (
            r#""file_path": "images/f1.png", "transform_matrix": [[1,0,0,0],[0,1,0,0],[0,0,-1,2],[0,0,0,1]]"#
                .to_string(),
            "",
            vec!["images/f1.png", "reflection", "-1"],
        ),
        (
            good.clone(),
            r#""test_filenames": [5],"#,
            vec!["test_filenames", "entry 0", "5", "a number"],
        ),
        (
            good.clone(),
            r#""test_filenames": "images/f1.png","#,
            vec!["test_filenames", "a string", "a list"],
        ),
        (
            format!(r#""file_path": "images/f1.png", "transform_matrix": {IDENTITY}, "fl_x": 1e300"#),
            "",
            vec!["images/f1.png", "1e300", "focal"],
        ),
    ];
    for (frame1, extra, words) in cases {
        nerfstudio_dataset(&dir.0, &nerfstudio_json(&frame1, extra));
        let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
        assert!(text.contains("transforms.json"), "{text}");
        for word in words {
            assert!(text.contains(word), "{word:?} missing from: {text}");
        }
        assert!(text.len() < 500, "{text}");
    }
}

/// Runs `work` on another thread and fails the test if it does not finish within 10 s (a reader
/// blocked on a FIFO); `unblock` then releases it so that the thread can end.
fn within_ten_seconds<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    unblock: impl FnOnce(),
) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(work());
    });
    match receive.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(value) => value,
        Err(_) => {
            unblock();
            panic!("the reader blocked for 10 s");
        }
    }
}

#[cfg(unix)]
fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[cfg(unix)]
#[test]
fn fifos_given_as_dataset_files_are_refused_without_blocking() {
    let dir = TempDir::new("hostile-fifo");
    let list = dir.0.join("test_views.txt");
    make_fifo(&list);
    let path = list.clone();
    let result = within_ten_seconds(
        move || wgsplat::train::setup::read_test_list(&path).map_err(|e| e.to_string()),
        || drop(std::fs::OpenOptions::new().write(true).open(&list)),
    );
    let text = result.expect_err("a FIFO test list must be refused");
    assert!(
        text.contains("test_views.txt") && text.contains("FIFO"),
        "{text}"
    );
    // An image that is a FIFO is named as one, not as missing.
    colmap_text_dataset(&dir.0, IMAGES_TXT);
    let image = dir.0.join("images/b.png");
    std::fs::remove_file(&image).unwrap();
    make_fifo(&image);
    let root = dir.0.clone();
    let result = within_ten_seconds(
        move || Dataset::load(&root, &all_train()).map_err(|e| e.to_string()),
        || drop(std::fs::OpenOptions::new().write(true).open(&image)),
    );
    let text = result.expect_err("a FIFO image must be refused");
    assert!(text.contains("b.png") && text.contains("FIFO"), "{text}");
}

/// The CRC-32 (ISO-HDLC) PNG chunks carry.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut chunk = (data.len() as u32).to_be_bytes().to_vec();
    let mut body = kind.to_vec();
    body.extend(data);
    chunk.extend(&body);
    chunk.extend(crc32(&body).to_be_bytes());
    chunk
}

#[test]
fn an_image_over_the_decoding_limit_names_its_size_and_the_limit() {
    let dir = TempDir::new("hostile-png");
    // A 100-byte PNG whose header claims 30000 x 30000 RGBA pixels (3.4 GiB decoded).
    let mut ihdr = 30000u32.to_be_bytes().to_vec();
    ihdr.extend(30000u32.to_be_bytes());
    ihdr.extend([8, 6, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    png.extend(png_chunk(
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    png.extend(png_chunk(b"IEND", &[]));
    let path = dir.0.join("bomb.png");
    std::fs::write(&path, &png).unwrap();
    let text = error_text(wgsplat::data::image::read_image(&path));
    assert!(
        text.contains("bomb.png")
            && text.contains("30000x30000")
            && text.contains("limit of 1.00 GiB"),
        "{text}"
    );
}

/// A JPEG cut short (an interrupted copy) decodes without an error, its missing rows grey: it is
/// refused, naming the file, at every cut, while the whole file reads.
#[test]
fn a_truncated_jpeg_is_refused_naming_the_file() {
    let dir = TempDir::new("hostile-jpeg");
    let (w, h) = (64u32, 48u32);
    let pixels: Vec<u8> = (0..w * h)
        .flat_map(|i| [(i % w * 4) as u8, (i / w * 5) as u8, (i * 13 % 251) as u8])
        .collect();
    let mut jpeg = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90),
        &pixels,
        w,
        h,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
    let path = dir.0.join("photo.jpg");
    std::fs::write(&path, &jpeg).unwrap();
    let whole = wgsplat::data::image::read_image(&path).unwrap();
    assert_eq!((whole.width, whole.height), (w, h));
    for cut in [
        jpeg.len() / 3,
        jpeg.len() / 2,
        jpeg.len() - 2,
        jpeg.len() - 1,
    ] {
        std::fs::write(&path, &jpeg[..cut]).unwrap();
        let text = error_text(wgsplat::data::image::read_image(&path));
        assert!(
            text.contains("photo.jpg") && text.contains("truncated"),
            "{cut}: {text}"
        );
    }
}

/// A file larger than the decoding limit is refused unread (a sparse file: no disk is used).
#[test]
fn an_image_file_over_the_limit_is_refused_unread() {
    let dir = TempDir::new("hostile-huge");
    let path = dir.0.join("huge.jpg");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(wgsplat::data::image::MAX_DECODED_IMAGE_BYTES + 1)
        .unwrap();
    let text = error_text(wgsplat::data::image::read_image(&path));
    assert!(
        text.contains("huge.jpg") && text.contains("above the limit of 1.00 GiB"),
        "{text}"
    );
}

#[test]
fn atomic_writes_never_follow_a_planted_link_nor_share_a_temporary_file() {
    use std::io::Write as _;
    let dir = TempDir::new("hostile-atomic");
    let output = dir.0.join("model.ply");
    // A symbolic link planted where the old temporary name was: its target is never written.
    #[cfg(unix)]
    {
        let target = dir.0.join("victim.txt");
        std::fs::write(&target, b"precious").unwrap();
        std::os::unix::fs::symlink(&target, dir.0.join("model.ply.tmp")).unwrap();
        wgsplat::io::write_atomically(&output, |w| {
            w.write_all(b"model")
                .map_err(|e| wgsplat::io::io_error(&output, "write", e))
        })
        .unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        assert_eq!(std::fs::read(&output).unwrap(), b"model");
        assert!(std::fs::symlink_metadata(&output).unwrap().is_file());
    }
    // Two writers of one output at once: each succeeds, and the output is one of them whole.
    let first = vec![b'A'; 100_000];
    let second = vec![b'B'; 50_000];
    wgsplat::io::write_atomically(&output, |w| {
        w.write_all(&first)
            .map_err(|e| wgsplat::io::io_error(&output, "write", e))?;
        w.flush()
            .map_err(|e| wgsplat::io::io_error(&output, "write", e))?;
        wgsplat::io::write_atomically(&output, |w| {
            w.write_all(&second)
                .map_err(|e| wgsplat::io::io_error(&output, "write", e))
        })
    })
    .unwrap();
    assert_eq!(std::fs::read(&output).unwrap(), first);
    // A failed write leaves the output as it was and no temporary file behind.
    let failed = wgsplat::io::write_atomically(&output, |w| {
        w.write_all(b"partial")
            .map_err(|e| wgsplat::io::io_error(&output, "write", e))?;
        Err(wgsplat::Error::InvalidArgument {
            op: "test",
            detail: "stop".into(),
        })
    });
    assert!(failed.is_err());
    assert_eq!(std::fs::read(&output).unwrap(), first);
    let mut names: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: &[&str] = if cfg!(unix) {
        &["model.ply", "model.ply.tmp", "victim.txt"]
    } else {
        &["model.ply"]
    };
    assert_eq!(names, expected);
}
