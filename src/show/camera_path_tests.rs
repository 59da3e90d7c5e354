//! Camera paths: the OpenGL convention both ways, the rate of a file's frames, hostile files
//! refused by name, and fisheye paths read, written and drawn as nerfstudio draws them.

mod convention {
    use super::super::*;

    #[test]
    fn a_camera_survives_the_path_convention_both_ways() {
        let mut camera = Camera::facing_origin(64, 48, 3.0, [0.0; 3]);
        // Turned about an oblique axis, moved off the axis.
        let (s, c) = (0.3f32.sin(), 0.3f32.cos());
        camera.rotation = [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]];
        camera.translation = [0.2, -0.1, 3.0];
        let frame = PathFrame::from_camera(&camera);
        let back = frame.to_camera(CameraType::Perspective, 64, 48, [0.0; 3]);
        for (a, b) in back
            .rotation
            .iter()
            .flatten()
            .zip(camera.rotation.iter().flatten())
        {
            assert!((a - b).abs() < 1e-6, "{back:?}");
        }
        for (a, b) in back.translation.iter().zip(&camera.translation) {
            assert!((a - b).abs() < 1e-5, "{back:?}");
        }
        assert!((back.fy - camera.fy).abs() < 1e-3 && (back.fx - camera.fy).abs() < 1e-3);
        // OpenGL: the camera looks down its −z column, towards the origin here.
        let forward = [0, 1, 2].map(|i| -frame.rotation[i][2]);
        let to_origin = frame.position.map(|p| -p);
        let cos = (0..3).map(|i| forward[i] * to_origin[i]).sum::<f64>()
            / (0..3)
                .map(|i| to_origin[i] * to_origin[i])
                .sum::<f64>()
                .sqrt();
        assert!(cos > 0.99, "{cos}");
    }
}

mod rate {
    use super::super::*;

    fn path_of(fps: f64, seconds: f64, frames: usize) -> CameraPath {
        let frame =
            r#"{"camera_to_world":[1,0,0,0, 0,1,0,0, 0,0,1,3, 0,0,0,1],"fov":50,"aspect":1}"#;
        let text = format!(
            r#"{{"camera_type":"perspective","render_height":48,"render_width":64,
            "camera_path":[{}],"fps":{fps},"seconds":{seconds}}}"#,
            vec![frame; frames].join(",")
        );
        let dir = std::env::temp_dir().join(format!(
            "wgsplat-path-rate-{}-{fps}-{seconds}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("camera_path.json");
        std::fs::write(&file, text).unwrap();
        let path = CameraPath::read(&file).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        path
    }

    /// nerfstudio plays a path's frames over its `seconds` (its render script takes the rate as
    /// frames / seconds), so 12 frames over 2 s play at 6 frames/s whatever `fps` says.
    #[test]
    fn the_frames_play_over_the_files_seconds() {
        assert_eq!(path_of(30.0, 2.0, 12).fps, 6.0);
        assert_eq!(path_of(10.0, 1.2, 12).fps, 10.0);
        // A path written and read again keeps its rate exactly.
        let mut path = path_of(7.0, 3.0, 21);
        path.fps = 29.97;
        path.frames.truncate(19);
        let dir = std::env::temp_dir().join(format!("wgsplat-path-again-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("camera_path.json");
        path.write(&file).unwrap();
        assert_eq!(CameraPath::read(&file).unwrap().fps, 29.97);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

mod hostile {
    use super::super::*;

    fn read_text(name: &str, text: &[u8]) -> String {
        let dir = std::env::temp_dir().join(format!("wgsplat-path-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("camera_path.json");
        std::fs::write(&file, text).unwrap();
        let result = CameraPath::read(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        result.unwrap_err().to_string()
    }

    const GOOD: &str = r#"{"camera_type":"perspective","render_height":48,"render_width":64,
        "camera_path":[{"camera_to_world":[1,0,0,0, 0,1,0,0, 0,0,1,3, 0,0,0,1],"fov":50,"aspect":1.33}],
        "fps":10,"seconds":0.1}"#;

    #[test]
    fn hostile_paths_are_refused_by_name() {
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "truncated",
                GOOD[..GOOD.len() / 2].to_owned(),
                "not a nerfstudio camera path",
            ),
            (
                "wrong-type",
                GOOD.replace("\"fov\":50", "\"fov\":\"wide\""),
                "not a nerfstudio camera path",
            ),
            (
                "overflowing-size",
                GOOD.replace(
                    "\"render_width\":64",
                    "\"render_width\":18446744073709551615",
                ),
                "render_width",
            ),
            (
                "huge-size",
                GOOD.replace("\"render_height\":48", "\"render_height\":1e12"),
                "render_height",
            ),
            (
                "infinite",
                GOOD.replace("0,0,1,3,", "0,0,1,1e999,"),
                "not a nerfstudio camera path",
            ),
            (
                "short-matrix",
                GOOD.replace("0,0,0,1]", "0,0,1]"),
                "has 15 numbers",
            ),
            (
                "not-rigid",
                GOOD.replace("[1,0,0,0,", "[3,0,0,0,"),
                "not a rotation",
            ),
            (
                "reflection",
                GOOD.replace("[1,0,0,0,", "[-1,0,0,0,"),
                "reflection",
            ),
            ("zero-fps", GOOD.replace("\"fps\":10", "\"fps\":0"), "`fps`"),
            (
                "huge-fps",
                GOOD.replace("\"fps\":10", "\"fps\":1e300"),
                "at most 100000",
            ),
            (
                "huge-rate",
                GOOD.replace("\"seconds\":0.1", "\"seconds\":1e-300"),
                "must be at most 100000",
            ),
            (
                "no-frames",
                GOOD.replace(r#"[{"camera_to_world""#, r#"[],"x":[{"camera_to_world""#),
                "no frames",
            ),
            (
                "zero-fov",
                GOOD.replace("\"fov\":50", "\"fov\":0"),
                "between 0 and 180",
            ),
            (
                "orthographic",
                GOOD.replace("perspective", "orthographic"),
                "not a camera wgsplat knows",
            ),
            (
                "equirectangular",
                GOOD.replace("perspective", "equirectangular"),
                "is a panorama",
            ),
        ];
        for (name, text, expected) in cases {
            let err = read_text(name, text.as_bytes());
            assert!(
                err.contains(expected) && err.contains("camera_path.json"),
                "{name}: {err}"
            );
        }
        let err = read_text("binary", &[0xff, 0xfe, 0x00, 0x7b]);
        assert!(
            err.contains("UTF-8") || err.contains("not a nerfstudio"),
            "{err}"
        );
    }
}

mod fisheye {
    use super::super::*;
    use crate::splat::{CameraLens, LensKind};

    const FISHEYE: &str = r#"{"camera_type":"fisheye","render_height":32,"render_width":48,
        "camera_path":[{"camera_to_world":[1,0,0,0.5, 0,1,0,0, 0,0,1,3, 0,0,0,1],"fov":120,"aspect":1.5},
                       {"camera_to_world":[0,0,1,3, 0,1,0,0, -1,0,0,0, 0,0,0,1],"fov":60,"aspect":1.5}],
        "fps":2,"seconds":1,"smoothness_value":0.5,"is_cycle":false,"crop":null}"#;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("wgsplat-path-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// nerfstudio's `get_path_from_json`: a fisheye frame's focal length is a perspective
    /// camera's of its `fov`, `(h / 2) / tan(fov / 2)`, the principal point the centre, and the
    /// lens the ideal equidistant fisheye.
    #[test]
    fn a_fisheye_path_reads_as_nerfstudio_builds_its_cameras() {
        let dir = dir("fisheye-read");
        let file = dir.join("camera_path.json");
        std::fs::write(&file, FISHEYE).unwrap();
        let path = CameraPath::read(&file).unwrap();
        assert_eq!(path.camera_type, CameraType::Fisheye);
        for (index, fov) in [(0, 120.0f64), (1, 60.0)] {
            let camera = path.camera(index, [0.0; 3]).unwrap();
            let f = 16.0 / (0.5 * fov.to_radians()).tan();
            assert!((f64::from(camera.fx) - f).abs() < 1e-4 * f, "{camera:?}");
            assert_eq!(camera.fx, camera.fy);
            assert_eq!((camera.cx, camera.cy), (24.0, 16.0));
            assert_eq!(camera.lens.kind, LensKind::Fisheye);
            assert_eq!(
                camera.lens,
                CameraLens::fisheye([0.0; 4], [0.0; 2], [0.0; 2])
            );
            assert_eq!(camera.near, path.near);
        }
        assert_eq!(path.camera(2, [0.0; 3]), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A path writes the camera type it was read or made with, and a file without one is
    /// perspective (nerfstudio's default).
    #[test]
    fn the_camera_type_is_written_and_read_again() {
        let dir = dir("fisheye-write");
        let file = dir.join("camera_path.json");
        std::fs::write(&file, FISHEYE).unwrap();
        let path = CameraPath::read(&file).unwrap();
        let again = dir.join("again.json");
        path.write(&again).unwrap();
        let text = std::fs::read_to_string(&again).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["camera_type"], "fisheye", "{text}");
        assert_eq!(CameraPath::read(&again).unwrap(), path);
        let perspective = CameraPath {
            camera_type: CameraType::Perspective,
            ..path.clone()
        };
        perspective.write(&again).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
        assert_eq!(json["camera_type"], "perspective");
        let camera = perspective.camera(0, [0.0; 3]).unwrap();
        assert!(camera.lens.is_pinhole());
        let untyped = FISHEYE.replace(r#""camera_type":"fisheye","#, "");
        std::fs::write(&file, untyped).unwrap();
        assert_eq!(
            CameraPath::read(&file).unwrap().camera_type,
            CameraType::Perspective
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fisheye camera's frame gives the fisheye path camera its focal length back.
    #[test]
    fn a_fisheye_camera_becomes_a_frame_with_its_focal_length() {
        let mut camera = Camera::facing_origin(48, 32, 3.0, [0.0; 3]);
        camera.lens = CameraType::Fisheye.lens();
        (camera.fx, camera.fy) = (9.0, 9.0);
        let frame = PathFrame::from_camera(&camera);
        let back = frame.to_camera(CameraType::of_lens(&camera.lens), 48, 32, [0.0; 3]);
        assert!((back.fy - 9.0).abs() < 1e-4, "{back:?}");
        assert_eq!(back.lens, camera.lens);
    }
}
