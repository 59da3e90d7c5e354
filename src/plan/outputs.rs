//! A block's outputs, `PLAN/blocks/K/`: `point_cloud.ply`, `metrics.json`, the periodic
//! `checkpoint.bin` while it trains, and `done.json`, written last, with the size and CRC-32 of
//! every output. A block is finished exactly when `done.json` is there and its checksums match.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The model a block writes.
pub const MODEL_FILE: &str = "point_cloud.ply";
/// The block's metrics.
pub const METRICS_FILE: &str = "metrics.json";
/// The checkpoint a requeued block resumes from.
pub const CHECKPOINT_FILE: &str = "checkpoint.bin";
/// The completion record, written last.
pub const DONE_FILE: &str = "done.json";

/// `PLAN/blocks/K`.
pub fn block_dir(plan_dir: &Path, index: usize) -> PathBuf {
    plan_dir.join("blocks").join(index.to_string())
}

/// A file's size and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChecksum {
    /// Bytes.
    pub bytes: u64,
    /// CRC-32 (IEEE) of the contents.
    pub crc32: u32,
}

/// `done.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockDone {
    /// The block's index.
    pub block: usize,
    /// Iterations trained.
    pub iterations: u64,
    /// Gaussians in the block's model (before the merge keeps its core).
    pub gaussians: u64,
    /// The outputs by file name.
    pub files: BTreeMap<String, FileChecksum>,
}

/// The size and CRC-32 of `path`.
pub fn checksum(path: &Path) -> Result<FileChecksum> {
    let mut file = std::fs::File::open(path).map_err(|e| crate::io::io_error(path, "open", e))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| crate::io::io_error(path, "read", e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    Ok(FileChecksum {
        bytes,
        crc32: hasher.finalize(),
    })
}

fn block_error(block: usize, path: &Path, message: impl Into<String>) -> Error {
    Error::PlanBlock {
        block,
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Writes `done.json` for block `block` in `dir`, with the checksums of `files` (written last,
/// atomically).
pub fn write_done(
    dir: &Path,
    block: usize,
    iterations: u64,
    gaussians: u64,
    files: &[&str],
) -> Result<BlockDone> {
    let files = files
        .iter()
        .map(|name| Ok(((*name).to_owned(), checksum(&dir.join(name))?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    let done = BlockDone {
        block,
        iterations,
        gaussians,
        files,
    };
    let path = dir.join(DONE_FILE);
    let text = serde_json::to_vec_pretty(&done).map_err(|e| Error::InvalidArgument {
        op: "write_done",
        detail: format!("the completion record does not serialise: {e}"),
    })?;
    crate::io::write_atomically(&path, |w| {
        std::io::Write::write_all(w, &text).map_err(|e| crate::io::io_error(&path, "write", e))
    })?;
    Ok(done)
}

/// Reads block `block`'s `done.json` in `dir` and checks every output against it: an error names
/// the block and says whether it is missing, unfinished or damaged, and what to do.
pub fn verify_block(dir: &Path, block: usize) -> Result<BlockDone> {
    let retrain = format!("train it again with `wgsplat train --plan PLAN --block {block}`");
    if !dir.is_dir() {
        return Err(block_error(
            block,
            dir,
            format!("missing: the block has not been trained; {retrain}"),
        ));
    }
    let path = dir.join(DONE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(block_error(
                block,
                dir,
                format!("unfinished: no {DONE_FILE} (its training has not completed); {retrain}"),
            ));
        }
        Err(e) => return Err(crate::io::io_error(&path, "read", e)),
    };
    let done: BlockDone = serde_json::from_str(&text).map_err(|e| {
        block_error(
            block,
            &path,
            format!("corrupt {DONE_FILE} ({e}); {retrain}"),
        )
    })?;
    if done.block != block {
        return Err(block_error(
            block,
            &path,
            format!("{DONE_FILE} belongs to block {}; {retrain}", done.block),
        ));
    }
    if !done.files.contains_key(MODEL_FILE) {
        return Err(block_error(
            block,
            &path,
            format!("{DONE_FILE} lists no {MODEL_FILE}; {retrain}"),
        ));
    }
    for (name, want) in &done.files {
        let file = dir.join(name);
        let got = checksum(&file)
            .map_err(|_| block_error(block, &file, format!("{name} is missing; {retrain}")))?;
        if got != *want {
            return Err(block_error(
                block,
                &file,
                format!(
                    "corrupt: {name} has {} bytes and CRC-32 {:08x}, {DONE_FILE} records {} bytes \
                     and {:08x}; {retrain}",
                    got.bytes, got.crc32, want.bytes, want.crc32
                ),
            ));
        }
    }
    Ok(done)
}
