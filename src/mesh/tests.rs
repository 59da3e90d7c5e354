//! Meshes fused from the ray tracer's exact depth maps, against the analytic surfaces.

use glam::Vec3;

use super::truth::{exact_depth, scene_bounds, surface_points};
use super::*;
use crate::data::builtin::{self, BuiltinOptions, look_at};
use crate::data::raytrace::{Object, Scene, Shape, Texture};
use crate::error::{Error, Result};
use crate::splat::Camera;

const CENTRE: [f32; 3] = [0.1, -0.05, 0.2];
const RADIUS: f32 = 0.5;
const VOXEL: f32 = 0.02;

fn sphere_scene(spheres: &[([f32; 3], f32)]) -> Scene {
    let objects = spheres
        .iter()
        .map(|&(center, radius)| Object {
            shape: Shape::Sphere { center, radius },
            texture: Texture::Solid([0.8, 0.4, 0.2]),
        })
        .collect();
    Scene::new(objects, [0.0, 0.0, 1.0], 0.3)
}

/// Twelve 64×64 cameras at the vertices of an icosahedron around `target`, 2.5 away.
fn icosahedron_cameras(target: [f32; 3]) -> Vec<Camera> {
    let phi = (1.0 + 5f32.sqrt()) / 2.0;
    let mut vertices = Vec::new();
    for a in [-1.0, 1.0] {
        for b in [-phi, phi] {
            vertices.extend([[0.0, a, b], [a, b, 0.0], [b, 0.0, a]]);
        }
    }
    vertices
        .into_iter()
        .map(|v| {
            let eye = Vec3::from(target) + Vec3::from(v).normalize() * 2.5;
            look_at(
                eye.to_array(),
                target,
                [0.3, 0.2, 1.0],
                64,
                64,
                builtin::focal_length(64),
                [0.0; 3],
            )
        })
        .collect()
}

fn fuse(scene: &Scene, cameras: &[Camera], options: TsdfOptions) -> Result<TsdfVolume> {
    let mut volume = TsdfVolume::new(options)?;
    for camera in cameras {
        let map = exact_depth(scene, camera);
        volume.integrate(&map.depth, map.width, map.height, camera, Some(&map.colour))?;
    }
    Ok(volume)
}

fn sphere_points(centre: [f32; 3], radius: f32, count: usize) -> Vec<[f32; 3]> {
    let shape = Shape::Sphere {
        center: centre,
        radius,
    };
    let mut rng = crate::data::init::SplitMix64::new(11);
    (0..count)
        .map(|_| shape.sample_surface(&mut rng).0)
        .collect()
}

#[test]
fn a_sphere_fused_from_exact_depth_is_closed_and_on_the_sphere() {
    let scene = sphere_scene(&[(CENTRE, RADIUS)]);
    let cameras = icosahedron_cameras(CENTRE);
    let volume = fuse(&scene, &cameras, TsdfOptions::new(VOXEL)).unwrap();
    let mesh = volume.extract().unwrap();
    let (centre, radius) = fit_sphere(&mesh.positions).unwrap();
    let centre_error = Vec3::from(centre.map(|v| v as f32)).distance(Vec3::from(CENTRE));
    let radius_error = (radius as f32 - RADIUS).abs();
    let worst = mesh
        .positions
        .iter()
        .map(|p| (Vec3::from(*p).distance(Vec3::from(CENTRE)) - RADIUS).abs())
        .fold(0f32, f32::max);
    let (open, misoriented) = mesh.open_edges();
    let (_, components) = mesh.components();
    let truth = sphere_points(CENTRE, RADIUS, 20_000);
    let diagonal = 2.0 * RADIUS * 3f32.sqrt();
    let s = score(&mesh, &truth, 0.01 * diagonal).unwrap();
    eprintln!(
        "sphere: {} vertices, {} triangles, {} blocks ({} bytes); centre error {centre_error}, \
         radius error {radius_error}, worst vertex {worst}; {s:?}",
        mesh.positions.len(),
        mesh.triangles.len(),
        volume.block_count(),
        volume.bytes_used()
    );
    assert!(centre_error < 0.1 * VOXEL, "centre error {centre_error}");
    assert!(radius_error < 0.1 * VOXEL, "radius error {radius_error}");
    assert!(worst < 0.5 * VOXEL, "a vertex {worst} off the sphere");
    assert_eq!((open, misoriented), (0, 0), "open or misoriented edges");
    // Blocks are allocated only near the surface: within the truncation of it, give or take a
    // block's half diagonal (and the half-voxel rounding of the samples along each ray).
    let block = tsdf::BLOCK_SIDE as f32 * VOXEL;
    let reach = volume.options().truncation + block * 3f32.sqrt() / 2.0 + VOXEL;
    for key in volume.block_keys() {
        let centre = Vec3::from(key.map(|k| (k as f32 * block) + 3.5 * VOXEL));
        let off = (centre.distance(Vec3::from(CENTRE)) - RADIUS).abs();
        assert!(off < reach, "block {key:?} {off} from the surface");
    }
    assert_eq!(components, vec![mesh.triangles.len()], "one piece");
    // 20 000 true points lie ~0.0125 apart: a perfect mesh scores a Chamfer distance near 0.006.
    assert!(s.chamfer < 0.4 * VOXEL as f64, "{s:?}");
    assert!(s.f_score > 0.99, "{s:?}");
    // The colours are the sphere's (solid albedo, lit or in ambient light).
    let lit = mesh
        .colours
        .iter()
        .filter(|c| c[0] > c[1] && c[1] > c[2])
        .count();
    assert!(
        lit * 10 > mesh.colours.len() * 9,
        "{lit} of {}",
        mesh.colours.len()
    );
}

#[test]
fn the_objects_scene_from_its_own_cameras_scores_above_the_bar() {
    let options = BuiltinOptions {
        resolution: 96,
        train_views: 16,
        test_views: 0,
        ..Default::default()
    };
    let scene = builtin::scene();
    let (cameras, _) = builtin::cameras(&options);
    let bounds = scene_bounds(&scene).unwrap();
    let voxel = default_voxel_size(bounds, &cameras).unwrap();
    let volume = fuse(&scene, &cameras, TsdfOptions::new(voxel)).unwrap();
    let mut mesh = volume.extract().unwrap();
    let dropped = mesh.keep_largest_components(0.05);
    let truth = surface_points(&scene, &cameras, 30_000, 3);
    let diagonal = Vec3::from(bounds.1).distance(Vec3::from(bounds.0));
    let fine = score(&mesh, &truth, 0.005 * diagonal).unwrap();
    let coarse = score(&mesh, &truth, 0.01 * diagonal).unwrap();
    eprintln!(
        "objects: voxel {voxel}, {} triangles ({dropped} dropped), {} bytes; \
         at 0.5%: {fine:?}; at 1%: {coarse:?}",
        mesh.triangles.len(),
        volume.bytes_used()
    );
    // A pixel of these cameras spans about 1% of the diagonal at the scene's centre; 30 000
    // true points lie ~0.02 apart, so even a perfect mesh scores a Chamfer distance near 0.01.
    assert!(coarse.f_score > 0.97, "{coarse:?}");
    assert!(fine.f_score > 0.8, "{fine:?}");
    assert!(coarse.chamfer < 0.012, "{coarse:?}");
}

#[test]
fn no_depth_is_a_clear_error() {
    let camera = &icosahedron_cameras(CENTRE)[0];
    let mut volume = TsdfVolume::new(TsdfOptions::new(VOXEL)).unwrap();
    let mut depth = vec![0.0; 64 * 64];
    depth[0] = f32::NAN;
    depth[1] = -1.0;
    depth[2] = f32::INFINITY;
    let report = volume.integrate(&depth, 64, 64, camera, None).unwrap();
    assert_eq!((report.measurements, report.blocks_added), (0, 0));
    let message = volume.extract().unwrap_err().to_string();
    assert!(message.contains("none of the 1 depth maps"), "{message}");
    // Beyond the maximum depth is no measurement either.
    let mut options = TsdfOptions::new(VOXEL);
    options.max_depth = Some(1.0);
    let scene = sphere_scene(&[(CENTRE, RADIUS)]);
    let volume = fuse(&scene, &icosahedron_cameras(CENTRE), options).unwrap();
    assert!(volume.extract().is_err());
    // Mismatched sizes and lenses are refused.
    let err = volume_with(&[0.0; 10], camera).unwrap_err().to_string();
    assert!(err.contains("10 values"), "{err}");
    let mut fisheye = camera.clone();
    fisheye.lens =
        crate::splat::lens::CameraLens::fisheye([0.1, 0.0, 0.0, 0.0], [0.0; 2], [0.0; 2]);
    let err = volume_with(&depth, &fisheye).unwrap_err().to_string();
    assert!(err.contains("Fisheye"), "{err}");
}

fn volume_with(depth: &[f32], camera: &Camera) -> Result<IntegrationReport> {
    TsdfVolume::new(TsdfOptions::new(VOXEL))?.integrate(depth, 64, 64, camera, None)
}

#[test]
fn a_volume_past_its_memory_budget_is_refused_with_what_it_needs() {
    let scene = sphere_scene(&[(CENTRE, RADIUS)]);
    let cameras = icosahedron_cameras(CENTRE);
    let full = fuse(&scene, &cameras[..1], TsdfOptions::new(VOXEL)).unwrap();
    let mut options = TsdfOptions::new(VOXEL);
    options.memory_budget = full.bytes_used() - 1;
    let mut volume = TsdfVolume::new(options).unwrap();
    let map = exact_depth(&scene, &cameras[0]);
    let err = volume
        .integrate(&map.depth, 64, 64, &cameras[0], None)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, Error::Overflow { needed, .. } if needed == full.bytes_used()),
        "{message}"
    );
    for option in ["--voxel", "--memory-budget", "--crop-box"] {
        assert!(message.contains(option), "{message}");
    }
    assert_eq!(volume.block_count(), 0, "the volume is left as it was");
    // A crop box around half the sphere fits, and meshes only inside it.
    let mut cropped = options;
    cropped.crop_box = Some(CropBox {
        min: [-1.0, -1.0, -1.0],
        max: [1.0, 1.0, CENTRE[2]],
    });
    let volume = fuse(&scene, &cameras[..1], cropped).unwrap();
    assert!(volume.bytes_used() <= options.memory_budget);
    let mesh = volume.extract().unwrap();
    assert!(mesh.positions.iter().all(|p| p[2] <= CENTRE[2] + 1e-6));
}

#[test]
fn small_pieces_are_dropped_and_the_largest_kept() {
    let scene = sphere_scene(&[(CENTRE, RADIUS), ([0.1, -0.05, 0.95], 0.08)]);
    let cameras = icosahedron_cameras(CENTRE);
    let mut mesh = fuse(&scene, &cameras, TsdfOptions::new(VOXEL))
        .unwrap()
        .extract()
        .unwrap();
    let (_, counts) = mesh.components();
    let mut sizes = counts.clone();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let (big, small) = (sizes[0], sizes[1]);
    assert!(
        small * 20 < big && small * 100 > big,
        "{:?}",
        &sizes[..sizes.len().min(8)]
    );
    assert!(
        sizes[2..].iter().all(|&n| n * 100 < big),
        "{:?}",
        &sizes[..sizes.len().min(8)]
    );
    let tiny: usize = sizes[2..].iter().sum();
    assert_eq!(mesh.keep_largest_components(0.01), tiny);
    let before = mesh.clone();
    assert_eq!(mesh.keep_largest_components(0.01), 0);
    assert!(mesh == before, "nothing dropped, nothing changed");
    assert_eq!(mesh.components().1, [big, small]);
    assert_eq!(mesh.keep_largest_components(0.05), small);
    assert_eq!(mesh.triangles.len(), big);
    assert_eq!(mesh.positions.len(), {
        let mut used: Vec<u32> = mesh.triangles.concat();
        used.sort_unstable();
        used.dedup();
        used.len()
    });
    assert!(mesh.positions.iter().all(|p| p[2] < 0.75));
    assert_eq!(mesh.open_edges(), (0, 0));
}

#[test]
fn the_scores_see_shifted_holed_and_missing_surfaces() {
    let scene = sphere_scene(&[(CENTRE, RADIUS)]);
    let mesh = fuse(
        &scene,
        &icosahedron_cameras(CENTRE),
        TsdfOptions::new(VOXEL),
    )
    .unwrap()
    .extract()
    .unwrap();
    let truth = sphere_points(CENTRE, RADIUS, 20_000);
    let good = score(&mesh, &truth, 0.017).unwrap();
    let mut shifted = mesh.clone();
    shifted.positions.iter_mut().for_each(|p| p[0] += 0.03);
    let shifted = score(&shifted, &truth, 0.017).unwrap();
    assert!(
        shifted.chamfer > good.chamfer + 0.005,
        "{good:?} {shifted:?}"
    );
    assert!(shifted.f_score < good.f_score - 0.2, "{good:?} {shifted:?}");
    // Half the mesh: as accurate, but half the truth is missed.
    let mut half = mesh.clone();
    half.triangles
        .retain(|t| mesh.positions[t[0] as usize][2] > CENTRE[2]);
    let half = score(&half, &truth, 0.017).unwrap();
    assert!(half.precision > 0.95 && half.recall < 0.6, "{half:?}");
    assert!(half.completeness > 5.0 * good.completeness, "{half:?}");
    // Against another sphere's truth, nothing matches.
    let elsewhere = sphere_points([3.0, 0.0, 0.0], RADIUS, 1000);
    let far = score(&mesh, &elsewhere, 0.017).unwrap();
    assert_eq!((far.precision, far.recall, far.f_score), (0.0, 0.0, 0.0));
    assert!(far.chamfer > 2.0, "{far:?}");
    // Unusable inputs are errors.
    assert!(score(&mesh, &[], 0.017).is_err());
    assert!(score(&mesh, &[[f32::NAN; 3]], 0.017).is_err());
    assert!(score(&mesh, &truth, f32::NAN).is_err());
    assert!(score(&mesh, &truth, 0.0).is_err());
    assert!(score(&Mesh::default(), &truth, 0.017).is_err());
    // Samples lie on the mesh's triangles and follow its area.
    let samples = sample_surface(&mesh, 5000, 1);
    let radii = samples
        .iter()
        .map(|p| Vec3::from(*p).distance(Vec3::from(CENTRE)));
    assert!(radii.clone().all(|r| (r - RADIUS).abs() < 0.01));
    let upper = samples.iter().filter(|p| p[2] > CENTRE[2]).count();
    assert!((upper as f32 / 5000.0 - 0.5).abs() < 0.03, "{upper}");
}

#[test]
fn the_default_voxel_follows_the_scene_and_its_pixels() {
    let bounds = ([-1.0, -1.0, 0.0], [1.0, 1.0, 2.0f32.sqrt()]);
    let by_size = 10f32.sqrt() / 256.0;
    assert!((default_voxel_size(bounds, &[]).unwrap() - by_size).abs() < 1e-6);
    let cameras = icosahedron_cameras([0.0, 0.0, 0.7]);
    let pixel = 2.5 / builtin::focal_length(64);
    let voxel = default_voxel_size(bounds, &cameras).unwrap();
    assert!((voxel - 0.5 * pixel).abs() < 1e-4, "{voxel} {pixel}");
    assert!(default_voxel_size(([0.0; 3], [0.0; 3]), &[]).is_none());
    assert!(default_voxel_size(([0.0; 3], [f32::NAN; 3]), &[]).is_none());
}
