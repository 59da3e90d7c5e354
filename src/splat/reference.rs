//! A straightforward CPU renderer: project every Gaussian (EWA, gsplat classic conventions), sort by
//! depth, and composite front to back at every pixel. It is the reference the GPU rasterizer is
//! tested against; it favours clarity over speed and uses no tiles.

use super::camera::Camera;
use super::sh;
use super::uniform::RasterMode;

/// Largest alpha of one splat (gsplat's cap).
pub const ALPHA_MAX: f32 = 0.999;
/// Splats with alpha below this are skipped.
pub const ALPHA_MIN: f32 = 1.0 / 255.0;
/// Compositing stops before transmittance falls below this.
pub const TRANSMITTANCE_MIN: f32 = 1e-4;
/// How far outside the image (a share of its size) a mean seen through a lens may project and
/// still be drawn (`LENS_GUARD_BAND` in `shaders/shared/lens.wgsl`).
pub const LENS_GUARD_BAND: f64 = 0.5;
/// Low-pass dilation added to the 2D covariance diagonal, in pixels².
pub const COV2D_DILATION: f32 = 0.3;

/// Gaussians on the CPU, in the pre-activation form the optimizer works on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuGaussians {
    /// World positions.
    pub means: Vec<[f32; 3]>,
    /// Log scales.
    pub log_scales: Vec<[f32; 3]>,
    /// Unnormalised quaternions (w, x, y, z).
    pub quats: Vec<[f32; 4]>,
    /// Logit opacities.
    pub opacity_logits: Vec<f32>,
    /// SH coefficients per Gaussian, index 0 = DC; 16 per Gaussian for degree 3.
    pub sh: Vec<[[f32; 3]; 16]>,
}

/// One projected Gaussian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projected {
    /// Index of the Gaussian.
    pub index: usize,
    /// Pixel-space mean.
    pub xy: [f32; 2],
    /// Inverse 2D covariance (a, b, c) of `[[a, b], [b, c]]`.
    pub conic: [f32; 3],
    /// Depth: camera-space z, or for a fisheye lens the ray's length.
    pub depth: f32,
    /// Activated opacity.
    pub opacity: f32,
    /// Colour from SH.
    pub color: [f32; 3],
    /// Camera-space normal: the shortest axis, turned to face the camera.
    pub normal: [f32; 3],
}

/// Rotation matrix (row-major) from an unnormalised quaternion (w, x, y, z).
pub fn quat_to_matrix(q: [f32; 4]) -> [[f32; 3]; 3] {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    let [w, x, y, z] = q.map(|v| v / n);
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Projects one Gaussian in the classic mode; `None` when culled (behind the near plane, past the
/// far plane, a degenerate covariance or non-finite values).
pub fn project(g: &CpuGaussians, i: usize, camera: &Camera, sh_degree: u32) -> Option<Projected> {
    project_in_mode(g, i, camera, sh_degree, RasterMode::Classic)
}

/// [`project`] in either raster mode: the antialiased mode scales the opacity by
/// `sqrt(max(0, det(Σ₂) / det(Σ₂ + 0.3 I)))`.
pub fn project_in_mode(
    g: &CpuGaussians,
    i: usize,
    camera: &Camera,
    sh_degree: u32,
    mode: RasterMode,
) -> Option<Projected> {
    let mean = g.means[i];
    let pc = camera.to_camera(mean);
    let (x, y, z) = (pc[0], pc[1], pc[2]);
    // Through a lens: its pixel, Jacobian and depth (z, or a fisheye's ray length).
    let through_lens = if camera.lens.is_pinhole() {
        None
    } else {
        let focal = [camera.fx, camera.fy].map(f64::from);
        let principal = [camera.cx, camera.cy].map(f64::from);
        let through = camera.lens.project(focal, principal, pc.map(f64::from))?;
        // The kernel's guard band (`LENS_GUARD_BAND` in shaders/shared/lens.wgsl).
        let size = [camera.width, camera.height].map(f64::from);
        let guarded = (0..2)
            .all(|k| (through.pixel[k] - 0.5 * size[k]).abs() <= (0.5 + LENS_GUARD_BAND) * size[k]);
        if !guarded {
            return None;
        }
        Some(through)
    };
    let depth = through_lens.map_or(z, |l| l.depth as f32);
    if !(depth >= camera.near && depth <= camera.far) {
        return None;
    }
    let rot = quat_to_matrix(g.quats[i]);
    let s = g.log_scales[i].map(f32::exp);
    // Σ = R S Sᵀ Rᵀ in world space, then into camera space.
    let m: [[f32; 3]; 3] = std::array::from_fn(|r| std::array::from_fn(|c| rot[r][c] * s[c]));
    let sigma: [[f32; 3]; 3] =
        std::array::from_fn(|r| std::array::from_fn(|c| (0..3).map(|k| m[r][k] * m[c][k]).sum()));
    let w = &camera.rotation;
    let ws: [[f32; 3]; 3] = std::array::from_fn(|r| {
        std::array::from_fn(|c| (0..3).map(|k| w[r][k] * sigma[k][c]).sum())
    });
    let sigma_cam: [[f32; 3]; 3] =
        std::array::from_fn(|r| std::array::from_fn(|c| (0..3).map(|k| ws[r][k] * w[c][k]).sum()));
    let (fx, fy) = (camera.fx, camera.fy);
    let tan_fovx = 0.5 * camera.width as f32 / fx;
    let tan_fovy = 0.5 * camera.height as f32 / fy;
    let lim_x_pos = (camera.width as f32 - camera.cx) / fx + 0.3 * tan_fovx;
    let lim_x_neg = camera.cx / fx + 0.3 * tan_fovx;
    let lim_y_pos = (camera.height as f32 - camera.cy) / fy + 0.3 * tan_fovy;
    let lim_y_neg = camera.cy / fy + 0.3 * tan_fovy;
    let rz = 1.0 / z;
    let tx = z * (x * rz).clamp(-lim_x_neg, lim_x_pos);
    let ty = z * (y * rz).clamp(-lim_y_neg, lim_y_pos);
    let j = match through_lens {
        Some(l) => l.jacobian.map(|row| row.map(|v| v as f32)),
        None => [
            [fx * rz, 0.0, -fx * tx * rz * rz],
            [0.0, fy * rz, -fy * ty * rz * rz],
        ],
    };
    let js: [[f32; 3]; 2] = std::array::from_fn(|r| {
        std::array::from_fn(|c| (0..3).map(|k| j[r][k] * sigma_cam[k][c]).sum())
    });
    let cov: [[f32; 2]; 2] =
        std::array::from_fn(|r| std::array::from_fn(|c| (0..3).map(|k| js[r][k] * j[c][k]).sum()));
    let (a, b, c) = (
        cov[0][0] + COV2D_DILATION,
        cov[0][1],
        cov[1][1] + COV2D_DILATION,
    );
    let det = a * c - b * b;
    // Also refuses a NaN determinant.
    if det.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let xy = match through_lens {
        Some(l) => l.pixel.map(|v| v as f32),
        None => [fx * x * rz + camera.cx, fy * y * rz + camera.cy],
    };
    let conic = [c / det, -b / det, a / det];
    let mut opacity = sigmoid(g.opacity_logits[i]);
    if mode == RasterMode::Antialiased {
        let det_undilated = cov[0][0] * cov[1][1] - b * b;
        opacity *= (det_undilated / det).max(0.0).sqrt();
    }
    let position = camera.position();
    let dir = [
        mean[0] - position[0],
        mean[1] - position[1],
        mean[2] - position[2],
    ];
    let color = sh::color(sh_degree, &g.sh[i], dir);
    let finite =
        xy.iter().chain(&conic).chain(&color).all(|v| v.is_finite()) && opacity.is_finite();
    finite.then_some(Projected {
        index: i,
        xy,
        conic,
        depth,
        opacity,
        color,
        normal: facing_normal(&rot, g.log_scales[i], camera, pc),
    })
}

/// The camera-space normal of a Gaussian with rotation `rot` (row-major) and `log_scales` whose
/// mean lies at camera-space `pc`: its shortest axis (the first of equal ones), turned to point
/// from the mean towards the camera.
pub fn facing_normal(
    rot: &[[f32; 3]; 3],
    log_scales: [f32; 3],
    camera: &Camera,
    pc: [f32; 3],
) -> [f32; 3] {
    let mut axis = 0;
    if log_scales[1] < log_scales[0] {
        axis = 1;
    }
    if log_scales[2] < log_scales[axis] {
        axis = 2;
    }
    let world = [rot[0][axis], rot[1][axis], rot[2][axis]];
    let w = &camera.rotation;
    let n: [f32; 3] = std::array::from_fn(|r| (0..3).map(|k| w[r][k] * world[k]).sum());
    let facing = n[0] * pc[0] + n[1] * pc[1] + n[2] * pc[2] > 0.0;
    if facing { n.map(|v| -v) } else { n }
}

/// An RGBA image, row-major, `[r, g, b, alpha]` per pixel.
#[derive(Clone, Debug)]
pub struct CpuImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixels.
    pub rgba: Vec<[f32; 4]>,
    /// Per pixel, the alpha-weighted depth and the median depth (the depth of the splat at which
    /// the accumulated opacity first reaches 0.5; 0 where it never does).
    pub depth: Vec<[f32; 2]>,
    /// Per pixel, the alpha-weighted camera-space normal.
    pub normals: Vec<[f32; 3]>,
}

/// Renders every pixel by compositing all projected Gaussians in depth order (classic mode).
pub fn render(g: &CpuGaussians, camera: &Camera, sh_degree: u32) -> CpuImage {
    render_in_mode(g, camera, sh_degree, RasterMode::Classic)
}

/// [`render`] in either raster mode.
pub fn render_in_mode(
    g: &CpuGaussians,
    camera: &Camera,
    sh_degree: u32,
    mode: RasterMode,
) -> CpuImage {
    let mut splats: Vec<Projected> = (0..g.means.len())
        .filter_map(|i| project_in_mode(g, i, camera, sh_degree, mode))
        .collect();
    splats.sort_by(|p, q| p.depth.total_cmp(&q.depth).then(p.index.cmp(&q.index)));
    let mut rgba = Vec::with_capacity((camera.width * camera.height) as usize);
    let mut depth = Vec::with_capacity(rgba.capacity());
    let mut normals = Vec::with_capacity(rgba.capacity());
    for py in 0..camera.height {
        for px in 0..camera.width {
            let (cx, cy) = (px as f32 + 0.5, py as f32 + 0.5);
            let mut t = 1.0f32;
            let mut out = [0f32; 3];
            let (mut weighted, mut median) = (0f32, 0f32);
            let mut normal = [0f32; 3];
            for s in &splats {
                let (dx, dy) = (s.xy[0] - cx, s.xy[1] - cy);
                let power =
                    -0.5 * (s.conic[0] * dx * dx + s.conic[2] * dy * dy) - s.conic[1] * dx * dy;
                if power > 0.0 {
                    continue;
                }
                let alpha = (s.opacity * power.exp()).min(ALPHA_MAX);
                if alpha < ALPHA_MIN {
                    continue;
                }
                let next_t = t * (1.0 - alpha);
                if next_t <= TRANSMITTANCE_MIN {
                    break;
                }
                for (o, c) in out.iter_mut().zip(s.color) {
                    *o += c * alpha * t;
                }
                weighted += s.depth * alpha * t;
                for (o, n) in normal.iter_mut().zip(s.normal) {
                    *o += n * alpha * t;
                }
                if t > 0.5 && next_t <= 0.5 {
                    median = s.depth;
                }
                t = next_t;
            }
            let bg = camera.background;
            rgba.push([
                out[0] + t * bg[0],
                out[1] + t * bg[1],
                out[2] + t * bg[2],
                1.0 - t,
            ]);
            depth.push([weighted, median]);
            normals.push(normal);
        }
    }
    CpuImage {
        width: camera.width,
        height: camera.height,
        rgba,
        depth,
        normals,
    }
}
