//! The mapper's result: of the models it wrote (one per connected group of images), the largest is
//! kept; its registration is measured (images registered of those given, points, mean
//! reprojection error) and checked.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::colmap::Matcher;
use crate::data::colmap::{ColmapImage, quaternion_to_matrix};
use crate::data::colmap_binary::{read_cameras, read_images, read_points_with_errors};
use crate::error::{Error, Result};

/// Below this share of the images registered, the result is refused by default.
pub const DEFAULT_MIN_REGISTERED: f64 = 0.5;

/// What the kept model holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Registration {
    /// Images given to COLMAP.
    pub images_given: usize,
    /// Images the kept model poses.
    pub images_registered: usize,
    /// Names of the images it does not pose, sorted.
    pub unregistered: Vec<String>,
    /// 3D points.
    pub points: usize,
    /// Mean of the points' reprojection errors, in pixels (COLMAP's "mean reprojection error").
    pub mean_reprojection_error_px: f64,
    /// Cameras (intrinsics) in the model.
    pub cameras: usize,
    /// How many models the mapper made (disconnected groups of images).
    pub models_found: usize,
    /// Images in each model the mapper made, largest first.
    pub model_sizes: Vec<usize>,
}

/// One model folder the mapper wrote, read enough to compare.
struct Candidate {
    dir: PathBuf,
    images: Vec<ColmapImage>,
    points: usize,
}

fn read_candidate(dir: &Path) -> Result<Candidate> {
    let images = read_images(&dir.join("images.bin"))?;
    let (points, _) = read_points_with_errors(&dir.join("points3D.bin"))?;
    Ok(Candidate {
        dir: dir.to_path_buf(),
        images,
        points: points.len(),
    })
}

/// The model folders under `models_root` (`0/`, `1/`, … each with `images.bin`).
fn model_dirs(models_root: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(models_root) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("images.bin").is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    Ok(dirs)
}

/// Picks the model with the most registered images (then the most points) under `models_root`,
/// measures it against `given` (the image names given to COLMAP) and returns its folder.
pub fn pick_largest(
    models_root: &Path,
    given: &[String],
    matcher: Matcher,
) -> Result<(PathBuf, Registration)> {
    let dirs = model_dirs(models_root)?;
    if dirs.is_empty() {
        return Err(no_model_error(given.len(), matcher));
    }
    let mut candidates = dirs
        .iter()
        .map(|d| read_candidate(d))
        .collect::<Result<Vec<_>>>()?;
    candidates.sort_by(|a, b| {
        (b.images.len(), b.points)
            .cmp(&(a.images.len(), a.points))
            .then(a.dir.cmp(&b.dir))
    });
    let best = &candidates[0];
    let (_, errors) = read_points_with_errors(&best.dir.join("points3D.bin"))?;
    let cameras = read_cameras(&best.dir.join("cameras.bin"))?;
    let mean_error = if errors.is_empty() {
        0.0
    } else {
        errors.iter().sum::<f64>() / errors.len() as f64
    };
    let registered: std::collections::BTreeSet<&str> =
        best.images.iter().map(|i| i.name.as_str()).collect();
    let mut unregistered: Vec<String> = given
        .iter()
        .filter(|n| !registered.contains(n.as_str()))
        .cloned()
        .collect();
    unregistered.sort();
    let registration = Registration {
        images_given: given.len(),
        images_registered: best.images.len(),
        unregistered,
        points: best.points,
        mean_reprojection_error_px: mean_error,
        cameras: cameras.len(),
        models_found: candidates.len(),
        model_sizes: candidates.iter().map(|c| c.images.len()).collect(),
    };
    Ok((best.dir.clone(), registration))
}

/// True when the mapper wrote at least one model under `models_root`.
pub fn has_model(models_root: &Path) -> bool {
    model_dirs(models_root).is_ok_and(|dirs| !dirs.is_empty())
}

/// The error for a mapper that made no model from `images` images matched by `matcher`.
pub fn no_model_error(images: usize, matcher: Matcher) -> Error {
    Error::Sfm {
        stage: "mapper".into(),
        message: format!(
            "COLMAP's mapper made no model from the {images} images: no two images matched well enough to start one. \
             Check that the photographs overlap (60 to 80% between neighbours, the subject textured, little motion blur); {}",
            more_matches_advice(matcher)
        ),
    }
}

/// What to try for more matches after `matcher`: exhaustive matching where it did not run.
pub fn more_matches_advice(matcher: Matcher) -> &'static str {
    match matcher {
        Matcher::Sequential => {
            "try --matcher exhaustive (every pair is compared), or add photographs"
        }
        Matcher::Exhaustive => {
            "every pair was already compared, so add photographs with more overlap, or try more \
             features per image (--max-features 16384)"
        }
    }
}

/// The note for a mapper that made several models, or `None` for one.
pub fn several_models_note(registration: &Registration, matcher: Matcher) -> Option<String> {
    (registration.models_found > 1).then(|| {
        format!(
            "the mapper made {} disconnected models ({} images each); the largest ({} images) is kept. \
             The groups did not overlap enough to join: add photographs between them{}",
            registration.models_found,
            registration
                .model_sizes
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            registration.images_registered,
            match matcher {
                Matcher::Sequential => ", or try --matcher exhaustive",
                Matcher::Exhaustive => "",
            }
        )
    })
}

/// Fails when under `min_share` of the images registered, naming those that did not.
pub fn check_registration(
    registration: &Registration,
    min_share: f64,
    matcher: Matcher,
) -> Result<()> {
    let given = registration.images_given.max(1);
    if registration.images_registered as f64 >= min_share * given as f64 {
        return Ok(());
    }
    let names = &registration.unregistered;
    let listed = names
        .iter()
        .take(20)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if names.len() > 20 {
        format!(" and {} more", names.len() - 20)
    } else {
        String::new()
    };
    Err(Error::Sfm {
        stage: "mapper".into(),
        message: format!(
            "only {} of {} images registered (under {:.0}%); not registered: {listed}{more}. \
             For these, {}; --min-registered 0 keeps the partial model anyway",
            registration.images_registered,
            registration.images_given,
            min_share * 100.0,
            more_matches_advice(matcher)
        ),
    })
}

/// A COLMAP image's camera centre in world space: `-Rᵀ t`.
pub fn camera_centre(image: &ColmapImage) -> [f64; 3] {
    let r = quaternion_to_matrix(image.qvec);
    let t = image.tvec;
    let mut c = [0.0; 3];
    for (k, ck) in c.iter_mut().enumerate() {
        *ck = -(r[0][k] * t[0] + r[1][k] * t[1] + r[2][k] * t[2]);
    }
    c
}

/// Copies the kept model's files into `sparse` (`DATA/sparse/0`), replacing what was there as a
/// whole: the files are written beside it and the folder renamed into place.
pub fn export_model(model_dir: &Path, sparse: &Path) -> Result<()> {
    let parent = sparse.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| crate::io::io_error(parent, "create", e))?;
    let staging = parent.join(format!(".0.{}.tmp", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(|e| crate::io::io_error(&staging, "remove", e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| crate::io::io_error(&staging, "create", e))?;
    for file in ["cameras.bin", "images.bin", "points3D.bin"] {
        let (from, to) = (model_dir.join(file), staging.join(file));
        std::fs::copy(&from, &to).map_err(|e| crate::io::io_error(&from, "copy", e))?;
    }
    if sparse.exists() {
        std::fs::remove_dir_all(sparse).map_err(|e| crate::io::io_error(sparse, "remove", e))?;
    }
    std::fs::rename(&staging, sparse)
        .map_err(|e| crate::io::io_error(sparse, "rename into place", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(registered: usize, given: usize) -> Registration {
        Registration {
            images_given: given,
            images_registered: registered,
            unregistered: (registered..given).map(|i| format!("img{i}.jpg")).collect(),
            points: 100,
            mean_reprojection_error_px: 0.5,
            cameras: 1,
            models_found: 2,
            model_sizes: vec![registered, given - registered],
        }
    }

    #[test]
    fn under_half_registered_is_refused_with_the_names() {
        let check = |r: &Registration, share, matcher| check_registration(r, share, matcher);
        let err = check(
            &registration(4, 10),
            DEFAULT_MIN_REGISTERED,
            Matcher::Sequential,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("only 4 of 10"), "{err}");
        assert!(
            err.contains("img9.jpg") && err.contains("--matcher exhaustive"),
            "{err}"
        );
        // After exhaustive matching, exhaustive matching is not what to try.
        let err = check(
            &registration(4, 10),
            DEFAULT_MIN_REGISTERED,
            Matcher::Exhaustive,
        )
        .unwrap_err()
        .to_string();
        assert!(
            !err.contains("--matcher exhaustive") && err.contains("already compared"),
            "{err}"
        );
        let err = no_model_error(10, Matcher::Exhaustive).to_string();
        assert!(!err.contains("--matcher exhaustive"), "{err}");
        assert!(
            no_model_error(10, Matcher::Sequential)
                .to_string()
                .contains("--matcher exhaustive")
        );
        check(
            &registration(5, 10),
            DEFAULT_MIN_REGISTERED,
            Matcher::Exhaustive,
        )
        .unwrap();
        check(&registration(1, 10), 0.0, Matcher::Exhaustive).unwrap();
    }

    #[test]
    fn several_models_are_named() {
        let note = several_models_note(&registration(6, 10), Matcher::Exhaustive).unwrap();
        assert!(!note.contains("--matcher exhaustive"), "{note}");
        assert!(
            note.contains("2 disconnected models") && note.contains("6, 4"),
            "{note}"
        );
        let mut one = registration(10, 10);
        one.models_found = 1;
        assert!(several_models_note(&one, Matcher::Sequential).is_none());
    }
}
