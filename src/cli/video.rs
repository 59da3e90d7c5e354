//! `wgsplat render --video` and `--frames`: a model rendered along a camera path (an orbit, a
//! smooth path through the dataset's training cameras, or a nerfstudio `camera_path.json`) into
//! an H.264 video through ffmpeg, or into PNG files; the path used is written beside the output
//! as a `camera_path.json` to edit and render again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::signals::{Interrupted, StopSignals};
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use wgsplat::GpuContext;
use wgsplat::data::Dataset;
use wgsplat::show::camera_path::MAX_FPS;
use wgsplat::show::keyframes::MAX_FRAMES;
use wgsplat::show::video::{VideoWriter, find_ffmpeg};
use wgsplat::show::{CameraPath, CameraType, Drawn, PathFrame, paths, render_path_of};
use wgsplat::splat::RasterMode;

/// Options of `wgsplat render` for videos and camera paths.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct VideoArgs {
    /// Render along a camera path into this H.264 video (.mp4) instead of the dataset's views.
    #[arg(long, value_name = "OUT.mp4")]
    pub video: Option<PathBuf>,
    /// Write the path's frames as PNG files into DIR (alone: instead of a video).
    #[arg(long, value_name = "DIR")]
    pub frames: Option<PathBuf>,
    /// The camera path: `cameras` (a smooth path through the training cameras, in their order),
    /// `orbit` (around the scene's centre at the cameras' distance and height), or a nerfstudio
    /// camera_path.json, `camera_type` "perspective" or "fisheye" [default: cameras]. The
    /// cameras and orbit paths of fisheye cameras are fisheye paths.
    #[arg(long, value_name = "cameras|orbit|FILE.json")]
    pub path: Option<String>,
    /// Length of a `cameras` or `orbit` path in seconds [default: 8].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Frames per second [default: 30, or the path file's].
    #[arg(long)]
    pub fps: Option<f64>,
    /// Frame size, e.g. 1280x720 (even sides for a video) [default: the path file's, or the
    /// first training camera's, made even].
    #[arg(long, value_name = "WxH")]
    pub size: Option<String>,
    /// ffmpeg's executable [default: `ffmpeg` on PATH].
    #[arg(long, value_name = "PATH")]
    pub ffmpeg: Option<PathBuf>,
}

impl VideoArgs {
    /// True when a path is to be rendered (a video or frames asked for).
    pub fn wanted(&self) -> bool {
        self.video.is_some() || self.frames.is_some()
    }

    /// The first path option given (`--path`, `--seconds`, `--fps`, `--size`, `--ffmpeg`), by
    /// its flag: they only shape a video or frames.
    pub fn path_option_given(&self) -> Option<&'static str> {
        [
            (self.path.is_some(), "--path"),
            (self.seconds.is_some(), "--seconds"),
            (self.fps.is_some(), "--fps"),
            (self.size.is_some(), "--size"),
            (self.ffmpeg.is_some(), "--ffmpeg"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// `WxH` as two positive sides.
fn parse_size(text: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse::<u32>().ok()?, h.trim().parse::<u32>().ok()?)))
        .filter(|&(w, h)| (1..=16384).contains(&w) && (1..=16384).contains(&h));
    parsed.with_context(|| {
        format!("--size {text:?}: expected WIDTHxHEIGHT, e.g. 1280x720, each 1 to 16384")
    })
}

/// `--seconds` or `--fps` (`value`, else `default`), checked: finite, above 0 and at most
/// `most` (where that is finite).
fn positive(value: Option<f64>, flag: &str, default: f64, most: f64) -> anyhow::Result<f64> {
    let value = value.unwrap_or(default);
    if !(value.is_finite() && value > 0.0 && value <= most) {
        if most.is_finite() {
            anyhow::bail!("{flag} {value}: expected a number above 0 and at most {most}");
        }
        anyhow::bail!("{flag} {value}: expected a number above 0");
    }
    Ok(value)
}

/// The camera path the options ask for, made from `dataset`'s training cameras or read, drawn
/// with the near plane of the dataset's views (which `render` gives the model's).
pub fn build_path(args: &VideoArgs, dataset: &Dataset) -> anyhow::Result<CameraPath> {
    let mut path = build_frames(args, dataset)?;
    if let Some(view) = dataset.views().next() {
        path.near = view.camera.near;
    }
    Ok(path)
}

fn build_frames(args: &VideoArgs, dataset: &Dataset) -> anyhow::Result<CameraPath> {
    let kind = args.path.as_deref().unwrap_or("cameras");
    let size = args.size.as_deref().map(parse_size).transpose()?;
    if kind != "cameras" && kind != "orbit" {
        let file = Path::new(kind);
        let mut path = CameraPath::read(file)?;
        if let Some((w, h)) = size {
            (path.width, path.height) = (w, h);
        }
        if let Some(fps) = args.fps {
            path.fps = positive(Some(fps), "--fps", fps, MAX_FPS)?;
        }
        if args.seconds.is_some() {
            anyhow::bail!(
                "--seconds is for the cameras and orbit paths; {} has its own frames",
                file.display()
            );
        }
        return Ok(path);
    }
    let keys: Vec<PathFrame> = dataset
        .train
        .iter()
        .map(|v| PathFrame::from_camera(&v.camera))
        .collect();
    let Some(first) = dataset.train.first() else {
        anyhow::bail!(
            "the dataset has no training cameras to make a {kind} path from; give --path FILE.json"
        );
    };
    let fps = positive(args.fps, "--fps", 30.0, MAX_FPS)?;
    let seconds = positive(args.seconds, "--seconds", 8.0, f64::INFINITY)?;
    let count = (seconds * fps).round().max(1.0);
    if count > MAX_FRAMES as f64 {
        anyhow::bail!(
            "--seconds {seconds} at --fps {fps} is {count} frames: a path has at most {MAX_FRAMES} \
             (an hour at 60 frames/s); give fewer seconds or a lower rate"
        );
    }
    let count = count as usize;
    let (width, height) = size.unwrap_or((first.camera.width & !1, first.camera.height & !1));
    let frames = if kind == "orbit" {
        orbit_frames(&keys, count)?
    } else {
        paths::through(&keys, count)
    };
    Ok(CameraPath {
        width: width.max(2),
        height: height.max(2),
        fps,
        frames,
        near: wgsplat::show::camera_path::NEAR,
        // A fisheye dataset's path sees through nerfstudio's fisheye at the cameras' focal length.
        camera_type: CameraType::of_lens(&first.camera.lens),
    })
}

/// `count` frames of an orbit around what the training cameras `keys` look at, or an error
/// saying why there is none.
fn orbit_frames(keys: &[PathFrame], count: usize) -> anyhow::Result<Vec<PathFrame>> {
    if let Some(frames) = paths::orbit(keys, count) {
        return Ok(frames);
    }
    if paths::mean_up(keys).is_none() {
        anyhow::bail!(
            "the training cameras share no up direction to orbit around (their up axes cancel \
             out); give --path cameras or --path FILE.json"
        );
    }
    anyhow::bail!(
        "the {} training camera{} give{} no centre to orbit around at a distance (an orbit circles \
         the point the cameras look at, found where their optical axes meet; one camera, or \
         cameras whose axes meet at a camera, give none); give --path cameras or --path FILE.json",
        keys.len(),
        if keys.len() == 1 { "" } else { "s" },
        if keys.len() == 1 { "s" } else { "" },
    )
}

/// Where the path used is written: `OUT.camera_path.json` beside the video, or
/// `DIR/camera_path.json` for frames alone.
fn path_file(args: &VideoArgs) -> Option<PathBuf> {
    match (&args.video, &args.frames) {
        (Some(video), _) => Some(video.with_extension("camera_path.json")),
        (None, Some(dir)) => Some(dir.join("camera_path.json")),
        (None, None) => None,
    }
}

/// Renders the path into the video and/or the frames folder, with a progress bar.
pub fn render_video(
    ctx: &GpuContext,
    model: &Path,
    drawn: &mut Drawn,
    dataset: &Dataset,
    args: &VideoArgs,
    background: [f32; 3],
    raster_mode: RasterMode,
) -> anyhow::Result<()> {
    if let Some(video) = &args.video {
        super::guard::refuse_output_over_input(model, video)?;
        if let Some(file) = args
            .path
            .as_deref()
            .filter(|p| *p != "cameras" && *p != "orbit")
        {
            super::guard::refuse_output_over_input(Path::new(file), video)?;
        }
    }
    let path = build_path(args, dataset)?;
    // From here on a signal stops the rendering after the current frame, leaving no partial
    // video (the frames already written to --frames stay).
    let signals = StopSignals::install()?;
    let mut writer = match &args.video {
        Some(video) => {
            let ffmpeg = find_ffmpeg(args.ffmpeg.as_deref())?;
            Some(VideoWriter::start(
                &ffmpeg,
                video,
                path.width,
                path.height,
                path.fps,
            )?)
        }
        None => None,
    };
    if let Some(dir) = &args.frames {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let total = path.frames.len();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("render {bar:30} {pos}/{len} frames, {per_sec}, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let mut opaque = wgsplat::data::image::RgbaImage::new(0, 0);
    let written = render_path_of(
        ctx,
        drawn,
        &path,
        background,
        raster_mode,
        &mut |index, image| {
            if let Some(writer) = writer.as_mut() {
                writer.push(&image.pixels)?;
            }
            if let Some(dir) = &args.frames {
                // Composited on the background already: written opaque, through one buffer.
                opaque.width = image.width;
                opaque.height = image.height;
                opaque.pixels.clear();
                opaque.pixels.extend_from_slice(&image.pixels);
                opaque.pixels.chunks_exact_mut(4).for_each(|p| p[3] = 255);
                opaque.write_png(&dir.join(format!("frame_{index:05}.png")))?;
            }
            bar.inc(1);
            Ok(())
        },
        &|| signals.requested(),
    )?;
    bar.finish_and_clear();
    if let Some(signal) = signals.received().filter(|_| written < total) {
        // Dropping the writer ends ffmpeg and removes the partial video and its log.
        drop(writer);
        let frames = match &args.frames {
            Some(dir) => format!("; the {written} frames rendered are in {}", dir.display()),
            None => String::new(),
        };
        let video = match &args.video {
            Some(video) => format!("; no video was written to {}", video.display()),
            None => String::new(),
        };
        return Err(Interrupted {
            signal,
            message: format!(
                "stopped by {} after {written} of {total} frames{video}{frames}",
                signal.name
            ),
        }
        .into());
    }
    let seconds = start.elapsed().as_secs_f64();
    if let Some(writer) = writer {
        writer.finish()?;
    }
    let outputs: Vec<String> = [args.video.as_ref(), args.frames.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    let mut summary = format!(
        "wrote {written} frames ({}x{}, {} frames/s, {:.1} s) to {} in {seconds:.1} s ({:.2} frames/s rendered)",
        path.width,
        path.height,
        path.fps,
        written as f64 / path.fps,
        outputs.join(" and "),
        written as f64 / seconds.max(1e-9)
    );
    if let Some(file) = path_file(args) {
        let is_input = args
            .path
            .as_deref()
            .is_some_and(|p| super::guard::same_file(Path::new(p), &file));
        if !is_input {
            path.write(&file)?;
            summary.push_str(&format!("; the path is in {}", file.display()));
        }
    }
    println!("{summary}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(position: [f64; 3], up: f64) -> PathFrame {
        PathFrame {
            rotation: [[1.0, 0.0, 0.0], [0.0, up, 0.0], [0.0, 0.0, up]],
            position,
            fov_y_degrees: 50.0,
        }
    }

    /// One camera gives an orbit no centre: the error says so, not that up axes cancel out
    /// (one camera's up cannot); cameras whose up axes do cancel are told that.
    #[test]
    fn an_orbit_without_a_centre_or_an_up_says_which() {
        let err = orbit_frames(&[key([0.0, 0.0, 3.0], 1.0)], 10)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("1 training camera gives no centre") && !err.contains("cancel"),
            "{err}"
        );
        let err = orbit_frames(
            &[key([0.0, 0.0, 3.0], 1.0), key([0.0, 0.0, -3.0], -1.0)],
            10,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("cancel out"), "{err}");
    }
}
