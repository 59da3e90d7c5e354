//! `wgsplat convert`'s filters: crop box, opacity, scale and the floater filter of a trained
//! model with its dataset ([`wgsplat::show::edit`]), each saying how many Gaussians it removed.

use std::path::PathBuf;

use wgsplat::io::PlyModel;
use wgsplat::show::edit::{CropBox, FilterReport, Filters, apply};
use wgsplat::train::options::DataArgs;

use crate::cli::dataset::load_dataset_reporting;
use crate::cli::status::StatusTo;

/// The filters `convert` applies before writing.
#[derive(clap::Args, Clone, Debug)]
pub struct FilterArgs {
    /// Keep the Gaussians whose centre is inside this box: MINX,MINY,MINZ,MAXX,MAXY,MAXZ.
    #[arg(
        long,
        value_name = "MINX,MINY,MINZ,MAXX,MAXY,MAXZ",
        allow_hyphen_values = true
    )]
    crop_box: Option<String>,
    /// Keep those outside the crop box instead.
    #[arg(long, requires = "crop_box")]
    crop_invert: bool,
    /// Drop the Gaussians whose opacity is below A (0 to 1).
    #[arg(long, value_name = "A")]
    min_opacity: Option<f32>,
    /// Drop the Gaussians whose largest scale (standard deviation, scene units) is above S.
    #[arg(long, value_name = "S")]
    max_scale: Option<f32>,
    /// The dataset the model was trained on, for --min-views.
    #[arg(long, value_name = "DIR", requires = "min_views")]
    dataset: Option<PathBuf>,
    /// Drop floaters: the Gaussians whose centre fewer than K training cameras of --dataset see
    /// (with --eval, the test views are left out as training left them out).
    #[arg(long, value_name = "K", requires = "dataset")]
    min_views: Option<u32>,
    #[command(flatten)]
    data_args: DataArgs,
}

impl FilterArgs {
    /// True when any filter is asked for.
    pub fn any(&self) -> bool {
        self.crop_box.is_some()
            || self.min_opacity.is_some()
            || self.max_scale.is_some()
            || self.min_views.is_some()
    }

    /// Refuses the dataset options (`--eval`, `--test-every`, `--test-list`, `-r`,
    /// `--alpha-as-mask`, `--host-image-memory`) without `--min-views`, the only filter that
    /// reads the dataset.
    pub fn refuse_unused_dataset_options(&self) -> anyhow::Result<()> {
        if self.min_views.is_some() {
            return Ok(());
        }
        let d = &self.data_args;
        let given = [
            (d.eval, "--eval"),
            (d.test_every.is_some(), "--test-every"),
            (d.test_list.is_some(), "--test-list"),
            (d.resolution.is_some(), "--resolution (-r)"),
            (d.alpha_as_mask, "--alpha-as-mask"),
            (d.undistort, "--undistort"),
            (d.host_image_memory.is_some(), "--host-image-memory"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        if let Some(flag) = given {
            anyhow::bail!(
                "{flag} chooses the training cameras of --dataset for --min-views K; without \
                 --min-views it changes nothing: give --dataset DIR --min-views K, or leave {flag} \
                 out"
            );
        }
        Ok(())
    }

    /// The filters, checked, with the training cameras loaded for --min-views.
    pub fn filters(&self) -> anyhow::Result<Filters> {
        if let Some(a) = self.min_opacity.filter(|a| !(0.0..=1.0).contains(a)) {
            anyhow::bail!("--min-opacity {a} must be between 0 and 1");
        }
        if let Some(s) = self.max_scale.filter(|s| !(s.is_finite() && *s > 0.0)) {
            anyhow::bail!("--max-scale {s} must be a positive number of scene units");
        }
        let min_views = match (&self.dataset, self.min_views) {
            (Some(dir), Some(k)) => {
                let dataset =
                    load_dataset_reporting(Some(dir), &self.data_args, [0.0; 3], StatusTo::Stderr)?;
                let cameras = dataset.train.iter().map(|v| v.camera.clone()).collect();
                Some((cameras, k))
            }
            _ => None,
        };
        Ok(Filters {
            crop_box: self.crop_box.as_deref().map(CropBox::parse).transpose()?,
            crop_invert: self.crop_invert,
            min_opacity: self.min_opacity,
            max_scale: self.max_scale,
            min_views,
        })
    }
}

/// Applies the filters to `model` and prints what each removed.
pub fn clean(model: &mut PlyModel, args: &FilterArgs) -> anyhow::Result<FilterReport> {
    let filters = args.filters()?;
    let before = model.gaussians.means.len();
    let report = apply(&mut model.gaussians, &filters);
    for (filter, removed) in &report.removed {
        println!("{filter}: removed {removed} Gaussians");
    }
    println!("kept {} of {before} Gaussians", report.kept);
    Ok(report)
}
