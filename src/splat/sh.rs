//! Real spherical harmonics up to degree 3, in the basis and sign convention 3DGS and gsplat use.
//! Coefficients are ordered by index (0 = DC), each an RGB triple.

/// Number of coefficients for a degree.
pub const fn coefficient_count(degree: u32) -> usize {
    ((degree + 1) * (degree + 1)) as usize
}

/// The SH basis values for a unit direction, up to `degree` (unused entries are 0).
pub fn basis(degree: u32, dir: [f32; 3]) -> [f32; 16] {
    let mut b = [0f32; 16];
    b[0] = 0.282_094_8;
    if degree == 0 {
        return b;
    }
    let [x, y, z] = dir;
    b[1] = -0.488_602_52 * y;
    b[2] = 0.488_602_52 * z;
    b[3] = -0.488_602_52 * x;
    if degree == 1 {
        return b;
    }
    let (z2, fc1, fs1) = (z * z, x * x - y * y, 2.0 * x * y);
    let tmp0b = -1.092_548_4 * z;
    b[4] = 0.546_274_2 * fs1;
    b[5] = tmp0b * y;
    b[6] = 0.946_174_7 * z2 - 0.315_391_57;
    b[7] = tmp0b * x;
    b[8] = 0.546_274_2 * fc1;
    if degree == 2 {
        return b;
    }
    let tmp0c = -2.285_229 * z2 + 0.457_045_8;
    let tmp1b = 1.445_305_7 * z;
    let fc2 = x * fc1 - y * fs1;
    let fs2 = x * fs1 + y * fc1;
    b[9] = -0.590_043_6 * fs2;
    b[10] = tmp1b * fs1;
    b[11] = tmp0c * y;
    b[12] = z * (1.865_881_7 * z2 - 1.119_529);
    b[13] = tmp0c * x;
    b[14] = tmp1b * fc1;
    b[15] = -0.590_043_6 * fc2;
    b
}

/// Colour of one Gaussian: `max(SH(dir) + 0.5, 0)` with `coeffs[k]` the RGB of coefficient k.
/// `dir` need not be normalised.
pub fn color(degree: u32, coeffs: &[[f32; 3]], dir: [f32; 3]) -> [f32; 3] {
    let len = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
    let unit = if len > 0.0 {
        [dir[0] / len, dir[1] / len, dir[2] / len]
    } else {
        [0.0, 0.0, 1.0]
    };
    let b = basis(degree, unit);
    let mut rgb = [0f32; 3];
    for (k, c) in coeffs.iter().take(coefficient_count(degree)).enumerate() {
        for ch in 0..3 {
            rgb[ch] += b[k] * c[ch];
        }
    }
    rgb.map(|v| (v + 0.5).max(0.0))
}
