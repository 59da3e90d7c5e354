//! Where a SOG set's files come from ([`super::sog_read`]): the entries of a `.sog` zip, or the
//! files beside a `meta.json`. Only `meta.json` is read up front (bounded); a texture is read
//! when the reader asks for it by the name `meta.json` gives, bounded by the size the reader
//! derives from the Gaussian count, so entries `meta.json` never names are never inflated.
//! Part names are plain file names; anything else is refused. A zip whose files all lie in one
//! folder (as `zip -r scene.sog scene/` makes) is read from that folder.

use super::host::{open_regular_file, try_vec};
use super::io_error;
use super::sog::{format_error, is_loose_set};
use crate::error::Result;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The largest `meta.json` read (real ones, with three 256-entry codebooks, are a few KB).
const MAX_META_BYTES: u64 = 4 << 20;

/// A seekable byte source: a file or a buffer.
pub(super) trait ReadSeek: Read + std::io::Seek {}
impl<T: Read + std::io::Seek> ReadSeek for T {}

/// Where the parts are: a zip (with the folder inside it that holds `meta.json`), or a folder.
pub(super) enum Source {
    Zip {
        archive: Box<zip::ZipArchive<Box<dyn ReadSeek>>>,
        /// `""`, or the folder (ending in `/`) that holds `meta.json` and the textures.
        folder: String,
    },
    Folder(PathBuf),
}

impl Source {
    /// The source of the SOG set at `path`, its `meta.json`, and the set's size in bytes (the
    /// zip's, or the sum of the loose files `meta.json` names).
    pub(super) fn open(path: &Path) -> Result<(Source, Vec<u8>, u64)> {
        if is_loose_set(path) {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
            let source = Source::Folder(dir.unwrap_or(Path::new(".")).to_path_buf());
            let meta = read_limited(path, MAX_META_BYTES)?;
            return Ok((source, meta, super::sog::loose_set_bytes(path)));
        }
        let (file, file_len) = open_regular_file(path)?;
        Self::zip(path, Box::new(BufReader::new(file)), file_len)
    }

    /// [`Source::open`] of a `.sog` bundle held in memory; `path` names it in messages.
    pub(super) fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<(Source, Vec<u8>, u64)> {
        let len = bytes.len() as u64;
        Self::zip(path, Box::new(std::io::Cursor::new(bytes)), len)
    }

    fn zip(
        path: &Path,
        reader: Box<dyn ReadSeek>,
        file_len: u64,
    ) -> Result<(Source, Vec<u8>, u64)> {
        let archive = zip::ZipArchive::new(reader).map_err(|e| {
            format_error(path, format!("not a readable zip archive ({e}); a .sog file is a zip of meta.json and WebP textures"))
        })?;
        let names = entry_names(&archive);
        let folder = if names.iter().any(|n| n == "meta.json") {
            String::new()
        } else {
            let nested: Vec<&String> = names
                .iter()
                .filter(|n| {
                    n.strip_suffix("meta.json")
                        .is_some_and(|f| f.ends_with('/') && f.matches('/').count() == 1)
                })
                .collect();
            match nested.as_slice() {
                [one] => one.trim_end_matches("meta.json").to_string(),
                _ => {
                    return Err(format_error(
                        path,
                        format!(
                            "the archive has no meta.json at its root or in a single folder (it holds {}); a .sog file is a zip of meta.json and WebP textures",
                            listing(&names)
                        ),
                    ));
                }
            }
        };
        let mut source = Source::Zip {
            archive: Box::new(archive),
            folder,
        };
        let meta = source.part(path, "meta.json", MAX_META_BYTES)?;
        Ok((source, meta, file_len))
    }

    /// The part named `name` in `meta.json`, refused when it is over `max_bytes` (the size the
    /// reader derives from the Gaussian count) or inflates past it.
    pub(super) fn part(&mut self, path: &Path, name: &str, max_bytes: u64) -> Result<Vec<u8>> {
        if name.is_empty() || name.contains(['/', '\\']) || name == ".." || name == "." {
            return Err(format_error(
                path,
                format!("meta.json names the file {name:?}; SOG parts are plain file names"),
            ));
        }
        match self {
            Source::Zip { archive, folder } => {
                let full = format!("{folder}{name}");
                let Some(index) = archive.index_for_name(&full) else {
                    return Err(missing_entry(path, &**archive, &full, name));
                };
                let entry = archive
                    .by_index(index)
                    .map_err(|e| format_error(path, format!("zip entry {full:?}: {e}")))?;
                if entry.size() > max_bytes {
                    return Err(format_error(
                        path,
                        format!(
                            "entry {full:?} is {} bytes, more than the {max_bytes} bytes a {name} for this model can take; the file is damaged or crafted",
                            entry.size()
                        ),
                    ));
                }
                read_bounded(path, entry, max_bytes, &format!("entry {full:?}"))
            }
            Source::Folder(dir) => {
                let file = dir.join(name);
                if !file.exists() {
                    return Err(format_error(
                        path,
                        format!("{} is missing; meta.json names it", file.display()),
                    ));
                }
                read_limited(&file, max_bytes)
            }
        }
    }
}

/// Every entry name of `archive` (unreadable ones left out).
fn entry_names<R: Read + std::io::Seek>(archive: &zip::ZipArchive<R>) -> Vec<String> {
    archive
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .collect()
}

/// Up to 12 names, quoted, and how many more there are.
fn listing(names: &[String]) -> String {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort();
    let shown: Vec<String> = sorted.iter().take(12).map(|n| format!("{n:?}")).collect();
    match names.len() {
        0 => "no entries".into(),
        n if n > 12 => format!("{} and {} more", shown.join(", "), n - 12),
        _ => shown.join(", "),
    }
}

/// The error for a part `meta.json` names that the archive lacks under `full`: entries with
/// that name in another folder or in another case are named, as are the entries it has.
fn missing_entry<R: Read + std::io::Seek>(
    path: &Path,
    archive: &zip::ZipArchive<R>,
    full: &str,
    name: &str,
) -> crate::error::Error {
    let names = entry_names(archive);
    let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_string();
    let near: Vec<&String> = names
        .iter()
        .filter(|n| base(n).eq_ignore_ascii_case(name))
        .collect();
    let hint = if near.is_empty() {
        format!("it holds {}", listing(&names))
    } else {
        format!(
            "it has {} instead (names are case-sensitive, and parts lie beside meta.json); rename the entry or fix meta.json",
            near.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format_error(
        path,
        format!("meta.json names {name:?}, but the archive has no entry {full:?}: {hint}"),
    )
}

/// Everything `reader` yields, refused past `max_bytes` (`what` names it).
fn read_bounded(path: &Path, reader: impl Read, max_bytes: u64, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format_error(path, format!("{what} is damaged: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format_error(
            path,
            format!(
                "{what} inflates past the {max_bytes} bytes it can take for this model; the file is damaged or crafted"
            ),
        ));
    }
    Ok(bytes)
}

/// The regular file `path`, refused when it is over `max_bytes`.
fn read_limited(path: &Path, max_bytes: u64) -> Result<Vec<u8>> {
    let (file, len) = open_regular_file(path)?;
    if len > max_bytes {
        return Err(format_error(
            path,
            format!(
                "it is {len} bytes, more than the {max_bytes} bytes this part of a SOG set can take; the set is damaged"
            ),
        ));
    }
    let mut bytes = try_vec(len as usize, || format!("reading {}", path.display()))?;
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", e))?;
    Ok(bytes)
}
