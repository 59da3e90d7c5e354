//! The stages of a structure-from-motion run as one list, each with the settings it runs with
//! (its key) and the files it writes, and the one rule that decides what a rerun does: a stage
//! is reused only when it finished with the same key and its outputs are still as it left them;
//! a stage that runs first removes what it and every later stage wrote, and the final dataset
//! (`sparse/0`, the report), so that nothing of an earlier run survives beside a new one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::Result;

/// A stage of `wgsplat sfm`, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Photographs made upright and sized, video frames extracted: `images/`, `images_N/`.
    Images,
    /// COLMAP's SIFT features into a new `sfm/database.db`.
    Features,
    /// COLMAP's matches, added to the database.
    Matches,
    /// The mapper's models in `sfm/models/`.
    Mapper,
}

/// How a stage's output is checked before the stage is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Its names, sizes and modification times (of every file below a folder) must be those the
    /// stage left.
    Unchanged,
    /// It must exist (a later stage changes it).
    Exists,
}

/// A file or folder a stage writes.
#[derive(Clone, Debug)]
pub struct Output {
    /// The path.
    pub path: PathBuf,
    /// How it is checked before the stage is reused.
    pub check: Check,
    /// True when the stage creates it (removed before the stage runs again); false when the
    /// stage changes what an earlier stage made.
    pub created: bool,
}

/// The dataset folder's paths the stages write.
pub struct Paths<'a> {
    /// `DATA/images`.
    pub images: &'a Path,
    /// `DATA/sfm`.
    pub work: &'a Path,
}

/// INRIA's downscale factors whose `images_N/` folders the images stage may write.
pub const DOWNSCALE_FOLDERS: &[u32] = &[2, 4, 8, 16];

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 4] = [
        Stage::Images,
        Stage::Features,
        Stage::Matches,
        Stage::Mapper,
    ];

    /// Its name in messages and in the record.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Images => "images",
            Stage::Features => "features",
            Stage::Matches => "matches",
            Stage::Mapper => "mapper",
        }
    }

    /// The files and folders it writes.
    pub fn outputs(self, paths: &Paths) -> Vec<Output> {
        let made = |path: PathBuf, check| Output {
            path,
            check,
            created: true,
        };
        let database = paths.work.join("database.db");
        match self {
            Stage::Images => {
                let mut outputs = vec![
                    made(paths.images.to_path_buf(), Check::Unchanged),
                    made(paths.work.join("frames"), Check::Unchanged),
                ];
                for factor in DOWNSCALE_FOLDERS {
                    let dir = super::photos::prescaled_dir(paths.images, *factor);
                    outputs.push(made(dir, Check::Unchanged));
                }
                outputs
            }
            Stage::Features => vec![made(database, Check::Exists)],
            // COLMAP's mapper opens the database for writing too, so only its presence is
            // checked; a lost database runs the features again.
            Stage::Matches => vec![Output {
                path: database,
                check: Check::Exists,
                created: false,
            }],
            Stage::Mapper => vec![made(paths.work.join("models"), Check::Unchanged)],
        }
    }

    /// This stage and every later one.
    pub fn and_later(self) -> &'static [Stage] {
        let at = Stage::ALL.iter().position(|s| *s == self).unwrap_or(0);
        &Stage::ALL[at..]
    }
}

/// The state of `path` as [`Check`] sees it: `null` when absent; for [`Check::Exists`], `true`;
/// for [`Check::Unchanged`], a file's size and modification time, or a folder's sorted list of
/// files below it with theirs.
pub fn fingerprint(path: &Path, check: Check) -> Value {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Value::Null;
    };
    if check == Check::Exists {
        return json!(true);
    }
    if !meta.is_dir() {
        return file_identity(&meta);
    }
    let mut files = Vec::new();
    collect_files(path, path, &mut files);
    files.sort_by(|a, b| a.0.cmp(&b.0));
    json!(files)
}

fn file_identity(meta: &std::fs::Metadata) -> Value {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos().to_string());
    json!([meta.len(), modified])
}

fn collect_files(root: &Path, dir: &Path, files: &mut Vec<(String, Value)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            collect_files(root, &path, files);
        } else {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            files.push((format!("{relative:?}"), file_identity(&meta)));
        }
    }
}

/// The fingerprints of `outputs`, one per output.
pub fn outputs_fingerprint(outputs: &[Output]) -> Value {
    json!(
        outputs
            .iter()
            .map(|o| fingerprint(&o.path, o.check))
            .collect::<Vec<_>>()
    )
}

/// Why a stage runs instead of being reused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Finished with the same key, its outputs as it left them.
    Reuse,
    /// No earlier run finished it.
    NotRun,
    /// It finished with other settings or inputs.
    KeyChanged,
    /// It finished, but this output is missing or was changed since.
    OutputChanged(PathBuf),
}

/// The record of finished stages (`DATA/sfm/state.json`).
#[derive(Debug)]
pub struct StageState {
    path: PathBuf,
    record: Record,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    finished: Vec<Finished>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Finished {
    stage: String,
    key: Value,
    outputs: Value,
}

impl StageState {
    /// Reads the record at `path`; a missing or unreadable record means nothing is finished.
    pub fn load(path: &Path) -> StageState {
        let record = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        StageState {
            path: path.to_path_buf(),
            record,
        }
    }

    /// Whether `stage` may be reused with `key`, its outputs checked against what it left.
    pub fn decide(&self, stage: Stage, key: &Value, paths: &Paths) -> Decision {
        let Some(finished) = self
            .record
            .finished
            .iter()
            .find(|f| f.stage == stage.name())
        else {
            return Decision::NotRun;
        };
        if &finished.key != key {
            return Decision::KeyChanged;
        }
        let outputs = stage.outputs(paths);
        let recorded = finished.outputs.as_array();
        for (index, output) in outputs.iter().enumerate() {
            let was = recorded.and_then(|r| r.get(index));
            if was != Some(&fingerprint(&output.path, output.check)) {
                return Decision::OutputChanged(output.path.clone());
            }
        }
        Decision::Reuse
    }

    /// Before `stage` runs: forgets it and every later stage, removes what they created, and
    /// removes `finals` (the dataset made from the last stage).
    pub fn prepare_to_run(
        &mut self,
        stage: Stage,
        paths: &Paths,
        finals: &[PathBuf],
    ) -> Result<()> {
        let later = stage.and_later();
        self.record
            .finished
            .retain(|f| !later.iter().any(|s| s.name() == f.stage));
        self.save()?;
        let created = later
            .iter()
            .flat_map(|s| s.outputs(paths))
            .filter(|o| o.created)
            .map(|o| o.path);
        for path in created.chain(finals.iter().cloned()) {
            remove(&path)?;
        }
        Ok(())
    }

    /// Records `stage` as finished with `key`, with its outputs as they are now.
    pub fn mark_done(&mut self, stage: Stage, key: Value, paths: &Paths) -> Result<()> {
        let outputs = outputs_fingerprint(&stage.outputs(paths));
        self.record.finished.retain(|f| f.stage != stage.name());
        self.record.finished.push(Finished {
            stage: stage.name().to_owned(),
            key,
            outputs,
        });
        self.save()
    }

    fn save(&self) -> Result<()> {
        crate::io::write_json_atomically(&self.path, &self.record)
    }
}

/// Removes the file or folder at `path`, if there is one.
fn remove(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.map_err(|e| crate::io::io_error(path, "remove", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_stage_is_reused_only_with_its_key_and_its_outputs_as_it_left_them() {
        let dir = std::env::temp_dir().join(format!("wgsplat-stages-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (images, work) = (dir.join("images"), dir.join("sfm"));
        let paths = Paths {
            images: &images,
            work: &work,
        };
        let state_path = work.join("state.json");
        std::fs::create_dir_all(&work).unwrap();
        let key = json!({"max_size": 1600});
        let mut state = StageState::load(&state_path);
        write(&images.join("a.jpg"), "a");
        write(&images.join("b.jpg"), "b");
        state.mark_done(Stage::Images, key.clone(), &paths).unwrap();
        write(&work.join("database.db"), "features");
        state
            .mark_done(Stage::Features, key.clone(), &paths)
            .unwrap();
        write(&work.join("database.db"), "features and matches");
        state
            .mark_done(Stage::Matches, key.clone(), &paths)
            .unwrap();
        write(&work.join("database.db"), "opened by the mapper");
        write(&work.join("models/0/images.bin"), "model");
        state.mark_done(Stage::Mapper, key.clone(), &paths).unwrap();

        let state = StageState::load(&state_path);
        for stage in Stage::ALL {
            assert_eq!(
                state.decide(stage, &key, &paths),
                Decision::Reuse,
                "{stage:?}"
            );
        }
        let other = json!({"max_size": 800});
        assert_eq!(
            state.decide(Stage::Images, &other, &paths),
            Decision::KeyChanged
        );
        // A photograph deleted from images/, the models deleted: those stages run again.
        std::fs::remove_file(images.join("b.jpg")).unwrap();
        assert_eq!(
            state.decide(Stage::Images, &key, &paths),
            Decision::OutputChanged(images.clone())
        );
        std::fs::remove_dir_all(work.join("models")).unwrap();
        assert_eq!(
            state.decide(Stage::Mapper, &key, &paths),
            Decision::OutputChanged(work.join("models"))
        );

        // Matching again keeps the features' database and the images, and removes the models
        // and the dataset made from them.
        write(&work.join("models/0/images.bin"), "model");
        let sparse = dir.join("sparse/0");
        write(&sparse.join("images.bin"), "exported");
        let mut state = state;
        state
            .prepare_to_run(Stage::Matches, &paths, std::slice::from_ref(&sparse))
            .unwrap();
        assert!(work.join("database.db").is_file() && images.join("a.jpg").is_file());
        assert!(!work.join("models").exists() && !sparse.exists());
        let state = StageState::load(&state_path);
        assert_eq!(state.decide(Stage::Features, &key, &paths), Decision::Reuse);
        assert_eq!(state.decide(Stage::Matches, &key, &paths), Decision::NotRun);
        assert_eq!(state.decide(Stage::Mapper, &key, &paths), Decision::NotRun);
        let mut state = state;
        state.prepare_to_run(Stage::Images, &paths, &[]).unwrap();
        assert!(!images.exists() && !work.join("database.db").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
