//! Training checkpoints: parameters, both Adam moments, the iteration, the trainer's RNG state and
//! a caller-defined JSON value, restored bit for bit.
//!
//! # File format (version 3; versions 1 and 2 are read too)
//!
//! All integers little-endian.
//!
//! | bytes        | contents                                                              |
//! |--------------|-----------------------------------------------------------------------|
//! | 8            | magic `WGSPCKPT`                                                      |
//! | 4            | u32 format version (3)                                                |
//! | 4            | u32 length `H` of the JSON header                                     |
//! | `H`          | UTF-8 JSON header ([`CheckpointHeader`])                              |
//! | sum of sizes | the tensors listed in the header, in order, raw little-endian words  |
//! | 8            | u64 FNV-1a (64-bit) hash of every byte before it                      |
//!
//! The header records the format version, the Gaussian count, SH degree and coefficient count,
//! iteration, RNG state, Adam step count and hyper-parameters (as f64 values and their exact bit
//! patterns), how the moments are stored (`moments`: `f32`, `packed` (version 3 on) or `bf16`;
//! absent in version 1, whose moments are f32), the list of tensors (name, shape, dtype, byte
//! length) and the caller's `extra` JSON. The tensors are `params.<attribute>`, then either
//! `adam.m.<attribute>` and `adam.v.<attribute>` (f32) or `adam.mv.<attribute>` (u32 words
//! holding both moments of an element: [`crate::optim::packed`]'s layout for `packed`, bfloat16
//! m in the high half and v in the low half for `bf16`), for the attributes in
//! [`ATTRIBUTE_NAMES`] order, each `[N, ...]` row-major as on the GPU. A checkpoint resumes in
//! any storage: [`GaussianOptimizer::converted`] changes it (a packed state to f32 exactly, f32 to
//! a packed state by rounding to nearest).
//! Files are written atomically (a fresh temporary file beside `<path>`, then renamed).

use super::{io_error, write_atomically};
use crate::error::{Error, Result};
use crate::gpu::GpuContext;
use crate::optim::{GaussianOptimizer, MomentStorage};
use crate::splat::GaussianTensors;
use crate::splat::gaussians::ATTRIBUTE_NAMES;
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

pub use super::checkpoint_read::load_checkpoint;

pub(crate) const KIND: &str = "wgsplat checkpoint";
/// The first eight bytes of every checkpoint.
pub const MAGIC: [u8; 8] = *b"WGSPCKPT";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 3;

/// The oldest format version this build reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;
/// Largest JSON header accepted.
pub(crate) const MAX_HEADER_BYTES: u32 = 64 << 20;

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
    /// How the moments are stored (absent before version 2: f32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moments: Option<MomentStorage>,
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
    /// Element type: `f32`, or `u32` for packed moments.
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
pub(crate) const STATS_COLUMNS: u64 = 4;

/// The tensor sets of a checkpoint whose moments are stored as `moments`: name prefix and dtype.
pub(crate) fn tensor_sets(moments: MomentStorage) -> &'static [(&'static str, &'static str)] {
    match moments {
        MomentStorage::F32 => &[("params", "f32"), ("adam.m", "f32"), ("adam.v", "f32")],
        MomentStorage::Packed | MomentStorage::Bf16 => &[("params", "f32"), ("adam.mv", "u32")],
    }
}

pub(crate) fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: KIND.into(),
        message: message.into(),
    }
}

/// The tensor list a checkpoint of `n` Gaussians with `rest` SH coefficients past DC must hold.
pub(crate) fn expected_tensors(
    n: u64,
    rest: u64,
    stats: bool,
    moments: MomentStorage,
) -> Vec<TensorEntry> {
    let shapes: [Vec<u64>; 6] = [
        vec![n, 3],
        vec![n, 3],
        vec![n, 4],
        vec![n],
        vec![n, 3],
        vec![n, rest, 3],
    ];
    tensor_sets(moments)
        .iter()
        .flat_map(|&(set, dtype)| {
            ATTRIBUTE_NAMES
                .iter()
                .zip(shapes.clone())
                .map(move |(attr, shape)| TensorEntry {
                    name: format!("{set}.{attr}"),
                    bytes: shape.iter().product::<u64>() * 4,
                    shape,
                    dtype: dtype.into(),
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
pub(crate) struct Fnv1a(pub(crate) u64);

impl Fnv1a {
    pub(crate) fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
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
    let moments = optimizer.moments();
    let sets: Vec<&GaussianTensors> = std::iter::once(params).chain(moments.sets()).collect();
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
            moments.storage(),
        ),
        extra: extra.clone(),
        has_densify_stats: densify_stats.is_some(),
        moments: Some(moments.storage()),
    };
    let json = serde_json::to_vec(&header).map_err(|e| Error::InvalidArgument {
        op: "save_checkpoint",
        detail: format!("header JSON: {e}"),
    })?;
    let json_len = u32::try_from(json.len()).ok().filter(|&l| l <= MAX_HEADER_BYTES).ok_or_else(|| Error::InvalidArgument {
        op: "save_checkpoint",
        detail: format!("the JSON header is {} bytes, above the {MAX_HEADER_BYTES}-byte limit; make `extra` smaller", json.len()),
    })?;
    write_atomically(path, |w| {
        let mut hash = Fnv1a::new();
        let mut put = |w: &mut dyn Write, bytes: &[u8]| -> Result<()> {
            hash.update(bytes);
            w.write_all(bytes).map_err(|e| io_error(path, "write", e))
        };
        put(w, &MAGIC)?;
        put(w, &FORMAT_VERSION.to_le_bytes())?;
        put(w, &json_len.to_le_bytes())?;
        put(w, &json)?;
        for (set_index, set) in sets.into_iter().enumerate() {
            for (tensor, name) in set.attributes().into_iter().zip(ATTRIBUTE_NAMES) {
                let words = tensor.bitcast(crate::tensor::DType::U32).read::<u32>(ctx)?;
                if set_index == 0
                    && require_finite
                    && let Some(bad) = words
                        .iter()
                        .map(|&w| f32::from_bits(w))
                        .find(|v| !v.is_finite())
                {
                    return Err(Error::NonFinite {
                        what: format!("parameter {name} (not saved to {})", path.display()),
                        value: bad,
                    });
                }
                put(w, &le_bytes(&words))?;
            }
        }
        if let Some(stats) = densify_stats {
            put(
                w,
                &le_bytes(&stats.bitcast(crate::tensor::DType::U32).read::<u32>(ctx)?),
            )?;
        }
        let digest = hash.0.to_le_bytes();
        w.write_all(&digest).map_err(|e| io_error(path, "write", e))
    })
}

/// The little-endian bytes of `words`, as the file stores them.
fn le_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}
