//! The rasterizer, as one test binary (each binary links the whole runtime, so CI builds fewer of
//! them): the forward pass ([`forward`]) and the gradients ([`backward`]) against gsplat's peer
//! cases, the CPU reference and finite differences, in chunks of small pages ([`paged`]), and the
//! CPU reference itself against gsplat ([`peer_reference`]).

#[path = "../common/mod.rs"]
mod common;

mod backward;
mod forward;
mod paged;
mod peer_reference;
mod pose;
