//! Editing the model shown: the edits the panel, the scene view's selection tools and scripted
//! runs ask for ([`EditAction`]), applied through the library's selection model
//! ([`wgsplat::show::selection`]) to a CPU copy of the model taken at the first edit, with the
//! model shown rebuilt (deleted Gaussians left out, the selection tinted) after each change.

use anyhow::Context as _;
use std::path::PathBuf;
use std::sync::Arc;
use wgsplat::GpuContext;
use wgsplat::io::PlyModel;
use wgsplat::io::formats::{ModelFormat, write_model};
use wgsplat::io::model::upload_model;
use wgsplat::show::edit::CropBox;
use wgsplat::show::selection::{EditSession, SelectMode, in_box, in_circles, in_rect};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::splat::{Camera, GaussianTensors};

/// The colour the selected Gaussians are tinted toward.
pub const SELECTION_TINT: [f32; 3] = [1.0, 0.1, 0.1];

/// One edit.
#[derive(Clone, Debug, PartialEq)]
pub enum EditAction {
    /// Select the Gaussians whose centre projects in the image rectangle `[x0, y0, x1, y1]`
    /// (pixels of the scene image).
    SelectRect([f32; 4], SelectMode),
    /// Select those under a brush stroke: image centres and radii in pixels.
    SelectBrush(Vec<([f32; 2], f32)>, SelectMode),
    /// Select those inside the crop box.
    SelectInCrop(SelectMode),
    /// Invert the selection.
    Invert,
    /// Clear the selection.
    Clear,
    /// Delete the selected Gaussians.
    Delete,
    /// Undo the last edit.
    Undo,
    /// Redo the last edit undone.
    Redo,
    /// Write the edited model to a file, in the format its name says.
    Save(PathBuf),
    /// Drag the crop box's handle at image point `[x0, y0]` to `[x1, y1]` (pixels of the scene
    /// image; see [`crate::crop_handles`]).
    CropDrag([f32; 4]),
}

impl EditAction {
    /// Parses one scripted step: `select-box:X0,Y0,X1,Y1`, `brush:X,Y,R`, `select-crop`,
    /// `crop-drag:X0,Y0,X1,Y1`,
    /// `invert`, `clear`, `delete`, `undo`, `redo` or `save:PATH`.
    pub fn parse(step: &str) -> anyhow::Result<EditAction> {
        let (name, value) = step.trim().split_once(':').unwrap_or((step.trim(), ""));
        let numbers = |count: usize| -> anyhow::Result<Vec<f32>> {
            let values: Vec<f32> = value
                .split(',')
                .map(|v| v.trim().parse::<f32>())
                .collect::<Result<_, _>>()
                .ok()
                .filter(|v: &Vec<f32>| v.len() == count && v.iter().all(|x| x.is_finite()))
                .with_context(|| {
                    format!("edit step {step:?}: expected {count} numbers separated by commas")
                })?;
            Ok(values)
        };
        Ok(match name {
            "select-box" => {
                let v = numbers(4)?;
                EditAction::SelectRect([v[0], v[1], v[2], v[3]], SelectMode::Replace)
            }
            "brush" => {
                let v = numbers(3)?;
                EditAction::SelectBrush(vec![([v[0], v[1]], v[2])], SelectMode::Replace)
            }
            "select-crop" => EditAction::SelectInCrop(SelectMode::Replace),
            "crop-drag" => {
                let v = numbers(4)?;
                EditAction::CropDrag([v[0], v[1], v[2], v[3]])
            }
            "invert" => EditAction::Invert,
            "clear" => EditAction::Clear,
            "delete" => EditAction::Delete,
            "undo" => EditAction::Undo,
            "redo" => EditAction::Redo,
            "save" if !value.is_empty() => EditAction::Save(PathBuf::from(value)),
            _ => anyhow::bail!(
                "unknown edit step {step:?}: use select-box:X0,Y0,X1,Y1, brush:X,Y,R, select-crop, crop-drag:X0,Y0,X1,Y1, invert, clear, delete, undo, redo or save:PATH, separated by ';'"
            ),
        })
    }

    /// Parses `;`-separated steps.
    pub fn parse_list(text: &str) -> anyhow::Result<Vec<EditAction>> {
        text.split(';')
            .filter(|s| !s.trim().is_empty())
            .map(EditAction::parse)
            .collect()
    }
}

/// The model being edited: its CPU copy, the edits, and the model shown.
pub struct EditState {
    /// The model as opened.
    pub original: CpuGaussians,
    /// Its SH degree.
    pub sh_degree: u32,
    /// The selection and deletions.
    pub session: EditSession,
    /// The model shown: remaining Gaussians, the selection tinted; `None` when none remain.
    pub shown: Option<Arc<GaussianTensors>>,
}

impl EditState {
    /// Starts editing `params` (read back from the GPU).
    pub fn new(ctx: &GpuContext, params: &GaussianTensors) -> anyhow::Result<EditState> {
        let original = params
            .download(ctx)
            .context("reading the model back to edit it")?;
        let session = EditSession::new(original.means.len());
        Ok(EditState {
            original,
            sh_degree: params.max_sh_degree(),
            session,
            shown: None,
        })
    }

    /// Rebuilds the model shown from the edits.
    pub fn refresh(&mut self, ctx: &GpuContext) -> anyhow::Result<()> {
        self.shown = None;
        if self.session.remaining() == 0 {
            return Ok(());
        }
        let model = PlyModel {
            gaussians: self.session.highlighted(&self.original, SELECTION_TINT),
            sh_degree: self.sh_degree,
        };
        self.shown = Some(Arc::new(upload_model(ctx, &model, "viewer/edited")?));
        Ok(())
    }

    /// The edited model without the highlight, on the GPU (for a video); `None` when none remain.
    pub fn edited_params(&self, ctx: &GpuContext) -> anyhow::Result<Option<GaussianTensors>> {
        if self.session.remaining() == 0 {
            return Ok(None);
        }
        Ok(Some(upload_model(
            ctx,
            &self.edited_model(),
            "viewer/edited",
        )?))
    }

    /// The Gaussians that remain, as a model to write.
    pub fn edited_model(&self) -> PlyModel {
        PlyModel {
            gaussians: self.session.edited(&self.original),
            sh_degree: self.sh_degree,
        }
    }

    /// Applies `action`: selections through `camera` (the scene image's) or `crop`. Returns a
    /// line for the log.
    pub fn apply(
        &mut self,
        ctx: &GpuContext,
        action: &EditAction,
        camera: &Camera,
        crop: Option<&CropBox>,
    ) -> anyhow::Result<String> {
        let means = &self.original.means;
        let session = &mut self.session;
        let line = match action {
            EditAction::SelectRect(rect, mode) => {
                session.select(&in_rect(means, camera, *rect), *mode, "box selection");
                format!("box selection: {} selected", session.selected_count())
            }
            EditAction::SelectBrush(dabs, mode) => {
                session.select(&in_circles(means, camera, dabs), *mode, "brush selection");
                format!("brush selection: {} selected", session.selected_count())
            }
            EditAction::SelectInCrop(mode) => {
                let crop = crop.context("turn the crop box on to select inside it")?;
                session.select(&in_box(means, crop), *mode, "select inside the box");
                format!("inside the box: {} selected", session.selected_count())
            }
            EditAction::Invert => {
                session.invert();
                format!("inverted: {} selected", session.selected_count())
            }
            EditAction::Clear => {
                session.clear_selection();
                "selection cleared".to_owned()
            }
            EditAction::Delete => {
                let n = session.delete_selected();
                format!("deleted {n}: {} remain", session.remaining())
            }
            EditAction::Undo => match session.undo() {
                Some(what) => format!("undid {what}"),
                None => "nothing to undo".to_owned(),
            },
            EditAction::Redo => match session.redo() {
                Some(what) => format!("redid {what}"),
                None => "nothing to redo".to_owned(),
            },
            EditAction::Save(path) => return self.save(path),
            EditAction::CropDrag(_) => {
                anyhow::bail!("a crop box drag moves the panel's box, not the model's Gaussians")
            }
        };
        self.refresh(ctx)?;
        Ok(line)
    }

    /// Writes the edited model to `path` in the format its name says (as `wgsplat convert`).
    fn save(&self, path: &std::path::Path) -> anyhow::Result<String> {
        let format = ModelFormat::from_path(path)?;
        let model = self.edited_model();
        anyhow::ensure!(
            !model.gaussians.means.is_empty(),
            "every Gaussian is deleted: nothing to write to {}",
            path.display()
        );
        let dropped = write_model(path, format, &model)
            .with_context(|| format!("writing {}", path.display()))?;
        let mut line = format!(
            "wrote {} Gaussians to {} as {}",
            model.gaussians.means.len(),
            path.display(),
            format.name()
        );
        for note in dropped {
            line.push_str(&format!("; {note}"));
        }
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_steps_are_parsed_and_bad_ones_named() {
        let steps =
            EditAction::parse_list("select-box:1,2,30,40; delete;undo;save:out.spz;").unwrap();
        assert_eq!(
            steps,
            [
                EditAction::SelectRect([1.0, 2.0, 30.0, 40.0], SelectMode::Replace),
                EditAction::Delete,
                EditAction::Undo,
                EditAction::Save(PathBuf::from("out.spz")),
            ]
        );
        for bad in ["select-box:1,2,3", "brush:a,b,c", "erase", "save:"] {
            let err = EditAction::parse(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }
}
