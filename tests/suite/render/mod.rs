//! The rasterizer: the forward pass ([`forward`]) and the gradients ([`backward`]) against
//! gsplat's peer cases, the CPU reference and finite differences, in chunks of small pages
//! ([`paged`]), over tile runs longer than one dispatch may loop over ([`long_runs`]), and the CPU
//! reference itself against gsplat ([`peer_reference`]), every lens model ([`lens`]), the
//! composited normals ([`normals`]), the depth's and
//! normals' gradients ([`geometry_backward`]) and geometry renders sharing a colour render's sort,
//! with backward passes that add up ([`geometry_share`]).

mod backward;
mod forward;
mod geometry_backward;
mod geometry_share;
mod lens;
mod long_runs;
mod normals;
mod paged;
mod peer_reference;
mod pose;
