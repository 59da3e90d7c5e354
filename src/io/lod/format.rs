//! The level-of-detail folder (`SCENE.lod/`), version 1:
//!
//! - `index.json`: [`LodIndex`], the counts, the page encoding and the page table;
//! - `tree.bin`: the [`Skeleton`], 32 bytes per node, little-endian, breadth-first:
//!   bounding sphere `x y z radius` (f32), `parent` (u32, `0xffffffff` for the root),
//!   `first_child` and `child_count` (u32; both 0 for a leaf) and a reserved 0 (u32);
//! - `pages/NNNNN.compressed.ply` (or `.ply`): the Gaussians of a run of consecutive nodes, as a
//!   file any 3DGS tool reads (PlayCanvas's compressed PLY by default: 16 bytes per Gaussian plus
//!   8-bit SH; or the 3DGS PLY in f32, lossless).
//!
//! A page holds whole families (all children of one node), so a node's children are either all
//! in memory or none; pages are at most `page_nodes` nodes. Everything read is checked
//! ([`LodIndex::check`], [`skeleton_from_bytes`]): a count past its file, a node whose parent does
//! not come before it (which rules out cycles), a child range past the tree or a page table that
//! does not tile the nodes is a clear error naming the file.

use super::tree::{MAX_CHILDREN, NO_NODE, Skeleton};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` field of every index.
pub const FORMAT_NAME: &str = "wgsplat-lod";
/// The version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes per node in `tree.bin`.
pub const NODE_RECORD_BYTES: usize = 32;
/// Most nodes in a tree.
pub const MAX_NODES: u64 = 1 << 31;

/// How a page's Gaussians are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageEncoding {
    /// PlayCanvas's compressed PLY: quantised, 16 bytes per Gaussian plus SH in 8 bits.
    CompressedPly,
    /// The 3DGS PLY in f32: lossless.
    Ply,
}

impl PageEncoding {
    /// The file name ending of a page.
    pub fn extension(self) -> &'static str {
        match self {
            PageEncoding::CompressedPly => "compressed.ply",
            PageEncoding::Ply => "ply",
        }
    }
}

/// One page: a run of consecutive nodes in one file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageRecord {
    /// The file, relative to the folder (`pages/00012.compressed.ply`).
    pub file: String,
    /// Its first node.
    pub first_node: u64,
    /// Nodes in it.
    pub nodes: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// `index.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LodIndex {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// SH degree of every page.
    pub sh_degree: u32,
    /// Nodes in the tree.
    pub nodes: u64,
    /// Leaves (the model's Gaussians).
    pub leaves: u64,
    /// Depth of the deepest leaf.
    pub depth: u64,
    /// Most nodes in a page.
    pub page_nodes: u64,
    /// How pages are stored.
    pub page_encoding: PageEncoding,
    /// The skeleton's file, relative to the folder.
    pub tree_file: String,
    /// Every page, in node order.
    pub pages: Vec<PageRecord>,
}

fn bad(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: "wgsplat level-of-detail folder".into(),
        message: message.into(),
    }
}

/// Whether `name` is a plain relative file name under the folder (no `..`, no absolute path).
fn plain_relative(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.contains('\\')
        && name
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

impl LodIndex {
    /// Checks the index on its own: format, counts, and that the pages tile the nodes in order.
    /// `path` names the index in errors.
    pub fn check(&self, path: &Path) -> Result<()> {
        if self.format != FORMAT_NAME {
            return Err(bad(
                path,
                format!("format is {:?}, not {FORMAT_NAME:?}", self.format),
            ));
        }
        if self.version != FORMAT_VERSION {
            return Err(bad(
                path,
                format!(
                    "version {} (this build reads version {FORMAT_VERSION}): rebuild it with this \
                     build's `wgsplat lod`",
                    self.version
                ),
            ));
        }
        if self.sh_degree > 3 {
            return Err(bad(path, format!("SH degree {} is past 3", self.sh_degree)));
        }
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return Err(bad(
                path,
                format!("{} nodes (1 to {MAX_NODES})", self.nodes),
            ));
        }
        if self.leaves == 0 || self.leaves > self.nodes {
            return Err(bad(
                path,
                format!("{} leaves in {} nodes", self.leaves, self.nodes),
            ));
        }
        if self.page_nodes < MAX_CHILDREN as u64 || self.page_nodes > (1 << 24) {
            return Err(bad(
                path,
                format!("page_nodes {} (8 to 2^24)", self.page_nodes),
            ));
        }
        if !plain_relative(&self.tree_file) {
            return Err(bad(
                path,
                format!("tree file {:?} leaves the folder", self.tree_file),
            ));
        }
        let mut next = 0u64;
        for (i, page) in self.pages.iter().enumerate() {
            if page.first_node != next {
                return Err(bad(
                    path,
                    format!(
                        "page {i} starts at node {} where node {next} comes next: the pages must \
                         tile the nodes in order",
                        page.first_node
                    ),
                ));
            }
            if page.nodes == 0 || page.nodes > self.page_nodes {
                return Err(bad(
                    path,
                    format!(
                        "page {i} holds {} nodes (1 to {})",
                        page.nodes, self.page_nodes
                    ),
                ));
            }
            next = page.first_node.saturating_add(page.nodes);
            if next > self.nodes {
                return Err(bad(
                    path,
                    format!(
                        "page {i} reaches node {next}, past the tree's {} nodes",
                        self.nodes
                    ),
                ));
            }
            if !plain_relative(&page.file) {
                return Err(bad(
                    path,
                    format!("page {i}'s file {:?} leaves the folder", page.file),
                ));
            }
        }
        if next != self.nodes {
            return Err(bad(
                path,
                format!("the pages hold {next} of the tree's {} nodes", self.nodes),
            ));
        }
        Ok(())
    }

    /// The page holding `node` (the pages tile the nodes, so a binary search finds it).
    pub fn page_of(&self, node: u64) -> usize {
        self.pages
            .partition_point(|p| p.first_node + p.nodes <= node)
    }
}

/// `tree.bin` of `skeleton`.
pub fn skeleton_to_bytes(skeleton: &Skeleton) -> Vec<u8> {
    let mut out = Vec::with_capacity(skeleton.len() * NODE_RECORD_BYTES);
    for n in 0..skeleton.len() {
        for v in skeleton.spheres[n] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            skeleton.parent[n],
            skeleton.first_child[n],
            skeleton.child_count[n],
            0,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Reads and checks `tree.bin` (`path` names it in errors) for an index of `nodes` nodes.
pub fn skeleton_from_bytes(path: &Path, bytes: &[u8], nodes: u64) -> Result<Skeleton> {
    let want = nodes.checked_mul(NODE_RECORD_BYTES as u64);
    if want != Some(bytes.len() as u64) {
        return Err(bad(
            path,
            format!(
                "{} bytes where the index's {nodes} nodes need {} ({NODE_RECORD_BYTES} per node)",
                bytes.len(),
                nodes.saturating_mul(NODE_RECORD_BYTES as u64)
            ),
        ));
    }
    let n = nodes as usize;
    let mut s = Skeleton {
        parent: Vec::with_capacity(n),
        first_child: Vec::with_capacity(n),
        child_count: Vec::with_capacity(n),
        spheres: Vec::with_capacity(n),
    };
    for record in bytes.chunks_exact(NODE_RECORD_BYTES) {
        let word =
            |k: usize| u32::from_le_bytes(record[4 * k..4 * k + 4].try_into().unwrap_or_default());
        s.spheres
            .push([0, 1, 2, 3].map(|k| f32::from_bits(word(k))));
        s.parent.push(word(4));
        s.first_child.push(word(5));
        s.child_count.push(word(6));
    }
    check_skeleton(path, &s)?;
    Ok(s)
}

/// Checks the links: the root has no parent, every other node's parent comes before it and lists
/// it among its children, child ranges lie in the tree, spheres are finite.
pub fn check_skeleton(path: &Path, s: &Skeleton) -> Result<()> {
    let n = s.len();
    if n == 0 || s.parent[0] != NO_NODE {
        return Err(bad(path, "node 0 must be the root (parent 0xffffffff)"));
    }
    let mut children_total = 0u64;
    for node in 0..n {
        let sphere = s.spheres[node];
        if sphere.iter().any(|v| !v.is_finite()) || sphere[3] < 0.0 {
            return Err(bad(
                path,
                format!("node {node}'s bounding sphere {sphere:?} is not finite"),
            ));
        }
        let (first, count) = (s.first_child[node] as u64, s.child_count[node] as u64);
        if count as usize > MAX_CHILDREN {
            return Err(bad(
                path,
                format!("node {node} has {count} children (at most {MAX_CHILDREN})"),
            ));
        }
        if count > 0 && (first <= node as u64 || first + count > n as u64) {
            return Err(bad(
                path,
                format!(
                    "node {node}'s children {first}..{} lie outside {}..{n}",
                    first + count,
                    node + 1
                ),
            ));
        }
        children_total += count;
        if node > 0 {
            let p = s.parent[node];
            if p as usize >= node {
                return Err(bad(
                    path,
                    format!(
                        "node {node}'s parent {p} does not come before it (a cycle or a broken \
                         breadth-first order)"
                    ),
                ));
            }
            let (pf, pc) = (s.first_child[p as usize], s.child_count[p as usize]);
            if !(pf..pf + pc).contains(&(node as u32)) {
                return Err(bad(
                    path,
                    format!("node {node}'s parent {p} does not list it as a child"),
                ));
            }
        }
    }
    if children_total != n as u64 - 1 {
        return Err(bad(
            path,
            format!("{children_total} child links for {n} nodes (every node but the root has one)"),
        ));
    }
    Ok(())
}

/// Page boundaries for `skeleton`: runs of whole families of at most `page_nodes` nodes, in
/// order; the first page starts with the root. Returns each page's (first node, nodes).
pub fn page_layout(skeleton: &Skeleton, page_nodes: u64) -> Vec<(u64, u64)> {
    let mut pages = Vec::new();
    let (mut start, mut len) = (0u64, 1u64);
    for node in 0..skeleton.len() {
        let count = u64::from(skeleton.child_count[node]);
        if count == 0 {
            continue;
        }
        if len + count > page_nodes {
            pages.push((start, len));
            start += len;
            len = 0;
        }
        len += count;
    }
    pages.push((start, len));
    pages
}
