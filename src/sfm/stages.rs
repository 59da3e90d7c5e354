//! Which stages of a structure-from-motion run are finished, and with which settings: rerunning
//! `wgsplat sfm` skips a stage whose settings (and inputs) are those it finished with, and redoes
//! it and every later stage otherwise.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The stages, in order.
pub const STAGES: &[&str] = &["images", "features", "matches", "mapper"];

/// The record of finished stages (`DATA/sfm/state.json`).
#[derive(Debug)]
pub struct StageState {
    path: PathBuf,
    record: Record,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// Each finished stage with the settings it ran with.
    finished: Vec<(String, serde_json::Value)>,
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

    /// True when `stage` finished with exactly `settings`.
    pub fn is_done(&self, stage: &str, settings: &serde_json::Value) -> bool {
        self.record
            .finished
            .iter()
            .any(|(name, value)| name == stage && value == settings)
    }

    /// Forgets `stage` and every stage after it (they will run again), and saves the record.
    pub fn invalidate_from(&mut self, stage: &str) -> Result<()> {
        let position = STAGES.iter().position(|s| *s == stage).unwrap_or(0);
        let later = &STAGES[position..];
        self.record
            .finished
            .retain(|(name, _)| !later.contains(&name.as_str()));
        self.save()
    }

    /// Records `stage` as finished with `settings`, and saves the record.
    pub fn mark_done(&mut self, stage: &str, settings: serde_json::Value) -> Result<()> {
        self.record.finished.retain(|(name, _)| name != stage);
        self.record.finished.push((stage.to_owned(), settings));
        self.save()
    }

    fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.record).map_err(|e| crate::Error::Io {
            path: self.path.display().to_string(),
            action: "encode".into(),
            message: e.to_string(),
        })?;
        crate::io::write_atomically(&self.path, |w| {
            std::io::Write::write_all(w, text.as_bytes())
                .map_err(|e| crate::io::io_error(&self.path, "write", e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_stage_forgets_the_later_ones() {
        let dir = std::env::temp_dir().join(format!("wgsplat-stages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        let mut state = StageState::load(&path);
        let a = serde_json::json!({"max_size": 1600});
        for stage in STAGES {
            state.mark_done(stage, a.clone()).unwrap();
        }
        let reread = StageState::load(&path);
        assert!(STAGES.iter().all(|s| reread.is_done(s, &a)));
        assert!(!reread.is_done("features", &serde_json::json!({"max_size": 800})));
        let mut state = reread;
        state.invalidate_from("matches").unwrap();
        let reread = StageState::load(&path);
        assert!(reread.is_done("features", &a));
        assert!(!reread.is_done("matches", &a) && !reread.is_done("mapper", &a));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
