//! The operations of [`super::elementwise`] and how each is encoded for the kernels: the op codes of
//! `shaders/shared/elementwise_ops.wgsl` and the scalar operands as bit patterns, per dtype.

use crate::error::{Error, Result};
// The `OP_*` codes, generated from `shaders/shared/elementwise_ops.wgsl`.
use crate::gpu::kernels::shared_elementwise_ops as code;
use crate::tensor::DType;

/// A binary element-wise operation `out = lhs op rhs`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryOp {
    /// `lhs + rhs` (f32, u32, i32; integers wrap).
    Add,
    /// `lhs - rhs` (f32, u32, i32; integers wrap).
    Sub,
    /// `lhs * rhs` (f32, u32, i32; integers wrap).
    Mul,
    /// `lhs / rhs` (f32 only).
    Div,
    /// Smaller operand (f32 propagates NaN, u32, i32).
    Min,
    /// Larger operand (f32 propagates NaN, u32, i32).
    Max,
    /// `lhs_scale * lhs + rhs_scale * rhs` (f32 only; `axpy`, moment updates).
    LinearCombination {
        /// Factor on `lhs`.
        lhs_scale: f32,
        /// Factor on `rhs`.
        rhs_scale: f32,
    },
    /// `lhs_scale * lhs + rhs_scale * rhs * rhs` (f32 only; second-moment updates).
    LinearCombinationSquared {
        /// Factor on `lhs`.
        lhs_scale: f32,
        /// Factor on `rhs * rhs`.
        rhs_scale: f32,
    },
}

/// A unary element-wise operation `out = op(x)`. All are f32 only except the integer scalar adds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// `x * s`.
    Scale(f32),
    /// `x + s`.
    AddScalar(f32),
    /// `x * scale + offset`.
    Affine {
        /// Factor.
        scale: f32,
        /// Added after scaling.
        offset: f32,
    },
    /// `min(max(x, lo), hi)`.
    Clamp {
        /// Lower bound.
        lo: f32,
        /// Upper bound (`>= lo`).
        hi: f32,
    },
    /// `|x|`.
    Abs,
    /// `-x`.
    Neg,
    /// `e^x`.
    Exp,
    /// Natural logarithm.
    Log,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `x * x`.
    Square,
    /// `1 / x`.
    Recip,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `x^p` (`x >= 0`).
    PowScalar(f32),
    /// `x + s` on u32, wrapping.
    AddScalarU32(u32),
    /// `x + s` on i32, wrapping.
    AddScalarI32(i32),
}

/// Kernel code and scalar bit patterns for one operation.
#[derive(Clone, Copy)]
pub(crate) struct Encoded {
    pub(crate) op: u32,
    pub(crate) s0: u32,
    pub(crate) s1: u32,
}

fn dtype_error(op: &'static str, expected: &str, got: DType) -> Error {
    Error::DType {
        op,
        expected: expected.to_owned(),
        got: format!("{got:?}"),
    }
}

pub(crate) fn encode_binary(op: BinaryOp, dtype: DType) -> Result<Encoded> {
    let plain = |op| Ok(Encoded { op, s0: 0, s1: 0 });
    match (op, dtype) {
        (BinaryOp::Add, DType::F32) => plain(code::OP_F32_ADD),
        (BinaryOp::Sub, DType::F32) => plain(code::OP_F32_SUB),
        (BinaryOp::Mul, DType::F32) => plain(code::OP_F32_MUL),
        (BinaryOp::Div, DType::F32) => plain(code::OP_F32_DIV),
        (BinaryOp::Min, DType::F32) => plain(code::OP_F32_MIN),
        (BinaryOp::Max, DType::F32) => plain(code::OP_F32_MAX),
        (
            BinaryOp::LinearCombination {
                lhs_scale,
                rhs_scale,
            },
            DType::F32,
        ) => Ok(Encoded {
            op: code::OP_F32_LINCOMB,
            s0: lhs_scale.to_bits(),
            s1: rhs_scale.to_bits(),
        }),
        (
            BinaryOp::LinearCombinationSquared {
                lhs_scale,
                rhs_scale,
            },
            DType::F32,
        ) => Ok(Encoded {
            op: code::OP_F32_LINCOMB_SQ,
            s0: lhs_scale.to_bits(),
            s1: rhs_scale.to_bits(),
        }),
        // Two's complement: wrapping add/sub/mul are the same bits for u32 and i32.
        (BinaryOp::Add, DType::U32 | DType::I32) => plain(code::OP_U32_ADD),
        (BinaryOp::Sub, DType::U32 | DType::I32) => plain(code::OP_U32_SUB),
        (BinaryOp::Mul, DType::U32 | DType::I32) => plain(code::OP_U32_MUL),
        (BinaryOp::Min, DType::U32) => plain(code::OP_U32_MIN),
        (BinaryOp::Max, DType::U32) => plain(code::OP_U32_MAX),
        (BinaryOp::Min, DType::I32) => plain(code::OP_I32_MIN),
        (BinaryOp::Max, DType::I32) => plain(code::OP_I32_MAX),
        (_, got) => Err(dtype_error(
            "elementwise binary",
            &format!("F32 for {op:?}"),
            got,
        )),
    }
}

pub(crate) fn encode_unary(op: UnaryOp, dtype: DType) -> Result<Encoded> {
    let float = |op, s0: f32, s1: f32| {
        (
            DType::F32,
            Encoded {
                op,
                s0: s0.to_bits(),
                s1: s1.to_bits(),
            },
        )
    };
    let (needed, encoded) = match op {
        UnaryOp::Scale(s) => float(code::OP_F32_SCALE, s, 0.0),
        UnaryOp::AddScalar(s) => float(code::OP_F32_ADD_SCALAR, s, 0.0),
        UnaryOp::Affine { scale, offset } => float(code::OP_F32_AFFINE, scale, offset),
        UnaryOp::Clamp { lo, hi } => float(code::OP_F32_CLAMP, lo, hi),
        UnaryOp::Abs => float(code::OP_F32_ABS, 0.0, 0.0),
        UnaryOp::Neg => float(code::OP_F32_NEG, 0.0, 0.0),
        UnaryOp::Exp => float(code::OP_F32_EXP, 0.0, 0.0),
        UnaryOp::Log => float(code::OP_F32_LOG, 0.0, 0.0),
        UnaryOp::Sqrt => float(code::OP_F32_SQRT, 0.0, 0.0),
        UnaryOp::Rsqrt => float(code::OP_F32_RSQRT, 0.0, 0.0),
        UnaryOp::Square => float(code::OP_F32_SQUARE, 0.0, 0.0),
        UnaryOp::Recip => float(code::OP_F32_RECIP, 0.0, 0.0),
        UnaryOp::Sigmoid => float(code::OP_F32_SIGMOID, 0.0, 0.0),
        UnaryOp::PowScalar(p) => float(code::OP_F32_POW_SCALAR, p, 0.0),
        UnaryOp::AddScalarU32(s) => (
            DType::U32,
            Encoded {
                op: code::OP_INT_ADD_SCALAR,
                s0: s,
                s1: 0,
            },
        ),
        UnaryOp::AddScalarI32(s) => (
            DType::I32,
            Encoded {
                op: code::OP_INT_ADD_SCALAR,
                s0: s as u32,
                s1: 0,
            },
        ),
    };
    if dtype != needed {
        return Err(dtype_error(
            "elementwise unary",
            &format!("{needed:?} for {op:?}"),
            dtype,
        ));
    }
    Ok(encoded)
}
