//! Reading a checkpoint back ([`load_checkpoint`]): the prefix, the JSON header checked against
//! the tensors it must list, every tensor's bytes hashed on the way, and the hash compared, so a
//! truncated or altered file is an error naming it, never a panic or a silently wrong model.

use super::checkpoint::*;
use super::io_error;
use crate::error::Result;
use crate::gpu::{GpuContext, MemoryCategory};
use crate::optim::{AdamConfig, GaussianOptimizer, MomentStorage, Moments};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::ATTRIBUTE_NAMES;
use crate::splat::sh::coefficient_count;
use crate::tensor::{DType, Tensor};
use std::io::{BufReader, Read};
use std::path::Path;

/// Reads exactly `buf.len()` bytes, hashing them; a short read is a truncation error.
fn read_hashed(
    path: &Path,
    reader: &mut impl Read,
    hash: &mut Fnv1a,
    buf: &mut [u8],
    what: &str,
) -> Result<()> {
    reader.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => format_error(
            path,
            format!("it is truncated inside {what}; use an earlier checkpoint"),
        ),
        _ => io_error(path, "read", e),
    })?;
    hash.update(buf);
    Ok(())
}

/// Reads the 32-bit words of `tensor` (little endian, hashed) and records their upload.
fn read_tensor(
    path: &Path,
    reader: &mut impl Read,
    hash: &mut Fnv1a,
    enc: &mut crate::gpu::Encoder,
    tensor: &Tensor,
    what: &str,
) -> Result<()> {
    let mut bytes = vec![0u8; tensor.len() as usize * 4];
    read_hashed(path, reader, hash, &mut bytes, what)?;
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    tensor.bitcast(DType::U32).write(enc, &words)
}

/// Loads a checkpoint written by [`save_checkpoint`], uploading the tensors through `ctx` (their
/// uploads are submitted before this returns). Corrupt, truncated or foreign files give
/// [`Error::Format`] naming the file.
pub fn load_checkpoint(ctx: &GpuContext, path: &Path) -> Result<Checkpoint> {
    let file = std::fs::File::open(path).map_err(|e| io_error(path, "open", e))?;
    let file_len = file
        .metadata()
        .map_err(|e| io_error(path, "read the size of", e))?
        .len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut hash = Fnv1a::new();
    let mut prefix = [0u8; 16];
    if file_len < 16 {
        return Err(format_error(
            path,
            format!("it is only {file_len} bytes long, too short for a checkpoint header"),
        ));
    }
    read_hashed(path, &mut reader, &mut hash, &mut prefix, "the file prefix")?;
    if prefix[..8] != MAGIC {
        return Err(format_error(
            path,
            "it does not start with the checkpoint magic bytes WGSPCKPT; it is not a wgsplat checkpoint",
        ));
    }
    let version = u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
    if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(format_error(
            path,
            format!(
                "format version {version}; this build reads versions {OLDEST_READABLE_VERSION} to {FORMAT_VERSION} (use a matching wgsplat)"
            ),
        ));
    }
    let json_len = u32::from_le_bytes([prefix[12], prefix[13], prefix[14], prefix[15]]);
    if json_len > MAX_HEADER_BYTES || u64::from(json_len) > file_len - 16 {
        return Err(format_error(
            path,
            format!(
                "its header length {json_len} does not fit in the {file_len}-byte file (corrupt or truncated)"
            ),
        ));
    }
    let mut json = vec![0u8; json_len as usize];
    read_hashed(path, &mut reader, &mut hash, &mut json, "the JSON header")?;
    let header: CheckpointHeader = serde_json::from_slice(&json).map_err(|e| {
        format_error(
            path,
            format!("its JSON header is invalid ({e}); the file is corrupt"),
        )
    })?;
    let rest = u64::from(header.sh_rest_count);
    if header.sh_degree > 3 || rest != coefficient_count(header.sh_degree) as u64 - 1 {
        return Err(format_error(
            path,
            format!(
                "SH degree {} with {rest} rest coefficients is inconsistent",
                header.sh_degree
            ),
        ));
    }
    if version < 2 && header.moments.is_some() {
        return Err(format_error(
            path,
            "a version 1 header names a moment storage (corrupt header)",
        ));
    }
    if version < 3 && header.moments == Some(MomentStorage::Packed) {
        return Err(format_error(
            path,
            format!("a version {version} header names the packed state (corrupt header)"),
        ));
    }
    let moments = header.moments.unwrap_or(MomentStorage::F32);
    let expected = expected_tensors(header.gaussians, rest, header.has_densify_stats, moments);
    if header.gaussians > u64::from(u32::MAX) || header.tensors != expected {
        return Err(format_error(
            path,
            "its tensor list does not match its Gaussian count and SH degree (corrupt header)",
        ));
    }
    let data_bytes: u64 = header.tensors.iter().map(|t| t.bytes).sum();
    let expected_len = 16 + u64::from(json_len) + data_bytes + 8;
    if file_len < expected_len {
        return Err(format_error(
            path,
            format!(
                "it is truncated: {file_len} bytes, but its header describes {expected_len}; it was probably cut off while being written, use an earlier checkpoint"
            ),
        ));
    }
    if file_len > expected_len {
        return Err(format_error(
            path,
            format!(
                "it has {} bytes past the end its header describes (corrupt)",
                file_len - expected_len
            ),
        ));
    }
    let [b1, b2, eps] = header.adam.bits.map(f64::from_bits);
    let config = AdamConfig {
        beta1: b1,
        beta2: b2,
        eps,
        moments,
    };
    let n = header.gaussians as usize;
    let sets = tensor_sets(moments);
    let mut loaded = Vec::with_capacity(sets.len());
    for (k, &(set, dtype)) in sets.iter().enumerate() {
        let category = match k {
            0 => MemoryCategory::Parameters,
            _ => MemoryCategory::OptimizerState,
        };
        let dtype = if dtype == "u32" {
            DType::U32
        } else {
            DType::F32
        };
        let mut enc = ctx.encoder("load_checkpoint");
        let tensors =
            GaussianTensors::uninit_typed(&mut enc, dtype, n, header.sh_degree, category, set)?;
        for (tensor, name) in tensors.attributes().into_iter().zip(ATTRIBUTE_NAMES) {
            let what = format!("tensor {set}.{name}");
            read_tensor(path, &mut reader, &mut hash, &mut enc, tensor, &what)?;
        }
        ctx.submit(enc)?;
        loaded.push(tensors);
    }
    let densify_stats = if header.has_densify_stats {
        let mut enc = ctx.encoder("load_checkpoint stats");
        let stats = Tensor::uninit_rows(
            &mut enc,
            DType::F32,
            &[n, STATS_COLUMNS as usize],
            loaded[0].rows_per_page,
            MemoryCategory::OptimizerState,
            "densify/stats",
        )?;
        let what = "tensor densify.stats";
        read_tensor(path, &mut reader, &mut hash, &mut enc, &stats, what)?;
        ctx.submit(enc)?;
        Some(stats)
    } else {
        None
    };
    let digest = hash.0;
    let mut stored = [0u8; 8];
    read_hashed(
        path,
        &mut reader,
        &mut Fnv1a::new(),
        &mut stored,
        "the checksum",
    )?;
    if u64::from_le_bytes(stored) != digest {
        return Err(format_error(
            path,
            "its checksum does not match its contents; the file is corrupt, use an earlier checkpoint",
        ));
    }
    let mut sets = loaded.into_iter();
    let params = sets.next();
    let moments_read = match (moments, sets.next(), sets.next()) {
        (MomentStorage::F32, Some(m), Some(v)) => Some(Moments::F32 { m, v }),
        (MomentStorage::Packed, Some(mv), None) => Some(Moments::Packed(mv)),
        (MomentStorage::Bf16, Some(mv), None) => Some(Moments::Bf16(mv)),
        _ => None,
    };
    let (Some(params), Some(moments)) = (params, moments_read) else {
        return Err(format_error(path, "internal: tensor sets missing"));
    };
    let optimizer = GaussianOptimizer::from_moments(config, moments, header.adam_step)?;
    Ok(Checkpoint {
        params,
        optimizer,
        iteration: header.iteration,
        rng_state: header.rng_state,
        extra: header.extra,
        densify_stats,
    })
}
