//! Initialisation from sparse points and from random points in the viewed region.

use super::*;

#[test]
fn init_from_points_and_random() {
    let points = PointCloud {
        positions: vec![[1.0, 2.0, 3.0], [0.0; 3]],
        colors: vec![[1.0, 0.5, 0.0], [0.25; 3]],
    };
    let mut g = init::gaussians_from_points(&points);
    assert_eq!(g.means, points.positions);
    let c0 = 0.282_094_8_f32;
    assert_eq!(g.sh[0][0], [0.5 / c0, 0.0, -0.5 / c0]);
    assert!(g.sh[0][1..].iter().flatten().all(|&v| v == 0.0));
    assert_eq!(g.quats, vec![[1.0, 0.0, 0.0, 0.0]; 2]);
    assert!((g.opacity_logits[1] - (0.1f32 / 0.9).ln()).abs() < 1e-6);
    init::fill_log_scales(&mut g, &[0.04, 0.0]).unwrap();
    assert!((g.log_scales[0][2] - 0.2f32.ln()).abs() < 1e-6);
    assert!((g.log_scales[1][0] - (1e-7f32).sqrt().ln()).abs() < 1e-5);
    assert!(init::fill_log_scales(&mut g, &[1.0]).is_err());

    let bounds = RandomBox {
        center: [1.0, 0.0, -1.0],
        half_size: [0.5, 1.0, 2.0],
    };
    let cloud = init::random_points(1000, bounds, 7);
    assert_eq!(cloud, init::random_points(1000, bounds, 7));
    assert_ne!(cloud, init::random_points(1000, bounds, 8));
    for p in &cloud.positions {
        assert!(
            (0..3).all(|k| (p[k] - bounds.center[k]).abs() <= bounds.half_size[k]),
            "{p:?}"
        );
    }
    // Grey, as INRIA starts them (issue 14): DC coefficients in [0, 1/255], so every colour is
    // within C0 / 255 of 0.5, yet not all the same.
    assert!(
        cloud
            .colors
            .iter()
            .flatten()
            .all(|&c| (0.5..=0.5 + init::SH_C0 / 255.0).contains(&c)),
        "{:?}",
        &cloud.colors[..3]
    );
    assert!(cloud.colors.windows(2).any(|w| w[0] != w[1]));
    assert_eq!(RandomBox::default().half_size, [1.3; 3]);

    // Datasets without points fall back to random ones.
    let empty = Dataset::new(Vec::new(), Vec::new(), None);
    assert_eq!(
        init::initial_points(&empty, 10, bounds, 7),
        init::random_points(10, bounds, 7)
    );
    let with_points = Dataset::new(Vec::new(), Vec::new(), Some(points.clone()));
    assert_eq!(init::initial_points(&with_points, 10, bounds, 7), points);
}

/// Random initialisation fills the region the cameras look at: on the duck (cameras at radius 4
/// aimed at the origin, 39.6° FOV) a cube of about ±1.44 around the origin, like 3DGS's ±1.3.
#[test]
fn random_init_box_is_the_viewed_region() {
    let Some(duck) = nerf_duck() else {
        return;
    };
    let cameras: Vec<_> = duck.train.iter().map(|v| &v.camera).collect();
    let b = RandomBox::viewed_by(&cameras, [9.0; 3], 9.0);
    assert!(b.center.iter().all(|c| c.abs() < 1e-3), "{b:?}");
    let expected = 4.0 * (0.691_111_2f32 / 2.0).tan();
    assert!(
        (b.half_size[0] - expected).abs() < 1e-3,
        "{b:?} vs {expected}"
    );
    // Parallel optical axes have no intersection: the fallback is used.
    let one = &duck.train[0].camera;
    let mut shifted = one.clone();
    shifted.translation[0] += 1.0;
    let parallel = RandomBox::viewed_by(&[one, &shifted], [9.0; 3], 2.0);
    assert_eq!(parallel.center, [9.0; 3]);
    assert_eq!(parallel.half_size, [2.0; 3]);
}
