use super::*;

/// Two keyframes a second apart: a camera 4 from the origin, and the same one moved sideways.
fn panel() -> PathPanel {
    let first = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    let mut second = first.clone();
    second.translation[0] = -2.0;
    let mut panel = PathPanel::default();
    panel.add_key(&first);
    panel.add_key(&second);
    panel.keys.seconds_between = 1.0;
    panel.fps = 10.0;
    panel
}

fn eye_of(frame: &PathFrame, panel: &PathPanel) -> [f32; 3] {
    frame
        .to_camera(
            panel.keys.camera_type,
            panel.size[0],
            panel.size[1],
            [0.0; 3],
        )
        .position()
}

#[test]
fn play_moves_the_view_along_the_path_and_stops_after_its_end() {
    let mut panel = panel();
    let mut view = ViewCamera::from_camera(&Camera::facing_origin(64, 48, 9.0, [0.0; 3]), 9.0);
    // Not playing: the view stays.
    assert!(!panel.preview_at(&mut view, 0.5));
    panel.toggle_play();
    assert!(panel.is_playing());
    for seconds in [0.0, 0.35, 0.8, 1.0] {
        assert!(panel.preview_at(&mut view, seconds), "at {seconds} s");
        let frame = panel.keys.frame_at(seconds, panel.fps).unwrap();
        let want = eye_of(&frame, &panel);
        let gap = (0..3)
            .map(|k| (view.eye[k] - want[k]).abs())
            .fold(0.0, f32::max);
        assert!(
            gap < 1e-4,
            "at {seconds} s the view is at {:?}, the path at {want:?}",
            view.eye
        );
    }
    // Half-way the view is between the keys, sideways of both.
    assert!(panel.preview_at(&mut view, 0.5));
    assert!(view.eye[0] > 0.2 && view.eye[0] < 1.8, "{:?}", view.eye);
    // One frame past the end the preview stops by itself, the view left at the last key.
    let end = panel.keys.duration_seconds();
    assert!(panel.preview_at(&mut view, end + 0.5 / panel.fps));
    assert!(panel.is_playing());
    panel.preview_at(&mut view, end + 2.0 / panel.fps);
    assert!(!panel.is_playing());
    let last = eye_of(panel.keys.keys.last().unwrap(), &panel);
    assert!((0..3).all(|k| (view.eye[k] - last[k]).abs() < 1e-4));
    // Stop while playing.
    panel.toggle_play();
    assert!(panel.is_playing());
    panel.toggle_play();
    assert!(!panel.is_playing());
    assert!(!panel.preview(&mut view));
}

/// Draws `panel` once, as the app does each frame.
fn draw(panel: &mut PathPanel) {
    let ctx = egui::Context::default();
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::pos2(0.0, 0.0),
            egui::vec2(800.0, 600.0),
        )),
        ..Default::default()
    };
    let view = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
    let mut log = Vec::new();
    let output = ctx.run_ui(input, |ui| {
        panel.show(ui, &view, &mut log);
    });
    output.drop_without_applying_deltas();
}

/// A path file's rate survives the panel: a 60 fps `camera_path.json` of 121 frames keeps its
/// keys 1/60 s apart once the panel has drawn (121 frames, not 145), and one at half a frame per
/// second keeps its rate.
#[test]
fn drawing_the_panel_keeps_a_loaded_paths_rate() {
    for (fps, frames) in [(60.0, 121), (0.5, 5)] {
        let keys = panel().keys.sample(frames);
        let path = CameraPath {
            width: 64,
            height: 48,
            fps,
            frames: keys,
            near: wgsplat::show::camera_path::NEAR,
            camera_type: wgsplat::show::CameraType::Perspective,
        };
        let mut panel = PathPanel {
            keys: Keyframes::from_path(&path),
            fps: path.fps,
            ..PathPanel::default()
        };
        assert_eq!(panel.keys.frame_count(panel.fps), frames);
        draw(&mut panel);
        assert_eq!(panel.fps, fps);
        assert_eq!(panel.keys.seconds_between, 1.0 / fps);
        assert_eq!(panel.keys.frame_count(panel.fps), frames, "at {fps} fps");
    }
}
