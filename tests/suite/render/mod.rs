//! The rasterizer: the forward pass ([`forward`]) and the gradients ([`backward`]) against
//! gsplat's peer cases, the CPU reference and finite differences, in chunks of small pages
//! ([`paged`]), over tile runs longer than one dispatch may loop over ([`long_runs`]), and the CPU
//! reference itself against gsplat ([`peer_reference`]), every lens model ([`lens`]), the
//! composited normals ([`normals`]) and the depth's and
//! normals' gradients ([`geometry_backward`]).

mod backward;
mod forward;
mod geometry_backward;
mod lens;
mod long_runs;
mod normals;
mod paged;
mod peer_reference;
mod pose;
