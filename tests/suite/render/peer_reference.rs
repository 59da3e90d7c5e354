//! The CPU reference renderer against gsplat's own renders (`tests/fixtures/gsplat/`, committed
//! copies of `../shared/peer-cases/gsplat/`).

use crate::common;

use common::PeerCase;
use wgsplat::splat::reference::{project, render};

#[test]
fn cpu_reference_matches_gsplat_images_and_projection() {
    for peer in PeerCase::all() {
        let (case, g) = (peer.name, &peer.gaussians);
        let camera = PeerCase::camera();
        let xys = peer.tensor("xys");
        let conics = peer.tensor("conics");
        let depths = peer.tensor("depths");
        for i in 0..g.means.len() {
            let Some(p) = project(g, i, &camera, 3) else {
                continue;
            };
            let want_xy = [xys[2 * i], xys[2 * i + 1]];
            let want_conic = [conics[3 * i], conics[3 * i + 1], conics[3 * i + 2]];
            wgsplat::testing::compare_close(&format!("{case} xy {i}"), &p.xy, &want_xy, 1e-4, 1e-4)
                .unwrap();
            wgsplat::testing::compare_close(
                &format!("{case} conic {i}"),
                &p.conic,
                &want_conic,
                1e-5,
                1e-3,
            )
            .unwrap();
            wgsplat::testing::compare_close(
                &format!("{case} depth {i}"),
                &[p.depth],
                &[depths[i]],
                1e-5,
                1e-5,
            )
            .unwrap();
        }
        let image = render(g, &camera, 3);
        let got: Vec<f32> = image.rgba.iter().flatten().copied().collect();
        let want = peer.tensor("out_img");
        let max = wgsplat::testing::max_abs_diff(&got, &want);
        eprintln!("{case}: CPU reference max abs error vs gsplat {max:e}");
        wgsplat::testing::compare_close(&format!("{case} image"), &got, &want, 1e-4, 0.01).unwrap();
    }
}
