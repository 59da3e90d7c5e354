//! Far-field points for the sky ([`wgsplat::data::sky`]): where they are, which are kept, their
//! colour, and what the trainer's initial model gets from them.

use wgsplat::data::Dataset;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::data::sky::{sky_points, sky_radius};
use wgsplat::train::TrainConfig;
use wgsplat::train::config::{Background, DEFAULT_SKY_POINTS};
use wgsplat::train::init::initial_sky;

const SKY_BLUE: [f32; 3] = [0.3, 0.5, 0.9];

/// The built-in scene at 32² with its empty pixels showing `backdrop`.
fn scene(backdrop: [f32; 3]) -> Dataset {
    generate(&BuiltinOptions {
        resolution: 32,
        train_views: 12,
        test_views: 1,
        background: backdrop,
        ..BuiltinOptions::default()
    })
    .unwrap()
}

fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f32>().sqrt()
}

#[test]
fn a_backdrop_seen_by_the_cameras_becomes_far_points_of_its_colour() {
    let dataset = scene(SKY_BLUE);
    let sky = sky_points(&dataset, 10_000, 10.0, Some([0.0; 3])).unwrap();
    assert_eq!(sky.radius, sky_radius(&dataset, 10.0));
    assert!(sky.radius >= 10.0 * dataset.extent, "{}", sky.radius);
    // Every point is on the sphere, and some directions (below the cameras' view) are unseen.
    for p in &sky.points.positions {
        let r = distance(*p, dataset.center);
        assert!(
            (r / sky.radius - 1.0).abs() < 1e-4,
            "a point at {r}, radius {}",
            sky.radius
        );
    }
    assert!(
        sky.seen > 100 && sky.seen < sky.sphere,
        "{} of {} seen",
        sky.seen,
        sky.sphere
    );
    assert_eq!(sky.points.len() + sky.like_background, sky.seen);
    // Points above the ground plane (the scene is z-up, the platform's top at z = 0) are seen
    // along rays that pass over the scene, so they take the backdrop's colour. Below it the rays
    // meet the platform, whose pixels they take (far points behind the ground).
    let above: Vec<[f32; 3]> = sky
        .points
        .positions
        .iter()
        .zip(&sky.points.colors)
        .filter(|(p, _)| p[2] > 0.0)
        .map(|(_, c)| *c)
        .collect();
    assert!(
        above.len() >= 10,
        "{} points above the ground plane",
        above.len()
    );
    let worst = above
        .iter()
        .map(|c| distance(*c, SKY_BLUE))
        .fold(0.0f32, f32::max);
    assert!(
        worst < 0.02,
        "a far point above the horizon is {worst} from the backdrop's colour"
    );
}

#[test]
fn a_backdrop_that_is_the_training_background_adds_no_points_above_the_ground() {
    let dataset = scene([0.0; 3]);
    let sky = sky_points(&dataset, 2000, 10.0, Some([0.0; 3])).unwrap();
    assert!(sky.seen > 100, "{} seen", sky.seen);
    // Every point above the ground plane shows the background and is dropped; only those whose
    // median pixel is the platform stay (far points behind the ground).
    let counts = (sky.seen, sky.like_background, sky.points.len());
    assert!(
        sky.like_background > 0 && sky.points.positions.iter().all(|p| p[2] < 0.0),
        "seen, background, kept: {counts:?}"
    );
    // A random background keeps them all.
    let random = sky_points(&dataset, 2000, 10.0, None).unwrap();
    assert_eq!(
        (random.points.len(), random.like_background),
        (random.seen, 0)
    );
}

#[test]
fn the_trainer_adds_sky_points_only_to_reconstructed_captures_when_asked() {
    let dataset = scene(SKY_BLUE);
    // The library's default adds none; `wgsplat train` asks for DEFAULT_SKY_POINTS on a dataset
    // read from disk (`src/train/options.rs`).
    assert!(
        initial_sky(&dataset, &TrainConfig::default())
            .unwrap()
            .is_none()
    );
    let config = TrainConfig {
        sky_points: DEFAULT_SKY_POINTS,
        ..TrainConfig::default()
    };
    let sky = initial_sky(&dataset, &config)
        .unwrap()
        .expect("points asked for");
    assert_eq!(sky.sphere, config.sky_points);
    assert!(!sky.points.is_empty());
    // Random background: nothing is dropped as the background.
    let random = TrainConfig {
        background: Background::Random,
        ..config.clone()
    };
    let with_random = initial_sky(&dataset, &random).unwrap().unwrap();
    assert_eq!(with_random.like_background, 0);
    // No sparse points (random initialisation): no sky.
    let mut no_points = dataset.clone();
    no_points.points = None;
    assert!(initial_sky(&no_points, &config).unwrap().is_none());
    // A radius below the extent is refused with the value named.
    let bad = TrainConfig {
        sky_radius: 0.5,
        ..config
    };
    let message = bad.validate().unwrap_err().to_string();
    assert!(message.contains("sky_radius 0.5"), "{message}");
}
