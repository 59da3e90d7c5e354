//! The partition: the ground frame, cores that tile the plane, balanced counts, the margin and the
//! visibility rule. CPU only.

use super::scenes::{rotate, survey, tilt_about_x};
use wgsplat::plan::Cell;
use wgsplat::plan::ground::fit_ground_frame;
use wgsplat::plan::partition::{
    Balance, Grid, GroundBox, PartitionSettings, expand, grid_cores, partition_blocks,
};

const IDENTITY: [[f32; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

fn settings(margin: f64, visibility: f64) -> PartitionSettings {
    PartitionSettings {
        margin,
        visibility,
        balance: Balance::Views,
    }
}

#[test]
fn ground_frame_is_the_survey_plane_in_a_tilted_world() {
    let world = tilt_about_x(0.4);
    let data = survey(8, 3, 500, world, 1);
    let cameras: Vec<_> = data.train.iter().map(|v| &v.camera).collect();
    let frame = fit_ground_frame(&cameras, &data.points.as_ref().unwrap().positions).unwrap();
    let up = rotate(world, [0.0, 0.0, 1.0]);
    let long_axis = rotate(world, [1.0, 0.0, 0.0]);
    let dot =
        |a: [f64; 3], b: [f32; 3]| a.iter().zip(b).map(|(x, y)| x * f64::from(y)).sum::<f64>();
    assert!(dot(frame.up, up) > 0.999, "up {:?} vs {up:?}", frame.up);
    assert!(dot(frame.u, long_axis).abs() > 0.99, "u {:?}", frame.u);
    // The origin lies on the ground (points at heights 0..0.1), not at the cameras' height 2.
    let height = dot(frame.origin, up);
    assert!((0.0..0.1).contains(&height), "origin height {height}");
}

#[test]
fn every_view_and_every_point_lands_in_a_block_and_cores_tile_the_plane() {
    let data = survey(10, 6, 2000, tilt_about_x(0.2), 2);
    let cameras: Vec<_> = data.train.iter().map(|v| &v.camera).collect();
    let points = &data.points.as_ref().unwrap().positions;
    let frame = fit_ground_frame(&cameras, points).unwrap();
    let grid = Grid { rows: 3, cols: 2 };
    let blocks = partition_blocks(&data, &frame, grid, &settings(0.2, 0.25));
    assert_eq!(blocks.len(), 6);
    for (i, _) in data.train.iter().enumerate() {
        assert!(
            blocks.iter().any(|b| b.views.contains(&i)),
            "view {i} in no block"
        );
    }
    // Every point (and any ground point, far outside the data too) lies in exactly one core.
    let mut rng = wgsplat::testing::TestRng::new(3);
    let probes = points
        .iter()
        .map(|&p| frame.ground(p))
        .chain((0..2000).map(|_| [rng.range(-1e3, 1e3) as f64, rng.range(-1e3, 1e3) as f64]));
    for g in probes {
        let owners = blocks.iter().filter(|b| b.core.contains(g)).count();
        assert_eq!(owners, 1, "ground point {g:?} lies in {owners} cores");
    }
    // The points each block counts are those in its bounds, which contain its core.
    let total_in_cores: usize = blocks
        .iter()
        .map(|b| {
            points
                .iter()
                .filter(|&&p| b.core.contains(frame.ground(p)))
                .count()
        })
        .sum();
    assert_eq!(total_in_cores, points.len());
    for b in &blocks {
        let in_bounds = points
            .iter()
            .filter(|&&p| b.bounds.contains(frame.ground(p)))
            .count();
        assert_eq!(b.points, in_bounds as u64);
    }
}

#[test]
fn quantile_cells_balance_the_view_counts() {
    let data = survey(12, 8, 100, IDENTITY, 4);
    let cameras: Vec<_> = data.train.iter().map(|v| &v.camera).collect();
    let frame = fit_ground_frame(&cameras, &[]).unwrap();
    let coords: Vec<[f64; 2]> = cameras.iter().map(|c| frame.ground(c.position())).collect();
    let cores = grid_cores(&coords, Grid { rows: 3, cols: 4 });
    let counts: Vec<usize> = cores
        .iter()
        .map(|c| coords.iter().filter(|&&g| c.contains(g)).count())
        .collect();
    // 96 cameras in 12 cells: 8 each, give or take the rounding of the quantiles.
    for (i, &n) in counts.iter().enumerate() {
        assert!((7..=9).contains(&n), "cell {i} has {n} cameras: {counts:?}");
    }
    assert_eq!(counts.iter().sum::<usize>(), coords.len());
    // The outer cells are unbounded, the inner ones bounded.
    assert!(cores[0].u_min.is_none() && cores[0].v_min.is_none());
    assert!(cores[5].u_min.is_some() && cores[5].u_max.is_some());
    assert!(cores[11].u_max.is_none() && cores[11].v_max.is_none());
}

#[test]
fn bounds_widen_the_core_by_the_margin_and_take_the_views_inside() {
    let core = Cell {
        u_min: Some(0.0),
        u_max: Some(4.0),
        v_min: None,
        v_max: Some(1.0),
    };
    let extent = GroundBox {
        min: [-10.0, -3.0],
        max: [10.0, 3.0],
    };
    let bounds = expand(&core, 0.25, &extent);
    assert_eq!(bounds.u_min, Some(-1.0));
    assert_eq!(bounds.u_max, Some(5.0));
    assert_eq!(bounds.v_min, None);
    // The unbounded side's size is measured to the data: v from -3 to 1, 4 wide.
    assert_eq!(bounds.v_max, Some(2.0));

    // A survey split in two along its long axis: the views whose cameras lie in the margin
    // train both blocks; without a margin (and without visibility) none does.
    let data = survey(10, 2, 400, IDENTITY, 5);
    let cameras: Vec<_> = data.train.iter().map(|v| &v.camera).collect();
    let frame = fit_ground_frame(&cameras, &[]).unwrap();
    let grid = Grid { rows: 2, cols: 1 };
    let tight = partition_blocks(&data, &frame, grid, &settings(0.0, 2.0));
    assert_eq!(
        tight[0].views.len() + tight[1].views.len(),
        data.train.len()
    );
    let wide = partition_blocks(&data, &frame, grid, &settings(0.3, 2.0));
    for b in 0..2 {
        for &i in &wide[b].views {
            let g = frame.ground(data.train[i].camera.position());
            assert!(
                wide[b].bounds.contains(g),
                "view {i} of block {b} outside its bounds"
            );
        }
        let inside = (0..data.train.len())
            .filter(|&i| {
                wide[b]
                    .bounds
                    .contains(frame.ground(data.train[i].camera.position()))
            })
            .count();
        assert_eq!(wide[b].views.len(), inside);
        assert!(wide[b].views.len() > tight[b].views.len());
    }
}

#[test]
fn a_view_from_outside_trains_a_block_it_sees() {
    // Two blocks split a 10 × 2 survey near x = 5; add a camera above x = 8 (the second
    // block's cell) looking back at x = 3, in the first block's cell.
    let mut data = survey(10, 2, 2000, IDENTITY, 6);
    let side = super::scenes::SIDE;
    let camera = wgsplat::data::builtin::look_at(
        [8.0, 1.0, 3.0],
        [3.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        side,
        side,
        0.5 * side as f32 / 30f32.to_radians().tan(),
        [0.0; 3],
    );
    data.train.push(wgsplat::data::View {
        name: "outside.png".into(),
        camera,
        ..data.train[0].clone()
    });
    let outside = data.train.len() - 1;
    let cameras: Vec<_> = data.train.iter().map(|v| &v.camera).collect();
    let frame = fit_ground_frame(&cameras, &[]).unwrap();
    let grid = Grid { rows: 2, cols: 1 };
    let blocks = partition_blocks(&data, &frame, grid, &settings(0.0, 0.05));
    let home = blocks
        .iter()
        .position(|b| {
            b.core
                .contains(frame.ground(data.train[outside].camera.position()))
        })
        .unwrap();
    let other = 1 - home;
    let seen = wgsplat::plan::partition::visible_fraction(
        &data.train[outside].camera,
        &data.points.as_ref().unwrap().positions,
    );
    assert!(seen > 0.05, "the outside camera sees {seen} of the points");
    assert!(blocks[home].views.contains(&outside));
    assert!(
        blocks[other].views.contains(&outside),
        "the view sees block {other}'s cell and should train it"
    );
    // With the visibility rule off (threshold above 1) it trains only its own block.
    let blocks = partition_blocks(&data, &frame, grid, &settings(0.0, 2.0));
    assert!(!blocks[other].views.contains(&outside));
}
