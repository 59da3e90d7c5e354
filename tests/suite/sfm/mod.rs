//! `wgsplat sfm` end to end, driving the installed COLMAP and ffmpeg: the 11 photographs of the
//! Château de Sceaux (read in place from `../shared`, never copied into the repository) all
//! register at 800 px, with their camera centres where the shared COLMAP reconstruction has them
//! up to a similarity; a video made from them registers its frames; a rerun reuses every stage;
//! and every error a user meets says what to do, before anything is written.
//!
//! COLMAP and ffmpeg must be installed in CI (`.ci/run` installs Debian's packages); elsewhere the
//! tests that run them say they are skipped. Folders as people have them (a hostile JPEG, two
//! photographs with one name, a video that repeats its frames) are in [`front_end`].

mod front_end;

use std::path::Path;
use std::process::Command;

use wgsplat::data::colmap_binary::read_images;
use wgsplat::data::{Dataset, LoadOptions, Split};
use wgsplat::sfm::align::{align, rms_residual};
use wgsplat::sfm::model::camera_centre;

use crate::common::binary::{expect_failure, output_text as text, temp_dir, wgsplat};

/// True when `program` runs; in CI a missing one fails the test.
fn have(program: &str) -> bool {
    let found = Command::new(program).arg("-h").output().is_ok();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "{program} is not installed, and CI must have it (.ci/run installs it)"
    );
    if !found {
        eprintln!("skipping: {program} is not installed");
    }
    found
}

fn report(data: &Path) -> serde_json::Value {
    let path = data.join("sfm/report.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Camera centres by image name.
fn centres(sparse: &Path) -> Vec<(String, [f64; 3])> {
    let mut images = read_images(&sparse.join("images.bin"))
        .or_else(|_| wgsplat::data::colmap::read_images_text(&sparse.join("images.txt")))
        .unwrap();
    images.sort_by(|a, b| a.name.cmp(&b.name));
    images
        .iter()
        .map(|i| (i.name.clone(), camera_centre(i)))
        .collect()
}

/// The RMS distance between `ours` aligned onto `reference` by a similarity, as a share of the
/// reference cameras' spread (RMS distance from their centroid).
fn relative_alignment_error(ours: &Path, reference: &Path) -> f64 {
    let (ours, reference) = (centres(ours), centres(reference));
    let pairs: Vec<([f64; 3], [f64; 3])> = ours
        .iter()
        .filter_map(|(name, c)| {
            let r = reference.iter().find(|(n, _)| n == name)?;
            Some((*c, r.1))
        })
        .collect();
    assert!(pairs.len() >= 3, "too few common images");
    let (a, b): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
    let transform = align(&a, &b).unwrap();
    let n = b.len() as f64;
    let mean: [f64; 3] = std::array::from_fn(|k| b.iter().map(|p| p[k]).sum::<f64>() / n);
    let spread = (b
        .iter()
        .map(|p| (0..3).map(|k| (p[k] - mean[k]).powi(2)).sum::<f64>())
        .sum::<f64>()
        / n)
        .sqrt();
    rms_residual(&transform, &a, &b) / spread
}

#[test]
fn every_sceaux_photo_registers_where_the_reference_has_it_and_a_rerun_reuses_the_stages() {
    let Some(sceaux) = wgsplat::testing::shared_data("data/sceaux_colmap") else {
        return;
    };
    if !have("colmap") {
        return;
    }
    let dir = temp_dir("sceaux");
    let data = dir.join("data");
    let (images, data_arg) = (sceaux.join("images"), data.to_str().unwrap().to_owned());
    let args = [
        "sfm",
        images.to_str().unwrap(),
        "--out",
        &data_arg,
        "--max-size",
        "800",
        "--max-features",
        "1024",
        "--downscales",
        "2",
    ];
    let out = wgsplat(&args);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("wgsplat train {data_arg}")),
        "{stdout}"
    );
    // The long stages report their progress from COLMAP's own lines.
    assert!(
        stdout.contains("features: 11/11 images") && stdout.contains("matches: 4/4 blocks"),
        "{stdout}"
    );
    let r = report(&data);
    let registration = &r["registration"];
    assert_eq!(registration["images_given"], 11, "{r}");
    assert_eq!(registration["images_registered"], 11, "{r}");
    let error = registration["mean_reprojection_error_px"].as_f64().unwrap();
    assert!(
        error > 0.0 && error < 1.5,
        "mean reprojection error {error} px"
    );
    let relative = relative_alignment_error(&data.join("sparse/0"), &sceaux.join("sparse/0"));
    assert!(
        relative < 0.02,
        "camera centres differ from the reference by {:.2}% of the cameras' spread after alignment",
        relative * 100.0
    );
    eprintln!(
        "sceaux at 800 px: 11/11 registered, {error:.3} px, centres within {:.3}% of the spread",
        relative * 100.0
    );

    // The originals are untouched, and the dataset is what `train` reads: upright, 800 px,
    // INRIA's images_2 beside.
    let photo = image::image_dimensions(data.join("images/100_7100.JPG")).unwrap();
    assert_eq!(photo, (800, 601));
    let half = image::image_dimensions(data.join("images_2/100_7100.JPG")).unwrap();
    assert_eq!(half, (400, 301));
    let options = LoadOptions {
        split: Split::AllTrain,
        ..LoadOptions::default()
    };
    let dataset = Dataset::load(&data, &options).unwrap();
    assert_eq!(dataset.train.len(), 11);

    // A rerun reuses every stage and leaves the model as it was.
    let before = std::fs::read(data.join("sparse/0/images.bin")).unwrap();
    let again = wgsplat(&args);
    assert!(again.status.success(), "{}", text(&again));
    let stdout = String::from_utf8_lossy(&again.stdout);
    for stage in ["images", "features", "matches", "mapper"] {
        assert!(stdout.contains(&format!("{stage}: reused")), "{stdout}");
    }
    assert_eq!(
        std::fs::read(data.join("sparse/0/images.bin")).unwrap(),
        before
    );
    let log = std::fs::read_to_string(data.join("sfm.log")).unwrap();
    assert!(
        log.contains("feature_extractor") && log.contains("Elapsed time"),
        "{log}"
    );

    // The models deleted: the mapper runs again, on the features and matches kept.
    std::fs::remove_dir_all(data.join("sfm/models")).unwrap();
    let again = wgsplat(&args);
    assert!(again.status.success(), "{}", text(&again));
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("matches: reused") && stdout.contains("models was changed or removed"),
        "{stdout}"
    );
    assert_eq!(report(&data)["registration"]["images_registered"], 11);

    // A rerun on three other photographs, which fails at the mapper, leaves nothing of the
    // Sceaux model: no sparse/0 or report to train on with the wrong poses, no images_2.
    let others = dir.join("others");
    write_photos(&others, 3);
    let mut other_args = args;
    other_args[1] = others.to_str().unwrap();
    let err = expect_failure(&other_args);
    assert!(err.contains("made no model"), "{err}");
    // Every pair was compared already: exhaustive matching is not the advice.
    assert!(!err.contains("--matcher exhaustive"), "{err}");
    for stale in ["sparse/0", "sfm/report.json", "images_2/100_7100.JPG"] {
        assert!(
            !data.join(stale).exists(),
            "{stale} is left from the earlier run"
        );
    }
    let images = wgsplat::sfm::inputs::images_in(&data.join("images")).unwrap();
    assert_eq!(images.len(), 3, "{images:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A video of 10 frames a second, one photograph a frame, is sampled at its own rate (not the
/// 30 frames a second the default frame target asks for 1.1 s of video, which took every frame
/// three times), and its frames register. Its name has a colon and a leading `-`, and the output
/// folder a `%`: each reaches ffmpeg and COLMAP as the file it names.
#[test]
fn a_video_of_the_photos_registers_each_frame_once() {
    let Some(sceaux) = wgsplat::testing::shared_data("data/sceaux_colmap") else {
        return;
    };
    if !have("colmap") || !have("ffmpeg") {
        return;
    }
    let dir = temp_dir("video");
    let video = dir.join("-cam1:take2.mp4");
    let pattern = sceaux.join("images/100_71%02d.JPG");
    let out = Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-y",
            "-loglevel",
            "error",
            "-framerate",
            "10",
            "-i",
        ])
        .arg(&pattern)
        .args([
            "-vf",
            "scale=800:-2",
            "-c:v",
            "mpeg4",
            "-q:v",
            "2",
            "-r",
            "10",
        ])
        .arg(&video)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let data = dir.join("o_%d");
    let out = wgsplat(&[
        "sfm",
        video.to_str().unwrap(),
        "--out",
        data.to_str().unwrap(),
        "--blur-run",
        "1",
        "--max-size",
        "640",
        "--max-features",
        "1024",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("sequential matching") && stdout.contains("the video has 10.00 frames/s"),
        "{stdout}"
    );
    let r = report(&data);
    let registration = &r["registration"];
    assert_eq!(registration["images_given"], 11, "{r}");
    let registered = registration["images_registered"].as_u64().unwrap();
    assert!(
        registered >= 10,
        "only {registered} of 11 frames registered: {r}"
    );
    let frames = wgsplat::sfm::inputs::images_in(&data.join("images")).unwrap();
    assert_eq!(frames.len(), 11, "{frames:?}");
    for frame in &frames {
        let name = frame.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("-cam1_take2_") && name.ends_with(".jpg"),
            "{name}"
        );
        assert_eq!(image::image_dimensions(frame).unwrap().0, 640);
    }
    assert!(
        !dir.join("o_1").exists(),
        "ffmpeg read the % of the folder as a pattern"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes `n` small PNG photographs into `dir`.
fn write_photos(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        let image = image::RgbImage::from_fn(64, 48, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 5) as u8, i as u8])
        });
        image.save(dir.join(format!("p{i:02}.png"))).unwrap();
    }
}

#[test]
fn inputs_a_user_gets_wrong_are_refused_with_the_fix_and_nothing_written() {
    let dir = temp_dir("errors");
    let photos = dir.join("photos");
    write_photos(&photos, 2);
    let out = dir.join("out");
    let err = expect_failure(&[
        "sfm",
        photos.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("too few images") && err.contains("gave 2"),
        "{err}"
    );
    assert!(!out.exists(), "nothing may be written");

    write_photos(&photos, 4);
    // The output folder is the input, or holds it.
    for target in [&photos, &dir] {
        let listing_before = std::fs::read_dir(&photos).unwrap().count();
        let err = expect_failure(&[
            "sfm",
            photos.to_str().unwrap(),
            "--out",
            target.to_str().unwrap(),
        ]);
        assert!(
            err.contains("holds the input") && err.contains("Nothing was written"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&photos).unwrap().count(), listing_before);
    }
    // A folder someone else filled.
    let theirs = dir.join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("notes.txt"), "mine").unwrap();
    let err = expect_failure(&[
        "sfm",
        photos.to_str().unwrap(),
        "--out",
        theirs.to_str().unwrap(),
    ]);
    assert!(
        err.contains("not empty and was not written by `wgsplat sfm`"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 1);

    // COLMAP missing: at a given path, and on PATH.
    let err = expect_failure(&[
        "sfm",
        photos.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--colmap",
        "/nonexistent/colmap",
    ]);
    assert!(
        err.contains("/nonexistent/colmap") && err.contains("apt install colmap"),
        "{err}"
    );
    assert!(
        err.contains("brew install colmap") && err.contains("Windows"),
        "{err}"
    );
    let no_path = Command::new(env!("CARGO_BIN_EXE_wgsplat"))
        .args([
            "sfm",
            photos.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("PATH", dir.join("empty-path"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&no_path.stderr);
    assert!(
        !no_path.status.success() && err.contains("`colmap` was not found on PATH"),
        "{err}"
    );
    assert!(!out.exists(), "nothing may be written");

    // ffmpeg missing for a video (COLMAP given as any program: it is not reached).
    let video = dir.join("walk.mp4");
    std::fs::write(&video, b"not really a video").unwrap();
    let err = expect_failure(&[
        "sfm",
        video.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--colmap",
        env!("CARGO_BIN_EXE_wgsplat"),
        "--ffmpeg",
        "/nonexistent/ffmpeg",
    ]);
    assert!(
        err.contains("apt install ffmpeg") && err.contains("brew install ffmpeg"),
        "{err}"
    );

    // A file that is neither, and a camera model train cannot undistort.
    let err = expect_failure(&[
        "sfm",
        dir.join("theirs/notes.txt").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("neither a folder of photographs nor a video"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_on_plain_photographs_says_to_run_sfm_first() {
    let dir = temp_dir("plain");
    write_photos(&dir.join("photos"), 3);
    let err = expect_failure(&[
        "train",
        dir.join("photos").to_str().unwrap(),
        "--iterations",
        "1",
    ]);
    assert!(
        err.contains("3 photographs, but no camera poses") && err.contains("wgsplat sfm"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
