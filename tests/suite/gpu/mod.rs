//! Layer 1: contexts, adapters, readback and typed dispatch ([`context`]), and every shader variant
//! through naga with the generated kernels checked against its reflection ([`shaders`]).

mod context;
mod shaders;
