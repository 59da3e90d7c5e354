//! `wgsplat lod` and drawing its folder with `render`: a model becomes a folder whose leaves are
//! its Gaussians, a second run replaces it, a folder that is not one is never overwritten, and a
//! splat budget asked of a model file is refused with the command that makes a folder.

use wgsplat::io::lod::LodScene;
use wgsplat::io::ply::{PlyModel, write_ply};
use wgsplat::splat::reference::CpuGaussians;

use crate::common::binary::{expect_failure, output_text, temp_dir, wgsplat};

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
