//! Layer 4, data: structure from motion for photographs and videos, by driving COLMAP (and GLOMAP,
//! ffmpeg) as programs. [`run`] takes folders of photographs or video files and writes a dataset
//! folder the trainer reads: `images/` (upright, at most [`DEFAULT_MAX_SIZE`] px), optionally
//! INRIA's `images_N/`, and `sparse/0/` (COLMAP binary), with COLMAP's output in `sfm.log` and
//! its working files (`database.db`, every model the mapper made) under `sfm/`.
//!
//! Stages: [`gather`] (images), COLMAP feature extraction, matching and mapping
//! ([`colmap`]), then the largest model is kept and checked ([`model`]). A finished stage is
//! recorded with its settings ([`stages`]), so a rerun continues where the last one stopped.

pub mod align;
pub mod colmap;
pub mod frame_select;
pub mod gather;
pub mod inputs;
pub mod memory_gate;
pub mod model;
pub mod photos;
pub mod progress;
pub mod stages;
pub mod video;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::json;

pub use colmap::{Mapper, Matcher};
pub use model::Registration;

use crate::error::{Error, Result};
use crate::external::{Tool, ToolKind, ToolLog, locate};
use progress::StageProgress;
use stages::{Decision, Paths, Stage, StageState};

/// Long side images are brought to by default (INRIA's loader rescales wider images to 1600 px).
pub const DEFAULT_MAX_SIZE: u32 = 1600;
/// SIFT features per image by default (COLMAP's own default).
pub const DEFAULT_MAX_FEATURES: u32 = 8192;

/// Everything `wgsplat sfm` is asked to do.
#[derive(Clone, Debug)]
pub struct SfmOptions {
    /// Folders of photographs and/or video files.
    pub inputs: Vec<PathBuf>,
    /// The dataset folder to write.
    pub out: PathBuf,
    /// Long side limit of the images, in pixels (0: full size).
    pub max_size: u32,
    /// Frames per second taken from videos (`None`: about 300 frames in all).
    pub fps: Option<f64>,
    /// The blurriest frame of each run of this many is dropped (0 or 1: none).
    pub blur_run: usize,
    /// COLMAP camera model.
    pub camera_model: String,
    /// One camera for every image.
    pub single_camera: bool,
    /// Pair selection (`None`: [`Matcher::automatic`]).
    pub matcher: Option<Matcher>,
    /// The mapper.
    pub mapper: Mapper,
    /// SIFT features per image at most.
    pub max_features: u32,
    /// INRIA's pre-scaled folders to write (2, 4, 8 → `images_2/`, …).
    pub downscales: Vec<u32>,
    /// Refuse the result when a smaller share of the images registered.
    pub min_registered: f64,
    /// COLMAP's executable (`None`: `colmap` on PATH).
    pub colmap: Option<PathBuf>,
    /// GLOMAP's executable (`None`: `glomap` on PATH).
    pub glomap: Option<PathBuf>,
    /// ffmpeg's executable (`None`: `ffmpeg` on PATH; ffprobe is looked for beside it).
    pub ffmpeg: Option<PathBuf>,
}

impl SfmOptions {
    /// The defaults for `inputs` written to `out`.
    pub fn new(inputs: Vec<PathBuf>, out: PathBuf) -> SfmOptions {
        SfmOptions {
            inputs,
            out,
            max_size: DEFAULT_MAX_SIZE,
            fps: None,
            blur_run: video::DEFAULT_BLUR_RUN,
            camera_model: "OPENCV".into(),
            single_camera: true,
            matcher: None,
            mapper: Mapper::Colmap,
            max_features: DEFAULT_MAX_FEATURES,
            downscales: Vec::new(),
            min_registered: model::DEFAULT_MIN_REGISTERED,
            colmap: None,
            glomap: None,
            ffmpeg: None,
        }
    }
}

/// What a run did (also written to `DATA/sfm/report.json`).
#[derive(Clone, Debug, Serialize)]
pub struct SfmReport {
    /// The kept model's registration.
    pub registration: Registration,
    /// The pair selection used.
    pub matcher: Matcher,
    /// The mapper used.
    pub mapper: Mapper,
    /// True when COLMAP ran SIFT on the GPU.
    pub used_gpu: bool,
    /// Seconds per stage of this run (0 for a stage reused from an earlier run).
    pub stage_seconds: Vec<(String, f64)>,
    /// Things the user should know, one line each.
    pub notes: Vec<String>,
}

/// The paths of a dataset folder written by [`run`].
pub struct Layout {
    /// `DATA/images`.
    pub images: PathBuf,
    /// `DATA/sparse/0`.
    pub sparse: PathBuf,
    /// `DATA/sfm` (database, models, state).
    pub work: PathBuf,
    /// `DATA/sfm.log`.
    pub log: PathBuf,
}

impl Layout {
    /// The layout under `out`.
    pub fn new(out: &Path) -> Layout {
        Layout {
            images: out.join("images"),
            sparse: out.join("sparse").join("0"),
            work: out.join("sfm"),
            log: out.join("sfm.log"),
        }
    }
}

/// Runs structure from motion as `options` say, reporting one line per event through `line`.
pub fn run(options: &SfmOptions, line: &(dyn Fn(&str) + Sync)) -> Result<SfmReport> {
    let inputs = inputs::classify(&options.inputs)?;
    let layout = Layout::new(&options.out);
    let state_path = layout.work.join("state.json");
    inputs::check_output(&options.out, &options.inputs, &state_path)?;
    if inputs.videos.is_empty() {
        inputs::check_enough_images(inputs.images.len(), "the input folder")?;
    }
    let colmap = locate(
        ToolKind::Colmap,
        options.colmap.as_deref(),
        "for structure from motion",
    )?;
    let glomap = match options.mapper {
        Mapper::Glomap => Some(locate(
            ToolKind::Glomap,
            options.glomap.as_deref(),
            "for --mapper glomap",
        )?),
        Mapper::Colmap => None,
    };
    let video_tools = if inputs.videos.is_empty() {
        None
    } else {
        Some(video_tools(options.ffmpeg.as_deref())?)
    };
    std::fs::create_dir_all(&layout.work)
        .map_err(|e| crate::io::io_error(&layout.work, "create", e))?;
    let log = ToolLog::new(layout.log.clone());
    let report_path = layout.work.join("report.json");
    let mut stages = StageRunner {
        state: StageState::load(&state_path),
        paths: Paths {
            images: &layout.images,
            work: &layout.work,
        },
        finals: vec![layout.sparse.clone(), report_path.clone()],
        line,
        seconds: Vec::new(),
    };

    let gather_settings = gather::GatherSettings {
        max_size: options.max_size,
        fps: options.fps,
        blur_run: options.blur_run,
        downscales: options.downscales.clone(),
    };
    let images_key = gather::stage_key(&inputs, &gather_settings);
    let frames_dir = layout.work.join("frames");
    let video_refs = video_tools.as_ref().map(|(a, b)| (a, b));
    stages.run(Stage::Images, images_key.clone(), &mut || {
        let names = gather::gather(
            &inputs,
            &gather_settings,
            &layout.images,
            &frames_dir,
            video_refs,
            &log,
            line,
        )?;
        inputs::check_enough_images(names.len(), "the inputs")?;
        Ok(format!(
            "{} images in {}",
            names.len(),
            layout.images.display()
        ))
    })?;
    let names: Vec<String> = inputs::images_in(&layout.images)?
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    inputs::check_enough_images(names.len(), "the inputs")?;

    let settings = colmap::ColmapSettings {
        camera_model: colmap::camera_model(&options.camera_model)?,
        single_camera: options.single_camera,
        max_features: options.max_features,
        sift_size: if options.max_size > 0 {
            options.max_size
        } else {
            3200
        },
        matcher: options
            .matcher
            .unwrap_or_else(|| Matcher::automatic(names.len(), !inputs.videos.is_empty())),
        mapper: options.mapper,
        use_gpu: colmap::colmap_has_cuda(&colmap),
    };
    let database = layout.work.join("database.db");
    let features_key = json!({"images": images_key, "camera_model": settings.camera_model,
        "single_camera": settings.single_camera, "max_features": settings.max_features,
        "sift_size": settings.sift_size});
    stages.run(Stage::Features, features_key, &mut || {
        let device = if settings.use_gpu {
            "GPU (CUDA)"
        } else {
            "CPU"
        };
        // COLMAP skips images whose size differs from their shared camera's, so one shared
        // camera is made per image size (portrait and landscape photographs of one phone).
        let groups = if settings.single_camera {
            photos::size_groups(&layout.images, &names)?
        } else {
            vec![names.clone()]
        };
        let mut progress = StageProgress::new("features", "images", names.len(), line);
        let mut done_before = 0u64;
        for (index, group) in groups.iter().enumerate() {
            let mut args = colmap::feature_extractor(&settings, &database, &layout.images);
            if groups.len() > 1 {
                let list = layout.work.join(format!("images_{index}.txt"));
                crate::io::write_atomically(&list, |w| {
                    std::io::Write::write_all(w, (group.join("\n") + "\n").as_bytes())
                        .map_err(|e| crate::io::io_error(&list, "write", e))
                })?;
                args.push("--image_list_path".into());
                args.push(list.into_os_string());
            }
            // Each group counts its files from 1: shift them onto the whole.
            let total = names.len() as u64;
            log.run(&colmap, &args, "COLMAP feature extraction", &mut |text| {
                if let Some((done, _)) = progress::parse_progress(text, names.len()) {
                    progress.report(done_before + done, total);
                }
            })?;
            done_before += group.len() as u64;
        }
        let cameras = match groups.len() {
            1 if settings.single_camera => "one shared camera".to_owned(),
            1 => "one camera per image".to_owned(),
            n => format!("one shared camera per image size ({n} sizes)"),
        };
        Ok(format!(
            "SIFT on {} images, on the {device}, {cameras}",
            names.len()
        ))
    })?;
    let unit = match settings.matcher {
        Matcher::Exhaustive => "blocks of image pairs",
        Matcher::Sequential => "images",
    };
    stages.run(
        Stage::Matches,
        json!({"matcher": settings.matcher}),
        &mut || {
            let mut progress = StageProgress::new("matches", unit, names.len(), line);
            let args = colmap::matcher(&settings, &database);
            log.run(&colmap, &args, "COLMAP matching", &mut |text| {
                progress.observe(text)
            })?;
            Ok(format!("{} matching", settings.matcher.name()))
        },
    )?;
    let models_dir = layout.work.join("models");
    stages.run(
        Stage::Mapper,
        json!({"mapper": settings.mapper}),
        &mut || {
            std::fs::create_dir_all(&models_dir)
                .map_err(|e| crate::io::io_error(&models_dir, "create", e))?;
            let (tool, name) = match &glomap {
                Some(glomap) => (glomap, "GLOMAP's global mapper"),
                None => (&colmap, "COLMAP's incremental mapper"),
            };
            let args = colmap::mapper(settings.mapper, &database, &layout.images, &models_dir);
            let mut progress = StageProgress::new("mapper", "images registered", names.len(), line);
            let status = log.run_status(tool, &args, &mut |text| progress.observe(text))?;
            if !status.success() {
                // COLMAP 3.8 exits 1 when it builds no model: that is the advice to give.
                if !model::has_model(&models_dir) {
                    return Err(model::no_model_error(names.len(), settings.matcher));
                }
                return Err(Error::ExternalTool {
                    tool: tool.kind.program().into(),
                    message: format!(
                        "{name} failed ({status}). Its last lines:\n{}\nThe whole output is in {}",
                        log.tail(12),
                        log.path().display()
                    ),
                });
            }
            Ok(name.to_owned())
        },
    )?;

    let (best, registration) = model::pick_largest(&models_dir, &names, settings.matcher)?;
    let mut notes = Vec::new();
    if let Some(note) = model::several_models_note(&registration, settings.matcher) {
        line(&format!("note: {note}"));
        notes.push(note);
    }
    let report = SfmReport {
        registration,
        matcher: settings.matcher,
        mapper: settings.mapper,
        used_gpu: settings.use_gpu,
        stage_seconds: stages.seconds,
        notes,
    };
    write_report(&report_path, &report)?;
    model::check_registration(
        &report.registration,
        options.min_registered,
        settings.matcher,
    )?;
    model::export_model(&best, &layout.sparse)?;
    Ok(report)
}

/// Runs the stages in order by the one rule of [`stages`]: reuse what an earlier run finished
/// with the same key and left intact, otherwise clear it and everything after it, then run.
struct StageRunner<'a> {
    state: StageState,
    paths: Paths<'a>,
    /// The dataset made after the last stage (`sparse/0`, the report): removed when any stage
    /// runs, so that a failed rerun never leaves the old model beside new images.
    finals: Vec<PathBuf>,
    line: &'a (dyn Fn(&str) + Sync),
    /// Seconds per stage of this run (0 for a stage reused).
    seconds: Vec<(String, f64)>,
}

impl StageRunner<'_> {
    fn run(
        &mut self,
        stage: Stage,
        key: serde_json::Value,
        work: &mut dyn FnMut() -> Result<String>,
    ) -> Result<()> {
        let name = stage.name();
        match self.state.decide(stage, &key, &self.paths) {
            Decision::Reuse => {
                (self.line)(&format!(
                    "{name}: reused (finished by an earlier run with the same settings)"
                ));
                self.seconds.push((name.to_owned(), 0.0));
                return Ok(());
            }
            Decision::OutputChanged(path) => (self.line)(&format!(
                "{name}: {} was changed or removed since an earlier run finished this stage; running it again",
                path.display()
            )),
            Decision::KeyChanged => (self.line)(&format!(
                "{name}: the inputs or settings differ from an earlier run's; running it again"
            )),
            Decision::NotRun => {}
        }
        self.state
            .prepare_to_run(stage, &self.paths, &self.finals)?;
        (self.line)(&format!("{name}: running"));
        let start = Instant::now();
        let summary = work()?;
        let seconds = start.elapsed().as_secs_f64();
        self.state.mark_done(stage, key, &self.paths)?;
        (self.line)(&format!("{name}: {summary} ({seconds:.1} s)"));
        self.seconds.push((name.to_owned(), seconds));
        Ok(())
    }
}

/// ffmpeg (at `explicit` or on PATH) and the ffprobe beside it (or on PATH).
fn video_tools(explicit: Option<&Path>) -> Result<(Tool, Tool)> {
    let ffmpeg = locate(ToolKind::Ffmpeg, explicit, "to take frames from videos")?;
    let beside = ffmpeg
        .path
        .with_file_name(format!("ffprobe{}", std::env::consts::EXE_SUFFIX));
    let ffprobe = if beside.is_file() {
        Tool {
            kind: ToolKind::Ffprobe,
            path: beside,
        }
    } else {
        locate(ToolKind::Ffprobe, None, "to read a video's duration")?
    };
    Ok((ffmpeg, ffprobe))
}

fn write_report(path: &Path, report: &SfmReport) -> Result<()> {
    crate::io::write_json_atomically(path, report)
}
