//! The depth–normal consistency and depth distortion regularisers on one view
//! (`loss::geometry`): the kernel against its CPU twin through a pinhole and a fisheye on both
//! kernel paths, the twin against central differences of its own loss, the two zeros the
//! definitions promise (a plane rendered with its own normal, and a pixel whose depths agree),
//! and the pixel rays against the lenses' projection.

use wgsplat::loss::geometry::{GeometryLossOptions, record_geometry_loss};
use wgsplat::loss::geometry_reference::{GeometryImages, reference_geometry_loss};
use wgsplat::splat::{Camera, CameraLens};
use wgsplat::tensor::Tensor;
use wgsplat::testing::{TestRng, both_paths, compare_close};
use wgsplat::train::geometry::pixel_rays;
use wgsplat::{GpuContext, MemoryCategory};

const W: u32 = 24;
const H: u32 = 18;

fn camera(fisheye: bool) -> Camera {
    let mut cam = Camera::facing_origin(W, H, 4.0, [0.0; 3]);
    if fisheye {
        cam.lens = CameraLens::fisheye([0.05, -0.01, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    }
    cam
}

fn options() -> GeometryLossOptions {
    GeometryLossOptions {
        normal_weight: 0.7,
        distortion_weight: 3.0,
        scale: 2.5,
        min_alpha: 0.1,
    }
}

/// Moments of a smooth, bumpy surface seen with varying opacity (some pixels below the least
/// opacity with a depth) and some spread of depths per pixel, and random alpha-weighted normals.
fn images(seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = TestRng::new(seed);
    let (w, h) = (W as usize, H as usize);
    let mut moments = vec![0.0; w * h * 4];
    let mut normals = vec![0.0; w * h * 4];
    for i in 0..w * h {
        let (x, y) = ((i % w) as f64, (i / w) as f64);
        let depth = 4.0 + 0.3 * (0.4 * x).sin() + 0.2 * (0.3 * y).cos() + 0.05 * x;
        let a = if rng.range(0.0, 1.0) < 0.1 {
            0.03
        } else {
            f64::from(rng.range(0.3, 1.0))
        };
        let spread = f64::from(rng.range(0.0, 0.2));
        moments[4 * i..4 * i + 4].copy_from_slice(&[a * depth, a * (depth * depth + spread), a, a]);
        let n = [
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, -0.2),
        ]
        .map(f64::from);
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        for k in 0..3 {
            normals[4 * i + k] = a * n[k] / len;
        }
        normals[4 * i + 3] = a;
    }
    (moments, normals)
}

fn rays(cam: &Camera) -> Vec<f64> {
    pixel_rays(cam).into_iter().map(f64::from).collect()
}

fn upload(ctx: &GpuContext, v: &[f64], channels: usize) -> Tensor {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    let mut enc = ctx.encoder("upload");
    let shape = [H as usize, W as usize, channels];
    let t = Tensor::from_slice(&mut enc, &v, &shape, MemoryCategory::Other, "image").unwrap();
    ctx.submit(enc).unwrap();
    t
}

/// The kernel's output on the three images.
fn gpu_loss(
    ctx: &GpuContext,
    moments: &[f64],
    normals: &[f64],
    rays: &[f64],
) -> wgsplat::loss::geometry::GeometryLoss {
    let (m, n, r) = (
        upload(ctx, moments, 4),
        upload(ctx, normals, 4),
        upload(ctx, rays, 4),
    );
    let mut enc = ctx.encoder("geometry loss");
    let got = record_geometry_loss(&mut enc, &m, &n, &r, &options()).unwrap();
    ctx.submit(enc).unwrap();
    got
}

/// The view's images for the CPU twin.
fn cpu_images<'a>(
    moments: &'a [f64],
    normals: &'a [f64],
    rays: &'a [f64],
    weights: Option<&'a [f64]>,
) -> GeometryImages<'a> {
    GeometryImages {
        height: H as usize,
        width: W as usize,
        moments,
        normals,
        rays,
        weights,
    }
}

#[test]
fn the_kernel_matches_its_cpu_twin_through_a_pinhole_and_a_fisheye() {
    for fisheye in [false, true] {
        let cam = camera(fisheye);
        let (moments, normals) = images(41 + u64::from(fisheye));
        // The twin sees the values the kernel reads: f32.
        let round = |v: &[f64]| v.iter().map(|&x| f64::from(x as f32)).collect::<Vec<_>>();
        let (moments, normals, rays) = (round(&moments), round(&normals), rays(&cam));
        let images = cpu_images(&moments, &normals, &rays, None);
        let want = reference_geometry_loss(&images, &options());
        assert!(
            want.normal > 0.0 && want.distortion > 0.0,
            "both terms must be active"
        );
        for ctx in both_paths() {
            let what = format!("fisheye {fisheye} ({})", ctx.info().kernel_path());
            let got = gpu_loss(ctx, &moments, &normals, &rays);
            let as_f32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
            let read = |t: &Tensor| t.read::<f32>(ctx).unwrap();
            let scale = |v: &[f64]| v.iter().fold(0f64, |m, x| m.max(x.abs())) as f32;
            compare_close(
                &format!("v_moments, {what}"),
                &read(&got.v_moments),
                &as_f32(&want.v_moments),
                1e-4 * scale(&want.v_moments),
                1e-3,
            )
            .unwrap();
            compare_close(
                &format!("v_normals, {what}"),
                &read(&got.v_normals),
                &as_f32(&want.v_normals),
                1e-5 * scale(&want.v_normals),
                1e-4,
            )
            .unwrap();
            let losses = read(&got.losses);
            let sum = |k: usize| losses.chunks_exact(2).map(|l| f64::from(l[k])).sum::<f64>();
            let sums = [sum(0) as f32, sum(1) as f32];
            compare_close(
                &format!("the two terms, {what}"),
                &sums,
                &[want.normal as f32, want.distortion as f32],
                1e-6,
                1e-3,
            )
            .unwrap();
        }
    }
}

#[test]
fn the_cpu_twin_matches_central_differences() {
    let cam = camera(true);
    let (moments, normals) = images(43);
    let rays = rays(&cam);
    let weights: Vec<f64> = moments.chunks_exact(4).map(|m| m[2]).collect();
    let loss = |moments: &[f64], normals: &[f64]| {
        let images = cpu_images(moments, normals, &rays, Some(&weights));
        let l = reference_geometry_loss(&images, &options());
        l.normal + l.distortion
    };
    let images = cpu_images(&moments, &normals, &rays, Some(&weights));
    let analytic = reference_geometry_loss(&images, &options());
    let h = 1e-6;
    let mut numeric_m = vec![0.0; moments.len()];
    for (i, slot) in numeric_m.iter_mut().enumerate() {
        if i % 4 == 3 {
            continue; // the render's alpha channel is not an input
        }
        let (mut plus, mut minus) = (moments.clone(), moments.clone());
        plus[i] += h;
        minus[i] -= h;
        *slot = (loss(&plus, &normals) - loss(&minus, &normals)) / (2.0 * h);
    }
    let mut numeric_n = vec![0.0; normals.len()];
    for (i, slot) in numeric_n.iter_mut().enumerate() {
        if i % 4 == 3 {
            continue;
        }
        let (mut plus, mut minus) = (normals.clone(), normals.clone());
        plus[i] += h;
        minus[i] -= h;
        *slot = (loss(&moments, &plus) - loss(&moments, &minus)) / (2.0 * h);
    }
    let as_f32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let scale = |v: &[f64]| v.iter().fold(0f64, |m, x| m.max(x.abs())) as f32;
    assert!(scale(&analytic.v_normals) > 0.0 && scale(&numeric_m) > 0.0);
    compare_close(
        "the moments' gradient",
        &as_f32(&analytic.v_moments),
        &as_f32(&numeric_m),
        1e-5 * scale(&numeric_m),
        1e-4,
    )
    .unwrap();
    compare_close(
        "the normals' gradient",
        &as_f32(&analytic.v_normals),
        &as_f32(&numeric_n),
        1e-5 * scale(&numeric_n),
        1e-4,
    )
    .unwrap();
}

#[test]
fn a_plane_with_its_own_normals_and_agreeing_depths_costs_nothing() {
    for fisheye in [false, true] {
        let cam = camera(fisheye);
        let rays = rays(&cam);
        // The plane n·p = 4 with n = (0.2, −0.3, −1)/|…| seen from the camera: each pixel's
        // depth is where its ray meets it (z, or the ray's length for the fisheye).
        let n = [0.2f64, -0.3, -1.0];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        let n = n.map(|v| v / len);
        let (w, h) = (W as usize, H as usize);
        let mut moments = vec![0.0; w * h * 4];
        let mut normals = vec![0.0; w * h * 4];
        for i in 0..w * h {
            let r = &rays[4 * i..4 * i + 3];
            let depth = -4.0 / (n[0] * r[0] + n[1] * r[1] + n[2] * r[2]);
            let a = 0.9;
            moments[4 * i..4 * i + 4].copy_from_slice(&[a * depth, a * depth * depth, a, a]);
            for k in 0..3 {
                normals[4 * i + k] = a * n[k];
            }
        }
        let images = cpu_images(&moments, &normals, &rays, None);
        let cpu = reference_geometry_loss(&images, &options());
        // 1 − N·n = 1 − a per pixel: the weight times it is all that is left.
        let interior = ((w - 2) * (h - 2)) as f64;
        let floor = f64::from(options().normal_weight) * interior * 0.9 * 0.1 / (w * h) as f64;
        assert!(
            (cpu.normal - floor).abs() < 1e-9,
            "fisheye {fisheye}: {} against {floor}",
            cpu.normal
        );
        assert!(
            cpu.distortion.abs() < 1e-9,
            "fisheye {fisheye}: {}",
            cpu.distortion
        );
        for ctx in both_paths() {
            let got = gpu_loss(ctx, &moments, &normals, &rays);
            let losses = got.losses.read::<f32>(ctx).unwrap();
            let normal: f64 = losses.chunks_exact(2).map(|l| f64::from(l[0])).sum();
            assert!(
                (normal - floor).abs() < 1e-4 * floor,
                "fisheye {fisheye}: {normal} against {floor}"
            );
        }
    }
}

#[test]
fn bad_weights_and_shapes_are_refused() {
    let ctx = both_paths()[0];
    let (moments, normals) = images(44);
    let rays = rays(&camera(false));
    let (m, n, r) = (
        upload(ctx, &moments, 4),
        upload(ctx, &normals, 4),
        upload(ctx, &rays, 4),
    );
    let short = upload(ctx, &moments[..(W * H * 2) as usize], 2);
    let mut enc = ctx.encoder("refusals");
    for (bad, needle) in [
        (
            GeometryLossOptions {
                normal_weight: f32::NAN,
                ..options()
            },
            "weights",
        ),
        (
            GeometryLossOptions {
                scale: 0.0,
                ..options()
            },
            "scale",
        ),
        (
            GeometryLossOptions {
                min_alpha: 0.0,
                ..options()
            },
            "opacity",
        ),
    ] {
        let err = record_geometry_loss(&mut enc, &m, &n, &r, &bad)
            .err()
            .expect("refused");
        assert!(err.to_string().contains(needle), "{err}");
    }
    let err = record_geometry_loss(&mut enc, &m, &short, &r, &options())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("[H, W, 4]"), "{err}");
}

#[test]
fn pixel_rays_project_back_to_their_pixels_at_the_rasterizers_depth() {
    let mut perspective = camera(false);
    perspective.lens = CameraLens::perspective([0.08, -0.02, 0.0, 0.0, 0.0, 0.0], [0.001, 0.0]);
    for cam in [camera(false), perspective, camera(true)] {
        let rays = pixel_rays(&cam);
        let (focal, principal) = (
            [f64::from(cam.fx), f64::from(cam.fy)],
            [f64::from(cam.cx), f64::from(cam.cy)],
        );
        for (i, ray) in rays.chunks_exact(4).enumerate() {
            assert_eq!(
                ray[3], 1.0,
                "{:?}: pixel {i} must have a ray",
                cam.lens.kind
            );
            let depth = 3.0;
            let point = [0, 1, 2].map(|k| depth * f64::from(ray[k]));
            let seen = cam.lens.project(focal, principal, point).expect("in view");
            let pixel = [(i % W as usize) as f64 + 0.5, (i / W as usize) as f64 + 0.5];
            for (got, want) in seen.pixel.iter().zip(pixel) {
                assert!((got - want).abs() < 1e-3, "{:?}: pixel {i}", cam.lens.kind);
            }
            assert!(
                (seen.depth - depth).abs() < 1e-5,
                "{:?}: depth {}",
                cam.lens.kind,
                seen.depth
            );
        }
    }
}
