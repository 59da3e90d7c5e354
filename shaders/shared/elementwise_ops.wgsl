// Element-wise operations on 32-bit patterns, shared by elementwise.wgsl (out of place) and
// elementwise_inplace.wgsl (in place). Values travel as u32 bit patterns so one kernel serves
// f32, u32 and i32; the op code (a uniform) says how to interpret them. The OP_* codes are generated
// into Rust (`kernels::shared_elementwise_ops`) and mapped to ops in src/ops/elementwise_codes.rs.

struct ElementwiseParams {
    // Elements in this page.
    n: u32,
    // Operation code (OP_* below).
    op: u32,
    // In-place only: 1 computes `target = op(rhs, target)` instead of `op(target, rhs)`.
    swap: u32,
    // Bit patterns of the scalar operands (f32 or integer, by op).
    s0_bits: u32,
    s1_bits: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// f32 binary: x op y.
const OP_F32_ADD: u32 = 0u;
const OP_F32_SUB: u32 = 1u;
const OP_F32_MUL: u32 = 2u;
const OP_F32_DIV: u32 = 3u;
const OP_F32_MIN: u32 = 4u;
const OP_F32_MAX: u32 = 5u;
// s0 * x + s1 * y
const OP_F32_LINCOMB: u32 = 6u;
// s0 * x + s1 * y * y
const OP_F32_LINCOMB_SQ: u32 = 7u;
// f32 unary (y ignored).
const OP_F32_SCALE: u32 = 16u;
const OP_F32_ADD_SCALAR: u32 = 17u;
const OP_F32_AFFINE: u32 = 18u;
const OP_F32_CLAMP: u32 = 19u;
const OP_F32_ABS: u32 = 20u;
const OP_F32_NEG: u32 = 21u;
const OP_F32_EXP: u32 = 22u;
const OP_F32_LOG: u32 = 23u;
const OP_F32_SQRT: u32 = 24u;
const OP_F32_RSQRT: u32 = 25u;
const OP_F32_SQUARE: u32 = 26u;
const OP_F32_RECIP: u32 = 27u;
const OP_F32_SIGMOID: u32 = 28u;
const OP_F32_POW_SCALAR: u32 = 29u;
// Integer binary, wrapping.
const OP_U32_ADD: u32 = 40u;
const OP_U32_SUB: u32 = 41u;
const OP_U32_MUL: u32 = 42u;
const OP_U32_MIN: u32 = 43u;
const OP_U32_MAX: u32 = 44u;
const OP_I32_MIN: u32 = 45u;
const OP_I32_MAX: u32 = 46u;
// Integer unary: x + s0 (wrapping; the same bits for u32 and i32).
const OP_INT_ADD_SCALAR: u32 = 47u;

// NaN test on the bit pattern (the compiler may not fold it away as it may `x != x`).
fn bits_are_nan(bits: u32) -> bool {
    return (bits & 0x7fffffffu) > 0x7f800000u;
}

// min/max that return a NaN operand if there is one (WGSL leaves min/max of NaN unspecified).
fn f32_min_nan_propagating(x: u32, y: u32) -> u32 {
    if bits_are_nan(x) {
        return x;
    }
    if bits_are_nan(y) {
        return y;
    }
    return bitcast<u32>(min(bitcast<f32>(x), bitcast<f32>(y)));
}

fn f32_max_nan_propagating(x: u32, y: u32) -> u32 {
    if bits_are_nan(x) {
        return x;
    }
    if bits_are_nan(y) {
        return y;
    }
    return bitcast<u32>(max(bitcast<f32>(x), bitcast<f32>(y)));
}

fn elementwise_apply(op: u32, x_bits: u32, y_bits: u32, s0_bits: u32, s1_bits: u32) -> u32 {
    let x = bitcast<f32>(x_bits);
    let y = bitcast<f32>(y_bits);
    let s0 = bitcast<f32>(s0_bits);
    let s1 = bitcast<f32>(s1_bits);
    var r = 0.0;
    switch op {
        case OP_F32_ADD: { r = x + y; }
        case OP_F32_SUB: { r = x - y; }
        case OP_F32_MUL: { r = x * y; }
        case OP_F32_DIV: { r = x / y; }
        case OP_F32_MIN: { return f32_min_nan_propagating(x_bits, y_bits); }
        case OP_F32_MAX: { return f32_max_nan_propagating(x_bits, y_bits); }
        case OP_F32_LINCOMB: { r = s0 * x + s1 * y; }
        case OP_F32_LINCOMB_SQ: { r = s0 * x + s1 * (y * y); }
        case OP_F32_SCALE: { r = x * s0; }
        case OP_F32_ADD_SCALAR: { r = x + s0; }
        case OP_F32_AFFINE: { r = x * s0 + s1; }
        case OP_F32_CLAMP: { r = min(max(x, s0), s1); }
        case OP_F32_ABS: { r = abs(x); }
        case OP_F32_NEG: { r = -x; }
        case OP_F32_EXP: { r = exp(x); }
        case OP_F32_LOG: { r = log(x); }
        case OP_F32_SQRT: { r = sqrt(x); }
        case OP_F32_RSQRT: { r = inverseSqrt(x); }
        case OP_F32_SQUARE: { r = x * x; }
        case OP_F32_RECIP: { r = 1.0 / x; }
        case OP_F32_SIGMOID: { r = 1.0 / (1.0 + exp(-x)); }
        case OP_F32_POW_SCALAR: { r = pow(x, s0); }
        case OP_U32_ADD: { return x_bits + y_bits; }
        case OP_U32_SUB: { return x_bits - y_bits; }
        case OP_U32_MUL: { return x_bits * y_bits; }
        case OP_U32_MIN: { return min(x_bits, y_bits); }
        case OP_U32_MAX: { return max(x_bits, y_bits); }
        case OP_I32_MIN: { return bitcast<u32>(min(bitcast<i32>(x_bits), bitcast<i32>(y_bits))); }
        case OP_I32_MAX: { return bitcast<u32>(max(bitcast<i32>(x_bits), bitcast<i32>(y_bits))); }
        case OP_INT_ADD_SCALAR: { return x_bits + s0_bits; }
        default: { return x_bits; }
    }
    return bitcast<u32>(r);
}
