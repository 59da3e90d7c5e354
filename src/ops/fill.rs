//! `fill` and `arange` (shaders/fill.wgsl).

use crate::error::{Error, Result};
use crate::gpu::Encoder;
use crate::gpu::kernels;
use crate::tensor::{DType, Element, Tensor};

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
    let kernel = enc.ctx().typed::<kernels::fill::Fill>()?;
    // The kernel writes 32-bit patterns of any dtype: the pages are bound raw.
    enc.run_pages(&kernel, t.len(), t.page_elems(), |page| {
        (
            kernels::fill::FillParams {
                n: page.rows as u32,
                start_bits: bits,
                ..Default::default()
            },
            kernels::fill::FillBindings {
                out: t.page_raw(page.page),
            },
        )
    })
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
    let kernel = enc.ctx().typed::<kernels::fill::Arange>()?;
    enc.run_pages(&kernel, t.len(), t.page_elems(), |page| {
        (
            kernels::fill::FillParams {
                n: page.rows as u32,
                offset: page.first_row as u32,
                mode: mode(T::DTYPE),
                start_bits: bytemuck::cast(start),
                step_bits: bytemuck::cast(step),
                ..Default::default()
            },
            kernels::fill::ArangeBindings {
                out: t.page_raw(page.page),
            },
        )
    })
}
