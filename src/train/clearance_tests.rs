use super::*;
use crate::splat::reference::quat_to_matrix;

/// The Mahalanobis distance from `mean` to the segment, by sampling the segment densely and
/// inverting the covariance explicitly: the reference [`whitened_distance`] is held to.
fn sampled_distance(
    mean: [f32; 3],
    scales: [f32; 3],
    rotation: [[f32; 3]; 3],
    a: [f32; 3],
    b: [f32; 3],
) -> f32 {
    // Σ⁻¹ = R S⁻² Rᵀ.
    let mut inverse = [[0.0f64; 3]; 3];
    for (i, row) in inverse.iter_mut().enumerate() {
        for (j, value) in row.iter_mut().enumerate() {
            *value = (0..3)
                .map(|k| rotation[i][k] as f64 * rotation[j][k] as f64 / (scales[k] as f64).powi(2))
                .sum();
        }
    }
    (0..=20_000)
        .map(|s| {
            let t = s as f64 / 20_000.0;
            let d: Vec<f64> = (0..3)
                .map(|k| a[k] as f64 + t * (b[k] as f64 - a[k] as f64) - mean[k] as f64)
                .collect();
            let m: f64 = (0..3)
                .flat_map(|i| (0..3).map(move |j| (i, j)))
                .map(|(i, j)| d[i] * inverse[i][j] * d[j])
                .sum();
            m.sqrt()
        })
        .fold(f64::INFINITY, f64::min) as f32
}

fn pseudo_random(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32) / (1u64 << 24) as f32
}

#[test]
fn the_whitened_distance_matches_a_sampled_mahalanobis_distance() {
    let mut seed = 7;
    let mut worst = (0.0f32, 0);
    for case in 0..200 {
        let mut r = || pseudo_random(&mut seed) * 2.0 - 1.0;
        let mean = [r(), r(), r()];
        let scales = [
            0.05 + r().abs(),
            0.05 + r().abs() * 0.5,
            0.01 + r().abs() * 0.1,
        ];
        let rotation = quat_to_matrix([r(), r(), r(), r() + 0.1]);
        let (a, b) = ([2.0 * r(), r(), r()], [r(), 2.0 * r(), r()]);
        let fast = whitened_distance(mean, scales, rotation, a, b);
        let slow = sampled_distance(mean, scales, rotation, a, b);
        let error = (fast - slow).abs() / (1e-3 + slow);
        if error > worst.0 {
            worst = (error, case);
        }
    }
    assert!(
        worst.0 < 2e-3,
        "relative error {} at case {}",
        worst.0,
        worst.1
    );
}

/// Eight cameras on a ring of radius 4 looking in, one of them held out.
fn ring_with_a_gap() -> (Vec<[f32; 3]>, [f32; 3]) {
    let at = |k: usize| {
        let angle = k as f32 * std::f32::consts::TAU / 8.0;
        [4.0 * angle.cos(), 1.5, 4.0 * angle.sin()]
    };
    let centres = (0..8).filter(|&k| k != 3).map(at).collect();
    (centres, at(3))
}

#[test]
fn the_path_bridges_a_held_out_view_and_spares_the_scene() {
    let (centres, held_out) = ring_with_a_gap();
    let path = CameraPath::through(&centres);
    let identity = quat_to_matrix([1.0, 0.0, 0.0, 0.0]);
    // A veil round the held-out camera's position, 0.5 from it with a 0.3 radius: the
    // camera sits 1.7 standard deviations inside it.
    let veil = [held_out[0] * 0.88, held_out[1], held_out[2] * 0.88];
    assert!(path.passes_through(veil, [0.3; 3], identity, 3.0));
    // The same Gaussian half its size is kept: the path passes 3.4 σ from it.
    assert!(!path.passes_through(veil, [0.15; 3], identity, 3.0));
    // The scene at the centre, out to 60% of the cameras' distance (2.4 at 3 σ), and a wide
    // flat floor under the cameras.
    assert!(!path.passes_through([0.0, 0.0, 0.0], [0.8; 3], identity, 3.0));
    assert!(!path.passes_through([0.0, 0.0, 0.0], [8.0, 0.01, 8.0], identity, 3.0));
    // Segments: 7 cameras alone, 6 neighbours round the ring, the gap and the chords of two
    // steps (3-step chords, 2.4 spacings, cut through the object and are left out).
    assert_eq!(path.segment_count(), 7 + 7 + 5, "{:?}", path.segments);
}

#[test]
fn the_grid_finds_what_testing_every_segment_finds() {
    let mut seed = 11;
    let mut r = || pseudo_random(&mut seed) * 2.0 - 1.0;
    let centres: Vec<[f32; 3]> = (0..40).map(|_| [5.0 * r(), r(), 5.0 * r()]).collect();
    let path = CameraPath::through(&centres);
    let (mut found, mut cases) = (0, 0);
    for _ in 0..3000 {
        let mean = [6.0 * r(), 2.0 * r(), 6.0 * r()];
        let scales = [
            0.02 + r().abs() * 0.6,
            0.02 + r().abs() * 0.3,
            0.02 + r().abs(),
        ];
        let rotation = quat_to_matrix([r(), r(), r(), r() + 0.1]);
        let brute = path
            .segments
            .iter()
            .any(|&[a, b]| whitened_distance(mean, scales, rotation, a, b) <= 3.0);
        assert_eq!(
            path.passes_through(mean, scales, rotation, 3.0),
            brute,
            "mean {mean:?} scales {scales:?}"
        );
        found += brute as u32;
        cases += 1;
    }
    // Both answers occur, so the comparison means something.
    assert!(found > 30 && found < cases - 30, "{found} of {cases}");
}

#[test]
fn degenerate_paths_and_gaussians_are_handled() {
    let identity = quat_to_matrix([1.0, 0.0, 0.0, 0.0]);
    // One camera, or all at one point: the cameras alone.
    for centres in [vec![[0.0; 3]], vec![[1.0, 2.0, 3.0]; 4]] {
        let path = CameraPath::through(&centres);
        assert!(path.passes_through(centres[0], [0.1; 3], identity, 3.0));
        assert!(!path.passes_through([5.0, 5.0, 5.0], [0.1; 3], identity, 3.0));
    }
    let path = CameraPath::through(&[]);
    assert_eq!(path.segment_count(), 0);
    assert!(!path.passes_through([0.0; 3], [1.0; 3], identity, 3.0));
    // A non-finite Gaussian is never on the path.
    let path = CameraPath::through(&[[0.0; 3], [1.0, 0.0, 0.0]]);
    assert!(!path.passes_through([f32::NAN; 3], [1.0; 3], identity, 3.0));
    assert!(!path.passes_through([0.0; 3], [f32::INFINITY; 3], identity, 3.0));
}
