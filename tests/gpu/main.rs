//! Layer 1, as one test binary (each binary links the whole runtime, so CI builds fewer of them):
//! contexts, adapters, readback and typed dispatch ([`context`]), and every shader variant
//! through naga with the generated kernels checked against its reflection ([`shaders`]).

mod context;
mod shaders;
