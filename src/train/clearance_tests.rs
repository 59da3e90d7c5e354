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
    // The same Gaussian half its size: the chord passes 3.4 σ from it, 0.24 from its 3 σ
    // surface, which the tube (0.12 × the 3.06 spacing) reaches; the chord alone does not.
    assert!(path.passes_through(veil, [0.15; 3], identity, 3.0));
    let bare = CameraPath::with_tube(&centres, 0.0);
    assert!(!bare.passes_through(veil, [0.15; 3], identity, 3.0));
    // A quarter of its size it is kept: 0.49 from the chord.
    assert!(!path.passes_through(veil, [0.075; 3], identity, 3.0));
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
            .zip(&path.radii)
            .any(|(&[a, b], &radius)| {
                whitened_distance(mean, scales, rotation, a, b) <= 3.0
                    || segment_ellipsoid_distance(mean, scales, rotation, 3.0, a, b) <= radius
            });
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

/// The path's segments as they were found before the k-d tree: every camera sorted by distance
/// for every camera.
fn sorted_pairs(centres: &[[f32; 3]]) -> Vec<[[f32; 3]; 2]> {
    let mut segments: Vec<[[f32; 3]; 2]> = centres.iter().map(|&c| [c, c]).collect();
    let mut pairs = std::collections::BTreeSet::new();
    for (i, &a) in centres.iter().enumerate() {
        let mut others: Vec<(f32, usize)> = centres
            .iter()
            .enumerate()
            .map(|(j, &b)| (crate::geometry::neighbours::distance(a, b), j))
            .filter(|&(d, j)| j != i && d > 0.0 && d.is_finite())
            .collect();
        others.sort_by(|x, y| x.0.total_cmp(&y.0));
        let Some(&(nearest, _)) = others.first() else {
            continue;
        };
        for &(_, j) in others
            .iter()
            .take(MAX_NEIGHBOURS)
            .filter(|&&(d, _)| d <= NEIGHBOUR_REACH * nearest)
        {
            pairs.insert((i.min(j), i.max(j)));
        }
    }
    segments.extend(pairs.into_iter().map(|(i, j)| [centres[i], centres[j]]));
    segments
}

#[test]
fn the_segments_are_those_of_sorting_every_camera() {
    let mut seed = 17;
    for case in 0..40 {
        let mut r = || pseudo_random(&mut seed);
        let n = 1 + (r() * 200.0) as usize;
        let centres: Vec<[f32; 3]> = (0..n)
            .map(|k| match case % 3 {
                0 => [8.0 * r(), r(), 8.0 * r()],
                // A walk, some photographs taken twice from one spot.
                1 => [0.5 * (k / 2) as f32, 1.5, 0.1 * r()],
                _ => [(r() * 5.0).floor(), 1.0, (r() * 5.0).floor()],
            })
            .collect();
        let path = CameraPath::through(&centres);
        assert_eq!(
            path.segments,
            sorted_pairs(&centres),
            "case {case}: {n} cameras"
        );
    }
}

#[test]
fn twenty_thousand_cameras_make_a_path_quickly() {
    let mut seed = 19;
    let centres: Vec<[f32; 3]> = (0..20_000)
        .map(|i| {
            let jitter = 0.2 * pseudo_random(&mut seed);
            [(i % 150) as f32 + jitter, 1.5, (i / 150) as f32 - jitter]
        })
        .collect();
    let started = std::time::Instant::now();
    let path = CameraPath::through(&centres);
    let elapsed = started.elapsed();
    // Sorting every camera for every camera took minutes here (4 × 10⁸ distances, sorted).
    assert!(elapsed.as_secs_f64() < 20.0, "{elapsed:?}");
    assert!(path.segment_count() > 40_000, "{}", path.segment_count());
}

/// The veil measured on a courtyard capture, rebuilt: a walk of cameras 0.8 apart with one held
/// out, the held-out camera 0.1 of the spacing off its neighbours' chord, inside three thin
/// opaque Gaussians lying across the line of sight, their flat sides to the chord.
/// A Gaussian: mean, scales and rotation.
type Gaussian = ([f32; 3], [f32; 3], [[f32; 3]; 3]);

fn held_out_off_the_chord() -> (Vec<[f32; 3]>, [f32; 3], Vec<Gaussian>) {
    let spacing = 0.8;
    let at = |k: usize| [k as f32 * spacing, 1.5, 0.0];
    let train: Vec<[f32; 3]> = (0..11).filter(|&k| k != 5).map(at).collect();
    let camera = [5.0 * spacing, 1.5, 0.1 * spacing];
    // Turned in their own plane, about the axis towards the chord.
    let turned = |degrees: f32| {
        let half = (0.5 * degrees).to_radians();
        quat_to_matrix([half.cos(), 0.0, 0.0, half.sin()])
    };
    let offset = |d: [f32; 3]| [camera[0] + d[0], camera[1] + d[1], camera[2] + d[2]];
    let veil = vec![
        (offset([0.11, 0.0, 0.0]), [0.1, 0.1, 0.004], turned(0.0)),
        (
            offset([-0.18, 0.1, -0.004]),
            [0.15, 0.09, 0.004],
            turned(30.0),
        ),
        (
            offset([0.05, -0.2, 0.002]),
            [0.1, 0.12, 0.004],
            turned(-20.0),
        ),
    ];
    (train, camera, veil)
}

#[test]
fn a_thin_veil_round_a_view_off_the_chord_is_caught_by_the_tube() {
    let (train, camera, veil) = held_out_off_the_chord();
    let path = CameraPath::through(&train);
    let bare = CameraPath::with_tube(&train, 0.0);
    let chord = (train[4], train[5]);
    for (k, &(mean, scales, rotation)) in veil.iter().enumerate() {
        // The geometry of the issue: the held-out camera within the Gaussian's 3 σ, the chord
        // between its neighbours more than 3 σ away.
        let inside = whitened_distance(mean, scales, rotation, camera, camera);
        let chord_sigmas = whitened_distance(mean, scales, rotation, chord.0, chord.1);
        assert!(
            inside < 3.0 && chord_sigmas > 3.0,
            "{k}: {inside} σ, chord {chord_sigmas} σ"
        );
        assert!(
            !bare.passes_through(mean, scales, rotation, 3.0),
            "{k}: on the bare path"
        );
        assert!(
            path.passes_through(mean, scales, rotation, 3.0),
            "Gaussian {k} is kept"
        );
    }
    let identity = quat_to_matrix([1.0, 0.0, 0.0, 0.0]);
    // The same thin Gaussians a little further out are kept: 0.2 of the spacing from the chord.
    for &(mean, scales, rotation) in &veil {
        let out = [mean[0], mean[1], mean[2] + 0.1 * 0.8];
        assert!(!path.passes_through(out, scales, rotation, 3.0), "{out:?}");
    }
    // The scene: the ground 1.5 below the cameras, a wall two spacings beside the walk.
    assert!(!path.passes_through([4.0, 0.0, 0.0], [10.0, 0.01, 10.0], identity, 3.0));
    assert!(!path.passes_through([4.0, 1.5, 1.6], [10.0, 10.0, 0.02], identity, 3.0));
}
