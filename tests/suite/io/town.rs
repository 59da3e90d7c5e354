//! The built-in town (layout, views, points, COLMAP output, `--builtin town`, `wgsplat builtin`)
//! and the ray tracer's bounding volume hierarchy, held to a linear scan of every object.

use std::time::Instant;

use super::TempDir;
use wgsplat::data::bvh::{Aabb, Bvh};
use wgsplat::data::colmap_write::write_colmap_dataset;
use wgsplat::data::raytrace::{Scene, Shape, Texture};
use wgsplat::data::town::{self, TownOptions};
use wgsplat::data::{Dataset, LoadOptions, Split, builtin};
use wgsplat::rng::SplitMix64;
use wgsplat::splat::Camera;

fn unit_vector(rng: &mut SplitMix64) -> [f32; 3] {
    let z = rng.range(-1.0, 1.0);
    let phi = rng.range(0.0, std::f32::consts::TAU);
    let r = (1.0 - z * z).max(0.0).sqrt();
    [r * phi.cos(), r * phi.sin(), z]
}

/// Compares the hierarchy with the linear scan on `rays` random rays from inside `region`
/// (plus axis-aligned ones): the same nearest object at the same distance, the same shadow
/// answers, the same burial of random points. Returns how many rays hit something.
fn assert_bvh_matches_linear_scan(scene: &Scene, region: Aabb, rays: usize, seed: u64) -> usize {
    let mut rng = SplitMix64::new(seed);
    let axes = [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ];
    let mut hits = 0;
    for i in 0..rays {
        let origin = [0, 1, 2].map(|k| rng.range(region.min[k], region.max[k]));
        let direction = if i % 10 == 0 {
            axes[i / 10 % axes.len()]
        } else {
            unit_vector(&mut rng)
        };
        let fast = scene.intersect(origin, direction);
        let reference = scene.intersect_linear(origin, direction);
        assert_eq!(
            fast, reference,
            "ray {i} from {origin:?} along {direction:?}"
        );
        assert_eq!(scene.occluded(origin, direction), reference.is_some());
        hits += usize::from(reference.is_some());
        let margin = 1e-4;
        let linear = scene
            .objects()
            .iter()
            .enumerate()
            .any(|(j, o)| j != 0 && o.shape.contains(origin, margin));
        assert_eq!(scene.buried(origin, margin, 0), linear, "point {origin:?}");
    }
    hits
}

#[test]
fn bvh_hits_equal_linear_scan_hits() {
    let options = TownOptions::small();
    let scene = town::scene(&options);
    assert!(
        scene.objects().len() > 40,
        "{} objects",
        scene.objects().len()
    );
    let half = town::town_half_size(options.blocks_per_side) + 0.5;
    let region = Aabb {
        min: [-half, -half, -0.02],
        max: [half, half, 1.0],
    };
    let hits = assert_bvh_matches_linear_scan(&scene, region, 5000, 7);
    assert!(hits > 2500, "only {hits} of 5000 rays hit the town");
    // Rays through pixels of the views too (they start outside every object).
    for camera in town::cameras(&options).iter().step_by(5) {
        let origin = camera.position();
        for p in 0..64 {
            let pixel = [(p % 8) as f32 * 6.0 + 1.5, (p / 8) as f32 * 6.0 + 2.5];
            let local = [
                (pixel[0] - camera.cx) / camera.fx,
                (pixel[1] - camera.cy) / camera.fy,
                1.0,
            ];
            let r = camera.rotation;
            let world = [0, 1, 2].map(|c| r[0][c] * local[0] + r[1][c] * local[1] + r[2][c]);
            let length = world.iter().map(|v| v * v).sum::<f32>().sqrt();
            let direction = world.map(|v| v / length);
            let hit = scene.intersect(origin, direction);
            assert!(hit.is_some(), "a view sees past the ground");
            assert_eq!(hit, scene.intersect_linear(origin, direction));
        }
    }
    // The objects scene, whose rays start inside and outside its shapes.
    let region = Aabb {
        min: [-1.2, -1.2, -0.2],
        max: [1.2, 1.2, 1.2],
    };
    let hits = assert_bvh_matches_linear_scan(&builtin::scene(), region, 3000, 8);
    assert!(hits > 1000, "only {hits} of 3000 rays hit the objects");
}

#[test]
fn bvh_tests_few_objects_per_ray() {
    // 4096 small boxes on a grid: a ray should test a small fraction of them.
    let boxes: Vec<Aabb> = (0..4096)
        .map(|i| {
            let c = [(i % 64) as f32, (i / 64) as f32, 0.0];
            Aabb {
                min: c.map(|v| v - 0.3),
                max: c.map(|v| v + 0.3),
            }
        })
        .collect();
    let bvh = Bvh::build(&boxes);
    let mut rng = SplitMix64::new(3);
    let (mut tested, mut found) = (0usize, 0usize);
    for _ in 0..500 {
        let origin = [rng.range(0.0, 63.0), rng.range(0.0, 63.0), 5.0];
        let direction = [rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), -1.0];
        let length = direction.iter().map(|v| v * v).sum::<f32>().sqrt();
        let direction = direction.map(|v| v / length);
        let shape = |i: usize| Shape::Cuboid {
            min: boxes[i].min,
            max: boxes[i].max,
        };
        let hit = bvh.closest(origin, direction, |i| {
            tested += 1;
            shape(i)
                .intersect(origin, direction, 1e-5)
                .map(|(t, _)| (t, ()))
        });
        let linear = (0..boxes.len())
            .filter_map(|i| {
                shape(i)
                    .intersect(origin, direction, 1e-5)
                    .map(|(t, _)| (i, t))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        assert_eq!(hit.map(|(i, t, ())| (i, t)), linear);
        found += usize::from(linear.is_some());
    }
    let per_ray = tested as f64 / 500.0;
    assert!(found > 50, "{found} rays hit");
    assert!(per_ray < 40.0, "{per_ray} objects tested per ray");
}

#[test]
fn objects_scene_renders_the_same_through_the_bvh() {
    let options = builtin::BuiltinOptions {
        resolution: 40,
        train_views: 3,
        test_views: 1,
        ..Default::default()
    };
    let scene = builtin::scene();
    let reference = scene.clone().without_bvh();
    let (train, test) = builtin::cameras(&options);
    for camera in train.iter().chain(&test) {
        assert_eq!(scene.render(camera), reference.render(camera));
    }
}

fn project(camera: &Camera, p: [f32; 3]) -> Option<[f32; 2]> {
    let q = camera.to_camera(p);
    let uv = [
        camera.fx * q[0] / q[2] + camera.cx,
        camera.fy * q[1] / q[2] + camera.cy,
    ];
    let inside = q[2] > 0.0
        && (0.0..camera.width as f32).contains(&uv[0])
        && (0.0..camera.height as f32).contains(&uv[1]);
    inside.then_some(uv)
}

/// Views that see `p` (in frame, nothing in between).
fn seen_by(scene: &Scene, cameras: &[Camera], p: [f32; 3]) -> usize {
    cameras
        .iter()
        .filter(|c| {
            if project(c, p).is_none() {
                return false;
            }
            let eye = c.position();
            let to_eye = [0, 1, 2].map(|k| eye[k] - p[k]);
            let distance = to_eye.iter().map(|v| v * v).sum::<f32>().sqrt();
            let direction = to_eye.map(|v| v / distance);
            let start = [0, 1, 2].map(|k| p[k] + 1e-3 * direction[k]);
            scene
                .intersect(start, direction)
                .is_none_or(|hit| hit.t >= distance)
        })
        .count()
}

#[test]
fn town_views_cover_every_part_and_every_quadrant() {
    for options in [TownOptions::small(), TownOptions::default()] {
        let cameras = town::cameras(&options);
        assert_eq!(cameras.len(), options.views);
        // A 2 x 2 partition of the ground by camera centre: every cell gets a fair share.
        let mut cells = [0usize; 4];
        for c in &cameras {
            let p = c.position();
            cells[usize::from(p[0] >= 0.0) + 2 * usize::from(p[1] >= 0.0)] += 1;
        }
        for n in cells {
            assert!(
                n * 5 >= options.views,
                "{cells:?} of {} views",
                options.views
            );
        }
    }
    // Every roof, and nearly all open ground and roof area, is seen by several views.
    let options = TownOptions::small();
    let scene = town::scene(&options);
    let cameras = town::cameras(&options);
    let uncovered = |p: [f32; 3]| !scene.buried([p[0], p[1], p[2] + 0.001], 0.0, usize::MAX);
    let (mut roof_points, mut roof_seen) = (0, 0);
    for object in scene.objects() {
        if let (Shape::Cuboid { min, max }, Texture::Facade(_)) = (&object.shape, &object.texture) {
            let spots = [(0.5, 0.5), (0.2, 0.2), (0.8, 0.2), (0.2, 0.8), (0.8, 0.8)];
            let tops = spots.map(|(a, b)| {
                let lerp = |k: usize, f: f32| min[k] + f * (max[k] - min[k]);
                [lerp(0, a), lerp(1, b), max[2]]
            });
            let counts: Vec<usize> = tops
                .into_iter()
                .filter(|&p| uncovered(p))
                .map(|p| seen_by(&scene, &cameras, p))
                .collect();
            assert!(
                counts.iter().any(|&n| n >= 3),
                "the roof {min:?}..{max:?} is seen by {counts:?} views"
            );
            roof_points += counts.len();
            roof_seen += counts.iter().filter(|&&n| n >= 3).count();
        }
    }
    assert!(
        roof_seen * 100 >= roof_points * 95,
        "{roof_seen} of {roof_points} roof points seen by 3 views or more"
    );
    let half = town::town_half_size(options.blocks_per_side);
    let steps = 40;
    let (mut open, mut well_seen) = (0, 0);
    for i in 0..steps {
        for j in 0..steps {
            let at = [i, j].map(|k| -half + (k as f32 + 0.5) * 2.0 * half / steps as f32);
            let p = [at[0], at[1], 0.0];
            if !uncovered(p) {
                continue;
            }
            open += 1;
            well_seen += usize::from(seen_by(&scene, &cameras, p) >= 3);
        }
    }
    eprintln!(
        "seen by 3 views or more: {roof_seen} of {roof_points} roof points, {well_seen} of {open} ground points"
    );
    assert!(open > steps * steps / 2, "{open} open ground points");
    assert!(
        well_seen * 100 >= open * 95,
        "{well_seen} of {open} ground points seen by 3 views or more"
    );
}

#[test]
fn town_is_deterministic_with_full_images_and_seen_points() {
    let options = TownOptions::small();
    let start = Instant::now();
    let first = town::generate(&options, &Split::Default).unwrap();
    eprintln!(
        "small town ({} views of {}²) generated in {:.2} s",
        options.views,
        options.resolution,
        start.elapsed().as_secs_f64()
    );
    let second = town::generate(&options, &Split::Default).unwrap();
    assert_eq!(first, second, "two generations differ");
    let other_seed = town::generate(
        &TownOptions {
            seed: 2,
            ..options.clone()
        },
        &Split::Default,
    )
    .unwrap();
    assert_ne!(first.train[0].image, other_seed.train[0].image);
    // Every 8th view by name is a test view, as in a COLMAP capture under --eval.
    assert_eq!((first.train.len(), first.test.len()), (42, 6));
    for (k, view) in first.test.iter().enumerate() {
        assert_eq!(view.name, town::view_name(8 * k));
    }
    for view in first.views() {
        assert!(
            view.image.pixels.chunks_exact(4).all(|p| p[3] == 255),
            "{} sees past the ground",
            view.name
        );
        let luma: Vec<f32> = view.rgb().chunks_exact(3).map(|c| c[1]).collect();
        let mean = luma.iter().sum::<f32>() / luma.len() as f32;
        let var = luma.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / luma.len() as f32;
        assert!(var.sqrt() > 0.05, "{} is nearly flat", view.name);
    }
    let points = first.points.as_ref().unwrap();
    assert_eq!(points.len(), options.points);
    let cameras: Vec<&Camera> = first.views().map(|v| &v.camera).collect();
    for p in &points.positions {
        assert!(cameras.iter().any(|c| project(c, *p).is_some()), "{p:?}");
    }
    let ground = town::ground_half_size(options.blocks_per_side);
    assert!(first.extent > 1.0 && first.extent < 2.0 * ground);
}

#[test]
fn town_round_trips_through_a_colmap_folder() {
    let options = TownOptions {
        views: 20,
        resolution: 32,
        points: 400,
        ..TownOptions::small()
    };
    let dataset = town::generate(&options, &Split::AllTrain).unwrap();
    let dir = TempDir::new("town-colmap");
    let out = dir.0.join("town");
    write_colmap_dataset(&dataset, &out).unwrap();
    for file in ["cameras.txt", "images.txt", "points3D.txt"] {
        assert!(out.join("sparse/0").join(file).is_file(), "{file}");
    }
    assert_eq!(std::fs::read_dir(out.join("images")).unwrap().count(), 20);
    // Written again into the same folder: refused, the first copy untouched.
    let again = write_colmap_dataset(&dataset, &out)
        .unwrap_err()
        .to_string();
    assert!(again.contains("not empty"), "{again}");
    let loaded = Dataset::load(&out, &LoadOptions::default()).unwrap();
    let expected = town::generate(&options, &Split::Default).unwrap();
    assert_eq!(
        (loaded.train.len(), loaded.test.len()),
        (expected.train.len(), expected.test.len())
    );
    for (a, b) in expected.views().zip(loaded.views()) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.image, b.image, "{}", a.name);
        let (ca, cb) = (&a.camera, &b.camera);
        assert_eq!((ca.width, ca.height), (cb.width, cb.height));
        let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 + 1e-5 * x.abs();
        assert!(close(ca.fx, cb.fx) && close(ca.fy, cb.fy) && close(ca.cx, cb.cx));
        for k in 0..3 {
            assert!(close(ca.translation[k], cb.translation[k]), "{}", a.name);
            for c in 0..3 {
                assert!(close(ca.rotation[k][c], cb.rotation[k][c]), "{}", a.name);
            }
        }
    }
    let (p, q) = (
        expected.points.as_ref().unwrap(),
        loaded.points.as_ref().unwrap(),
    );
    assert_eq!(p.positions, q.positions);
    let colours = p.colors.iter().flatten().zip(q.colors.iter().flatten());
    assert!(
        colours
            .clone()
            .all(|(a, b)| (a - b).abs() <= 0.5 / 255.0 + 1e-6)
    );
}

#[test]
fn builtin_town_follows_the_split_options() {
    use wgsplat::train::setup::{BuiltinScene, DataOptions, load_dataset};
    let options = |eval: bool| DataOptions {
        builtin: BuiltinScene::Town,
        builtin_resolution: 16,
        eval,
        ..DataOptions::default()
    };
    let views = TownOptions::default().views;
    let all = load_dataset(None, &options(false)).unwrap();
    assert_eq!((all.train.len(), all.test.len()), (views, 0));
    let held_out = load_dataset(None, &options(true)).unwrap();
    assert_eq!(held_out.test.len(), views.div_ceil(8));
    assert_eq!(held_out.train.len() + held_out.test.len(), views);
    assert_eq!(held_out.train[0].camera.width, 16);
}

#[test]
fn builtin_command_writes_the_town_as_colmap() {
    let dir = TempDir::new("town-cli");
    let out = dir.0.join("town");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wgsplat"))
            .arg("builtin")
            .args(args)
            .output()
            .unwrap()
    };
    let out_arg = out.to_str().unwrap();
    let small = [
        "--builtin-resolution",
        "20",
        "--height",
        "16",
        "--rays-per-pixel",
        "1",
        "--views",
        "12",
        "--blocks",
        "2",
        "--points",
        "100",
    ];
    let written = run(&[&["town", "--out", out_arg], &small[..]].concat());
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    let loaded = Dataset::load(
        &out,
        &LoadOptions {
            split: Split::AllTrain,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    assert_eq!(loaded.train.len(), 12);
    let camera = &loaded.train[0].camera;
    assert_eq!((camera.width, camera.height), (20, 16));
    assert_eq!(loaded.points.unwrap().len(), 100);
    // A second write into the same folder, and town-only options on the objects scene, fail.
    let again = run(&[&["town", "--out", out_arg], &small[..]].concat());
    assert!(!again.status.success());
    let objects = run(&["objects", "--out", out_arg, "--seed", "3"]);
    assert!(!objects.status.success());
    assert!(String::from_utf8_lossy(&objects.stderr).contains("--seed"));
    let objects = run(&["objects", "--out", out_arg, "--height", "16"]);
    assert!(!objects.status.success());
    // Sizes past the range are refused before anything is allocated.
    for size in [["--height", "5000"], ["--builtin-resolution", "8"]] {
        let refused = run(&[&["town", "--out", out_arg], &size[..]].concat());
        let text = String::from_utf8_lossy(&refused.stderr);
        assert!(
            !refused.status.success() && text.contains("16..=4096"),
            "{text}"
        );
    }
}

#[test]
fn town_takes_a_photograph_shape_and_one_ray_per_pixel() {
    let square = TownOptions {
        views: 4,
        resolution: 32,
        points: 100,
        ..TownOptions::small()
    };
    let shaped = TownOptions {
        height: Some(24),
        ..square.clone()
    };
    let one_ray = TownOptions {
        supersampled: false,
        ..shaped.clone()
    };
    let [square, shaped, one_ray] = [square, shaped, one_ray]
        .map(|options| town::generate(&options, &Split::AllTrain).unwrap());
    for (a, b) in square.train.iter().zip(&shaped.train) {
        let (ca, cb) = (&a.camera, &b.camera);
        assert_eq!((cb.width, cb.height), (32, 24));
        assert_eq!((cb.cx, cb.cy), (16.0, 12.0));
        // The same camera, focal length and pose: only the image's height differs.
        assert_eq!((ca.fx, ca.fy, ca.rotation), (cb.fx, cb.fy, cb.rotation));
        assert_eq!(ca.translation, cb.translation);
        // The shaped image is the square one's middle 24 rows.
        let row = 32 * 4;
        assert_eq!(b.image.pixels[..], a.image.pixels[4 * row..28 * row]);
    }
    for (four, one) in shaped.train.iter().zip(&one_ray.train) {
        assert_ne!(
            four.image, one.image,
            "one ray per pixel rendered like four"
        );
        let (a, b) = (four.rgb(), one.rgb());
        // Both estimate each pixel's mean radiance: the images' means agree closely, and
        // pixel by pixel they differ by the texture's detail within a pixel.
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        let bias = (mean(&a) - mean(&b)).abs();
        let spread = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
        eprintln!(
            "{}: bias {bias:.4}, mean absolute difference {spread:.4}",
            one.name
        );
        assert!(bias < 0.01 && spread < 0.1, "{}: {bias} {spread}", one.name);
        assert!(one.image.pixels.chunks_exact(4).all(|p| p[3] == 255));
    }
}
