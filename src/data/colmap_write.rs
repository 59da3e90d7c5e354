//! Writes a generated [`Dataset`] as a COLMAP capture: a text model (`sparse/0/cameras.txt`,
//! `images.txt`, `points3D.txt`) and the images as PNGs under `images/`, the form
//! [`Dataset::load`] reads (and other Gaussian-splatting tools too).

use std::collections::BTreeMap;
use std::path::Path;

use super::capture::{CaptureCamera, CaptureImage, write_colmap_text};
use super::lens::Lens;
use super::{Dataset, dataset_error};
use crate::error::Result;

/// Writes every view of `dataset` (train and test, sorted by name; each name is the image's
/// file name under `images/`, so it should end in `.png`) and its points to the COLMAP folder
/// `dir`. Views with equal intrinsics and lens share one camera (`PINHOLE`, or the model of
/// [`Lens::of_camera`]). The split is not written: a
/// COLMAP reader chooses it (with `--eval`, every 8th view by name). Every file is written
/// atomically; `dir` must not exist yet or be empty, so that nothing of another capture mixes in.
pub fn write_colmap_dataset(dataset: &Dataset, dir: &Path) -> Result<()> {
    if let Ok(mut entries) = std::fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(dataset_error(
            dir,
            "the output folder exists and is not empty: choose a new folder or remove it",
        ));
    }
    let mut views: Vec<_> = dataset.views().collect();
    views.sort_by(|a, b| a.name.cmp(&b.name));
    let mut cameras: Vec<CaptureCamera> = Vec::new();
    let mut camera_ids = BTreeMap::new();
    let mut images = Vec::with_capacity(views.len());
    for view in views {
        let c = &view.camera;
        let lens = Lens::of_camera(c);
        let key: Vec<u64> = lens.colmap_params().iter().map(|v| v.to_bits()).collect();
        let id = *camera_ids
            .entry((lens.model.name(), key, c.width, c.height))
            .or_insert_with(|| {
                let id = cameras.len() as u32 + 1;
                cameras.push(CaptureCamera {
                    id,
                    lens,
                    width: c.width,
                    height: c.height,
                });
                id
            });
        images.push(CaptureImage {
            name: view.name.clone(),
            camera_id: id,
            camera: view.camera.clone(),
            image: view.image.clone(),
            mask: None,
        });
    }
    write_colmap_text(dir, &cameras, &images, dataset.points.as_ref())?;
    // The capture writer makes a masks/ folder for masked captures; this one has none.
    let _ = std::fs::remove_dir(dir.join("masks"));
    Ok(())
}
