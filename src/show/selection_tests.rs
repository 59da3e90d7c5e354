//! Tests of the selection model: counts against a brute-force CPU count, exact undo and redo.

use super::edit::{CropBox, project_centre};
use super::selection::*;
use crate::rng::SplitMix64;
use crate::splat::Camera;
use crate::splat::reference::CpuGaussians;

/// `n` Gaussians with centres spread over a cube of side 4 around the origin, each its own
/// colour, SH degree 1 bands set.
fn model(n: usize) -> CpuGaussians {
    let mut rng = SplitMix64::new(7);
    let mut u = || rng.range(-2.0, 2.0);
    let means: Vec<[f32; 3]> = (0..n).map(|_| [u(), u(), u()]).collect();
    CpuGaussians {
        log_scales: vec![[-3.0; 3]; n],
        quats: vec![[1.0, 0.0, 0.0, 0.0]; n],
        opacity_logits: (0..n).map(|i| i as f32 * 0.01).collect(),
        sh: (0..n)
            .map(|i| {
                let mut sh = [[0.0f32; 3]; 16];
                sh[0] = [i as f32 * 0.001, 0.2, -0.1];
                sh[1] = [0.3, 0.3, 0.3];
                sh
            })
            .collect(),
        means,
    }
}

/// The count a reader of the camera conventions would write by hand.
fn projected_in(camera: &Camera, p: [f32; 3], [x0, y0, x1, y1]: [f32; 4]) -> bool {
    let c = camera.to_camera(p);
    if c[2] <= camera.near || c[2] >= camera.far {
        return false;
    }
    let (u, v) = (
        camera.fx * c[0] / c[2] + camera.cx,
        camera.fy * c[1] / c[2] + camera.cy,
    );
    u >= x0 && u < x1 && v >= y0 && v < y1
}

#[test]
fn a_rectangle_selects_the_centres_projecting_in_it_and_delete_and_undo_are_exact() {
    let g = model(500);
    let camera = Camera::facing_origin(64, 64, 3.0, [0.0; 3]);
    let rect = [10.0, 12.0, 40.0, 50.0];
    let expected = g
        .means
        .iter()
        .filter(|p| projected_in(&camera, **p, rect))
        .count();
    assert!(expected > 20 && expected < 400, "{expected}");
    let mut session = EditSession::new(g.means.len());
    assert!(session.select(
        &in_rect(&g.means, &camera, rect),
        SelectMode::Replace,
        "box"
    ));
    assert_eq!(session.selected_count(), expected);
    // The same rectangle given corner to corner the other way round selects the same.
    assert_eq!(
        in_rect(&g.means, &camera, [40.0, 50.0, 10.0, 12.0]),
        session.selected()
    );
    let before = (session.selected().to_vec(), session.deleted().to_vec());
    assert_eq!(session.delete_selected(), expected);
    assert_eq!(session.remaining(), 500 - expected);
    assert_eq!(session.selected_count(), 0);
    let edited = session.edited(&g);
    assert_eq!(edited.means.len(), 500 - expected);
    assert!(
        edited
            .means
            .iter()
            .all(|p| !projected_in(&camera, *p, rect))
    );
    // Deleted Gaussians cannot be selected again.
    assert!(!session.select(&in_rect(&g.means, &camera, rect), SelectMode::Add, "box"));

    assert_eq!(session.undo().as_deref(), Some("delete"));
    assert_eq!(
        (session.selected().to_vec(), session.deleted().to_vec()),
        before
    );
    assert_eq!(session.remaining(), 500);
    assert_eq!(session.redo().as_deref(), Some("delete"));
    assert_eq!(session.remaining(), 500 - expected);
    assert_eq!(session.undo().as_deref(), Some("delete"));
    assert_eq!(session.undo().as_deref(), Some("box"));
    assert_eq!(session.selected_count(), 0);
    assert_eq!(session.undo(), None);
    assert_eq!(session.edited(&g).means, g.means);
}

#[test]
fn brush_box_invert_and_modes_match_a_cpu_count() {
    let g = model(400);
    let camera = Camera::facing_origin(64, 64, 3.0, [0.0; 3]);
    let mut session = EditSession::new(g.means.len());
    let crop = CropBox::from_corners([-1.0, -1.0, -1.0, 1.0, 0.5, 1.0]).unwrap();
    assert!(session.select(&in_box(&g.means, &crop), SelectMode::Replace, "crop"));
    let inside = g.means.iter().filter(|p| crop.contains(**p)).count();
    assert_eq!(session.selected_count(), inside);

    // A brush stroke of two dabs, added.
    let dabs = [([20.0, 20.0], 6.0), ([44.0, 40.0], 9.0)];
    let under = |p: &[f32; 3]| {
        project_centre(&camera, *p).is_some_and(|[u, v]| {
            dabs.iter()
                .any(|([x, y], r)| (u - x).powi(2) + (v - y).powi(2) <= r * r)
        })
    };
    session.select(
        &in_circles(&g.means, &camera, &dabs),
        SelectMode::Add,
        "brush",
    );
    let either = g
        .means
        .iter()
        .filter(|p| crop.contains(**p) || under(p))
        .count();
    assert_eq!(session.selected_count(), either);
    session.select(
        &in_circles(&g.means, &camera, &dabs),
        SelectMode::Remove,
        "brush",
    );
    let only_box = g
        .means
        .iter()
        .filter(|p| crop.contains(**p) && !under(p))
        .count();
    assert_eq!(session.selected_count(), only_box);

    // Invert, then delete: what is left is exactly the selection before the inversion.
    let kept_flags = session.selected().to_vec();
    assert!(session.invert());
    assert_eq!(session.selected_count(), 400 - only_box);
    session.delete_selected();
    assert_eq!(session.remaining(), only_box);
    let kept: Vec<[f32; 3]> = (g.means.iter().zip(&kept_flags))
        .filter(|(_, k)| **k)
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(session.edited(&g).means, kept);
    // Inverting after a delete selects only what remains.
    session.invert();
    assert_eq!(session.selected_count(), only_box);
    assert!(session.clear_selection());
    assert!(!session.clear_selection(), "an edit that changes nothing");
    assert_eq!(session.undo_name(), Some("clear selection"));
}

#[test]
fn a_new_edit_forgets_the_redo_and_the_history_is_bounded() {
    let g = model(50);
    let mut session = EditSession::new(g.means.len());
    let all = vec![true; 50];
    session.select(&all, SelectMode::Replace, "all");
    session.undo();
    assert_eq!(session.redo_name(), Some("all"));
    session.select(&all[..10], SelectMode::Replace, "ten");
    assert_eq!(session.selected_count(), 10);
    assert_eq!(session.redo_name(), None);
    for k in 0..(UNDO_LIMIT + 20) {
        let hits: Vec<bool> = (0..50).map(|i| i == k % 50).collect();
        session.select(&hits, SelectMode::Add, "one");
        session.select(&hits, SelectMode::Remove, "one");
    }
    let mut undone = 0;
    while session.undo().is_some() {
        undone += 1;
    }
    assert_eq!(undone, UNDO_LIMIT);
}

#[test]
fn the_highlight_tints_only_the_selection_and_leaves_out_the_deleted() {
    let g = model(6);
    let mut session = EditSession::new(6);
    session.select(
        &[true, false, false, false, false, false],
        SelectMode::Replace,
        "one",
    );
    let shown = session.highlighted(&g, [1.0, 0.0, 1.0]);
    assert_eq!(shown.means.len(), 6);
    let colour = |sh: &[[f32; 3]; 16], c: usize| 0.5 + 0.282_094_8 * sh[0][c];
    let (before, after) = (&g.sh[0], &shown.sh[0]);
    let expected = 0.4 * colour(before, 1);
    assert!((colour(after, 1) - expected).abs() < 1e-5);
    assert!((colour(after, 0) - (0.4 * colour(before, 0) + 0.6)).abs() < 1e-5);
    assert_eq!(shown.sh[1..], g.sh[1..]);
    session.delete_selected();
    session.select(
        &[false, true, false, false, false, false],
        SelectMode::Replace,
        "two",
    );
    let shown = session.highlighted(&g, [1.0, 0.0, 1.0]);
    assert_eq!(shown.means, g.means[1..]);
    assert_ne!(shown.sh[0], g.sh[1]);
    assert_eq!(shown.sh[1..], g.sh[2..]);
}
