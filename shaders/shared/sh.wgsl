// Real spherical-harmonic basis up to degree 3, in the convention of 3DGS and gsplat
// (see src/splat/sh.rs for the CPU twin). `d` must be a unit vector.

struct ShBasis {
    b: array<f32, 16>,
}

fn sh_basis(degree: u32, d: vec3<f32>) -> ShBasis {
    var out: ShBasis;
    for (var k = 0u; k < 16u; k++) {
        out.b[k] = 0.0;
    }
    out.b[0] = 0.28209479177387814;
    if degree == 0u {
        return out;
    }
    let x = d.x;
    let y = d.y;
    let z = d.z;
    out.b[1] = -0.48860251190291987 * y;
    out.b[2] = 0.48860251190291987 * z;
    out.b[3] = -0.48860251190291987 * x;
    if degree == 1u {
        return out;
    }
    let z2 = z * z;
    let fc1 = x * x - y * y;
    let fs1 = 2.0 * x * y;
    let tmp0b = -1.092548430592079 * z;
    out.b[4] = 0.5462742152960395 * fs1;
    out.b[5] = tmp0b * y;
    out.b[6] = 0.9461746957575601 * z2 - 0.3153915652525201;
    out.b[7] = tmp0b * x;
    out.b[8] = 0.5462742152960395 * fc1;
    if degree == 2u {
        return out;
    }
    let tmp0c = -2.285228997322329 * z2 + 0.4570457994644658;
    let tmp1b = 1.445305721320277 * z;
    let fc2 = x * fc1 - y * fs1;
    let fs2 = x * fs1 + y * fc1;
    out.b[9] = -0.5900435899266435 * fs2;
    out.b[10] = tmp1b * fs1;
    out.b[11] = tmp0c * y;
    out.b[12] = z * (1.865881662950577 * z2 - 1.119528997770346);
    out.b[13] = tmp0c * x;
    out.b[14] = tmp1b * fc1;
    out.b[15] = -0.5900435899266435 * fc2;
    return out;
}
