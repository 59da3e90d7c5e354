//! The GPU cut against its CPU reference, on both kernel paths and with the pool split over
//! several buffers; the emitted Gaussians against the full model; the pool's rule under a small
//! budget, where the awaited cut equals the blocking one.

use super::cut::CutOptions;
use super::cut_reference;
use super::render::{Loading, LodRenderer};
use super::tree::{build_tree, tests::random_model};
use super::{PageEncoding, WriteOptions, write_lod};
use crate::GpuContext;
use crate::splat::Camera;
use crate::splat::forward::{RenderOptions, render};
use crate::testing::{both_paths, both_paths_small_pages};
use std::path::PathBuf;

fn folder(name: &str, n: usize, page_nodes: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-lodcut-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let tree = build_tree(&random_model(n, 3)).unwrap();
    let out = dir.join("scene.lod");
    let options = WriteOptions {
        page_nodes,
        encoding: PageEncoding::Ply,
    };
    write_lod(&tree, &out, options).unwrap();
    out
}

fn camera_at(distance: f32, shift: f32) -> Camera {
    let mut c = Camera::facing_origin(64, 48, distance, [0.0; 3]);
    c.translation[0] += shift;
    c
}

fn cut_nodes(
    r: &LodRenderer,
    ctx: &GpuContext,
    camera: &Camera,
    options: CutOptions,
) -> (u32, Vec<u32>) {
    let cut = r.gpu.cut(ctx, camera, options).unwrap();
    let nodes = cut
        .nodes
        .prefix(cut.count.max(1))
        .unwrap()
        .read::<u32>(ctx)
        .unwrap();
    (cut.threshold, nodes[..cut.count as usize].to_vec())
}

/// Nodes in one set and not the other, except those whose own or parent's size sits on the edge
/// of a fine step (where the GPU's log2 may round the other way).
fn unexplained(r: &LodRenderer, camera: &Camera, a: &[u32], b: &[u32]) -> Vec<u32> {
    let s = &r.scene.skeleton;
    let on_edge = |n: u32| {
        let steps =
            cut_reference::size_level(camera, s.spheres[n as usize]) * cut_reference::FINE as f32;
        (steps - steps.round()).abs() < 0.05
    };
    let (sa, sb): (
        std::collections::BTreeSet<u32>,
        std::collections::BTreeSet<u32>,
    ) = (a.iter().copied().collect(), b.iter().copied().collect());
    sa.symmetric_difference(&sb)
        .copied()
        .filter(|&n| {
            let p = s.parent[n as usize];
            !on_edge(n) && (p == super::tree::NO_NODE || !on_edge(p))
        })
        .collect()
}

#[test]
fn the_gpu_cut_is_the_reference_cut_on_both_paths_and_with_a_split_pool() {
    let dir = folder("reference", 1000, 64);
    for (ctx, split) in both_paths()
        .into_iter()
        .map(|c| (c, false))
        .chain(both_paths_small_pages().into_iter().map(|c| (c, true)))
    {
        let mut r = LodRenderer::open(ctx, &dir, 64 << 20).unwrap();
        let everything = CutOptions {
            tau_pixels: 0.01,
            splat_budget: u64::MAX,
        };
        // Load every page the closest view wants.
        let near = camera_at(1.0, 0.0);
        r.prepare(ctx, &near, everything, Loading::Complete)
            .unwrap();
        let resident: Vec<bool> = (0..r.scene.page_count() as u32)
            .map(|p| r.gpu.is_resident(p))
            .collect();
        for (camera, tau, budget) in [
            (camera_at(40.0, 0.0), 1.0, u64::MAX),
            (camera_at(12.0, 3.0), 2.0, u64::MAX),
            (camera_at(12.0, 3.0), 0.5, 100),
            (camera_at(6.0, -2.0), 4.0, 300),
            (camera_at(3.0, 0.0), 0.01, u64::MAX),
        ] {
            let options = CutOptions {
                tau_pixels: tau,
                splat_budget: budget,
            };
            let (gpu_bin, gpu) = cut_nodes(&r, ctx, &camera, options);
            let (bin, cpu) = cut_reference::cut(
                &r.scene.skeleton,
                &r.scene.node_page,
                &resident,
                &camera,
                tau,
                budget,
            );
            assert_eq!(
                gpu_bin,
                bin,
                "threshold, {} split {split}",
                ctx.info().kernel_path()
            );
            let odd = unexplained(&r, &camera, &gpu, &cpu);
            assert!(
                odd.is_empty(),
                "nodes {odd:?} differ ({} vs {} nodes), {}",
                gpu.len(),
                cpu.len(),
                ctx.info().kernel_path()
            );
            if budget != u64::MAX {
                assert!(
                    gpu.len() as u64 <= budget,
                    "{} nodes over a budget of {budget}",
                    gpu.len()
                );
            }
            // A valid cut: no node of it is an ancestor of another.
            let inside: std::collections::BTreeSet<u32> = gpu.iter().copied().collect();
            for &n in &gpu {
                let mut a = r.scene.skeleton.parent[n as usize];
                while a != super::tree::NO_NODE {
                    assert!(
                        !inside.contains(&a),
                        "{a} and its descendant {n} are both in the cut"
                    );
                    a = r.scene.skeleton.parent[a as usize];
                }
            }
        }
    }
}

/// Every leaf of the folder, on the GPU: the full model the tree was built over.
fn upload_leaves(ctx: &GpuContext, r: &LodRenderer) -> crate::splat::GaussianTensors {
    let model = crate::io::PlyModel {
        gaussians: r.scene.read_leaves().unwrap(),
        sh_degree: 0,
    };
    crate::io::model::upload_model(ctx, &model, "leaves").unwrap()
}

fn image(ctx: &GpuContext, g: &crate::splat::GaussianTensors, camera: &Camera) -> Vec<f32> {
    let out = render(ctx, g, camera, RenderOptions::default()).unwrap();
    out.image.read::<f32>(ctx).unwrap()
}

fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| i % 4 != 3)
        .map(|(_, (x, y))| f64::from(x - y).powi(2))
        .sum::<f64>()
        / (a.len() as f64 * 0.75);
    10.0 * (1.0 / mse.max(1e-20)).log10()
}

#[test]
fn a_fine_cut_draws_the_full_model_and_a_coarse_one_approximates_it() {
    let ctx = both_paths()[0];
    let dir = folder("emit", 3000, 128);
    let mut r = LodRenderer::open(ctx, &dir, 64 << 20).unwrap();
    let model = upload_leaves(ctx, &r);
    let camera = camera_at(14.0, 0.5);
    let full = image(ctx, &model, &camera);
    let fine = CutOptions {
        tau_pixels: 0.01,
        splat_budget: u64::MAX,
    };
    let (g, report) = r.prepare(ctx, &camera, fine, Loading::Complete).unwrap();
    assert_eq!(report.pages_missing, 0);
    let drawn = image(ctx, &g, &camera);
    let p = psnr(&full, &drawn);
    assert!(
        p > 40.0,
        "a cut of every leaf in view scores {p:.1} dB against the model"
    );
    let coarse = CutOptions {
        tau_pixels: 0.01,
        splat_budget: 300,
    };
    let (g, report) = r.prepare(ctx, &camera, coarse, Loading::Complete).unwrap();
    assert!(
        report.cut_nodes <= 300 && report.budget_raised,
        "{report:?}"
    );
    let p = psnr(&full, &image(ctx, &g, &camera));
    // The baseline: as many leaves, every tenth, unmerged.
    let all = r.scene.read_leaves().unwrap();
    let mut some = crate::splat::reference::CpuGaussians::default();
    for i in (0..all.means.len()).step_by(10) {
        some.means.push(all.means[i]);
        some.log_scales.push(all.log_scales[i]);
        some.quats.push(all.quats[i]);
        some.opacity_logits.push(all.opacity_logits[i]);
        some.sh.push(all.sh[i]);
    }
    let some = crate::io::model::upload_model(
        ctx,
        &crate::io::PlyModel {
            gaussians: some,
            sh_degree: 0,
        },
        "tenth",
    )
    .unwrap();
    let baseline = psnr(&full, &image(ctx, &some, &camera));
    eprintln!(
        "cut of {} nodes: {p:.2} dB; every tenth leaf: {baseline:.2} dB",
        report.cut_nodes
    );
    assert!(
        p > baseline + 1.0,
        "a cut of {} nodes scores {p:.1} dB, every tenth leaf {baseline:.1} dB",
        report.cut_nodes
    );
}

#[test]
fn a_cut_over_several_output_pages_draws_the_full_model() {
    // 64 KiB pages: 256 rows of output per page, a pool over several buffers.
    let ctx = both_paths_small_pages()[1];
    let dir = folder("paged-emit", 1000, 64);
    let mut r = LodRenderer::open(ctx, &dir, 64 << 20).unwrap();
    let model = upload_leaves(ctx, &r);
    let camera = camera_at(14.0, 0.5);
    let fine = CutOptions {
        tau_pixels: 0.01,
        splat_budget: u64::MAX,
    };
    let (g, report) = r.prepare(ctx, &camera, fine, Loading::Complete).unwrap();
    assert!(
        g.means.num_pages() > 2,
        "{} output pages",
        g.means.num_pages()
    );
    assert!(report.cut_nodes > 700, "{report:?}");
    let p = psnr(&image(ctx, &model, &camera), &image(ctx, &g, &camera));
    assert!(
        p > 40.0,
        "a paged cut of every leaf in view scores {p:.1} dB"
    );
}

#[test]
fn a_small_pool_keeps_its_rule_while_the_camera_flies_over() {
    let ctx = both_paths()[1];
    let dir = folder("pool", 3000, 64);
    // Room for 12 pages of 64 Gaussians of 14 floats.
    let pool_bytes = 12 * 64 * 14 * 4;
    let mut r = LodRenderer::open(ctx, &dir, pool_bytes).unwrap();
    let bytes = r.gpu.resident_bytes();
    let options = CutOptions {
        tau_pixels: 1.0,
        splat_budget: u64::MAX,
    };
    for step in 0..12 {
        let camera = camera_at(4.0, -5.0 + step as f32);
        let (_, report) = r
            .prepare(ctx, &camera, options, Loading::AtMost(3))
            .unwrap();
        assert!(
            report.pages_resident <= 12 && report.pages_loaded <= 3,
            "{report:?}"
        );
        assert!(r.gpu.pool.closed_under_parents(), "step {step}");
        assert_eq!(r.gpu.resident_bytes(), bytes);
        // The awaited cut (what a browser page runs) is the blocking one.
        let blocking = r.gpu.cut(ctx, &camera, options).unwrap();
        let awaited = pollster::block_on(r.gpu.cut_async(ctx, &camera, options)).unwrap();
        assert_eq!(
            (
                blocking.count,
                blocking.threshold,
                blocking.wanted_pages,
                blocking.used_pages
            ),
            (
                awaited.count,
                awaited.threshold,
                awaited.wanted_pages,
                awaited.used_pages
            ),
            "step {step}"
        );
    }
    // A camera that stays still settles: the pool stops loading (no page is evicted only to be
    // wanted again, even those whose Gaussians are all out of view).
    let camera = camera_at(2.5, 1.0);
    let mut loads = Vec::new();
    for _ in 0..30 {
        let (_, report) = r
            .prepare(ctx, &camera, options, Loading::AtMost(3))
            .unwrap();
        loads.push(report.pages_loaded);
    }
    assert!(
        loads[20..].iter().all(|&l| l == 0),
        "pages loaded per still frame: {loads:?}"
    );
}
