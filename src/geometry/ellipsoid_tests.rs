use super::*;

fn pseudo_random(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32) / (1u64 << 24) as f32
}

/// A quaternion (w, x, y, z), normalised, as a row-major rotation matrix.
fn rotation_of(q: [f32; 4]) -> [[f32; 3]; 3] {
    let [w, x, y, z] = q;
    let columns = glam::Mat3::from_quat(glam::Quat::from_xyzw(x, y, z, w).normalize());
    columns.transpose().to_cols_array_2d()
}

/// The distance from `p` to the surface of the axis-aligned ellipsoid `axes`, by sampling the
/// surface on a fine latitude-longitude grid.
fn sampled_point_distance(p: [f64; 3], axes: [f64; 3]) -> f64 {
    let mut best = f64::INFINITY;
    for i in 0..=720 {
        let theta = std::f64::consts::PI * i as f64 / 720.0;
        for j in 0..1440 {
            let phi = std::f64::consts::TAU * j as f64 / 1440.0;
            let s = [
                axes[0] * theta.sin() * phi.cos(),
                axes[1] * theta.sin() * phi.sin(),
                axes[2] * theta.cos(),
            ];
            best = best.min((0..3).map(|k| (p[k] - s[k]).powi(2)).sum::<f64>().sqrt());
        }
    }
    best
}

#[test]
fn the_point_distance_matches_a_sampled_surface() {
    let mut seed = 9;
    let mut r = || f64::from(pseudo_random(&mut seed));
    for case in 0..12 {
        let axes = [0.2 + r(), 0.1 + 0.5 * r(), 0.01 + 0.2 * r()];
        let p = [3.0 * r() - 1.5, 3.0 * r() - 1.5, 2.0 * r() - 1.0];
        let inside: f64 = (0..3).map(|k| (p[k] / axes[k]).powi(2)).sum();
        let fast = point_ellipsoid_distance(p, axes);
        if inside <= 1.0 {
            assert_eq!(fast, 0.0, "case {case}");
            continue;
        }
        let slow = sampled_point_distance(p, axes);
        // The grid's points lie within about 0.003 × the largest axis of the true nearest point.
        assert!(
            fast <= slow + 1e-9 && slow - fast < 4e-3,
            "case {case}: {fast} against sampled {slow} (axes {axes:?}, point {p:?})"
        );
    }
}

#[test]
fn the_segment_distance_matches_a_sampled_segment() {
    let mut seed = 13;
    let mut worst = 0.0f64;
    let (mut meeting, mut apart) = (0, 0);
    for case in 0..300 {
        let mut r = || pseudo_random(&mut seed) * 2.0 - 1.0;
        let mean = [r(), r(), r()];
        // Thin and round Gaussians, some of them very thin.
        let thin = if case % 3 == 0 { 1e-4 } else { 0.01 };
        let scales = [
            0.05 + r().abs() * 0.3,
            0.02 + r().abs() * 0.2,
            thin + r().abs() * 0.05,
        ];
        let rotation = rotation_of([r(), r(), r(), r() + 0.1]);
        let (a, b) = ([2.0 * r(), r(), r()], [r(), 2.0 * r(), r()]);
        let fast = f64::from(segment_ellipsoid_distance(
            mean, scales, rotation, 3.0, a, b,
        ));
        let axes = scales.map(|s| 3.0 * f64::from(s));
        let (la, lb) = (local(mean, rotation, a), local(mean, rotation, b));
        let slow = (0..=4000)
            .map(|s| {
                let t = s as f64 / 4000.0;
                let p =
                    [0, 1, 2].map(|k| f64::from(la[k]) + t * (f64::from(lb[k]) - f64::from(la[k])));
                point_ellipsoid_distance(p, axes)
            })
            .fold(f64::INFINITY, f64::min);
        // Meeting means a whitened distance within 3 σ (a segment grazing the surface may stop
        // a hair short of it).
        let whitened = whitened_distance(mean, scales, rotation, a, b);
        if whitened <= 2.999 {
            assert!(fast < 1e-5, "case {case}: {fast} apart at {whitened} σ");
        }
        if whitened > 3.001 {
            assert!(fast > 0.0, "case {case}: meeting at {whitened} σ");
        }
        assert!(
            fast <= slow + 1e-6,
            "case {case}: {fast} above sampled {slow}"
        );
        worst = worst.max(slow - fast);
        if whitened <= 3.0 {
            meeting += 1
        } else {
            apart += 1
        }
    }
    // Samples 1/4000 of the segment apart come within 1e-3 of the minimum.
    assert!(worst < 1e-3, "sampled minimum {worst} above the search's");
    assert!(
        meeting > 10 && apart > 20,
        "{meeting} meeting, {apart} apart"
    );
}

#[test]
fn a_point_segment_and_far_or_degenerate_ellipsoids() {
    let identity = rotation_of([1.0, 0.0, 0.0, 0.0]);
    // A sphere of 3 σ = 0.3 round the origin, a point 1 away: 0.7.
    let d = segment_ellipsoid_distance(
        [0.0; 3],
        [0.1; 3],
        identity,
        3.0,
        [1.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
    );
    assert!((d - 0.7).abs() < 1e-6, "{d}");
    // A flat disc: the segment along its axis, 0.5 above it, is 0.5 away whatever the radius.
    let d = segment_ellipsoid_distance(
        [0.0; 3],
        [1.0, 1.0, 0.0],
        identity,
        3.0,
        [-0.2, 0.0, 0.5],
        [0.2, 0.0, 0.5],
    );
    assert!((d - 0.5).abs() < 1e-5, "{d}");
    let d = segment_ellipsoid_distance([f32::NAN; 3], [0.1; 3], identity, 3.0, [0.0; 3], [1.0; 3]);
    assert!(d.is_nan() || d == f32::INFINITY, "{d}");
}
