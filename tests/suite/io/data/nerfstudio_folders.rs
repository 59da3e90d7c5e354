//! nerfstudio `transforms.json` folders: split lists, fisheye frames and mask paths.

use super::*;

#[test]
fn nerfstudio_transforms_with_split_lists() {
    let dir = TempDir::new("nerfstudio");
    std::fs::create_dir_all(dir.0.join("images")).unwrap();
    for i in 0..3 {
        write_image(&dir.0.join(format!("images/f{i}.png")), 20, 10, i as u8 + 1);
    }
    let identity = "[[1,0,0,0],[0,1,0,0],[0,0,1,2],[0,0,0,1]]";
    let json = format!(
        r#"{{"fl_x": 15, "fl_y": 16, "cx": 10, "cy": 5, "w": 20, "h": 10, "camera_model": "OPENCV", "k1": 0,
        "frames": [
          {{"file_path": "images/f0.png", "transform_matrix": {identity}}},
          {{"file_path": "images/f1.png", "transform_matrix": {identity}, "fl_x": 17}},
          {{"file_path": "images/f2.png", "transform_matrix": {identity}}}],
        "train_filenames": ["images/f0.png", "images/f2.png"], "test_filenames": ["images/f1.png"]}}"#
    );
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let dataset = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    assert_eq!((dataset.train.len(), dataset.test.len()), (2, 1));
    let test = &dataset.test[0].camera;
    assert_eq!(
        (test.fx, test.fy, test.cx, test.cy, test.width, test.height),
        (17.0, 16.0, 10.0, 5.0, 20, 10)
    );
    // OpenGL camera at z = 2 looking down -z: OpenCV flips y and z.
    assert_eq!(
        test.rotation,
        [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]
    );
    assert_eq!(test.translation, [0.0, 0.0, 2.0]);
    assert_eq!(test.position(), [0.0, 0.0, 2.0]);
    // Downscale by 2 halves size and intrinsics.
    let half = Dataset::load(
        &dir.0,
        &LoadOptions {
            resolution: Resolution::Factor(2),
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let c = &half.test[0].camera;
    assert_eq!(
        (c.fx, c.fy, c.cx, c.cy, c.width, c.height),
        (8.5, 8.0, 5.0, 2.5, 10, 5)
    );
    // Distortion stays on the camera as its lens; under `undistort` it is undistorted at load
    // (the focal length stays; the image shrinks to the region every pixel of which has a
    // source); a distortion key on a pinhole model, an unknown model, a wrong size or a missing
    // image is named.
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k1\": 0", "\"k1\": 0.2"),
    )
    .unwrap();
    let native = Dataset::load(&dir.0, &LoadOptions::default()).unwrap();
    assert_eq!(native.test[0].camera.lens.radial[0], 0.2);
    let undistort = LoadOptions {
        undistort: true,
        ..LoadOptions::default()
    };
    let distorted = Dataset::load(&dir.0, &undistort).unwrap();
    let c = &distorted.test[0].camera;
    assert_eq!((c.fx, c.fy), (17.0, 16.0));
    assert!(c.width < 20 && c.height < 10, "{c:?}");
    assert!(
        distorted
            .notes
            .iter()
            .any(|n| n.contains("undistorted to PINHOLE")),
        "{:?}",
        distorted.notes
    );
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k1\": 0", "\"k1\": 0.2")
            .replace("\"OPENCV\"", "\"PINHOLE\""),
    )
    .unwrap();
    let text = error_text(Dataset::load(&dir.0, &LoadOptions::default()));
    assert!(text.contains("PINHOLE") && text.contains("k1"), "{text}");
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"OPENCV\"", "\"EQUIRECTANGULAR\""),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("EQUIRECTANGULAR"));
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"w\": 20", "\"w\": 21"),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("21x10"));
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    std::fs::remove_file(dir.0.join("images/f2.png")).unwrap();
    assert!(error_text(Dataset::load(&dir.0, &LoadOptions::default())).contains("images/f2.png"));
}

#[test]
fn nerfstudio_fisheye_frames_and_mask_paths() {
    let dir = TempDir::new("nerfstudio-fisheye");
    std::fs::create_dir_all(dir.0.join("images")).unwrap();
    std::fs::create_dir_all(dir.0.join("masks")).unwrap();
    for i in 0..2 {
        write_image(&dir.0.join(format!("images/f{i}.png")), 40, 30, i as u8 + 3);
    }
    // f0's mask ignores the left half.
    let mask: Vec<u8> = (0..40 * 30)
        .map(|p| if p % 40 < 20 { 0 } else { 255 })
        .collect();
    image::GrayImage::from_raw(40, 30, mask)
        .unwrap()
        .save(dir.0.join("masks/f0.png"))
        .unwrap();
    let identity = "[[1,0,0,0],[0,1,0,0],[0,0,1,2],[0,0,0,1]]";
    let json = format!(
        r#"{{"fl_x": 20, "fl_y": 20, "cx": 20, "cy": 15, "w": 40, "h": 30,
        "frames": [
          {{"file_path": "images/f0.png", "transform_matrix": {identity}, "mask_path": "masks/f0.png",
            "camera_model": "OPENCV_FISHEYE", "k1": 0.05, "k2": -0.01, "k3": 0.0, "k4": 0.0}},
          {{"file_path": "images/f1.png", "transform_matrix": {identity}}}]}}"#
    );
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let native = LoadOptions {
        split: Split::AllTrain,
        ..LoadOptions::default()
    };
    let as_they_are = Dataset::load(&dir.0, &native).unwrap();
    assert!(as_they_are.train[0].camera.lens.is_fisheye());
    assert!(as_they_are.train[1].camera.lens.is_pinhole());
    let options = LoadOptions {
        undistort: true,
        ..native.clone()
    };
    let dataset = Dataset::load(&dir.0, &options).unwrap();
    let (fisheye, pinhole) = (&dataset.train[0], &dataset.train[1]);
    // Under `undistort` the fisheye frame is undistorted (same focal length, its own size) and masked; the
    // pinhole frame is untouched.
    assert_eq!((fisheye.camera.fx, fisheye.camera.fy), (20.0, 20.0));
    assert!(fisheye.is_masked() && !pinhole.is_masked());
    assert_eq!((pinhole.camera.width, pinhole.camera.height), (40, 30));
    let w = fisheye.image.width;
    let left = fisheye.image.pixel(w / 4, fisheye.image.height / 2)[3];
    let right = fisheye.image.pixel(3 * w / 4, fisheye.image.height / 2)[3];
    assert_eq!((left, right), (0, 255), "the mask follows the undistortion");
    assert!(
        dataset.notes.iter().any(|n| n.contains("OPENCV_FISHEYE")),
        "{:?}",
        dataset.notes
    );
    // A missing mask file and a tangential coefficient on a fisheye are named.
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("masks/f0.png", "masks/nope.png"),
    )
    .unwrap();
    assert!(error_text(Dataset::load(&dir.0, &options)).contains("nope.png"));
    std::fs::write(
        dir.0.join("transforms.json"),
        json.replace("\"k4\": 0.0", "\"k4\": 0.0, \"p1\": 0.01"),
    )
    .unwrap();
    let text = error_text(Dataset::load(&dir.0, &options));
    assert!(
        text.contains("OPENCV_FISHEYE") && text.contains("p1"),
        "{text}"
    );
    // --alpha-as-mask reads the alpha channel as the mask.
    let mut rgba = image::RgbaImage::new(40, 30);
    for (x, _, p) in rgba.enumerate_pixels_mut() {
        *p = image::Rgba([200, 100, 50, if x < 10 { 0 } else { 255 }]);
    }
    rgba.save(dir.0.join("images/f1.png")).unwrap();
    std::fs::write(dir.0.join("transforms.json"), &json).unwrap();
    let as_mask = Dataset::load(
        &dir.0,
        &LoadOptions {
            alpha_as_mask: true,
            ..options.clone()
        },
    )
    .unwrap();
    let view = &as_mask.train[1];
    assert!(view.is_masked());
    assert_eq!(
        view.image.pixel(5, 5),
        [200, 100, 50, 0],
        "the colour under the mask is kept as it is"
    );
    assert!(!Dataset::load(&dir.0, &options).unwrap().train[1].is_masked());
}
