//! Level of detail on a trained model tiled into a city: the near cut draws the full model, a
//! far cut under a tenth and a quarter of the Gaussians approximates it, a camera approaching in
//! small steps sees no frame jump, a small page pool keeps its bytes while flying over, identical
//! tiles at equal distance are drawn alike, and against a supersampled truth a tenth of the city
//! beats both every Gaussian and the naive tenth.

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
use wgsplat::splat::{Camera, GaussianTensors};
use wgsplat::testing::fresh_context;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::{TrainConfig, Trainer};

const SIZE: u32 = 96;

/// The built-in scene trained briefly, tiled 5 × 5 on its ground (x, z; y is up).
fn city(ctx: &GpuContext) -> &'static PlyModel {
    static CITY: OnceLock<PlyModel> = OnceLock::new();
    CITY.get_or_init(|| tiles(one_tile(ctx), 5))
}

/// `one` tiled `n` × `n` on its ground (x, z), edge to edge.
fn tiles(one: &PlyModel, n: usize) -> PlyModel {
    let one_g = &one.gaussians;
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for m in &one_g.means {
        for k in 0..3 {
            lo[k] = lo[k].min(m[k]);
            hi[k] = hi[k].max(m[k]);
        }
    }
    let mut g = wgsplat::splat::reference::CpuGaussians::default();
    for i in 0..n {
        for j in 0..n {
            let offset = [i as f32 * (hi[0] - lo[0]), 0.0, j as f32 * (hi[2] - lo[2])];
            g.means.extend(
                one_g
                    .means
                    .iter()
                    .map(|m| [0, 1, 2].map(|k| m[k] + offset[k])),
            );
            g.log_scales.extend_from_slice(&one_g.log_scales);
            g.quats.extend_from_slice(&one_g.quats);
            g.opacity_logits.extend_from_slice(&one_g.opacity_logits);
            g.sh.extend_from_slice(&one_g.sh);
        }
    }
    PlyModel {
        gaussians: g,
        sh_degree: one.sh_degree,
    }
}

/// The built-in scene trained briefly: one tile of the cities.
fn one_tile(ctx: &GpuContext) -> &'static PlyModel {
    static ONE: OnceLock<PlyModel> = OnceLock::new();
    ONE.get_or_init(|| {
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
        PlyModel {
            gaussians: trainer.params().download(ctx).unwrap(),
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
    let up = if (eye[0] - target[0]).abs() + (eye[2] - target[2]).abs() == 0.0 {
        // Straight down: the image's up along z.
        [0.0, 0.0, 1.0]
    } else if eye[1] >= target[1] {
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
    .to_camera(wgsplat::show::CameraType::Perspective, SIZE, SIZE, [0.0; 3])
}

fn rgb(ctx: &GpuContext, g: &GaussianTensors, camera: &Camera) -> Vec<f32> {
    wgsplat::splat::forward::render_rgb(ctx, g, camera).unwrap()
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
fn refining_the_merged_nodes_brings_a_far_cut_closer_to_the_truth() {
    let ctx = fresh_context(false);
    let model = city(&ctx);
    let (centre, span) = bounds(model);
    let far = camera(
        [centre[0], centre[1] + 0.9 * span, centre[2] - 0.6 * span],
        centre,
    );
    let full = upload_model(&ctx, model, "city").unwrap();
    // The refinement's targets are supersampled: it is scored against the truth, not against
    // the aliased render at the view's size.
    let reference = wgsplat::io::lod::quality::truth(&ctx, &full, &far, 4).unwrap();
    let naive = wgsplat::io::lod::quality::naive_cut(model, model.gaussians.means.len() / 10);
    let naive_db = psnr(
        &rgb(&ctx, &upload_model(&ctx, &naive, "naive").unwrap(), &far),
        &reference,
    );
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
    println!(
        "far view at a tenth against the truth: {before:.2} dB merged, {after:.2} dB refined, \
         naive tenth {naive_db:.2} dB; {report:?}"
    );
    assert!(
        after >= before + 0.3 && after > naive_db,
        "far view at a tenth against the truth: {before:.2} dB merged, {after:.2} dB refined, \
         naive tenth {naive_db:.2} dB"
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

/// Issue 67: a budget that falls inside a size bin is spent on that bin's largest nodes, so that
/// the cut fills its budget, and identical tiles at equal distance (a 2 × 2 city seen straight
/// from above its centre) are drawn alike: as many Gaussians over each tile, each tile's quarter
/// of the image as close to the full model's as the others'.
#[test]
fn identical_tiles_at_equal_distance_are_drawn_alike_and_the_budget_is_spent() {
    let ctx = fresh_context(false);
    let model = tiles(one_tile(&ctx), 2);
    let total = model.gaussians.means.len() as u64;
    let dir = lod_folder(&model, "symmetry");
    let (centre, span) = bounds(&model);
    let top = camera([centre[0], centre[1] + 1.2 * span, centre[2]], centre);
    let full = upload_model(&ctx, &model, "2x2").unwrap();
    let reference = rgb(&ctx, &full, &top);
    let mut lod = LodRenderer::open(&ctx, &dir, 1 << 30).unwrap();
    for fraction in [0.05, 0.1, 0.2] {
        let budget = (total as f64 * fraction) as u64;
        let options = CutOptions {
            tau_pixels: 0.25,
            splat_budget: budget,
        };
        let (g, report) = lod.prepare(&ctx, &top, options, Loading::Complete).unwrap();
        assert!(report.cut_nodes <= budget, "{report:?}");
        // Measured: 99.6, 100 and 100% of the budget spent at 5, 10 and 20%; 91.9, 99.4 and
        // 92.6% when a budget that fell inside a bin refined none of it.
        assert!(
            report.cut_nodes as f64 >= 0.97 * budget as f64,
            "at {fraction}: {} of a budget of {budget} spent",
            report.cut_nodes
        );
        // Gaussians drawn over each tile.
        let cut = g.download(&ctx).unwrap();
        let mut per_tile = [0usize; 4];
        for m in &cut.means {
            let tile = usize::from(f64::from(m[0]) >= centre[0])
                + 2 * usize::from(f64::from(m[2]) >= centre[2]);
            per_tile[tile] += 1;
        }
        let mean = per_tile.iter().sum::<usize>() as f64 / 4.0;
        assert!(
            per_tile
                .iter()
                .all(|&c| (c as f64 - mean).abs() <= 0.15 * mean),
            "at {fraction}: Gaussians over each tile {per_tile:?}"
        );
        // Each quarter of the image against the full model's.
        let image = rgb(&ctx, &g, &top);
        let half = (SIZE / 2) as usize;
        let quarter = |img: &[f32], q: usize| -> Vec<f32> {
            let (x0, y0) = ((q % 2) * half, (q / 2) * half);
            (y0..y0 + half)
                .flat_map(|y| (x0..x0 + half).map(move |x| (y, x)))
                .flat_map(|(y, x)| {
                    let at = (y * SIZE as usize + x) * 3;
                    img[at..at + 3].to_vec()
                })
                .collect()
        };
        let scores: Vec<f64> = (0..4)
            .map(|q| psnr(&quarter(&image, q), &quarter(&reference, q)))
            .collect();
        let (lo, hi) = scores
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        println!("at {fraction}: {report:?}, per tile {per_tile:?}, quarters {scores:?} dB");
        // Each tile is seen from another corner, so the quarters' content differs (measured: a
        // spread of 2.7 dB at 5%); a tile drawn a level coarser than the others falls further.
        assert!(
            hi - lo <= 3.5,
            "at {fraction}: the quarters score {scores:?} dB against the full model"
        );
    }
}

/// Issue 67: against the truth (the full model rendered 4 times larger and area-downsampled),
/// the level of detail's far cut at a tenth of the Gaussians scores above the full model drawn at
/// the view's size (aliased) and above the naive tenth (the largest opaque Gaussians).
#[test]
fn a_tenth_of_the_city_beats_the_full_model_and_the_naive_tenth_against_the_truth() {
    use wgsplat::io::lod::quality::{naive_cut, truth};
    let ctx = fresh_context(false);
    let model = city(&ctx);
    let total = model.gaussians.means.len() as u64;
    let dir = lod_folder(model, "truth");
    let (centre, span) = bounds(model);
    let full = upload_model(&ctx, model, "city").unwrap();
    let mut lod = LodRenderer::open(&ctx, &dir, 1 << 30).unwrap();
    let tenth = CutOptions {
        tau_pixels: 0.25,
        splat_budget: total / 10,
    };
    let naive = upload_model(&ctx, &naive_cut(model, (total / 10) as usize), "naive").unwrap();
    for (name, eye) in [
        (
            "far",
            [centre[0], centre[1] + 0.9 * span, centre[2] - 0.6 * span],
        ),
        ("top", [centre[0], centre[1] + 1.1 * span, centre[2]]),
    ] {
        let view = camera(eye, centre);
        let truth = truth(&ctx, &full, &view, 4).unwrap();
        let every = psnr(&rgb(&ctx, &full, &view), &truth);
        let naive_db = psnr(&rgb(&ctx, &naive, &view), &truth);
        let (g, _) = lod.prepare(&ctx, &view, tenth, Loading::Complete).unwrap();
        let cut = psnr(&rgb(&ctx, &g, &view), &truth);
        println!(
            "{name}: against the truth, every Gaussian {every:.2} dB, naive tenth {naive_db:.2} \
             dB, level of detail {cut:.2} dB"
        );
        assert!(
            cut > every && cut > naive_db,
            "{name}: the cut scores {cut:.2} dB against the truth, every Gaussian {every:.2}, \
             the naive tenth {naive_db:.2}"
        );
    }
}
