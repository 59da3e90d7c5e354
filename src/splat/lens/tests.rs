//! The lens maths against central differences: the Jacobian against the pixel's, and the
//! vector–Jacobian product (with ∂J/∂p) against the differences of `⟨v_pixel, pixel⟩ +
//! ⟨v_J, J⟩`, for every kind, near the axis (the series) and off it, and past 90° for a fisheye.

use super::{CameraLens, LensKind};

const FOCAL: [f64; 2] = [300.0, 280.0];
const PRINCIPAL: [f64; 2] = [160.0, 120.0];

fn lenses() -> Vec<(&'static str, CameraLens)> {
    vec![
        ("pinhole", CameraLens::PINHOLE),
        (
            "opencv",
            CameraLens::perspective([-0.21, 0.05, 0.0, 0.0, 0.0, 0.0], [0.002, -0.001]),
        ),
        (
            "full_opencv",
            CameraLens::perspective([-0.3, 0.11, -0.02, 0.05, 0.01, 0.002], [0.001, 0.0015]),
        ),
        (
            "opencv_fisheye",
            CameraLens::fisheye([0.03, -0.004, 0.0005, -0.00005], [0.0; 2], [0.0; 2]),
        ),
        (
            "thin_prism_fisheye",
            CameraLens::fisheye([0.02, -0.005, 0.001, 0.0], [0.001, -0.002], [0.003, 0.001]),
        ),
        ("fov", CameraLens::fov(0.9)),
    ]
}

fn points(lens: &CameraLens) -> Vec<[f64; 3]> {
    let mut p = vec![
        [0.01, -0.02, 2.0], // near the axis: the series
        [0.3, 0.2, 1.5],    // inside the series' range
        [0.9, -0.6, 1.7],   // outside it
        [-1.1, 0.4, 2.2],
    ];
    if lens.is_fisheye() {
        p.push([1.0, 0.5, -0.3]); // 105° from the axis
        p.push([-0.4, 1.2, -0.8]); // 125°
        p.push([-1.48, -1.35, 0.034]); // 89°
    }
    p
}

fn pixel_of(lens: &CameraLens, p: [f64; 3]) -> [f64; 2] {
    lens.project(FOCAL, PRINCIPAL, p)
        .unwrap_or_else(|| panic!("{lens:?} does not see {p:?}"))
        .pixel
}

fn assert_close(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance * (1.0 + want.abs()),
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn jacobians_match_central_differences() {
    let eps = 1e-6;
    for (name, lens) in lenses() {
        for p in points(&lens) {
            let analytic = lens
                .project(FOCAL, PRINCIPAL, p)
                .unwrap_or_else(|| panic!("{name} does not see {p:?}"))
                .jacobian;
            for k in 0..3 {
                let (mut plus, mut minus) = (p, p);
                plus[k] += eps;
                minus[k] -= eps;
                let (a, b) = (pixel_of(&lens, plus), pixel_of(&lens, minus));
                for i in 0..2 {
                    let numeric = (a[i] - b[i]) / (2.0 * eps);
                    assert_close(
                        &format!("{name} at {p:?}: J[{i}][{k}]"),
                        analytic[i][k],
                        numeric,
                        1e-5,
                    );
                }
            }
        }
    }
}

#[test]
fn the_vector_jacobian_product_includes_the_jacobians_own_gradient() {
    let eps = 1e-5;
    let v_pixel = [0.7, -1.3];
    let v_jacobian = [[0.4, -0.25, 0.9], [-0.6, 0.35, 0.15]];
    let objective = |lens: &CameraLens, p: [f64; 3]| {
        let out = lens.project(FOCAL, PRINCIPAL, p).unwrap();
        let inner: f64 = v_jacobian
            .iter()
            .flatten()
            .zip(out.jacobian.iter().flatten())
            .map(|(v, j)| v * j)
            .sum();
        v_pixel[0] * out.pixel[0] + v_pixel[1] * out.pixel[1] + inner
    };
    for (name, lens) in lenses() {
        for p in points(&lens) {
            let analytic = lens.vjp(FOCAL, p, v_pixel, v_jacobian);
            for k in 0..3 {
                let (mut plus, mut minus) = (p, p);
                plus[k] += eps;
                minus[k] -= eps;
                let numeric = (objective(&lens, plus) - objective(&lens, minus)) / (2.0 * eps);
                assert_close(
                    &format!("{name} at {p:?}: v_p[{k}]"),
                    analytic[k],
                    numeric,
                    1e-5,
                );
            }
        }
    }
}

#[test]
fn a_fisheye_folds_where_its_polynomial_turns_and_is_culled_past_it() {
    // θ_d = θ (1 + k1 θ²) turns where 1 + 3 k1 θ² = 0: θ = 1/√(-3 k1).
    let k1 = -0.1;
    let lens = CameraLens::fisheye([k1, 0.0, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    let want = 1.0 / (-3.0f64 * k1).sqrt();
    assert!(
        (f64::from(lens.limit) - want).abs() < 1e-5,
        "limit {} vs {want}",
        lens.limit
    );
    let angle = |theta: f64| [theta.sin(), 0.0, theta.cos()];
    assert!(lens.project(FOCAL, PRINCIPAL, angle(want - 0.01)).is_some());
    assert!(lens.project(FOCAL, PRINCIPAL, angle(want + 0.01)).is_none());
    // Without distortion a fisheye sees all round, short of the back axis.
    let plain = CameraLens::fisheye([0.0; 4], [0.0; 2], [0.0; 2]);
    assert!(plain.project(FOCAL, PRINCIPAL, angle(3.0)).is_some());
    assert_eq!(plain.kind, LensKind::Fisheye);
}

#[test]
fn a_barrel_lens_folds_and_the_perspective_kinds_see_nothing_behind() {
    // r (1 + k1 r²) turns at r = 1/√(-3 k1).
    let lens = CameraLens::perspective([-0.2, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0; 2]);
    let want = 1.0 / 0.6f64.sqrt();
    assert!(
        (f64::from(lens.limit) - want).abs() < 1e-5,
        "limit {}",
        lens.limit
    );
    assert!(
        lens.project(FOCAL, PRINCIPAL, [want * 0.99, 0.0, 1.0])
            .is_some()
    );
    assert!(
        lens.project(FOCAL, PRINCIPAL, [want * 1.01, 0.0, 1.0])
            .is_none()
    );
    assert!(lens.project(FOCAL, PRINCIPAL, [0.1, 0.0, -1.0]).is_none());
    assert!(
        CameraLens::fov(0.9)
            .project(FOCAL, PRINCIPAL, [0.1, 0.0, -1.0])
            .is_none()
    );
}
