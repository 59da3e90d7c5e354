//! `wgsplat lod` and drawing its folder with `render`: a model becomes a folder whose leaves are
//! its Gaussians, a second run replaces it, a folder that is not one is never overwritten, and a
//! splat budget asked of a model file is refused with the command that makes a folder.

use wgsplat::io::lod::LodScene;
use wgsplat::io::ply::{PlyModel, write_ply};
use wgsplat::splat::reference::CpuGaussians;

use crate::common::binary::{expect_failure, failure_text, output_text, temp_dir, wgsplat};

fn model(n: usize) -> PlyModel {
    let mut g = CpuGaussians::default();
    for i in 0..n {
        let cell = [i % 10, i / 10 % 10, i / 100];
        g.means.push(cell.map(|c| c as f32 * 0.2 - 1.0));
        g.log_scales.push([0.05f32.ln(); 3]);
        g.quats.push([1.0, 0.0, 0.0, 0.0]);
        g.opacity_logits.push(1.0);
        let mut sh = [[0.0; 3]; 16];
        sh[0] = [0.4, 0.1, -0.2];
        g.sh.push(sh);
    }
    PlyModel {
        gaussians: g,
        sh_degree: 0,
    }
}

#[test]
fn lod_writes_a_folder_of_the_models_gaussians_and_replaces_only_its_own_kind() {
    let dir = temp_dir("lod-cli");
    let ply = dir.join("model.ply");
    let m = model(600);
    write_ply(&ply, &m.gaussians, m.sh_degree).unwrap();
    let out = dir.join("scene.lod");
    let args = [
        "lod",
        ply.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--page-nodes",
        "64",
        "--refine-steps",
        "12",
        "--refine-size",
        "32",
        "--lossless",
    ];
    let run = wgsplat(&args);
    let text = output_text(&run);
    assert!(run.status.success(), "{text}");
    assert!(text.contains("600 Gaussians under"), "{text}");
    assert!(text.contains("in 12 steps"), "{text}");
    let scene = LodScene::open(&out).unwrap();
    // The refinement moves merged nodes only: the leaves are the model's Gaussians.
    let mut leaves: Vec<[u32; 3]> = scene
        .read_leaves()
        .unwrap()
        .means
        .iter()
        .map(|m| m.map(f32::to_bits))
        .collect();
    let mut means: Vec<[u32; 3]> = m
        .gaussians
        .means
        .iter()
        .map(|m| m.map(f32::to_bits))
        .collect();
    leaves.sort();
    means.sort();
    assert!(leaves == means, "the leaves are not the model's Gaussians");
    assert!(scene.page_count() > 5, "{} pages", scene.page_count());
    // A second run replaces the folder.
    let again = wgsplat(&args);
    assert!(again.status.success(), "{}", output_text(&again));

    // A folder of something else is not replaced.
    let photos = dir.join("photos");
    std::fs::create_dir_all(&photos).unwrap();
    std::fs::write(photos.join("a.jpg"), b"not mine").unwrap();
    let text = expect_failure(&[
        "lod",
        ply.to_str().unwrap(),
        "--out",
        photos.to_str().unwrap(),
    ]);
    assert!(text.contains("is not a level-of-detail folder"), "{text}");
    assert!(!text.contains("refine"), "refused before any work: {text}");
    assert!(photos.join("a.jpg").exists());
    let text = expect_failure(&[
        "lod",
        ply.to_str().unwrap(),
        "--out",
        dir.join("other.lod").to_str().unwrap(),
        "--refine-size",
        "8",
    ]);
    assert!(text.contains("8 px is outside 16"), "{text}");

    // A budget is for a level-of-detail folder.
    let text = expect_failure(&["render", ply.to_str().unwrap(), "--splat-budget", "10"]);
    assert!(text.contains("wgsplat lod"), "{text}");
}

/// Writes `model(600)` as a PLY in `dir` and builds its level of detail (pages of 64 nodes, no
/// refinement) into `dir/scene.lod`; returns the folder.
fn small_lod(dir: &std::path::Path) -> std::path::PathBuf {
    let ply = dir.join("model.ply");
    let m = model(600);
    write_ply(&ply, &m.gaussians, m.sh_degree).unwrap();
    let out = dir.join("scene.lod");
    let run = wgsplat(&[
        "lod",
        ply.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--page-nodes",
        "64",
        "--refine-steps",
        "0",
        "--lossless",
    ]);
    assert!(run.status.success(), "{}", output_text(&run));
    out
}

/// Issue 67, defect 2: `render` of a folder with too little page memory for its cut says so (an
/// error below two pages, a warning naming the frames drawn without their pages above it), and
/// says nothing when the memory suffices.
#[test]
fn render_of_a_level_of_detail_says_when_its_pages_did_not_fit() {
    let dir = temp_dir("lod-memory");
    let lod = small_lod(&dir);
    let render = |memory: &str, name: &str| {
        wgsplat(&[
            "render",
            lod.to_str().unwrap(),
            "--builtin-resolution",
            "32",
            "--lod-memory",
            memory,
            "--tau",
            "0.25",
            "--out",
            dir.join(name).to_str().unwrap(),
        ])
    };
    let text = failure_text(&render("1KiB", "tiny"), "render with 1 KiB of pages");
    assert!(text.contains("fewer than two pages"), "{text}");
    // Two pages of 64 Gaussians of SH degree 0 (14 floats each): the root page and one more.
    let run = render("7168", "two-pages");
    let text = output_text(&run);
    assert!(run.status.success(), "{text}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("were drawn without pages their cut wanted")
            && stderr.contains("--lod-memory"),
        "{text}"
    );
    let run = render("1GiB", "enough");
    let text = output_text(&run);
    assert!(run.status.success(), "{text}");
    assert!(!text.contains("without pages"), "{text}");
}

/// Issue 67, defect 3: a Gaussian no level of detail can hold (a bounding sphere past f32, a NaN
/// position) is refused when the folder is written, naming the Gaussian, instead of making a
/// folder that `render` then refuses.
#[test]
fn lod_refuses_a_gaussian_it_cannot_bound_and_names_it() {
    let dir = temp_dir("lod-unbounded");
    for (name, index, damage, extra) in [
        ("huge", 7usize, 0usize, None),
        ("nan", 3, 1, Some("--lossless")),
    ] {
        let mut m = model(100);
        match damage {
            0 => m.gaussians.log_scales[index][0] = 100.0,
            _ => m.gaussians.means[index][1] = f32::NAN,
        }
        let ply = dir.join(format!("{name}.ply"));
        write_ply(&ply, &m.gaussians, m.sh_degree).unwrap();
        let out = dir.join(format!("{name}.lod"));
        let mut args = vec![
            "lod",
            ply.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--refine-steps",
            "0",
        ];
        args.extend(extra);
        let text = expect_failure(&args);
        assert!(
            text.contains(&format!("Gaussian {index} ")),
            "{name}: {text}"
        );
        assert!(!text.contains(".partial"), "{name}: {text}");
        assert!(!out.exists(), "{name}: a folder was written");
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 67, defect 7: `lod --out .` writes the level of detail into the current folder (and
/// replaces it there on a second run), leaving no partial folder inside it or beside it.
#[test]
fn lod_writes_into_the_current_folder() {
    let dir = temp_dir("lod-here");
    let ply = dir.join("model.ply");
    let m = model(200);
    write_ply(&ply, &m.gaussians, m.sh_degree).unwrap();
    let here = dir.join("here.lod");
    std::fs::create_dir_all(&here).unwrap();
    for run in 0..2 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
            .args([
                "lod",
                ply.to_str().unwrap(),
                "--out",
                ".",
                "--refine-steps",
                "0",
            ])
            .current_dir(&here)
            .output()
            .unwrap();
        assert!(out.status.success(), "run {run}: {}", output_text(&out));
        let scene = LodScene::open(&here).unwrap();
        assert_eq!(scene.index.leaves, 200);
        for folder in [&dir, &here] {
            let hidden: Vec<_> = std::fs::read_dir(folder)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect();
            assert!(
                hidden.is_empty(),
                "run {run}: left in {folder:?}: {hidden:?}"
            );
        }
    }
}
