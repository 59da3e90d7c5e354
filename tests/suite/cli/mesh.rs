//! `wgsplat mesh`: a trained built-in scene meshes close to the ray tracer's true surfaces, its
//! large sphere with the right radius and centre, and a model with nothing opaque is a clear error
//! that writes no file.

use super::*;
use wgsplat::data::builtin::{BuiltinOptions, cameras, scene};
use wgsplat::mesh::truth::{scene_bounds, surface_points};
use wgsplat::mesh::{Mesh, fit_sphere_near, score};

/// The vertices and triangles of an OBJ file written by `mesh`.
fn read_obj(path: &Path) -> Mesh {
    let text = std::fs::read_to_string(path).unwrap();
    let mut mesh = Mesh::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.first() {
            Some(&"v") => {
                let v: Vec<f32> = fields[1..].iter().map(|x| x.parse().unwrap()).collect();
                mesh.positions.push([v[0], v[1], v[2]]);
                mesh.colours.push([0; 3]);
            }
            Some(&"f") => {
                let i: Vec<u32> = fields[1..]
                    .iter()
                    .map(|x| x.parse::<u32>().unwrap() - 1)
                    .collect();
                mesh.triangles.push([i[0], i[1], i[2]]);
            }
            _ => {}
        }
    }
    mesh
}

/// The built-in scene's large sphere (`data/builtin.rs`).
const SPHERE_CENTRE: [f32; 3] = [0.0, 0.0, 0.5];
const SPHERE_RADIUS: f32 = 0.5;

#[test]
fn a_trained_builtin_scene_meshes_near_its_true_surfaces() {
    let dir = temp_dir("mesh");
    let size = 48u32;
    let ply = shared_builtin_model_48();
    let out = dir.join("scene.obj");
    let run = wgsplat(&[
        "mesh",
        ply.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    expect_success(&run);
    let mesh = read_obj(&out);
    assert!(
        mesh.triangles.len() > 1000,
        "{} triangles",
        mesh.triangles.len()
    );
    let (train, _) = cameras(&BuiltinOptions {
        resolution: size,
        ..BuiltinOptions::default()
    });
    let truth_scene = scene();
    let truth = surface_points(&truth_scene, &train, 20_000, 7);
    let (lo, hi) = scene_bounds(&truth_scene).unwrap();
    let diagonal = (0..3).map(|k| (hi[k] - lo[k]).powi(2)).sum::<f32>().sqrt();
    let at_1 = score(&mesh, &truth, 0.01 * diagonal).unwrap();
    eprintln!(
        "mesh of a 150-iteration model: chamfer {:.4}, precision {:.3}, recall {:.3}, F-score {:.3} at 1% of the diagonal",
        at_1.chamfer, at_1.precision, at_1.recall, at_1.f_score
    );
    // Measured: Chamfer 0.094, F-score 0.29 at 1% (an unregularised 150-iteration model of 48²
    // images, meshed from views round it; a mesh in the wrong place scores near 0).
    assert!(at_1.f_score > 0.2 && at_1.chamfer < 0.15, "{at_1:?}");
    // The vertices within 40% of the radius of its surface, above the platform it stands on
    // (z > 0.1), where no other object comes near.
    let (centre, radius) =
        fit_sphere_near(&mesh.positions, SPHERE_CENTRE, SPHERE_RADIUS, 0.4, |p| {
            p[2] > 0.1
        })
        .expect("vertices near the sphere");
    let centre_error = (0..3)
        .map(|k| (centre[k] - f64::from(SPHERE_CENTRE[k])).powi(2))
        .sum::<f64>()
        .sqrt();
    let radius_error = (radius - f64::from(SPHERE_RADIUS)).abs();
    eprintln!("the large sphere: centre error {centre_error:.4}, radius error {radius_error:.4}");
    // Measured: centre 0.042 and radius 0.060 off (12%: the 48² views of a 150-iteration model
    // blur its outline); a mesh with no sphere there finds no fit or one far off.
    assert!(
        centre_error < 0.08 && radius_error < 0.1,
        "the sphere of radius {SPHERE_RADIUS} at {SPHERE_CENTRE:?} meshed at {centre:?} with radius {radius}"
    );
    // Nothing opaque: a clear error and no file.
    let empty = dir.join("empty.ply");
    let text = std::fs::read(&ply).unwrap();
    let header_end = text.windows(11).position(|w| w == b"end_header\n").unwrap() + 11;
    let header = String::from_utf8_lossy(&text[..header_end]).into_owned();
    let count: usize = header
        .lines()
        .find_map(|l| l.strip_prefix("element vertex "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let props = header
        .lines()
        .filter(|l| l.starts_with("property float"))
        .count();
    let opacity = header
        .lines()
        .filter(|l| l.starts_with("property float"))
        .position(|l| l.ends_with(" opacity"))
        .unwrap();
    let mut body = text[header_end..].to_vec();
    for i in 0..count {
        let at = (i * props + opacity) * 4;
        body[at..at + 4].copy_from_slice(&(-30f32).to_le_bytes());
    }
    std::fs::write(&empty, [text[..header_end].to_vec(), body].concat()).unwrap();
    let none = dir.join("none.glb");
    let err = expect_failure(&[
        "mesh",
        empty.to_str().unwrap(),
        "--out",
        none.to_str().unwrap(),
    ]);
    assert!(
        err.contains("transparent") || err.contains("nothing"),
        "{err}"
    );
    assert!(!none.exists(), "an empty model must not leave a mesh file");
    std::fs::remove_dir_all(&dir).unwrap();
}
