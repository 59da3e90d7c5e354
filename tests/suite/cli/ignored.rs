//! Options that would change nothing are refused, saying what they need, and the limits of a
//! camera path are checked before any frame: `render`'s path options without `--video` or
//! `--frames`, its level-of-detail options for a model file, `convert`'s dataset options
//! without `--min-views`, `merge`'s level-of-detail options without `--lod`; a path whose
//! `--seconds` × `--fps` passes the frame cap, a rate past the cap, and a folder that is not a
//! level of detail, each by name.

use super::*;
use crate::common::binary::output_text;

/// A scratch folder `tag` with a small model file in it: (folder, model).
fn with_model(tag: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(tag);
    let model = dir.join("model.ply");
    super::video::write_coloured_grid(&model);
    (dir, model)
}

/// `render MODEL` on the built-in scene at 16² with `extra`, which must fail: its stderr.
fn render_failure(model: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "render",
        model.to_str().unwrap(),
        "--builtin-resolution",
        "16",
    ];
    args.extend(extra);
    expect_failure(&args)
}

#[test]
fn render_refuses_options_it_would_ignore_and_paths_past_the_caps() {
    let (dir, model) = with_model("render");
    let frames = dir.join("frames");
    let frames = frames.to_str().unwrap();
    // The path's options without --video or --frames.
    for (flag, value) in [
        ("--path", "orbit"),
        ("--seconds", "2"),
        ("--fps", "10"),
        ("--size", "64x48"),
    ] {
        let err = render_failure(&model, &[flag, value, "--out", frames]);
        assert!(
            err.contains(&format!("{flag} shapes a camera path")) && err.contains("--video"),
            "{flag}: {err}"
        );
    }
    // 10^10 frames aborted on a 1 TB allocation (exit 134): each flag was capped, their product
    // was not.
    let out = render_failure(
        &model,
        &["--seconds", "100000", "--fps", "100000", "--frames", frames],
    );
    assert!(
        out.contains("10000000000 frames") && out.contains("at most 216000"),
        "{out}"
    );
    // The rate's own cap is named, not "a positive number".
    let err = render_failure(&model, &["--fps", "200000", "--frames", frames]);
    assert!(
        err.contains("--fps 200000") && err.contains("at most 100000"),
        "{err}"
    );
    // A path file's rate past the cap never reaches ffmpeg.
    let path_file = dir.join("fast.json");
    std::fs::write(
        &path_file,
        r#"{"camera_type":"perspective","render_height":16,"render_width":16,
        "camera_path":[{"camera_to_world":[1,0,0,0, 0,1,0,0, 0,0,1,3, 0,0,0,1],"fov":50,"aspect":1}],
        "fps":1e300,"seconds":1e-300}"#,
    )
    .unwrap();
    let err = render_failure(
        &model,
        &["--path", path_file.to_str().unwrap(), "--frames", frames],
    );
    assert!(
        err.contains("fast.json") && err.contains("at most 100000"),
        "{err}"
    );
    // The level-of-detail options for a model file, even one that would not parse.
    for (flag, value) in [
        ("--tau", "2"),
        ("--lod-memory", "abc"),
        ("--splat-budget", "100"),
    ] {
        let err = render_failure(&model, &[flag, value, "--out", frames]);
        assert!(
            err.contains(&format!("{flag} draws a level-of-detail folder")),
            "{flag}: {err}"
        );
    }
    // A folder that is not a level of detail is named as such, not as a format.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = render_failure(&empty, &["--out", frames]);
    assert!(
        err.contains("not a level-of-detail folder") && !err.contains("format"),
        "{err}"
    );
    assert!(!Path::new(frames).exists(), "a refused render wrote frames");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_level_of_detail_refuses_an_empty_budget_and_names_its_memory() {
    let (dir, model) = with_model("lod-options");
    let lod = dir.join("model.lod");
    let made = wgsplat(&[
        "lod",
        model.to_str().unwrap(),
        "--out",
        lod.to_str().unwrap(),
        "--refine-steps",
        "0",
    ]);
    assert!(made.status.success(), "{}", output_text(&made));
    let out = dir.join("renders");
    let out = out.to_str().unwrap();
    // A budget of 0 drew one Gaussian.
    let err = render_failure(&lod, &["--splat-budget", "0", "--out", out]);
    assert!(
        err.contains("--splat-budget 0") && err.contains("at least 1"),
        "{err}"
    );
    let err = render_failure(&lod, &["--lod-memory", "0.5", "--out", out]);
    assert!(
        err.contains("--lod-memory 0.5")
            && err.contains("level of detail")
            && !err.contains("image cache"),
        "{err}"
    );
    assert!(!Path::new(out).exists(), "a refused render wrote {out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn convert_and_merge_refuse_options_that_need_another() {
    let (dir, model) = with_model("convert");
    let output = dir.join("out.ply");
    for extra in [
        &["--eval"][..],
        &["--test-every", "4"],
        &["-r", "2"],
        &["--crop-box", "-1,-1,-1,1,1,1", "--eval"],
    ] {
        let mut args = vec!["convert", model.to_str().unwrap(), output.to_str().unwrap()];
        args.extend(extra);
        let err = expect_failure(&args);
        assert!(err.contains("--min-views"), "{extra:?}: {err}");
    }
    assert!(!output.exists());
    // merge's level-of-detail options without --lod, refused before the plan is read.
    for extra in [
        &["--page-nodes", "64"][..],
        &["--lossless"],
        &["--refine-steps", "5"],
    ] {
        let mut args = vec!["merge", "no-such-plan", "--out", output.to_str().unwrap()];
        args.extend(extra);
        let err = expect_failure(&args);
        assert!(
            err.contains("--lod") && !err.contains("no-such-plan"),
            "{extra:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
