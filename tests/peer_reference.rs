//! The CPU reference renderer against gsplat's own renders (`../shared/peer-cases/gsplat/`).
//! Skipped, with a message, where the shared folder is absent.

use std::path::PathBuf;
use wgsplat::splat::Camera;
use wgsplat::splat::reference::{CpuGaussians, project, render};

fn peer_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peer-cases/gsplat")
}

fn tensor(st: &safetensors::SafeTensors<'_>, name: &str) -> Vec<f32> {
    let view = st.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn peer_camera() -> Camera {
    Camera {
        rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        translation: [-0.123, -0.456, 8.0],
        fx: 61.5,
        fy: 61.5,
        cx: 61.5,
        cy: 41.0,
        width: 123,
        height: 82,
        near: 0.01,
        far: 1e12,
        background: [0.0; 3],
    }
}

fn load(name: &str) -> Option<(CpuGaussians, Vec<u8>)> {
    let path = peer_dir().join(name);
    let bytes = std::fs::read(&path).ok()?;
    let st = safetensors::SafeTensors::deserialize(&bytes).expect("valid safetensors");
    let means = tensor(&st, "means");
    let n = means.len() / 3;
    let coeffs = tensor(&st, "coeffs");
    let g = CpuGaussians {
        means: means.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        log_scales: tensor(&st, "scales").chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        quats: tensor(&st, "quats").chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect(),
        opacity_logits: tensor(&st, "opacities"),
        sh: (0..n).map(|i| std::array::from_fn(|k| std::array::from_fn(|ch| coeffs[i * 48 + k * 3 + ch]))).collect(),
    };
    Some((g, bytes))
}

#[test]
fn cpu_reference_matches_gsplat_images_and_projection() {
    for case in ["tiny_case.safetensors", "basic_case.safetensors"] {
        let Some((g, bytes)) = load(case) else {
            eprintln!("skipping {case}: ../shared/peer-cases is not present");
            continue;
        };
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let camera = peer_camera();
        let xys = tensor(&st, "xys");
        let conics = tensor(&st, "conics");
        let depths = tensor(&st, "depths");
        for i in 0..g.means.len() {
            let Some(p) = project(&g, i, &camera, 3) else { continue };
            let want_xy = [xys[2 * i], xys[2 * i + 1]];
            let want_conic = [conics[3 * i], conics[3 * i + 1], conics[3 * i + 2]];
            wgsplat::testing::compare_close(&format!("{case} xy {i}"), &p.xy, &want_xy, 1e-4, 1e-4).unwrap();
            wgsplat::testing::compare_close(&format!("{case} conic {i}"), &p.conic, &want_conic, 1e-5, 1e-3).unwrap();
            wgsplat::testing::compare_close(&format!("{case} depth {i}"), &[p.depth], &[depths[i]], 1e-5, 1e-5).unwrap();
        }
        let image = render(&g, &camera, 3);
        let got: Vec<f32> = image.rgba.iter().flatten().copied().collect();
        let want = tensor(&st, "out_img");
        let max = wgsplat::testing::max_abs_diff(&got, &want);
        eprintln!("{case}: CPU reference max abs error vs gsplat {max:e}");
        wgsplat::testing::compare_close(&format!("{case} image"), &got, &want, 1e-4, 0.01).unwrap();
    }
}
