//! `fill` and `arange` (shaders/fill.wgsl).

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::mirror;
use crate::tensor::{DType, Element, Tensor};

const FILE: &str = "fill.wgsl";

/// Uniform parameters of `fill.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct FillParams {
    n: u32,
    offset: u32,
    mode: u32,
    start_bits: u32,
    step_bits: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

pub(crate) fn mirrors() -> Vec<crate::gpu::mirror::Mirror> {
    vec![mirror!(
        FillParams,
        FILE,
        "FillParams",
        [n, offset, mode, start_bits, step_bits, _pad0, _pad1, _pad2]
    )]
}

fn mode(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => 0,
        DType::U32 => 1,
        DType::I32 => 2,
    }
}

/// Sets every element of `t` to `value`.
pub fn fill<T: Element>(enc: &mut Encoder, t: &Tensor, value: T) -> Result<()> {
    t.expect_dtype("fill", T::DTYPE)?;
    let bits: u32 = bytemuck::cast(value);
    let kernel = enc.ctx().kernel(FILE, "fill")?;
    for page in 0..t.num_pages() {
        let n = t.page_len(page);
        let params = FillParams {
            n: n as u32,
            start_bits: bits,
            ..Default::default()
        };
        let grid = super::grid(enc, n, kernel.threads())?;
        enc.dispatch(&kernel, &params, &[t.page_binding(page)], grid)?;
    }
    Ok(())
}

/// Writes `start + i * step` into element `i` of `t` (wrapping for integers; `f32(i)` for floats).
pub fn arange<T: Element>(enc: &mut Encoder, t: &Tensor, start: T, step: T) -> Result<()> {
    t.expect_dtype("arange", T::DTYPE)?;
    if t.len() > u64::from(u32::MAX) {
        return Err(Error::Overflow {
            what: "arange length".into(),
            needed: t.len(),
            max: u64::from(u32::MAX),
            hint: "arange indices are 32-bit; fill a shorter tensor".into(),
        });
    }
    let kernel = enc.ctx().kernel(FILE, "arange")?;
    for page in 0..t.num_pages() {
        let n = t.page_len(page);
        let params = FillParams {
            n: n as u32,
            offset: t.page_start(page) as u32,
            mode: mode(T::DTYPE),
            start_bits: bytemuck::cast(start),
            step_bits: bytemuck::cast(step),
            ..Default::default()
        };
        let grid = super::grid(enc, n, kernel.threads())?;
        enc.dispatch(&kernel, &params, &[t.page_binding(page)], grid)?;
    }
    Ok(())
}
