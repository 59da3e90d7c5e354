//! The resolution images load at, and how views split into train and test (3DGS's `llffhold`
//! by default).

use super::{View, dataset_error};
use crate::error::{Error, Result};
use std::path::Path;

/// 3DGS's `llffhold`: with [`Split::Default`] on datasets without their own split, every 8th view
/// (by sorted name, starting with the first) is a test view.
pub const DEFAULT_HOLDOUT_EVERY: usize = 8;

/// Image resolution to load at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resolution {
    /// The files' own size.
    #[default]
    Full,
    /// Divide width and height by this factor (1, 2, 4, 8, ...; sizes are rounded).
    Factor(u32),
    /// Resize to this width, keeping the aspect ratio (never upscales past the file's size).
    Width(u32),
    /// The files' own size, but images wider than this are resized to it, keeping the aspect
    /// ratio, and the dataset's notes say so ([`super::resolution`]: the default for photographs).
    MaxWidth(u32),
}

impl Resolution {
    /// The size an image of `width` × `height` is loaded at.
    pub fn target_size(self, width: u32, height: u32) -> Result<(u32, u32)> {
        let scaled = |factor: f64| {
            let w = ((width as f64 / factor).round() as u32).max(1);
            let h = ((height as f64 / factor).round() as u32).max(1);
            (w, h)
        };
        match self {
            Resolution::Full => Ok((width, height)),
            Resolution::Factor(0) | Resolution::Width(0) => Err(Error::InvalidSetting {
                name: "resolution".into(),
                value: format!("{self:?}"),
                expected: "a downscale factor >= 1 (1, 2, 4 or 8) or a target width >= 1".into(),
            }),
            Resolution::Factor(f) => Ok(scaled(f as f64)),
            Resolution::MaxWidth(cap) => super::resolution::capped_size(cap, width, height),
            Resolution::Width(w) if w >= width => Ok((width, height)),
            Resolution::Width(w) => Ok(scaled(width as f64 / w as f64)),
        }
    }
}

/// How views are split into train and test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// The dataset's own split (NeRF `transforms_test.json`, nerfstudio `test_filenames`); where it
    /// has none (COLMAP), every 8th view is held out (COLMAP: by sorted name, as 3DGS does with
    /// `--eval`).
    #[default]
    Default,
    /// Every view is a training view (3DGS without `--eval`).
    AllTrain,
    /// View `i` (COLMAP: by sorted name; NeRF: in file order) is a test view when `i % n == 0`.
    HoldoutEvery(usize),
    /// These view names (as in [`View::name`]) are the test views; all others train. Every name
    /// must exist.
    TestNames(Vec<String>),
}

/// Splits `views` by `split`, first sorting them by name when `sort_by_name` (COLMAP, as 3DGS;
/// NeRF datasets keep their file order). `own_test` is the dataset's own list of test names used
/// by [`Split::Default`] (`None`: hold out every 8th). Errors name `source` when a requested test
/// name does not exist.
pub(crate) fn split_views(
    mut views: Vec<View>,
    split: &Split,
    own_test: Option<&[String]>,
    source: &Path,
    sort_by_name: bool,
) -> Result<(Vec<View>, Vec<View>)> {
    if sort_by_name {
        views.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let names: Vec<String> = match (split, own_test) {
        (Split::AllTrain, _) => return Ok((views, Vec::new())),
        (Split::HoldoutEvery(0), _) => {
            return Err(Error::InvalidSetting {
                name: "split".into(),
                value: "HoldoutEvery(0)".into(),
                expected: "a hold-out period >= 1 (3DGS uses 8)".into(),
            });
        }
        (Split::HoldoutEvery(n), _) => return Ok(holdout_every(views, *n)),
        (Split::Default, None) => return Ok(holdout_every(views, DEFAULT_HOLDOUT_EVERY)),
        (Split::Default, Some(names)) => names.to_vec(),
        (Split::TestNames(names), _) => names.clone(),
    };
    for name in &names {
        if !views.iter().any(|v| &v.name == name) {
            return Err(dataset_error(
                source,
                format!(
                    "test view {name:?} is not in the dataset; test names must match the image names exactly"
                ),
            ));
        }
    }
    Ok(views.into_iter().partition(|v| !names.contains(&v.name)))
}

fn holdout_every(views: Vec<View>, n: usize) -> (Vec<View>, Vec<View>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, view) in views.into_iter().enumerate() {
        if i % n == 0 {
            test.push(view)
        } else {
            train.push(view)
        }
    }
    (train, test)
}
