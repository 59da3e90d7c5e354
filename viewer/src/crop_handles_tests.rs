use super::*;

/// A camera 4 from the origin looking at it from above and to the side (a rotation about x,
/// then about the vertical), so no box axis runs along a screen axis.
fn oblique_camera() -> Camera {
    let mut camera = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    let (a, b) = (0.5f32, 0.7f32);
    let rx = [
        [1.0, 0.0, 0.0],
        [0.0, a.cos(), -a.sin()],
        [0.0, a.sin(), a.cos()],
    ];
    let ry = [
        [b.cos(), 0.0, b.sin()],
        [0.0, 1.0, 0.0],
        [-b.sin(), 0.0, b.cos()],
    ];
    let mut r = [[0.0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            r[i][j] = (0..3).map(|k| rx[i][k] * ry[k][j]).sum();
        }
    }
    camera.rotation = r;
    camera
}

const CROP: [f32; 6] = [-0.5, -0.4, -0.3, 0.5, 0.4, 0.3];

fn close(a: &[f32], b: &[f32], tolerance: f32) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tolerance)
}

#[test]
fn a_face_handle_follows_the_pointer_along_its_axis() {
    let camera = oblique_camera();
    for handle in 0..6 {
        let (axis, side) = (handle / 2, handle % 2);
        let from = project_centre(&camera, handle_point(&CROP, handle)).unwrap();
        assert_eq!(pick(&camera, &CROP, from, 3.0), Some(handle));
        // The pointer goes where the face centre would appear moved by 0.2 along its axis.
        let mut target = handle_point(&CROP, handle);
        target[axis] += 0.2;
        let to = project_centre(&camera, target).unwrap();
        let crop = dragged(&camera, &CROP, handle, from, to);
        let mut want = CROP;
        want[axis + 3 * side] += 0.2;
        assert!(
            close(&crop, &want, 1e-4),
            "handle {handle}: {crop:?} against {want:?}"
        );
        // Sideways motion of the pointer, across the axis on screen, does not move the face.
        let moved = project_centre(&camera, handle_point(&crop, handle)).unwrap();
        assert!(
            close(&moved, &to, 1e-2),
            "handle {handle}: {moved:?} against {to:?}"
        );
    }
}

#[test]
fn the_centre_handle_moves_the_box_under_the_pointer() {
    let camera = oblique_camera();
    let from = project_centre(&camera, handle_point(&CROP, CENTRE)).unwrap();
    assert_eq!(pick(&camera, &CROP, from, 3.0), Some(CENTRE));
    let to = [from[0] + 7.0, from[1] - 5.0];
    let crop = dragged(&camera, &CROP, CENTRE, from, to);
    let centre = project_centre(&camera, handle_point(&crop, CENTRE)).unwrap();
    assert!(close(&centre, &to, 1e-3), "{centre:?} against {to:?}");
    // Moved, not resized, and at the same depth.
    for k in 0..3 {
        assert!((crop[k + 3] - crop[k] - (CROP[k + 3] - CROP[k])).abs() < 1e-5);
    }
    let depth = |c: &[f32; 6]| camera.to_camera(handle_point(c, CENTRE))[2];
    assert!((depth(&crop) - depth(&CROP)).abs() < 1e-4);
}

#[test]
fn a_face_stops_short_of_the_opposite_one_and_misses_are_ignored() {
    let camera = oblique_camera();
    // The +x face dragged far past the -x face.
    let from = project_centre(&camera, handle_point(&CROP, 1)).unwrap();
    let mut far = handle_point(&CROP, 1);
    far[0] -= 3.0;
    let to = project_centre(&camera, far).unwrap();
    let crop = dragged(&camera, &CROP, 1, from, to);
    assert!(crop[3] > crop[0] && crop[3] - crop[0] < 1e-3, "{crop:?}");
    assert_eq!(crop[0], CROP[0]);
    // Nothing within reach of a pointer in an empty corner.
    assert_eq!(pick(&camera, &CROP, [0.0, 0.0], 3.0), None);
    // An axis pointing straight at the camera cannot be dragged: the box stays.
    let straight = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    let from = project_centre(&straight, handle_point(&CROP, 5)).unwrap();
    let crop = dragged(&straight, &CROP, 5, from, [from[0] + 9.0, from[1]]);
    assert_eq!(crop, CROP);
}
