//! `wgsplat mesh MODEL --out MESH`: the model's median depth rendered from the training views
//! of `--dataset` (or from views on a sphere round the model without one), fused into a sparse
//! TSDF, extracted with marching tetrahedra, cleaned of small pieces and written as PLY, OBJ or
//! binary glTF by extension (`src/mesh/`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use wgsplat::GpuContext;
use wgsplat::io::model::load_model_to_gpu;
use wgsplat::mesh::{
    CropBox, MESH_EXTENSIONS, TsdfOptions, TsdfVolume, default_voxel_size, write_mesh,
};
use wgsplat::show::depth::render_depth;
use wgsplat::splat::{Camera, CameraLens, RasterMode};
use wgsplat::train::byte_size::parse_byte_size;
use wgsplat::train::options::DataArgs;

/// Options of `wgsplat mesh`.
#[derive(clap::Args)]
pub struct MeshArgs {
    /// The model (any format `convert` reads).
    model: PathBuf,
    /// The dataset whose training views' cameras to render the depth from (default: 64 views
    /// on a sphere round the model).
    #[arg(long)]
    dataset: Option<PathBuf>,
    #[command(flatten)]
    data_args: DataArgs,
    /// The mesh to write: .ply, .obj or .glb.
    #[arg(long)]
    out: PathBuf,
    /// Voxel edge in the scene's units [default: the box of the Gaussians' centres / 256, no finer
    /// than half a pixel's footprint at the median camera's distance].
    #[arg(long)]
    voxel: Option<f32>,
    /// Truncation of the signed distance, in voxels.
    #[arg(long, default_value_t = 4.0)]
    truncation: f32,
    /// Depths past this distance are ignored (for unbounded captures).
    #[arg(long, value_name = "DIST")]
    max_depth: Option<f32>,
    /// Fuse only inside this box: x0,y0,z0,x1,y1,z1 (world units) [default: the box of the
    /// Gaussians' centres between their 10th and 90th percentiles, widened by half its size on
    /// every side, so distant backdrop and floaters stay out].
    #[arg(long, value_name = "BOX")]
    crop_box: Option<String>,
    /// Most memory the field's blocks may take (e.g. 512MiB, 4GiB).
    #[arg(long, default_value = "2GiB")]
    memory_budget: String,
    /// Keep pieces with at least this share of the largest piece's triangles.
    #[arg(long, default_value_t = 0.05)]
    min_piece: f32,
    /// Render antialiased splats: for models trained with --antialiased.
    #[arg(long)]
    antialiased: bool,
    /// Also score the mesh against the true surfaces of the built-in objects scene (for a model
    /// trained on it): Chamfer distance, and precision, recall and F-score within 0.5% and 1%
    /// of the scene's diagonal.
    #[arg(long)]
    score_builtin: bool,
}

/// Runs `wgsplat mesh`.
pub fn mesh(ctx: &GpuContext, args: MeshArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let extension = args
        .out
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_lowercase();
    if !MESH_EXTENSIONS.contains(&extension.as_str()) {
        anyhow::bail!(
            "--out {}: a mesh is written as {} (by extension)",
            args.out.display(),
            MESH_EXTENSIONS.map(|e| format!(".{e}")).join(", ")
        );
    }
    let memory_budget =
        parse_byte_size(&args.memory_budget, "--memory-budget", "the field's memory")?;
    let given_box = args.crop_box.as_deref().map(parse_crop_box).transpose()?;
    let (params, model) = load_model_to_gpu(ctx, &args.model, "model")
        .with_context(|| format!("reading {}", args.model.display()))?;
    let bounds = centre_bounds(&model.gaussians.means).with_context(|| {
        format!(
            "{} has no Gaussian with a finite centre: there is nothing to mesh",
            args.model.display()
        )
    })?;
    let cameras: Vec<Camera> = match &args.dataset {
        Some(dir) => {
            let dataset = super::dataset::load_dataset(Some(dir), &args.data_args, [0.0; 3])?;
            dataset
                .train
                .iter()
                .map(|v| pinhole_at(&v.camera))
                .collect()
        }
        None => sphere_cameras(bounds, 64, 256),
    };
    let voxel = match args.voxel {
        Some(v) if v > 0.0 && v.is_finite() => v,
        Some(v) => anyhow::bail!("--voxel {v}: expected a positive length"),
        None => {
            default_voxel_size(bounds, &cameras).context("the model's Gaussians span no volume")?
        }
    };
    if args.truncation.is_nan() || args.truncation < 1.0 {
        anyhow::bail!(
            "--truncation {}: expected at least 1 voxel",
            args.truncation
        );
    }
    let crop_box = given_box.or(Some(CropBox {
        min: bounds.0,
        max: bounds.1,
    }));
    let mut volume = TsdfVolume::new(TsdfOptions {
        voxel,
        truncation: args.truncation * voxel,
        memory_budget,
        crop_box,
        max_depth: args.max_depth,
    })?;
    let raster_mode = if args.antialiased {
        RasterMode::Antialiased
    } else {
        RasterMode::Classic
    };
    let bar = ProgressBar::new(cameras.len() as u64).with_style(
        ProgressStyle::with_template("fusing views {bar:30} {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut measured = 0usize;
    for camera in &cameras {
        let maps = render_depth(ctx, &params, camera, raster_mode)?;
        let report = volume.integrate(
            &maps.median,
            camera.width,
            camera.height,
            camera,
            Some(&maps.colour),
        )?;
        measured += report.measurements;
        bar.inc(1);
    }
    bar.finish_and_clear();
    if measured == 0 {
        anyhow::bail!(
            "no view of {} reaches half opacity anywhere: the model is empty or transparent, so \
             there is no surface to mesh",
            args.model.display()
        );
    }
    let bar = ProgressBar::new(volume.block_count() as u64).with_style(
        ProgressStyle::with_template("extracting blocks {bar:30} {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut mesh = volume
        .extract_with_progress(&mut |done, _| bar.set_position(done as u64))
        .context("extracting the surface")?;
    bar.finish_and_clear();
    let dropped = mesh.keep_largest_components(args.min_piece);
    write_mesh(&args.out, &mesh).with_context(|| format!("writing {}", args.out.display()))?;
    if args.score_builtin {
        score_against_builtin(&mesh, args.data_args.builtin_resolution)?;
    }
    println!(
        "wrote {} ({} vertices, {} triangles; {dropped} triangles of small pieces dropped) from {} views, \
         voxel {voxel:.4}, field {:.1} MiB of {} blocks, in {:.1} s",
        args.out.display(),
        mesh.positions.len(),
        mesh.triangles.len(),
        cameras.len(),
        volume.bytes_used() as f64 / f64::from(1 << 20),
        volume.block_count(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Prints the scores of `mesh` against the built-in objects scene's true surfaces, sampled as
/// its training views (`resolution` pixels square) see them.
fn score_against_builtin(mesh: &wgsplat::mesh::Mesh, resolution: u32) -> anyhow::Result<()> {
    use wgsplat::data::builtin::{BuiltinOptions, cameras, scene};
    use wgsplat::mesh::truth::{scene_bounds, surface_points};
    let (train, _) = cameras(&BuiltinOptions {
        resolution,
        ..BuiltinOptions::default()
    });
    let truth_scene = scene();
    let truth = surface_points(&truth_scene, &train, 50_000, 7);
    let (lo, hi) = scene_bounds(&truth_scene).context("the built-in scene has no bounds")?;
    let diagonal = (0..3).map(|k| (hi[k] - lo[k]).powi(2)).sum::<f32>().sqrt();
    for share in [0.005, 0.01] {
        let s = wgsplat::mesh::score(mesh, &truth, share * diagonal)?;
        println!(
            "against the built-in scene's true surfaces at {:.1}% of its diagonal ({:.4}): Chamfer {:.4}, \
             precision {:.3}, recall {:.3}, F-score {:.3}",
            share * 100.0,
            share * diagonal,
            s.chamfer,
            s.precision,
            s.recall,
            s.f_score
        );
    }
    // The largest sphere, above the platform it stands on (z > 0.1), where nothing else nears it.
    let sphere = truth_scene
        .objects()
        .iter()
        .filter_map(|o| match o.shape {
            wgsplat::data::raytrace::Shape::Sphere { center, radius } => Some((center, radius)),
            _ => None,
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let Some((centre, radius)) = sphere else {
        return Ok(());
    };
    match wgsplat::mesh::fit_sphere_near(&mesh.positions, centre, radius, 0.4, |p| p[2] > 0.1) {
        Some((c, r)) => println!(
            "the built-in scene's large sphere (radius {radius}): fitted centre {:.4} off, radius {:.4} off",
            (0..3)
                .map(|k| (c[k] - f64::from(centre[k])).powi(2))
                .sum::<f64>()
                .sqrt(),
            (r - f64::from(radius)).abs()
        ),
        None => println!("the built-in scene's large sphere: too few vertices near it to fit"),
    }
    Ok(())
}

/// `camera` with an ideal pinhole lens at the same pose and focal length: the field is fused from
/// pinhole depth (a wide lens's view is narrowed to what that pinhole sees).
fn pinhole_at(camera: &Camera) -> Camera {
    Camera {
        lens: CameraLens::PINHOLE,
        ..camera.clone()
    }
}

/// The box of the centres between their 10th and 90th percentile along each axis, widened by
/// half its size on every side (floaters far out do not widen it), or `None` without a finite
/// centre.
fn centre_bounds(means: &[[f32; 3]]) -> Option<([f32; 3], [f32; 3])> {
    let mut lo = [0f32; 3];
    let mut hi = [0f32; 3];
    for k in 0..3 {
        let mut values: Vec<f32> = means
            .iter()
            .map(|m| m[k])
            .filter(|v| v.is_finite())
            .collect();
        if values.is_empty() {
            return None;
        }
        values.sort_by(f32::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        let (a, b) = (at(0.1), at(0.9));
        lo[k] = a - 0.5 * (b - a);
        hi[k] = b + 0.5 * (b - a);
    }
    Some((lo, hi))
}

/// `count` cameras of `size`² pixels and a 60° field on a Fibonacci sphere round `bounds`, at
/// 1.2 times its half diagonal from its centre, looking at the centre.
fn sphere_cameras(bounds: ([f32; 3], [f32; 3]), count: usize, size: u32) -> Vec<Camera> {
    let centre = [0, 1, 2].map(|k| 0.5 * f64::from(bounds.0[k] + bounds.1[k]));
    let half_diagonal = 0.5
        * (0..3)
            .map(|k| f64::from(bounds.1[k] - bounds.0[k]).powi(2))
            .sum::<f64>()
            .sqrt();
    let distance = 1.2 * half_diagonal.max(1e-3) / (30f64.to_radians().sin());
    let f = 0.5 * f64::from(size) / 30f64.to_radians().tan();
    (0..count)
        .filter_map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / count as f64;
            let r = (1.0 - z * z).sqrt();
            let phi = i as f64 * std::f64::consts::PI * (3.0 - 5f64.sqrt());
            let eye = [
                centre[0] + distance * r * phi.cos(),
                centre[1] + distance * r * phi.sin(),
                centre[2] + distance * z,
            ];
            let up = if z.abs() > 0.9 {
                [0.0, 1.0, 0.0]
            } else {
                [0.0, 0.0, 1.0]
            };
            let rows = wgsplat::linalg::look_at_rows(eye, centre, up)?;
            let planes = [(0.01 * distance) as f32, (10.0 * distance) as f32];
            Some(Camera::centred(rows, eye, f, [size, size], planes))
        })
        .collect()
}

/// `x0,y0,z0,x1,y1,z1` as a box (corners in either order).
fn parse_crop_box(text: &str) -> anyhow::Result<CropBox> {
    let values: Vec<f32> = text
        .split(',')
        .map(|v| v.trim().parse::<f32>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            anyhow::anyhow!("--crop-box {text:?}: expected six numbers x0,y0,z0,x1,y1,z1")
        })?;
    if values.len() != 6 || values.iter().any(|v| !v.is_finite()) {
        anyhow::bail!("--crop-box {text:?}: expected six finite numbers x0,y0,z0,x1,y1,z1");
    }
    let min = [0, 1, 2].map(|k| values[k].min(values[k + 3]));
    let max = [0, 1, 2].map(|k| values[k].max(values[k + 3]));
    if (0..3).any(|k| max[k] <= min[k]) {
        anyhow::bail!("--crop-box {text:?}: the box is empty along an axis");
    }
    Ok(CropBox { min, max })
}
