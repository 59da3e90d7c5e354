//! Loading a command's dataset (`train`, `partition`, `render`, `eval`): a progress bar on a
//! terminal, then how many views loaded and the loaders' notes.

use super::status::StatusTo;
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Instant;
use wgsplat::data::Dataset;
use wgsplat::train::options::DataArgs;
use wgsplat::train::setup;

/// Loads the dataset at `data` (the built-in scene when `None`) as `args` say, on `background`,
/// printing its status lines on stdout.
pub(crate) fn load_dataset(
    data: Option<&Path>,
    args: &DataArgs,
    background: [f32; 3],
) -> anyhow::Result<Dataset> {
    load_dataset_reporting(data, args, background, StatusTo::Stdout)
}

/// [`load_dataset`], with its status lines (views loaded, notes) sent to `status`.
pub(crate) fn load_dataset_reporting(
    data: Option<&Path>,
    args: &DataArgs,
    background: [f32; 3],
    status: StatusTo,
) -> anyhow::Result<Dataset> {
    let what = data.map_or_else(
        || "the built-in scene".to_owned(),
        |p| format!("the dataset at {}", p.display()),
    );
    let mut options = args.options(background);
    let interactive = std::io::stdout().is_terminal() && status == StatusTo::Stdout;
    if interactive && data.is_some() {
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("loading images {bar:30} {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        options.progress = wgsplat::data::LoadProgress(Some(bar));
    }
    let started = Instant::now();
    let dataset = setup::load_dataset(data, &options).with_context(|| format!("loading {what}"))?;
    if let Some(bar) = &options.progress.0 {
        bar.finish_and_clear();
    }
    if data.is_some() {
        status.line(format_args!(
            "loaded {} views in {:.1} s",
            dataset.train.len() + dataset.test.len(),
            started.elapsed().as_secs_f64()
        ));
    }
    for note in &dataset.notes {
        status.line(note);
    }
    Ok(dataset)
}
