//! Opening a level-of-detail folder: the index and the skeleton at once (checked), the pages one
//! at a time as a cut needs them. The byte-level entry points ([`LodScene::from_bytes`],
//! [`LodScene::decode_page`]) serve a page that fetches the files over HTTP.

use super::format::{LodIndex, check_skeleton, skeleton_from_bytes};
use super::tree::Skeleton;
use crate::error::{Error, Result};
use crate::io::formats::read_model_bytes;
use crate::io::io_error;
use crate::splat::reference::CpuGaussians;
use std::path::{Path, PathBuf};

/// An opened level-of-detail folder: its index and skeleton, with each node's page.
#[derive(Clone, Debug)]
pub struct LodScene {
    /// The folder (or the address it was fetched from).
    pub dir: PathBuf,
    /// The checked index.
    pub index: LodIndex,
    /// The checked skeleton.
    pub skeleton: Skeleton,
    /// Each node's page.
    pub node_page: Vec<u32>,
}

fn bad(path: &Path, message: String) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "wgsplat level-of-detail folder".into(),
        message,
    }
}

impl LodScene {
    /// Opens `dir`: reads and checks `index.json` and the skeleton file. Pages are read later.
    pub fn open(dir: &Path) -> Result<LodScene> {
        let index_path = dir.join("index.json");
        let index_bytes = std::fs::read(&index_path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                bad(
                    dir,
                    "no index.json: this is not a folder written by `wgsplat lod` or `merge --lod`"
                        .into(),
                )
            } else {
                io_error(&index_path, "read", e)
            }
        })?;
        let index: LodIndex = serde_json::from_slice(&index_bytes)
            .map_err(|e| bad(&index_path, format!("not a level-of-detail index: {e}")))?;
        index.check(&index_path)?;
        let tree_path = dir.join(&index.tree_file);
        let size = std::fs::metadata(&tree_path)
            .map_err(|e| io_error(&tree_path, "read", e))?
            .len();
        // Compare sizes before reading, so a hostile count never allocates.
        if Some(size)
            != index
                .nodes
                .checked_mul(super::format::NODE_RECORD_BYTES as u64)
        {
            return Err(bad(
                &tree_path,
                format!(
                    "{size} bytes where the index's {} nodes need {}",
                    index.nodes,
                    index
                        .nodes
                        .saturating_mul(super::format::NODE_RECORD_BYTES as u64)
                ),
            ));
        }
        let tree_bytes = std::fs::read(&tree_path).map_err(|e| io_error(&tree_path, "read", e))?;
        Self::assemble(dir.to_path_buf(), index, &tree_path, &tree_bytes)
    }

    /// A scene from the bytes of its index and skeleton (`name` names it in errors).
    pub fn from_bytes(name: &str, index_bytes: &[u8], tree_bytes: &[u8]) -> Result<LodScene> {
        let dir = PathBuf::from(name);
        let index: LodIndex = serde_json::from_slice(index_bytes)
            .map_err(|e| bad(&dir, format!("not a level-of-detail index: {e}")))?;
        index.check(&dir.join("index.json"))?;
        let tree_path = dir.join(&index.tree_file);
        Self::assemble(dir, index, &tree_path, tree_bytes)
    }

    fn assemble(
        dir: PathBuf,
        index: LodIndex,
        tree_path: &Path,
        tree_bytes: &[u8],
    ) -> Result<LodScene> {
        let skeleton = skeleton_from_bytes(tree_path, tree_bytes, index.nodes)?;
        check_skeleton(tree_path, &skeleton)?;
        let leaves = skeleton.leaves() as u64;
        if leaves != index.leaves {
            return Err(bad(
                tree_path,
                format!("{leaves} leaves where the index says {}", index.leaves),
            ));
        }
        let mut node_page = vec![0u32; skeleton.len()];
        for (p, page) in index.pages.iter().enumerate() {
            let range = page.first_node as usize..(page.first_node + page.nodes) as usize;
            node_page[range].fill(p as u32);
        }
        // A family split across two pages would leave half of it missing from memory.
        for n in 0..skeleton.len() {
            let count = skeleton.child_count[n];
            if count > 0 {
                let first = skeleton.first_child[n] as usize;
                let last = first + count as usize - 1;
                if node_page[first] != node_page[last] {
                    return Err(bad(
                        tree_path,
                        format!(
                            "node {n}'s children {first}..={last} straddle pages {} and {}",
                            node_page[first], node_page[last]
                        ),
                    ));
                }
            }
        }
        Ok(LodScene {
            dir,
            index,
            skeleton,
            node_page,
        })
    }

    /// Pages in the scene.
    pub fn page_count(&self) -> usize {
        self.index.pages.len()
    }

    /// The path of page `page`'s file.
    pub fn page_path(&self, page: usize) -> PathBuf {
        self.dir.join(&self.index.pages[page].file)
    }

    /// Reads page `page` from the folder.
    pub fn read_page(&self, page: usize) -> Result<CpuGaussians> {
        let path = self.page_path(page);
        let size = std::fs::metadata(&path)
            .map_err(|e| io_error(&path, "read", e))?
            .len();
        let want = self.index.pages[page].bytes;
        if size != want {
            return Err(bad(
                &path,
                format!(
                    "{size} bytes where the index says {want}: the folder is damaged; rebuild it"
                ),
            ));
        }
        let bytes = std::fs::read(&path).map_err(|e| io_error(&path, "read", e))?;
        self.decode_page(page, &bytes)
    }

    /// Decodes page `page` from its file's bytes, checking its count and SH degree.
    pub fn decode_page(&self, page: usize, bytes: &[u8]) -> Result<CpuGaussians> {
        let record = &self.index.pages[page];
        let path = self.dir.join(&record.file);
        let model = read_model_bytes(&path.to_string_lossy(), bytes)?;
        let count = model.gaussians.means.len() as u64;
        if count != record.nodes || model.sh_degree != self.index.sh_degree {
            return Err(bad(
                &path,
                format!(
                    "{count} Gaussians of SH degree {} where the index says {} of degree {}",
                    model.sh_degree, record.nodes, self.index.sh_degree
                ),
            ));
        }
        Ok(model.gaussians)
    }

    /// Every leaf's Gaussian, read page by page: the full model the tree was built over.
    pub fn read_leaves(&self) -> Result<CpuGaussians> {
        let mut out = CpuGaussians::default();
        for page in 0..self.page_count() {
            let g = self.read_page(page)?;
            let first = self.index.pages[page].first_node as usize;
            for (i, node) in (first..first + g.means.len()).enumerate() {
                if self.skeleton.child_count[node] == 0 {
                    out.means.push(g.means[i]);
                    out.log_scales.push(g.log_scales[i]);
                    out.quats.push(g.quats[i]);
                    out.opacity_logits.push(g.opacity_logits[i]);
                    out.sh.push(g.sh[i]);
                }
            }
        }
        Ok(out)
    }
}
