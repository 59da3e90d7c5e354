//! The library's error type. Every failure a user can reach is one of these variants, and each
//! message says what went wrong, which value or file caused it, and what to do about it.

use crate::gpu::memory::MemoryReport;

/// Result alias used throughout the library.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in wgsplat's library code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No adapter on Vulkan, Metal or DX12 matched the request.
    #[error(
        "no usable GPU adapter found{filter}. Adapters seen: [{found}]. {hint}",
        filter = match filter { Some(f) => format!(" matching WGSPLAT_ADAPTER={f:?}"), None => String::new() },
        found = found.join("; ")
    )]
    NoAdapter {
        /// The `WGSPLAT_ADAPTER` filter in force, if any.
        filter: Option<String>,
        /// Human-readable descriptions of every adapter that was enumerated.
        found: Vec<String>,
        /// What to do next (for example how to install a software Vulkan driver).
        hint: String,
    },
    /// An environment variable or option had a value we cannot use.
    #[error("invalid setting {name}={value:?}: {expected}")]
    InvalidSetting {
        /// Variable or option name.
        name: String,
        /// The value given.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// The device could not be created with the features and limits we asked for.
    #[error("could not open the GPU device on adapter {adapter:?}: {message}")]
    RequestDevice {
        /// Adapter name.
        adapter: String,
        /// The driver's message.
        message: String,
    },
    /// The GPU ran out of memory, even after the buffer pool was trimmed.
    #[error(
        "out of GPU memory: could not allocate {requested} bytes for {label:?} (adapter max buffer size {max_buffer_size} bytes). \
         Reduce the model size or resolution, or set a memory budget. Live memory:\n{report}"
    )]
    OutOfMemory {
        /// Bytes requested by the failing allocation.
        requested: u64,
        /// Label of the failing allocation.
        label: String,
        /// The adapter's maximum buffer size.
        max_buffer_size: u64,
        /// The allocator's report at the time of failure.
        report: Box<MemoryReport>,
    },
    /// A single binding would exceed what the adapter allows for one storage binding.
    #[error(
        "buffer {label:?} needs {bytes} bytes in one binding, above the adapter limit of {limit} bytes; \
         use a paged tensor (wgsplat splits storage automatically) or a smaller size"
    )]
    BindingTooLarge {
        /// Label of the buffer.
        label: String,
        /// Bytes requested.
        bytes: u64,
        /// The adapter's limit.
        limit: u64,
    },
    /// A WGSL file or one of its variants failed to parse or validate.
    #[error("shader error in {file}:{line}:{column} (variant {variant}): {message}")]
    Shader {
        /// The shader file (relative to `shaders/`) where the error is located.
        file: String,
        /// 1-based line in that file (0 if unknown).
        line: u32,
        /// 1-based column (0 if unknown).
        column: u32,
        /// The variant being compiled, e.g. `portable` or `subgroups`.
        variant: String,
        /// naga's message.
        message: String,
    },
    /// The shader preprocessor found a malformed directive or a missing import.
    #[error("shader preprocessing failed in {file}:{line}: {message}")]
    ShaderDirective {
        /// File with the bad directive.
        file: String,
        /// 1-based line.
        line: u32,
        /// What is wrong.
        message: String,
    },
    /// The GPU device was lost (driver reset, removal or crash).
    #[error(
        "the GPU device was lost: {0}. Restart the program; if it repeats, update the GPU driver"
    )]
    DeviceLost(String),
    /// wgpu reported a validation error for a command we recorded (a bug in wgsplat).
    #[error(
        "GPU validation error in {context}: {message}. This is a wgsplat bug; please report it"
    )]
    Validation {
        /// What we were doing.
        context: String,
        /// wgpu's message.
        message: String,
    },
    /// Mapping a buffer for readback failed.
    #[error("reading {label:?} back from the GPU failed: {message}")]
    Readback {
        /// Label of the buffer.
        label: String,
        /// Why.
        message: String,
    },
    /// Tensor shapes or lengths do not fit the operation.
    #[error("shape mismatch in {op}: {detail}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// What did not match.
        detail: String,
    },
    /// A tensor had the wrong element type for the operation.
    #[error("dtype mismatch in {op}: expected {expected}, got {got}")]
    DType {
        /// The operation.
        op: &'static str,
        /// Expected element type.
        expected: String,
        /// Actual element type.
        got: String,
    },
    /// A value does not fit in the range a kernel or buffer supports.
    #[error("{what} needs {needed}, above the supported maximum of {max}: {hint}")]
    Overflow {
        /// What overflowed.
        what: String,
        /// The required amount.
        needed: u64,
        /// The maximum.
        max: u64,
        /// What to do about it.
        hint: String,
    },
    /// Reading or writing a file failed at the operating-system level.
    #[error("could not {action} {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What we were doing, e.g. `read` or `rename the temporary file onto`.
        action: String,
        /// The system's message.
        message: String,
    },
    /// A file's contents are not in the expected format (corrupt, truncated, or another kind of file).
    #[error("{path} is not a usable {kind}: {message}")]
    Format {
        /// The file.
        path: String,
        /// The format expected, e.g. `3DGS PLY file` or `wgsplat checkpoint`.
        kind: String,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// An argument was outside the range the operation accepts.
    #[error("invalid argument to {op}: {detail}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A dataset file (camera model, pose list, image, point cloud) is missing, unreadable or inconsistent.
    #[error("dataset error in {}: {message}", path.display())]
    Dataset {
        /// The file or folder at fault.
        path: std::path::PathBuf,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// A model holds a value its output format cannot store, so the format's readers (ours
    /// included) would refuse the file; nothing was written.
    #[error(
        "cannot write {path} as {format}: Gaussian {index} has the {attribute} {value}, which {format} cannot store \
         (its readers refuse the file). Nothing was written; remove or repair that Gaussian, or write a PLY, which keeps any value"
    )]
    UnstorableValue {
        /// The output file.
        path: String,
        /// The output format, e.g. `.splat`.
        format: String,
        /// The Gaussian's index in the model.
        index: usize,
        /// Which attribute, e.g. `position` or `log scale`.
        attribute: String,
        /// The attribute's value, as text.
        value: String,
    },
    /// The host (CPU) memory for a large buffer could not be reserved: the machine lacks the
    /// memory, the file is not damaged.
    #[error(
        "out of host memory: {what} needs {bytes} bytes ({gib:.1} GiB), which could not be allocated. \
         The file is not damaged; free memory or use a machine with more RAM",
        gib = *bytes as f64 / f64::from(1u32 << 30)
    )]
    HostOutOfMemory {
        /// What the memory was for, naming the file.
        what: String,
        /// Bytes the allocation needed.
        bytes: u64,
    },
    /// Training diverged: a value that must be finite was NaN or infinite.
    #[error(
        "{what} became {value}: training diverged. The run stopped and no output written before this point was replaced; lower the learning rates (--config), check the images, or --resume from the last checkpoint"
    )]
    NonFinite {
        /// What went non-finite.
        what: String,
        /// The value seen.
        value: f32,
    },
    /// An external program wgsplat drives (COLMAP, GLOMAP, ffmpeg) is missing, or it failed.
    #[error("{tool}: {message}")]
    ExternalTool {
        /// The program, e.g. `colmap`.
        tool: String,
        /// What went wrong and what to do about it (how to install it, where its log is).
        message: String,
    },
    /// Structure from motion ran, but its inputs or its result cannot be used as they are.
    #[error("structure from motion ({stage}): {message}")]
    Sfm {
        /// The stage, e.g. `inputs` or `mapper`.
        stage: String,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// A block of a scale-out plan is missing, unfinished or damaged.
    #[error("block {block} of the plan ({}): {message}", path.display())]
    PlanBlock {
        /// The block's index.
        block: usize,
        /// The block's folder (or file at fault).
        path: std::path::PathBuf,
        /// What is wrong and what to do about it.
        message: String,
    },
}
