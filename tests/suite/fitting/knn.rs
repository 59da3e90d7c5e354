//! k-NN initialisation (mean squared distance to the 3 nearest other points) against an O(N²)
//! CPU brute force on uniform, clustered and degenerate point sets, against a CPU k-d tree
//! (kiddo) at 1M points, on both kernel paths and with small pages.

use kiddo::{ImmutableKdTree, SquaredEuclidean, batch::Executor};
use std::num::NonZeroUsize;
use std::sync::OnceLock;
use wgsplat::knn::{self, MIN_MEAN_SQ_DIST};
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages, compare_close};
use wgsplat::{DType, GpuContext, MemoryCategory, Tensor};

/// Relative tolerance: both sides compute the same f32 expressions; only the driver's freedom to
/// fuse multiply-adds can move a result by a few ulps.
const RTOL: f32 = 1e-6;

fn check(ctx: &GpuContext, what: &str, points: &[[f32; 3]], want: &[f32]) {
    let got = knn::mean_sq_dist_3nn_of_slice(ctx, points).unwrap();
    let path = ctx.info().kernel_path();
    compare_close(
        &format!("{what} n={} {path}", points.len()),
        &got,
        want,
        0.0,
        RTOL,
    )
    .unwrap();
}

fn check_brute_force(what: &str, points: &[[f32; 3]]) {
    let want = knn::mean_sq_dist_3nn_brute_force(points);
    for ctx in both_paths() {
        check(ctx, what, points, &want);
    }
}

fn uniform(rng: &mut TestRng, n: usize, lo: f32, hi: f32) -> Vec<[f32; 3]> {
    (0..n)
        .map(|_| [rng.range(lo, hi), rng.range(lo, hi), rng.range(lo, hi)])
        .collect()
}

/// A standard normal sample (Box-Muller).
fn normal(rng: &mut TestRng) -> f32 {
    let u = rng.unit().max(1e-7);
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
}

fn blobs(rng: &mut TestRng, n: usize, centres: &[[f32; 3]], sigma: f32) -> Vec<[f32; 3]> {
    (0..n)
        .map(|i| {
            let c = centres[i % centres.len()];
            [
                c[0] + sigma * normal(rng),
                c[1] + sigma * normal(rng),
                c[2] + sigma * normal(rng),
            ]
        })
        .collect()
}

#[test]
fn knn_tiny_inputs() {
    let mut rng = TestRng::new(1);
    for n in [0usize, 1, 2, 3, 4, 5, 8, 9, 17, 64, 65, 511, 513] {
        check_brute_force("tiny", &uniform(&mut rng, n, -1.0, 1.0));
    }
    // The documented small-N values.
    let ctx = both_paths()[1];
    assert_eq!(
        knn::mean_sq_dist_3nn_of_slice(ctx, &[[1.0, 2.0, 3.0]]).unwrap(),
        vec![MIN_MEAN_SQ_DIST]
    );
    assert_eq!(
        knn::mean_sq_dist_3nn_of_slice(ctx, &[[0.0; 3], [2.0, 0.0, 0.0]]).unwrap(),
        vec![4.0, 4.0]
    );
    assert_eq!(
        knn::mean_sq_dist_3nn_of_slice(ctx, &[[0.0; 3], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0]]).unwrap(),
        vec![5.0, 2.5, 6.5]
    );
}

#[test]
fn knn_uniform_matches_brute_force() {
    let mut rng = TestRng::new(2);
    check_brute_force("uniform", &uniform(&mut rng, 20_000, -10.0, 10.0));
    check_brute_force("uniform offset", &uniform(&mut rng, 3_000, 1000.0, 1001.0));
}

#[test]
fn knn_clusters_match_brute_force() {
    let mut rng = TestRng::new(3);
    let centres = [
        [0.0, 0.0, 0.0],
        [5.0, -3.0, 2.0],
        [-4.0, 4.0, 1.0],
        [1.0, 1.0, -6.0],
        [0.01, 0.0, 0.0],
    ];
    check_brute_force("tight blobs", &blobs(&mut rng, 20_000, &centres, 1e-3));
    check_brute_force("wide blobs", &blobs(&mut rng, 5_000, &centres, 0.5));
}

#[test]
fn knn_degenerate_sets_match_brute_force() {
    let mut rng = TestRng::new(4);
    check_brute_force("all identical", &vec![[1.5, -2.0, 3.25]; 5_000]);
    let base = uniform(&mut rng, 700, -1.0, 1.0);
    let duplicates: Vec<[f32; 3]> = (0..6_000)
        .map(|_| base[(rng.next_u32() % 700) as usize])
        .collect();
    check_brute_force("many duplicates", &duplicates);
    let pairs: Vec<[f32; 3]> = uniform(&mut rng, 2_000, -1.0, 1.0)
        .into_iter()
        .flat_map(|p| [p, p])
        .collect();
    check_brute_force("exact pairs", &pairs);
    let collinear: Vec<[f32; 3]> = (0..5_000)
        .map(|_| rng.range(-3.0, 3.0))
        .map(|t| [t, 2.0 * t + 1.0, -t])
        .collect();
    check_brute_force("collinear", &collinear);
    let on_axis: Vec<[f32; 3]> = (0..3_000).map(|i| [i as f32 * 0.25, 0.0, 0.0]).collect();
    check_brute_force("evenly spaced on an axis", &on_axis);
    let coplanar: Vec<[f32; 3]> = (0..8_000)
        .map(|_| [rng.range(-2.0, 2.0), 0.5, rng.range(-2.0, 2.0)])
        .collect();
    check_brute_force("coplanar", &coplanar);
    let grid: Vec<[f32; 3]> = (0..4_096)
        .map(|i| [(i % 16) as f32, ((i / 16) % 16) as f32, (i / 256) as f32])
        .collect();
    check_brute_force("regular grid (many ties)", &grid);
    let mut far_apart = blobs(&mut rng, 4_000, &[[-1e5, 0.0, 0.0]], 0.1);
    far_apart.extend(blobs(&mut rng, 4_000, &[[1e5, 1e5, -1e5]], 0.1));
    check_brute_force("two far-apart clusters", &far_apart);
    let mut outlier = blobs(&mut rng, 8_000, &[[0.0, 0.0, 0.0]], 0.01);
    outlier.push([3e4, -2e4, 1e4]);
    check_brute_force("one far outlier", &outlier);
    // Dense clusters that a key quantised over the bounding box alone would collapse.
    let mut speck_at_origin = blobs(&mut rng, 12_000, &[[0.0, 0.0, 0.0]], 1e-5);
    speck_at_origin.push([1e6, 1e6, 1e6]);
    check_brute_force(
        "dense speck at the origin, outlier at 1e6",
        &speck_at_origin,
    );
    let mut speck_far = blobs(&mut rng, 12_000, &[[10.0, -10.0, 10.0]], 1e-4);
    speck_far.push([-1e3, 0.0, 0.0]);
    check_brute_force("dense speck at 10, outlier at 1e3", &speck_far);
    let mut outliers = uniform(&mut rng, 6_000, -1.0, 1.0);
    outliers.extend(uniform(&mut rng, 20, -1e6, 1e6));
    check_brute_force("sparse far outliers", &outliers);
    let mixed_scales: Vec<[f32; 3]> = (0..6_000)
        .map(|i| {
            let s = 10f32.powi(i % 9 - 4);
            [
                s * rng.range(-1.0, 1.0),
                s * rng.range(-1.0, 1.0),
                s * rng.range(-1.0, 1.0),
            ]
        })
        .collect();
    check_brute_force("scales 1e-4..1e4", &mixed_scales);
}

#[test]
fn knn_paged() {
    // 64 KiB pages: 16,384 elements, so [N, 3] rows straddle page boundaries.
    let mut rng = TestRng::new(5);
    let points = blobs(&mut rng, 20_003, &[[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]], 0.7);
    let want = knn::mean_sq_dist_3nn_brute_force(&points);
    for ctx in both_paths_small_pages() {
        check(ctx, "paged", &points, &want);
    }
}

#[test]
fn knn_rejects_bad_shapes() {
    let ctx = both_paths()[1];
    let mut enc = ctx.encoder("test");
    let flat = Tensor::zeros(&mut enc, DType::F32, &[12], MemoryCategory::Other, "flat").unwrap();
    let wide = Tensor::zeros(&mut enc, DType::F32, &[3, 4], MemoryCategory::Other, "wide").unwrap();
    let ints = Tensor::zeros(&mut enc, DType::U32, &[4, 3], MemoryCategory::Other, "ints").unwrap();
    for t in [&flat, &wide, &ints] {
        assert!(knn::mean_sq_dist_3nn(&mut enc, t).is_err());
    }
}

/// The k-d tree reference: kiddo's 4 nearest (the point itself among them, unless duplicates
/// crowd it out), the point itself dropped, distances recomputed with the kernel's expression.
fn kd_tree_reference(points: &[[f32; 3]]) -> Vec<f32> {
    let tree: ImmutableKdTree<f32, 3> = ImmutableKdTree::new_from_slice(points).unwrap();
    let four = NonZeroUsize::new(knn::NEIGHBOURS + 1).unwrap();
    let results = tree
        .query_batch(points)
        .nearest_n::<SquaredEuclidean<f32>>(four)
        .with_executor(&Executor::parallel())
        .execute();
    (0..points.len())
        .map(|i| {
            let items = results.get(i).unwrap();
            let mut others: Vec<usize> = items
                .iter()
                .map(|r| r.item as usize)
                .filter(|&j| j != i)
                .collect();
            others.truncate(knn::NEIGHBOURS);
            let mut d: Vec<f32> = others
                .iter()
                .map(|&j| knn::squared_distance(points[i], points[j]))
                .collect();
            d.sort_by(f32::total_cmp);
            knn::mean_of_nearest(&d)
        })
        .collect()
}

#[test]
fn knn_kd_tree_reference_agrees_with_brute_force() {
    let mut rng = TestRng::new(6);
    let mut points = blobs(&mut rng, 3_000, &[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], 0.3);
    points.extend_from_within(..500);
    compare_close(
        "kd tree vs brute force",
        &kd_tree_reference(&points),
        &knn::mean_sq_dist_3nn_brute_force(&points),
        0.0,
        RTOL,
    )
    .unwrap();
}

#[test]
fn knn_one_million_matches_kd_tree() {
    static POINTS: OnceLock<(Vec<[f32; 3]>, Vec<f32>)> = OnceLock::new();
    let (points, want) = POINTS.get_or_init(|| {
        let mut rng = TestRng::new(7);
        let mut points = uniform(&mut rng, 900_000, -50.0, 50.0);
        points.extend(blobs(
            &mut rng,
            100_000,
            &[[3.0, -7.0, 11.0], [-20.0, 5.0, 0.0]],
            0.05,
        ));
        let want = kd_tree_reference(&points);
        (points, want)
    });
    for ctx in both_paths() {
        check(ctx, "1M uniform + blobs", points, want);
    }
}
