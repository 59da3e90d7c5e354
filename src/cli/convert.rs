//! `wgsplat convert`: one model file to another format, with a progress bar on a terminal and the
//! sizes and whatever the output format dropped printed at the end.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;
use wgsplat::io::PlyModel;
use wgsplat::io::formats::{ModelFormat, read_model_with_progress, write_model_with_progress};
use wgsplat::io::progress::Progress;
use wgsplat::io::spz::{self, SpzAxes, SpzOptions};

/// SPZ's options of `wgsplat convert` (and of `wgsplat train --export spz`).
#[derive(clap::Args, Debug, Clone)]
pub struct SpzArgs {
    /// SPZ version to write: 3 (gzip; every SPZ reader takes it) or 4 (zstd streams, the
    /// reference library's current version and splat-transform's default). Any of 2 to 4 is
    /// read.
    #[arg(long, default_value_t = spz::WRITE_VERSION, value_name = "3|4",
          value_parser = clap::value_parser!(u32).range(3..=4))]
    spz_version: u32,
    /// Axes of the SPZ written or read: rub (the SPZ spec: right-up-back, converted from and to
    /// PLY's right-down-front) or ply (no conversion, for tools such as splat-transform 3.x that
    /// store PLY axes unchanged).
    #[arg(long, default_value = "rub", value_parser = ["rub", "ply"])]
    spz_axes: String,
}

impl SpzArgs {
    /// The options these arguments give, checked.
    pub(crate) fn options(&self) -> anyhow::Result<SpzOptions> {
        let options = SpzOptions {
            version: self.spz_version,
            axes: SpzAxes::from_name(&self.spz_axes)?,
        };
        options.validate()?;
        Ok(options)
    }
}

/// Reads `input` in `format`, SPZ in `options`' axes.
fn read(
    input: &Path,
    format: ModelFormat,
    options: &SpzOptions,
    progress: &Progress,
) -> wgsplat::Result<PlyModel> {
    if format != ModelFormat::Spz {
        return read_model_with_progress(input, format, progress);
    }
    progress.begin("reading spz", 1);
    let model = spz::read_spz_with(input, options.axes)?;
    progress.finish();
    Ok(model)
}

/// Writes `model` to `output` in `format`, SPZ with `options`; returns what was dropped.
pub(crate) fn write(
    output: &Path,
    format: ModelFormat,
    model: &PlyModel,
    options: &SpzOptions,
    progress: &Progress,
) -> wgsplat::Result<Vec<String>> {
    if format != ModelFormat::Spz {
        return write_model_with_progress(output, format, model, progress);
    }
    let dropped = spz::write_spz_with(output, model, progress, options)?;
    progress.finish();
    Ok(dropped)
}

/// Draws `progress` on stderr every 100 ms until `done` is set (nothing when stderr is not a
/// terminal).
fn draw(progress: &Progress, done: &std::sync::atomic::AtomicBool) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{msg:14} {bar:30} {percent:>3}% {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let (phase, position, total) = progress.snapshot();
        bar.set_message(phase);
        bar.set_length(total.max(1));
        bar.set_position(position);
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
}

/// Bytes written: the file, or for SOG's loose files, `meta.json` and the textures it names.
fn output_bytes(output: &Path, format: ModelFormat) -> u64 {
    if format == ModelFormat::Sog && wgsplat::io::sog::is_loose_set(output) {
        return wgsplat::io::sog::loose_set_bytes(output);
    }
    std::fs::metadata(output).map(|m| m.len()).unwrap_or(0)
}

/// Runs `wgsplat convert`: reads INPUT, writes OUTPUT, and reports sizes and what was dropped.
pub fn convert(
    input: &Path,
    output: &Path,
    format: Option<&str>,
    input_format: Option<&str>,
    spz_args: &SpzArgs,
    filter_args: &super::cleanup::FilterArgs,
) -> anyhow::Result<()> {
    let options = spz_args.options()?;
    filter_args.refuse_unused_dataset_options()?;
    let from = match input_format {
        Some(name) => ModelFormat::from_name(name)?,
        None => ModelFormat::from_path(input)?,
    };
    let to = match format {
        Some(name) => ModelFormat::from_name(name)?,
        None => ModelFormat::from_path(output)?,
    };
    super::guard::refuse_output_over_input(input, output)?;
    if input.exists() && !input.is_dir() {
        wgsplat::data::check_regular_file(input, "the model")?;
    }
    let progress = Progress::new();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (model, dropped) = std::thread::scope(|scope| {
        scope.spawn(|| draw(&progress, &done));
        let result = (|| {
            let mut model = read(input, from, &options, &progress)
                .with_context(|| format!("reading {}", input.display()))?;
            if filter_args.any() {
                let report = super::cleanup::clean(&mut model, filter_args)?;
                if report.kept == 0 {
                    anyhow::bail!(
                        "the filters removed every Gaussian of {}; nothing was written",
                        input.display()
                    );
                }
            }
            let dropped = write(output, to, &model, &options, &progress)
                .with_context(|| format!("writing {}", output.display()))?;
            anyhow::Ok((model, dropped))
        })();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    })?;
    let n = model.gaussians.means.len();
    let bytes = output_bytes(output, to);
    println!(
        "wrote {} Gaussians (SH degree {}) to {} as {}: {bytes} bytes, {:.1} bytes per Gaussian",
        n,
        model.sh_degree,
        output.display(),
        to.name(),
        bytes as f64 / n.max(1) as f64
    );
    for line in dropped {
        println!("warning: {line}");
    }
    Ok(())
}
