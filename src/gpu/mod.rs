//! Layer 1, the GPU runtime: context, allocator, encoder, shaders, kernels, dispatch and readback.

pub mod allocator;
pub mod context;
pub mod dispatch;
pub mod encoder;
pub mod entry_needs;
pub mod host;
pub mod info;
pub mod kernel;
pub mod kernels;
pub mod memory;
pub mod options;
pub mod pool;
pub mod readback;
pub mod shader;
pub mod wgsl_source;

pub use allocator::{Allocator, BufferKind, GpuBuffer};
pub use context::{ContextOptions, GpuContext, POISON_WORD};
pub use dispatch::WorkgroupGrid;
pub use encoder::{Encoder, Launch};
pub use host::{ProcessMemory, WgpuObjectCounts};
pub use info::ContextInfo;
pub use kernel::Kernel;
pub use memory::{MemoryCategory, MemoryReport};
pub use readback::Readback;
pub use shader::{ShaderFlag, Variant};
