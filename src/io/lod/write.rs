//! Writing a level-of-detail folder ([`super::format`]) as a whole: every file goes into a new
//! folder beside the target, which then replaces it, so a crash never leaves a folder whose index
//! names pages that are not there.

use super::format::{
    FORMAT_NAME, FORMAT_VERSION, LodIndex, PageEncoding, PageRecord, page_layout, skeleton_to_bytes,
};
use super::tree::LodTree;
use crate::error::{Error, Result};
use crate::io::formats::{ModelFormat, write_model};
use crate::io::ply::PlyModel;
use crate::io::{io_error, write_atomically, write_json_atomically};
use crate::splat::reference::CpuGaussians;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Nodes per page unless asked otherwise: 64 Ki Gaussians, about 1 MiB as compressed PLY
/// without SH, 4 MiB with degree 3.
pub const DEFAULT_PAGE_NODES: u64 = 1 << 16;

/// How to write the folder.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// Most nodes per page.
    pub page_nodes: u64,
    /// How pages are stored.
    pub encoding: PageEncoding,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            page_nodes: DEFAULT_PAGE_NODES,
            encoding: PageEncoding::CompressedPly,
        }
    }
}

fn slice_gaussians(g: &CpuGaussians, first: usize, len: usize) -> CpuGaussians {
    let r = first..first + len;
    CpuGaussians {
        means: g.means[r.clone()].to_vec(),
        log_scales: g.log_scales[r.clone()].to_vec(),
        quats: g.quats[r.clone()].to_vec(),
        opacity_logits: g.opacity_logits[r.clone()].to_vec(),
        sh: g.sh[r].to_vec(),
    }
}

/// Whether `dir` may be replaced: it does not exist, is empty, or holds a level-of-detail index.
fn replaceable(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(io_error(dir, "read", e)),
        Ok(mut entries) => {
            if entries.next().is_none() {
                return Ok(true);
            }
            let index = std::fs::read(dir.join("index.json")).unwrap_or_default();
            Ok(serde_json::from_slice::<serde_json::Value>(&index)
                .is_ok_and(|v| v["format"] == FORMAT_NAME))
        }
    }
}

/// `out` as an absolute path without `.` or `..` (a symbolic link itself is kept, not followed),
/// so that its siblings lie in its parent: `--out .` names the current folder, whose partial
/// folder must not be made inside it.
fn resolved(out: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(out).map_err(|e| io_error(out, "resolve", e))?;
    let mut path = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                path.pop();
            }
            other => path.push(other),
        }
    }
    if path.file_name().is_none() {
        return Err(Error::InvalidArgument {
            op: "lod",
            detail: format!(
                "{} is the root of the file system: write the level of detail into a folder \
                 (e.g. --out scene.lod)",
                out.display()
            ),
        });
    }
    Ok(path)
}

/// A new name beside `dir` (which has a file name: see [`resolved`]).
fn sibling(dir: &Path, tag: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene.lod".into());
    // Unique per call, so two writers in one process never share a folder.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.with_file_name(format!(".{name}.{tag}-{}-{call}", std::process::id()))
}

/// Fails unless `out` may receive a level-of-detail folder: it does not exist, is empty, or holds
/// one (which [`write_lod`] replaces). Commands check it before the work of building a tree.
pub fn check_output(out: &Path) -> Result<()> {
    if replaceable(out)? {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op: "lod",
        detail: format!(
            "{} exists and is not a level-of-detail folder: choose another output, or remove it",
            out.display()
        ),
    })
}

/// Writes `tree` as a level-of-detail folder at `out`, replacing a previous one there. Refuses a
/// non-empty folder that is not one. Returns the index written.
pub fn write_lod(tree: &LodTree, out: &Path, options: WriteOptions) -> Result<LodIndex> {
    check_output(out)?;
    super::check::check_spheres(&tree.skeleton)?;
    let shown = out;
    let out = &resolved(out)?;
    let page_nodes = options.page_nodes.max(super::tree::MAX_CHILDREN as u64);
    let partial = sibling(out, "partial");
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(partial.join("pages")).map_err(|e| io_error(&partial, "create", e))?;
    let result = (|| {
        let skeleton = &tree.skeleton;
        let tree_file = "tree.bin".to_string();
        let bytes = skeleton_to_bytes(skeleton);
        write_atomically(&partial.join(&tree_file), |w| {
            w.write_all(&bytes)
                .map_err(|e| io_error(&partial.join("tree.bin"), "write", e))
        })?;
        let format = match options.encoding {
            PageEncoding::CompressedPly => ModelFormat::CompressedPly,
            PageEncoding::Ply => ModelFormat::Ply,
        };
        let layout = page_layout(skeleton, page_nodes);
        use rayon::prelude::*;
        let pages = layout
            .par_iter()
            .enumerate()
            .map(|(i, &(first, nodes))| {
                let file = format!("pages/{i:05}.{}", options.encoding.extension());
                let path = partial.join(&file);
                let model = PlyModel {
                    gaussians: slice_gaussians(&tree.gaussians, first as usize, nodes as usize),
                    sh_degree: tree.sh_degree,
                };
                write_model(&path, format, &model)?;
                let bytes = std::fs::metadata(&path)
                    .map_err(|e| io_error(&path, "read the size of", e))?
                    .len();
                Ok(PageRecord {
                    file,
                    first_node: first,
                    nodes,
                    bytes,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let index = LodIndex {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            sh_degree: tree.sh_degree,
            nodes: skeleton.len() as u64,
            leaves: skeleton.leaves() as u64,
            depth: skeleton.depth() as u64,
            page_nodes,
            page_encoding: options.encoding,
            tree_file,
            pages,
        };
        write_json_atomically(&partial.join("index.json"), &index)?;
        Ok(index)
    })();
    let index = match result {
        Ok(index) => index,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    // Swap the new folder in: the old one (if any) moves aside first, then goes.
    let old = sibling(out, "old");
    let had_old = out.exists();
    if had_old && let Err(e) = std::fs::rename(out, &old) {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(io_error(shown, "move aside", e));
    }
    if let Err(e) = std::fs::rename(&partial, out) {
        if had_old {
            let _ = std::fs::rename(&old, out);
        }
        let _ = std::fs::remove_dir_all(&partial);
        return Err(io_error(shown, "rename the new folder onto", e));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(index)
}
