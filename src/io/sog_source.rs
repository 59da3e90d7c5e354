//! Where a SOG set's files come from ([`super::sog_read`]): the entries of a `.sog` zip, read
//! up front with a size limit per entry, or the files beside a `meta.json`. Part names are
//! plain file names; anything else is refused.

use super::io_error;
use super::sog::{format_error, is_loose_set};
use crate::error::Result;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest file of a SOG set read (a 16383² RGBA WebP compresses far below this).
const MAX_PART_BYTES: u64 = 1 << 30;
/// Where the parts are: a zip's entries, read up front, or a folder.
pub(super) enum Source {
    Zip(HashMap<String, Vec<u8>>),
    Folder(PathBuf),
}

impl Source {
    pub(super) fn open(path: &Path) -> Result<(Source, Vec<u8>)> {
        if is_loose_set(path) {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let source = Source::Folder(dir.unwrap_or(Path::new(".")).to_path_buf());
            let meta = read_limited(path)?;
            return Ok((source, meta));
        }
        let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
        let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
            format_error(path, format!("not a readable zip archive ({e}); a .sog file is a zip of meta.json and WebP textures"))
        })?;
        let mut entries = HashMap::new();
        for index in 0..archive.len() {
            let mut entry = archive
                .by_index(index)
                .map_err(|e| format_error(path, format!("zip entry {index}: {e}")))?;
            if entry.is_dir() {
                continue;
            }
            let name = entry
                .name()
                .map_err(|e| {
                    format_error(
                        path,
                        format!("zip entry {index} has an unreadable name: {e}"),
                    )
                })?
                .to_string();
            if entry.size() > MAX_PART_BYTES {
                return Err(format_error(
                    path,
                    format!(
                        "entry {name} is {} bytes, over the {MAX_PART_BYTES}-byte limit",
                        entry.size()
                    ),
                ));
            }
            let mut bytes = Vec::new();
            (&mut entry)
                .take(MAX_PART_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format_error(path, format!("entry {name} is damaged: {e}")))?;
            if bytes.len() as u64 > MAX_PART_BYTES {
                return Err(format_error(
                    path,
                    format!("entry {name} inflates past {MAX_PART_BYTES} bytes"),
                ));
            }
            entries.insert(name, bytes);
        }
        let meta = entries.remove("meta.json").ok_or_else(|| {
            let mut names: Vec<&String> = entries.keys().collect();
            names.sort();
            format_error(
                path,
                format!("the archive has no meta.json at its root (it holds {names:?})"),
            )
        })?;
        Ok((Source::Zip(entries), meta))
    }

    /// The part named `name` in `meta.json`.
    pub(super) fn part(&mut self, path: &Path, name: &str) -> Result<Vec<u8>> {
        if name.is_empty() || name.contains(['/', '\\']) || name == ".." || name == "." {
            return Err(format_error(
                path,
                format!("meta.json names the file {name:?}; SOG parts are plain file names"),
            ));
        }
        match self {
            Source::Zip(entries) => entries.remove(name).ok_or_else(|| {
                format_error(
                    path,
                    format!("the archive has no {name}, which meta.json names"),
                )
            }),
            Source::Folder(dir) => {
                let file = dir.join(name);
                if !file.exists() {
                    return Err(format_error(
                        path,
                        format!("{} is missing; meta.json names it", file.display()),
                    ));
                }
                read_limited(&file)
            }
        }
    }
}

fn read_limited(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let mut bytes = Vec::new();
    file.take(MAX_PART_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", e))?;
    if bytes.len() as u64 > MAX_PART_BYTES {
        return Err(format_error(
            path,
            format!("over the {MAX_PART_BYTES}-byte limit for one SOG part"),
        ));
    }
    Ok(bytes)
}
