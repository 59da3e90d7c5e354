use super::*;
use std::time::Duration;
use wgsplat::gpu::MemoryCategory;
use wgsplat::show::PathFrame;
use wgsplat::show::keyframes::Keyframes;
use wgsplat::splat::Camera;
use wgsplat::splat::reference::CpuGaussians;

/// A few Gaussians in front of the path's cameras.
fn model(ctx: &GpuContext) -> Arc<GaussianTensors> {
    let count = 64;
    let cpu = CpuGaussians {
        means: (0..count)
            .map(|i| [(i % 8) as f32 * 0.2 - 0.7, (i / 8) as f32 * 0.2 - 0.7, 0.0])
            .collect(),
        log_scales: vec![[-2.5; 3]; count],
        quats: vec![[1.0, 0.0, 0.0, 0.0]; count],
        opacity_logits: vec![2.0; count],
        sh: vec![[[0.5; 3]; 16]; count],
    };
    let mut enc = ctx.encoder("video job test model");
    let params = GaussianTensors::upload(&mut enc, &cpu, 0, MemoryCategory::Parameters, "test")
        .expect("upload");
    ctx.submit(enc).expect("submit");
    Arc::new(params)
}

/// A path of `seconds` at 30 frames/s between two views of the model, at 32².
fn path(seconds: f64) -> CameraPath {
    let first = Camera::facing_origin(32, 32, 3.0, [0.0; 3]);
    let mut second = first.clone();
    second.translation[0] = -1.0;
    let mut keys = Keyframes::default();
    keys.push(PathFrame::from_camera(&first));
    keys.push(PathFrame::from_camera(&second));
    keys.seconds_between = seconds;
    keys.path(32, 32, 30.0).expect("the path")
}

fn wait_for(job: &VideoJob, done: impl Fn(&VideoProgress) -> bool) -> VideoProgress {
    let started = std::time::Instant::now();
    loop {
        let p = job.progress();
        if done(&p) {
            return p;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the job did not get there: {p:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cancel_stops_a_video_before_its_end_and_leaves_no_file() {
    let ctx = GpuContext::from_env().expect("a GPU");
    let dir = std::env::temp_dir().join(format!("wgsplat-video-job-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let target = dir.join("cancelled.mp4");
    let request = |path: CameraPath, target: PathBuf| VideoRequest {
        ctx: ctx.clone(),
        params: model(&ctx),
        path,
        target,
        background: [0.0; 3],
        raster_mode: RasterMode::Classic,
    };
    // 10 s at 30 frames/s: cancelled once the first frames are in.
    let job = VideoJob::start(request(path(10.0), target.clone()), || {});
    let progress = wait_for(&job, |p| p.done >= 2 || p.finished.is_some());
    assert!(progress.finished.is_none(), "{progress:?}");
    job.cancel();
    let progress = wait_for(&job, |p| p.finished.is_some());
    let outcome = progress.finished.clone().expect("finished");
    let error = outcome.expect_err("a cancelled video is an error");
    assert!(
        error.starts_with("cancelled after") && error.contains("of 301 frames"),
        "{error}"
    );
    assert!(progress.done < progress.total, "{progress:?}");
    assert!(!target.exists(), "the partial video was left behind");
    assert!(!target.with_extension("camera_path.json").exists());
    // The same job uncancelled writes every frame and its path.
    let whole = dir.join("whole.mp4");
    let job = VideoJob::start(request(path(0.2), whole.clone()), || {});
    let progress = wait_for(&job, |p| p.finished.is_some());
    assert_eq!(progress.finished, Some(Ok(7)), "{progress:?}");
    assert!(whole.exists() && whole.with_extension("camera_path.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
