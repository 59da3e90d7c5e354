//! `wgsplat convert`: one model file to another format, with a progress bar on a terminal and the
//! sizes and whatever the output format dropped printed at the end.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Duration;
use wgsplat::io::formats::{ModelFormat, read_model_with_progress, write_model_with_progress};
use wgsplat::io::progress::Progress;

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
) -> anyhow::Result<()> {
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
            let model = read_model_with_progress(input, from, &progress)
                .with_context(|| format!("reading {}", input.display()))?;
            let dropped = write_model_with_progress(output, to, &model, &progress)
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
