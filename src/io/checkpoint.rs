//! Training checkpoints: parameters, both Adam moments, the iteration, the trainer's RNG state and
//! a caller-defined JSON value, restored bit for bit.
//!
//! # File format (version 1)
//!
//! All integers little-endian.
//!
//! | bytes        | contents                                                              |
//! |--------------|-----------------------------------------------------------------------|
//! | 8            | magic `WGSPCKPT`                                                      |
//! | 4            | u32 format version (1)                                                |
//! | 4            | u32 length `H` of the JSON header                                     |
//! | `H`          | UTF-8 JSON header ([`CheckpointHeader`])                              |
//! | sum of sizes | the tensors listed in the header, in order, raw little-endian f32    |
//! | 8            | u64 FNV-1a (64-bit) hash of every byte before it                      |
//!
//! The header records the format version, the Gaussian count, SH degree and coefficient count,
//! iteration, RNG state, Adam step count and hyper-parameters (as f64 values and their exact bit
//! patterns), the list of tensors (name, shape, byte length) and the caller's `extra` JSON. The
//! tensors are `params.<attribute>`, then `adam.m.<attribute>`, then `adam.v.<attribute>` for
//! the attributes in [`ATTRIBUTE_NAMES`] order, each `[N, ...]` row-major as on the GPU.
//! Files are written atomically (`<path>.tmp`, then renamed).

use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::optim::{AdamConfig, GaussianOptimizer};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::ATTRIBUTE_NAMES;
use crate::splat::sh::coefficient_count;
use crate::tensor::{DType, Tensor};
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Read, Write};
use std::path::Path;

const KIND: &str = "wgsplat checkpoint";
/// The first eight bytes of every checkpoint.
pub const MAGIC: [u8; 8] = *b"WGSPCKPT";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Largest JSON header accepted.
const MAX_HEADER_BYTES: u32 = 64 << 20;

/// The JSON header of a checkpoint file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointHeader {
    /// Always [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Number of Gaussians.
    pub gaussians: u64,
    /// SH degree of the model.
    pub sh_degree: u32,
    /// SH coefficients past DC per Gaussian.
    pub sh_rest_count: u32,
    /// The trainer's iteration.
    pub iteration: u64,
    /// The trainer's RNG state.
    pub rng_state: u64,
    /// Adam's step count.
    pub adam_step: u64,
    /// Adam's hyper-parameters.
    pub adam: AdamEntry,
    /// The tensors that follow the header, in order.
    pub tensors: Vec<TensorEntry>,
    /// The caller's JSON value.
    pub extra: serde_json::Value,
    /// Whether the densification statistics (`densify.stats`, `[N, 4]`) follow the model.
    #[serde(default)]
    pub has_densify_stats: bool,
}

/// Adam's hyper-parameters in a header: readable values and the exact f64 bits that are used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamEntry {
    /// β1.
    pub beta1: f64,
    /// β2.
    pub beta2: f64,
    /// ε.
    pub eps: f64,
    /// `f64::to_bits` of β1, β2 and ε.
    pub bits: [u64; 3],
}

/// One tensor of a checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorEntry {
    /// `params.means`, `adam.m.quats`, ...
    pub name: String,
    /// Shape, row-major.
    pub shape: Vec<u64>,
    /// Element type (always `f32`).
    pub dtype: String,
    /// Bytes of data.
    pub bytes: u64,
}

/// What [`load_checkpoint`] restores.
pub struct Checkpoint {
    /// The parameters (category [`MemoryCategory::Parameters`]).
    pub params: GaussianTensors,
    /// The optimizer with its moments and step count.
    pub optimizer: GaussianOptimizer,
    /// The trainer's iteration.
    pub iteration: u64,
    /// The trainer's RNG state.
    pub rng_state: u64,
    /// The caller's JSON value.
    pub extra: serde_json::Value,
    /// The densification statistics `[N, 4]`, when they were saved.
    pub densify_stats: Option<Tensor>,
}

/// What a checkpoint holds besides the model and the optimizer.
#[derive(Clone, Copy, Debug)]
pub struct TrainerState<'a> {
    /// The trainer's iteration.
    pub iteration: u64,
    /// The trainer's RNG state.
    pub rng_state: u64,
    /// Densification statistics `[N, 4]` accumulated since the last densify step.
    pub densify_stats: Option<&'a Tensor>,
    /// The caller's JSON value.
    pub extra: &'a serde_json::Value,
    /// Refuse to write when a parameter is NaN or infinite (training does; a plain
    /// [`save_checkpoint`] stores any bit pattern faithfully).
    pub require_finite: bool,
}

/// Columns of the densification statistics.
const STATS_COLUMNS: u64 = 4;

/// The three tensor sets of a checkpoint, with their name prefixes.
const SETS: [&str; 3] = ["params", "adam.m", "adam.v"];

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: KIND.into(),
        message: message.into(),
    }
}

/// The tensor list a checkpoint of `n` Gaussians with `rest` SH coefficients past DC must hold.
fn expected_tensors(n: u64, rest: u64, stats: bool) -> Vec<TensorEntry> {
    let shapes: [Vec<u64>; 6] = [
        vec![n, 3],
        vec![n, 3],
        vec![n, 4],
        vec![n],
        vec![n, 3],
        vec![n, rest, 3],
    ];
    SETS.iter()
        .flat_map(|set| {
            ATTRIBUTE_NAMES
                .iter()
                .zip(shapes.clone())
                .map(move |(attr, shape)| TensorEntry {
                    name: format!("{set}.{attr}"),
                    bytes: shape.iter().product::<u64>() * 4,
                    shape,
                    dtype: "f32".into(),
                })
        })
        .chain(stats.then(|| TensorEntry {
            name: "densify.stats".into(),
            shape: vec![n, STATS_COLUMNS],
            dtype: "f32".into(),
            bytes: n * STATS_COLUMNS * 4,
        }))
        .collect()
}

/// 64-bit FNV-1a.
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Writes a checkpoint of `params`, `optimizer` (moments, step count, hyper-parameters),
/// `iteration`, `rng_state` and `extra` to `path`, atomically. It reads the tensors back from the
/// GPU, so submit any work that writes them first.
pub fn save_checkpoint(
    ctx: &GpuContext,
    path: &Path,
    params: &GaussianTensors,
    optimizer: &GaussianOptimizer,
    iteration: u64,
    rng_state: u64,
    extra: &serde_json::Value,
) -> Result<()> {
    save_trainer_checkpoint(
        ctx,
        path,
        params,
        optimizer,
        TrainerState {
            iteration,
            rng_state,
            densify_stats: None,
            extra,
            require_finite: false,
        },
    )
}

/// [`save_checkpoint`] with the trainer's densification statistics, so a resume in the middle of
/// a densification window continues exactly. With `require_finite`, a parameter that is NaN or
/// infinite is an [`Error::NonFinite`] and nothing is written: the previous checkpoint at `path`
/// stays intact.
pub fn save_trainer_checkpoint(
    ctx: &GpuContext,
    path: &Path,
    params: &GaussianTensors,
    optimizer: &GaussianOptimizer,
    state: TrainerState<'_>,
) -> Result<()> {
    let TrainerState {
        iteration,
        rng_state,
        densify_stats,
        extra,
        require_finite,
    } = state;
    if let Some(stats) = densify_stats
        && stats.len() != params.len() * STATS_COLUMNS
    {
        return Err(Error::Shape {
            op: "save_checkpoint",
            detail: format!(
                "densification statistics hold {} values for {} Gaussians; expected {} per Gaussian",
                stats.len(),
                params.len(),
                STATS_COLUMNS
            ),
        });
    }
    let sets = [params, optimizer.moment1(), optimizer.moment2()];
    if sets
        .iter()
        .any(|s| s.len() != params.len() || s.sh_rest_count() != params.sh_rest_count())
    {
        return Err(Error::Shape {
            op: "save_checkpoint",
            detail: format!(
                "the optimizer covers {} Gaussians but the parameters hold {}",
                optimizer.len(),
                params.len()
            ),
        });
    }
    let config = optimizer.config;
    let header = CheckpointHeader {
        format_version: FORMAT_VERSION,
        gaussians: params.len(),
        sh_degree: params.max_sh_degree(),
        sh_rest_count: params.sh_rest_count(),
        iteration,
        rng_state,
        adam_step: optimizer.step_count(),
        adam: AdamEntry {
            beta1: config.beta1,
            beta2: config.beta2,
            eps: config.eps,
            bits: [
                config.beta1.to_bits(),
                config.beta2.to_bits(),
                config.eps.to_bits(),
            ],
        },
        tensors: expected_tensors(
            params.len(),
            u64::from(params.sh_rest_count()),
            densify_stats.is_some(),
        ),
        extra: extra.clone(),
        has_densify_stats: densify_stats.is_some(),
    };
    let json = serde_json::to_vec(&header).map_err(|e| Error::InvalidArgument {
        op: "save_checkpoint",
        detail: format!("header JSON: {e}"),
    })?;
    let json_len = u32::try_from(json.len()).ok().filter(|&l| l <= MAX_HEADER_BYTES).ok_or_else(|| Error::InvalidArgument {
        op: "save_checkpoint",
        detail: format!("the JSON header is {} bytes, above the {MAX_HEADER_BYTES}-byte limit; make `extra` smaller", json.len()),
    })?;
    let temp = super::temp_path(path);
    write_atomically(path, |w| {
        let mut hash = Fnv1a::new();
        let mut put = |w: &mut dyn Write, bytes: &[u8]| -> Result<()> {
            hash.update(bytes);
            w.write_all(bytes).map_err(|e| io_error(&temp, "write", e))
        };
        put(w, &MAGIC)?;
        put(w, &FORMAT_VERSION.to_le_bytes())?;
        put(w, &json_len.to_le_bytes())?;
        put(w, &json)?;
        for (set_index, set) in sets.into_iter().enumerate() {
            for (tensor, name) in set.attributes().into_iter().zip(ATTRIBUTE_NAMES) {
                let values = tensor.read::<f32>(ctx)?;
                if set_index == 0
                    && require_finite
                    && let Some(bad) = values.iter().find(|v| !v.is_finite())
                {
                    return Err(Error::NonFinite {
                        what: format!("parameter {name} (not saved to {})", path.display()),
                        value: *bad,
                    });
                }
                put(w, &le_bytes(&values))?;
            }
        }
        if let Some(stats) = densify_stats {
            put(w, &le_bytes(&stats.read::<f32>(ctx)?))?;
        }
        let digest = hash.0.to_le_bytes();
        w.write_all(&digest)
            .map_err(|e| io_error(&temp, "write", e))
    })
}

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

/// The little-endian bytes of `values`, as the file stores them.
fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Reads the f32 values of `tensor` (little endian, hashed) and records their upload.
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
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    tensor.write(enc, &values)
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
    if version != FORMAT_VERSION {
        return Err(format_error(
            path,
            format!(
                "format version {version}; this build reads version {FORMAT_VERSION} (use a matching wgsplat)"
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
    if header.gaussians > u64::from(u32::MAX)
        || header.tensors != expected_tensors(header.gaussians, rest, header.has_densify_stats)
    {
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
    };
    let n = header.gaussians as usize;
    let mut loaded = Vec::with_capacity(SETS.len());
    for (set, category) in SETS.iter().zip([
        MemoryCategory::Parameters,
        MemoryCategory::OptimizerState,
        MemoryCategory::OptimizerState,
    ]) {
        let mut enc = ctx.encoder("load_checkpoint");
        let tensors = GaussianTensors::uninit(&mut enc, n, header.sh_degree, category, set)?;
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
    let (Some(params), Some(moment1), Some(moment2)) = (sets.next(), sets.next(), sets.next())
    else {
        return Err(format_error(path, "internal: tensor sets missing"));
    };
    let optimizer = GaussianOptimizer::from_parts(config, moment1, moment2, header.adam_step)?;
    Ok(Checkpoint {
        params,
        optimizer,
        iteration: header.iteration,
        rng_state: header.rng_state,
        extra: header.extra,
        densify_stats,
    })
}
