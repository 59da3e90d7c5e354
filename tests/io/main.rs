//! Files in and out, as one test binary (each binary links the whole runtime, so CI builds fewer
//! of them): camera lens models against OpenCV ([`lens`]), real captures end to end
//! ([`real_captures`]), and splat model formats against PlayCanvas's splat-transform
//! ([`formats`]).

mod formats;
mod lens;
mod real_captures;
