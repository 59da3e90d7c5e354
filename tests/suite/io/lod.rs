//! Level of detail on a trained model tiled into a city: the near cut draws the full model, a
//! far cut under a tenth and a quarter of the Gaussians approximates it, a camera approaching in
//! small steps sees no frame jump, and a small page pool keeps its bytes while flying over.

use std::sync::OnceLock;
use wgsplat::GpuContext;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::PlyModel;
use wgsplat::io::lod::{
    CutOptions, Loading, LodRenderer, LodTree, PageEncoding, RefineOptions, WriteOptions,
    build_tree, refine_tree, write_lod,
};
use wgsplat::io::model::upload_model;
use wgsplat::show::PathFrame;
use wgsplat::show::paths::look_at;
use wgsplat::splat::forward::{RenderOptions, render};
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::fresh_context;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

const SIZE: u32 = 96;

/// The built-in scene trained briefly, tiled 5 × 5 on its ground (x, z; y is up).
fn city(ctx: &GpuContext) -> &'static PlyModel {
    static CITY: OnceLock<PlyModel> = OnceLock::new();
    CITY.get_or_init(|| {
        let dataset = generate(&BuiltinOptions {
            resolution: 48,
            train_views: 16,
            test_views: 1,
            points: 1500,
            ..BuiltinOptions::default()
        })
        .unwrap();
        let config = TrainConfig {
            iterations: 150,
            densify_from: 40,
            densify_every: 40,
            densify_until: 120,
            lpips: false,
            ..TrainConfig::default()
        };
        let params = initial_gaussians(ctx, &dataset, &config).unwrap();
        let mut trainer = Trainer::new(ctx, dataset, params, config).unwrap();
        trainer.run(&mut |_| {}, &|| false).unwrap();
        let one = trainer.params().download(ctx).unwrap();
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        for m in &one.means {
            for k in 0..3 {
                lo[k] = lo[k].min(m[k]);
                hi[k] = hi[k].max(m[k]);
            }
        }
        let mut g = wgsplat::splat::reference::CpuGaussians::default();
        for i in 0..5 {
            for j in 0..5 {
                let offset = [i as f32 * (hi[0] - lo[0]), 0.0, j as f32 * (hi[2] - lo[2])];
                g.means.extend(
                    one.means
                        .iter()
                        .map(|m| [0, 1, 2].map(|k| m[k] + offset[k])),
                );
                g.log_scales.extend_from_slice(&one.log_scales);
                g.quats.extend_from_slice(&one.quats);
                g.opacity_logits.extend_from_slice(&one.opacity_logits);
                g.sh.extend_from_slice(&one.sh);
            }
        }
        PlyModel {
            gaussians: g,
            sh_degree: trainer.params().max_sh_degree(),
        }
    })
}

fn bounds(model: &PlyModel) -> ([f64; 3], f64) {
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for m in &model.gaussians.means {
        for k in 0..3 {
            lo[k] = lo[k].min(f64::from(m[k]));
            hi[k] = hi[k].max(f64::from(m[k]));
        }
    }
    (
        [0, 1, 2].map(|k| (lo[k] + hi[k]) / 2.0),
        (hi[0] - lo[0]).max(hi[2] - lo[2]),
    )
}

fn camera(eye: [f64; 3], target: [f64; 3]) -> Camera {
    let up = if eye[1] >= target[1] {
        [0.0, 1.0, 0.0]
    } else {
        [0.0, -1.0, 0.0]
    };
    let rotation = look_at(eye, target, up).unwrap();
    PathFrame {
        rotation,
        position: eye,
        fov_y_degrees: 60.0,
    }
    .to_camera(SIZE, SIZE, [0.0; 3])
}

fn rgb(ctx: &GpuContext, g: &GaussianTensors, camera: &Camera) -> Vec<f32> {
    let options = RenderOptions {
        sh_degree: g.max_sh_degree(),
        ..Default::default()
    };
    let rgba = render(ctx, g, camera, options)
        .unwrap()
        .image
        .read::<f32>(ctx)
        .unwrap();
    rgba.chunks_exact(4)
        .flat_map(|p| [p[0], p[1], p[2]].map(|v| v.clamp(0.0, 1.0)))
        .collect()
}

fn psnr(a: &[f32], b: &[f32]) -> f64 {
    let mse = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        / a.len() as f64;
    -10.0 * mse.max(1e-12).log10()
}

fn lod_folder(model: &PlyModel, name: &str) -> std::path::PathBuf {
    write_tree(&build_tree(model).unwrap(), name)
}

fn write_tree(tree: &LodTree, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-lod-{name}-{}", std::process::id()));
    let out = dir.join("city.lod");
    let options = WriteOptions {
        page_nodes: 2048,
        encoding: PageEncoding::Ply,
    };
    write_lod(tree, &out, options).unwrap();
    out
}

#[test]
fn a_city_is_drawn_near_in_full_far_under_a_budget_and_without_popping() {
    let ctx = fresh_context(false);
    let model = city(&ctx);
    let total = model.gaussians.means.len() as u64;
    let dir = lod_folder(model, "city");
    let full = upload_model(&ctx, model, "city").unwrap();
    let (centre, span) = bounds(model);
    let far_eye = [centre[0], centre[1] + 0.9 * span, centre[2] - 0.6 * span];
    let far = camera(far_eye, centre);
    let near_eye = [centre[0], centre[1] + 0.05 * span, centre[2] - 0.1 * span];
    let near = camera(near_eye, centre);
    let mut lod = LodRenderer::open(&ctx, &dir, 1 << 30).unwrap();

    // Near, no budget: the cut is the full model where it is seen.
    let all = CutOptions {
        tau_pixels: 0.25,
        splat_budget: u64::MAX,
    };
    let (g, _) = lod.prepare(&ctx, &near, all, Loading::Complete).unwrap();
    let db = psnr(&rgb(&ctx, &g, &near), &rgb(&ctx, &full, &near));
    assert!(db >= 40.0, "near: {db:.2} dB against the full model");

    // Far, a quarter and a tenth of the Gaussians (measured: 26.3 and 23.0 dB on 66k Gaussians
    // at 96²; `wgsplat bench lod` measures a trained town tiled to a million, docs/lod.md).
    let reference = rgb(&ctx, &full, &far);
    let mut scores = Vec::new();
    for (fraction, floor) in [(0.25, 25.0), (0.1, 21.5)] {
        let budget = CutOptions {
            tau_pixels: 0.25,
            splat_budget: (total as f64 * fraction) as u64,
        };
        let (g, report) = lod.prepare(&ctx, &far, budget, Loading::Complete).unwrap();
        assert!(report.cut_nodes <= budget.splat_budget, "{report:?}");
        let db = psnr(&rgb(&ctx, &g, &far), &reference);
        scores.push((fraction, report.cut_nodes, db));
        assert!(db >= floor, "far at {fraction}: {db:.2} dB ({scores:?})");
    }

    // Approaching in small steps at a tenth: no step jumps more than its neighbours.
    let tenth = CutOptions {
        tau_pixels: 0.25,
        splat_budget: total / 10,
    };
    let mut frames = Vec::new();
    for step in 0..8 {
        let t = 1.0 - 0.04 * step as f64;
        let eye = [0, 1, 2].map(|k| centre[k] + (far_eye[k] - centre[k]) * t);
        let cam = camera(eye, centre);
        let (g, _) = lod.prepare(&ctx, &cam, tenth, Loading::Complete).unwrap();
        frames.push(rgb(&ctx, &g, &cam));
    }
    let steps: Vec<f64> = frames.windows(2).map(|w| psnr(&w[0], &w[1])).collect();
    for i in 1..steps.len() - 1 {
        let neighbours = steps[i - 1].min(steps[i + 1]);
        assert!(
            steps[i] >= neighbours - 2.0,
            "step {i} drops to {:.2} dB: {steps:?}",
            steps[i]
        );
    }
}

/// The far view's cut at a tenth of the Gaussians, drawn from `dir`, against `reference`.
fn far_tenth_db(ctx: &GpuContext, dir: &std::path::Path, far: &Camera, reference: &[f32]) -> f64 {
    let total = city(ctx).gaussians.means.len() as u64;
    let mut lod = LodRenderer::open(ctx, dir, 1 << 30).unwrap();
    let tenth = CutOptions {
        tau_pixels: 0.25,
        splat_budget: total / 10,
    };
    let (g, _) = lod.prepare(ctx, far, tenth, Loading::Complete).unwrap();
    psnr(&rgb(ctx, &g, far), reference)
}

#[test]
fn refining_the_merged_nodes_brings_a_far_cut_closer_to_the_full_model() {
    let ctx = fresh_context(false);
    let model = city(&ctx);
    let (centre, span) = bounds(model);
    let far = camera(
        [centre[0], centre[1] + 0.9 * span, centre[2] - 0.6 * span],
        centre,
    );
    let full = upload_model(&ctx, model, "city").unwrap();
    let reference = rgb(&ctx, &full, &far);
    drop(full);
    let merged = build_tree(model).unwrap();
    let mut refined = merged.clone();
    let options = RefineOptions {
        steps: 100,
        views: 12,
        size: SIZE,
        up: Some([0.0, 1.0, 0.0]),
        ..Default::default()
    };
    let mut losses = Vec::new();
    let report = refine_tree(&ctx, &mut refined, &options, &mut |_, loss| {
        losses.push(loss)
    })
    .unwrap();
    assert_eq!(losses.len(), 100);
    assert!(report.nodes_updated > 100, "{report:?}");
    // The refinement's own held-out cameras (not the far view below) improve.
    assert!(
        report.held_out_psnr_after > report.held_out_psnr_before + 0.5,
        "{report:?}"
    );
    // Leaves are the model's Gaussians, untouched; merged nodes moved.
    let s = &merged.skeleton;
    let mut moved = 0;
    for n in 0..s.len() {
        let same = merged.gaussians.sh[n] == refined.gaussians.sh[n]
            && merged.gaussians.means[n] == refined.gaussians.means[n];
        if s.child_count[n] == 0 {
            assert!(same, "leaf {n} changed");
        } else {
            moved += usize::from(!same);
        }
    }
    assert!(moved > 100, "{moved} merged nodes changed");
    let before = far_tenth_db(&ctx, &write_tree(&merged, "plain"), &far, &reference);
    let after = far_tenth_db(&ctx, &write_tree(&refined, "refined"), &far, &reference);
    // Measured: 23.04 dB merged, 24.87 dB refined (held-out 30.36 -> 31.39 dB).
    println!("far view at a tenth: {before:.2} dB merged, {after:.2} dB refined; {report:?}");
    assert!(
        after >= before + 1.0,
        "far view at a tenth: {before:.2} dB merged, {after:.2} dB refined"
    );
}

#[test]
fn a_small_pool_stays_within_its_bytes_over_a_flight() {
    let ctx = fresh_context(true);
    let model = city(&ctx);
    let dir = lod_folder(model, "flight");
    let (centre, span) = bounds(model);
    let pool_bytes = 6 * 2048 * (11 + 3 * 16) * 4;
    let mut lod = LodRenderer::open(&ctx, &dir, pool_bytes as u64).unwrap();
    let held = lod.gpu.resident_bytes();
    let options = CutOptions {
        tau_pixels: 1.0,
        splat_budget: u64::MAX,
    };
    let mut loaded = 0;
    for step in 0..10 {
        let x = centre[0] - 0.5 * span + span * step as f64 / 9.0;
        let cam = camera(
            [x, centre[1] + 0.05 * span, centre[2] - 0.1 * span],
            [x, centre[1], centre[2]],
        );
        let (_, report) = lod
            .prepare(&ctx, &cam, options, Loading::AtMost(2))
            .unwrap();
        assert!(
            report.pages_resident <= 6 && report.pages_loaded <= 2,
            "{report:?}"
        );
        assert!(lod.gpu.pool.closed_under_parents());
        assert_eq!(lod.gpu.resident_bytes(), held);
        loaded += report.pages_loaded;
    }
    assert!(
        loaded > 6,
        "the flight loaded {loaded} pages: it should have evicted and reloaded"
    );
}
