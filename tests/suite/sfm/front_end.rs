//! `wgsplat sfm` on folders as people have them: a tiny JPEG whose header claims 60000 × 60000 is
//! skipped by name within a memory cap, inputs that would share a name in `images/` are refused
//! naming both before anything is written, and a video whose stream repeats each picture gives
//! each picture once. COLMAP is not needed here: `--colmap` names a program that does nothing,
//! so each run stops after the images stage, where the mapper made no model.

use std::path::Path;
use std::process::Command;

use super::{have, write_photos};
use crate::common::binary::{expect_failure, output_text as text, temp_dir};

/// A program that accepts any arguments and does nothing, standing in for COLMAP.
const NO_COLMAP: &str = "/bin/true";

/// A small real JPEG whose start-of-frame header is rewritten to claim `width` × `height`.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let image =
        image::RgbImage::from_fn(16, 16, |x, y| image::Rgb([x as u8 * 16, y as u8 * 16, 7]));
    let mut jpeg = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageFormat::Jpeg,
        )
        .unwrap();
    let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    // Marker, length (2), precision (1), height (2), width (2).
    jpeg[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    jpeg[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    jpeg
}

/// Runs `wgsplat ARGS` with its address space capped at `mib` MiB (Linux `ulimit -v`).
fn wgsplat_capped(mib: u64, args: &[&str]) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib << 10))
        .arg(env!("CARGO_BIN_EXE_wgsplat"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_jpeg_claiming_60000_squared_is_skipped_by_name_within_a_memory_cap() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = temp_dir("sfm-hostile-jpeg");
    let photos = dir.join("photos");
    write_photos(&photos, 3);
    let hostile = jpeg_claiming(60000, 60000);
    assert!(hostile.len() < 2048, "{} bytes", hostile.len());
    std::fs::write(photos.join("huge.jpg"), &hostile).unwrap();
    let out = dir.join("out");
    let run = wgsplat_capped(
        4096,
        &[
            "sfm",
            photos.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--colmap",
            NO_COLMAP,
        ],
    );
    let all = text(&run);
    // It went on past the images (and failed only where the stand-in made no model), rather
    // than aborting on a 10.8 GB allocation.
    assert_eq!(run.status.code(), Some(1), "{all}");
    assert!(
        all.contains("skipped") && all.contains("huge.jpg") && all.contains("60000x60000"),
        "{all}"
    );
    assert!(all.contains("made no model"), "{all}");
    let written = wgsplat::sfm::inputs::images_in(&out.join("images")).unwrap();
    assert_eq!(written.len(), 3, "{written:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inputs_that_would_share_a_name_are_refused_naming_both() {
    let dir = temp_dir("sfm-names");
    let out = dir.join("out");
    let refused = |inputs: &[&Path], both: [&str; 2]| {
        let mut args = vec!["sfm".to_owned()];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap().to_owned()));
        args.extend(["--out".into(), out.to_str().unwrap().into()]);
        args.extend(["--colmap".into(), NO_COLMAP.into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = expect_failure(&args);
        assert!(
            err.contains(both[0]) && err.contains(both[1]) && err.contains("nothing was written"),
            "{err}"
        );
        assert!(!out.exists(), "nothing may be written: {err}");
    };
    // a.png beside a.webp: both would be a.png.
    let one = dir.join("one");
    write_photos(&one, 3);
    image::RgbImage::new(8, 8).save(one.join("a.png")).unwrap();
    image::RgbImage::new(8, 8).save(one.join("a.webp")).unwrap();
    refused(&[&one], ["a.png", "a.webp"]);
    std::fs::remove_file(one.join("a.webp")).unwrap();
    // Names that differ only in case, in two folders.
    let two = dir.join("two");
    std::fs::create_dir_all(&two).unwrap();
    image::RgbImage::new(8, 8).save(two.join("A.PNG")).unwrap();
    refused(&[&one, &two], ["one/a.png", "two/A.PNG"]);
    std::fs::remove_file(two.join("A.PNG")).unwrap();
    // Names that are not UTF-8 and read alike.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        for bytes in [&b"x\xff.png"[..], &b"x\xfe.png"[..]] {
            let name = std::ffi::OsStr::from_bytes(bytes);
            image::RgbImage::new(8, 8).save(two.join(name)).unwrap();
        }
        refused(&[&two], ["x\\xFF.png", "x\\xFE.png"]);
    }
    std::fs::remove_dir_all(&two).unwrap();
    // A photograph named like a video's frames.
    image::RgbImage::new(8, 8)
        .save(one.join("walk_000001.jpg"))
        .unwrap();
    let video = dir.join("walk.mp4");
    std::fs::write(&video, b"not read: refused before").unwrap();
    refused(&[&one, &video], ["walk_000001.jpg", "walk.mp4"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes a video of `pictures` distinct pictures at `picture_rate` a second, encoded at
/// `stream_rate` frames a second (so each picture is repeated when the stream rate is higher).
fn write_video(
    path: &Path,
    frames_dir: &Path,
    pictures: usize,
    picture_rate: u32,
    stream_rate: u32,
) {
    std::fs::create_dir_all(frames_dir).unwrap();
    for i in 0..pictures {
        let image = image::RgbImage::from_fn(96, 64, |x, y| {
            let v = ((x + 7 * i as u32) / 8 + y / 8) % 2;
            image::Rgb([
                (v * 200) as u8 + 20,
                (x * 2) as u8,
                (y * 3 + i as u32 * 20) as u8,
            ])
        });
        image.save(frames_dir.join(format!("f{i:03}.png"))).unwrap();
    }
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-loglevel", "error", "-framerate"])
        .arg(picture_rate.to_string())
        .arg("-i")
        .arg(frames_dir.join("f%03d.png"))
        .args(["-c:v", "mpeg4", "-q:v", "2", "-r"])
        .arg(stream_rate.to_string())
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_video_that_repeats_each_picture_gives_each_picture_once() {
    if !have("ffmpeg") {
        return;
    }
    let dir = temp_dir("sfm-repeats");
    let video = dir.join("held.mp4");
    // 12 pictures at 10 a second in a 30 frames/s stream: each picture three times.
    write_video(&video, &dir.join("pictures"), 12, 10, 30);
    let out = dir.join("out");
    let err = expect_failure(&[
        "sfm",
        video.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--colmap",
        NO_COLMAP,
        "--blur-run",
        "1",
    ]);
    assert!(err.contains("made no model"), "{err}");
    let log = std::fs::read_to_string(out.join("sfm.log")).unwrap();
    let frames = wgsplat::sfm::inputs::images_in(&out.join("images")).unwrap();
    assert_eq!(frames.len(), 12, "{frames:?}\n{log}");
    let thumbnails: Vec<Vec<f32>> = frames
        .iter()
        .map(|f| wgsplat::sfm::frame_select::summarise(f).unwrap().thumbnail)
        .collect();
    for (i, a) in thumbnails.iter().enumerate() {
        for b in &thumbnails[i + 1..] {
            let difference = wgsplat::sfm::frame_select::thumbnail_difference(a, b);
            assert!(difference > 4.0, "two frames alike ({difference} levels)");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A JPEG saved under a `.png` name is written as the PNG its name promises COLMAP, not copied.
#[test]
fn a_photo_whose_content_is_not_its_extension_is_reencoded() {
    let dir = temp_dir("sfm-misnamed");
    let photos = dir.join("photos");
    write_photos(&photos, 3);
    std::fs::write(photos.join("misnamed.png"), jpeg_claiming(16, 16)).unwrap();
    let out = dir.join("out");
    let err = expect_failure(&[
        "sfm",
        photos.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--colmap",
        NO_COLMAP,
    ]);
    assert!(err.contains("made no model"), "{err}");
    let written = std::fs::read(out.join("images/misnamed.png")).unwrap();
    assert_eq!(
        image::guess_format(&written).unwrap(),
        image::ImageFormat::Png
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
