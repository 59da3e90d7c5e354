//! The CPU mirror of `shaders/shared/lens.wgsl` in `f64`: the same steps, the same names.
//! Matrices are row-major here (`m[row][column]`, rows the outputs).

use super::{CameraLens, LensKind};

/// A camera-space point's image through a lens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LensProjection {
    /// The pixel (top-left pixel's centre at 0.5, 0.5).
    pub pixel: [f64; 2],
    /// `∂pixel/∂p`, rows the pixel's x and y.
    pub jacobian: [[f64; 3]; 2],
    /// Depth: z, or for a fisheye the ray's length.
    pub depth: f64,
}

/// Below this `|(x, y)|² / z²`, [`atan_ratio`] sums its series (as the kernel does).
const SERIES_BELOW: f64 = 0.1;

/// `h(w, z) = atan2(√w, z) / √w` and its derivatives in `w`: `[h, h_w, h_ww]`.
pub(super) fn atan_ratio(w: f64, z: f64) -> [f64; 3] {
    if z > 0.0 && w < SERIES_BELOW * z * z {
        let v = w / (z * z);
        let (mut h, mut h_w, mut h_ww) = (0.0, 0.0, 0.0);
        for n in (0..=9i32).rev() {
            let c = if n % 2 == 1 { -1.0 } else { 1.0 } / f64::from(2 * n + 1);
            h = h * v + c;
            if n >= 1 {
                h_w = h_w * v + f64::from(n) * c;
            }
            if n >= 2 {
                h_ww = h_ww * v + f64::from(n * (n - 1)) * c;
            }
        }
        return [h / z, h_w / z.powi(3), h_ww / z.powi(5)];
    }
    let r = w.sqrt();
    let rho2 = w + z * z;
    let h = r.atan2(z) / r;
    let h_w = (z / rho2 - h) / (2.0 * w);
    let h_ww = (-z / (rho2 * rho2) - 3.0 * h_w) / (2.0 * w);
    [h, h_w, h_ww]
}

/// The rational model's denominator `1 + d1 s + d2 s² + d3 s³` (1 for the other kinds).
pub(super) fn rational_denominator(lens: &CameraLens, s: f64) -> f64 {
    let d = lens.rational.map(f64::from);
    1.0 + s * (d[0] + s * (d[1] + s * d[2]))
}

/// The radial factor `Q(s)` and its derivatives `[Q, Q', Q'']`.
pub(super) fn radial_factor(lens: &CameraLens, s: f64) -> [f64; 3] {
    if lens.kind == LensKind::Fov {
        let omega = f64::from(lens.omega);
        let t = 2.0 * (0.5 * omega).tan();
        let t2 = t * t;
        let [h, h_w, h_ww] = atan_ratio(t2 * s, 1.0);
        return [h, h_w * t2, h_ww * t2 * t2].map(|v| v * t / omega);
    }
    let k = lens.radial.map(f64::from);
    let d = lens.rational.map(f64::from);
    let n = 1.0 + s * (k[0] + s * (k[1] + s * (k[2] + s * k[3])));
    let n1 = k[0] + s * (2.0 * k[1] + s * (3.0 * k[2] + s * 4.0 * k[3]));
    let n2 = 2.0 * k[1] + s * (6.0 * k[2] + s * 12.0 * k[3]);
    let m = rational_denominator(lens, s);
    let m1 = d[0] + s * (2.0 * d[1] + s * 3.0 * d[2]);
    let m2 = 2.0 * d[1] + s * 6.0 * d[2];
    let q = n / m;
    let q1 = (n1 - q * m1) / m;
    let q2 = (n2 - 2.0 * q1 * m1 - q * m2) / m;
    [q, q1, q2]
}

/// `[p1, p2, s1, s2]`.
fn tangential(lens: &CameraLens) -> [f64; 4] {
    let [p1, p2] = lens.tangential.map(f64::from);
    let [s1, s2] = lens.prism.map(f64::from);
    [p1, p2, s1, s2]
}

/// `D(q)` and its Jacobian.
pub(super) fn distort(lens: &CameraLens, [a, b]: [f64; 2]) -> ([f64; 2], [[f64; 2]; 2]) {
    let s = a * a + b * b;
    let [q, q1, _] = radial_factor(lens, s);
    let [p1, p2, s1, s2] = tangential(lens);
    let value = [
        a * q + 2.0 * p1 * a * b + p2 * (s + 2.0 * a * a) + s1 * s,
        b * q + p1 * (s + 2.0 * b * b) + 2.0 * p2 * a * b + s2 * s,
    ];
    let jacobian = [
        [
            q + 2.0 * a * a * q1 + 2.0 * p1 * b + 6.0 * p2 * a + 2.0 * s1 * a,
            2.0 * a * b * q1 + 2.0 * p1 * a + 2.0 * p2 * b + 2.0 * s1 * b,
        ],
        [
            2.0 * a * b * q1 + 2.0 * p1 * a + 2.0 * p2 * b + 2.0 * s2 * a,
            q + 2.0 * b * b * q1 + 6.0 * p1 * b + 2.0 * p2 * a + 2.0 * s2 * b,
        ],
    ];
    (value, jacobian)
}

/// `Σᵢⱼ V[i][j] ∂²Dᵢ/∂qⱼ∂q`.
fn distort_hessian_dot(lens: &CameraLens, q: [f64; 2], v: [[f64; 2]; 2]) -> [f64; 2] {
    let [_, q1, q2] = radial_factor(lens, q[0] * q[0] + q[1] * q[1]);
    let trace = v[0][0] + v[1][1];
    let vq = [0, 1].map(|i| v[i][0] * q[0] + v[i][1] * q[1]);
    let vtq = [0, 1].map(|j| v[0][j] * q[0] + v[1][j] * q[1]);
    let quad = q[0] * vq[0] + q[1] * vq[1];
    let [p1, p2, s1, s2] = tangential(lens);
    let hx = [
        [6.0 * p2 + 2.0 * s1, 2.0 * p1],
        [2.0 * p1, 2.0 * p2 + 2.0 * s1],
    ];
    let hy = [
        [2.0 * p1 + 2.0 * s2, 2.0 * p2],
        [2.0 * p2, 6.0 * p1 + 2.0 * s2],
    ];
    [0, 1].map(|l| {
        2.0 * q1 * (trace * q[l] + vq[l] + vtq[l])
            + 4.0 * q2 * quad * q[l]
            + (0..2)
                .map(|j| v[0][j] * hx[j][l] + v[1][j] * hy[j][l])
                .sum::<f64>()
    })
}

/// `g(p)` and its Jacobian.
pub(super) fn normalise(lens: &CameraLens, [x, y, z]: [f64; 3]) -> ([f64; 2], [[f64; 3]; 2]) {
    if lens.kind == LensKind::Fisheye {
        let w = x * x + y * y;
        let [h, h_w, _] = atan_ratio(w, z);
        let h_z = -1.0 / (w + z * z);
        let jacobian = [
            [h + 2.0 * x * x * h_w, 2.0 * x * y * h_w, x * h_z],
            [2.0 * x * y * h_w, h + 2.0 * y * y * h_w, y * h_z],
        ];
        return ([x * h, y * h], jacobian);
    }
    let rz = 1.0 / z;
    (
        [x * rz, y * rz],
        [[rz, 0.0, -x * rz * rz], [0.0, rz, -y * rz * rz]],
    )
}

/// `Σⱼₖ W[j][k] ∂²gⱼ/∂pₖ∂p`.
fn normalise_hessian_dot(lens: &CameraLens, [x, y, z]: [f64; 3], w: [[f64; 3]; 2]) -> [f64; 3] {
    if lens.kind == LensKind::Fisheye {
        let xy = [x, y];
        let r2 = x * x + y * y;
        let [_, h_w, h_ww] = atan_ratio(r2, z);
        let rho2 = r2 + z * z;
        let (h_z, h_wz, h_zz) = (-1.0 / rho2, 1.0 / (rho2 * rho2), 2.0 * z / (rho2 * rho2));
        let trace = w[0][0] + w[1][1];
        let wq = [0, 1].map(|i| w[i][0] * x + w[i][1] * y);
        let wtq = [0, 1].map(|k| w[0][k] * x + w[1][k] * y);
        let quad = x * wq[0] + y * wq[1];
        let wz = [w[0][2], w[1][2]];
        let along = wz[0] * x + wz[1] * y;
        let out = [0, 1].map(|m| {
            2.0 * h_w * (trace * xy[m] + wq[m] + wtq[m])
                + 4.0 * h_ww * quad * xy[m]
                + h_z * wz[m]
                + 2.0 * h_wz * along * xy[m]
        });
        return [
            out[0],
            out[1],
            h_z * trace + 2.0 * h_wz * quad + h_zz * along,
        ];
    }
    let rz = 1.0 / z;
    let rz2 = rz * rz;
    [
        -w[0][2] * rz2,
        -w[1][2] * rz2,
        -(w[0][0] + w[1][1]) * rz2 + 2.0 * (x * w[0][2] + y * w[1][2]) * rz2 * rz,
    ]
}

/// See [`CameraLens::project`].
pub(super) fn project(
    lens: &CameraLens,
    focal: [f64; 2],
    principal: [f64; 2],
    p: [f64; 3],
) -> Option<LensProjection> {
    if lens.kind == LensKind::Pinhole {
        let [x, y, z] = p;
        if z <= 0.0 {
            return None;
        }
        let rz = 1.0 / z;
        return Some(LensProjection {
            pixel: [
                focal[0] * x * rz + principal[0],
                focal[1] * y * rz + principal[1],
            ],
            jacobian: [
                [focal[0] * rz, 0.0, -focal[0] * x * rz * rz],
                [0.0, focal[1] * rz, -focal[1] * y * rz * rz],
            ],
            depth: z,
        });
    }
    let fisheye = lens.kind == LensKind::Fisheye;
    let depth = if fisheye {
        (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
    } else {
        p[2]
    };
    if !fisheye && p[2] <= 0.0 {
        return None;
    }
    let (q, jg) = normalise(lens, p);
    if (q[0] * q[0] + q[1] * q[1]).sqrt() > f64::from(lens.limit) {
        return None;
    }
    let (d, jd) = distort(lens, q);
    let jacobian =
        [0, 1].map(|i| [0, 1, 2].map(|k| focal[i] * (jd[i][0] * jg[0][k] + jd[i][1] * jg[1][k])));
    Some(LensProjection {
        pixel: [0, 1].map(|i| focal[i] * d[i] + principal[i]),
        jacobian,
        depth,
    })
}

/// See [`CameraLens::vjp`].
pub(super) fn vjp(
    lens: &CameraLens,
    focal: [f64; 2],
    p: [f64; 3],
    v_pixel: [f64; 2],
    v_jacobian: [[f64; 3]; 2],
) -> [f64; 3] {
    let (q, jg) = normalise(lens, p);
    let (_, jd) = distort(lens, q);
    let jacobian: [[f64; 3]; 2] =
        [0, 1].map(|i| [0, 1, 2].map(|k| focal[i] * (jd[i][0] * jg[0][k] + jd[i][1] * jg[1][k])));
    let scaled = [0, 1].map(|i| v_jacobian[i].map(|v| v * focal[i]));
    // V_A = G Jgᵀ (2×2), V_B = JDᵀ G (2×3).
    let v_a = [0, 1].map(|i| [0, 1].map(|j| (0..3).map(|k| scaled[i][k] * jg[j][k]).sum::<f64>()));
    let v_b = [0, 1].map(|j| [0, 1, 2].map(|k| jd[0][j] * scaled[0][k] + jd[1][j] * scaled[1][k]));
    let t = distort_hessian_dot(lens, q, v_a);
    let through_normalisation = normalise_hessian_dot(lens, p, v_b);
    [0, 1, 2].map(|m| {
        jacobian[0][m] * v_pixel[0]
            + jacobian[1][m] * v_pixel[1]
            + jg[0][m] * t[0]
            + jg[1][m] * t[1]
            + through_normalisation[m]
    })
}
