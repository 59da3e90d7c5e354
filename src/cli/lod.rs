//! `wgsplat lod`: a model (any format) to a level-of-detail folder that `render`, the viewer and
//! the page draw under a splat budget; also what `merge --lod` runs on the merged model.

use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::lod::write::DEFAULT_PAGE_NODES;
use wgsplat::io::lod::{
    LodTree, PageEncoding, RefineOptions, WriteOptions, build_tree, refine_tree, write_lod,
};
use wgsplat::io::ply::PlyModel;

/// Options of `wgsplat lod`.
#[derive(clap::Args)]
pub struct LodArgs {
    /// The model: a 3DGS PLY, compressed PLY, .splat, SPZ or SOG file.
    model: PathBuf,
    /// The level-of-detail folder to write (conventionally SCENE.lod); a previous one there is
    /// replaced.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    pages: PageArgs,
    #[command(flatten)]
    refine: RefineArgs,
}

/// How the merged nodes are optimised before writing (`lod`, `merge --lod`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct RefineArgs {
    /// Optimise the merged nodes for this many steps against renders of the model from random
    /// cameras, so that coarse cuts keep its look (Hierarchical 3DGS's hierarchy optimisation;
    /// docs/lod.md); 0 keeps the plain merge. Each step draws one cut: about a second for a
    /// million Gaussians on a CPU adapter, much less on a GPU.
    #[arg(long, default_value_t = wgsplat::io::lod::refine::DEFAULT_STEPS)]
    refine_steps: usize,
    /// Side of the square views the refinement renders, in pixels.
    #[arg(long, default_value_t = 128)]
    refine_size: u32,
    /// The world's up axis (x, y, z, -x, -y or -z): the refinement's cameras look down from above
    /// the ground. Without it they look from every side.
    #[arg(long, value_parser = parse_axis, allow_hyphen_values = true)]
    up: Option<[f64; 3]>,
    /// Seed of the refinement's cameras and budgets.
    #[arg(long, default_value_t = 0)]
    refine_seed: u64,
}

fn parse_axis(text: &str) -> Result<[f64; 3], String> {
    let (sign, axis) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    let k = match axis {
        "x" => 0,
        "y" => 1,
        "z" => 2,
        _ => {
            return Err(format!(
                "'{text}' is not an axis: expected x, y, z, -x, -y or -z"
            ));
        }
    };
    let mut v = [0.0; 3];
    v[k] = sign;
    Ok(v)
}

impl RefineArgs {
    fn options(self) -> anyhow::Result<RefineOptions> {
        let options = RefineOptions {
            steps: self.refine_steps,
            size: self.refine_size,
            up: self.up,
            seed: self.refine_seed,
            ..Default::default()
        };
        options.check()?;
        Ok(options)
    }

    /// Optimises `tree`'s merged nodes as asked (nothing with `--refine-steps 0`).
    fn run(self, tree: &mut LodTree) -> anyhow::Result<()> {
        let options = self.options()?;
        if self.refine_steps == 0 {
            return Ok(());
        }
        let ctx = wgsplat::GpuContext::new(wgsplat::ContextOptions::from_env()?)
            .context("opening the GPU for the refinement")?;
        let started = Instant::now();
        let total = self.refine_steps;
        let mut last_print = Instant::now();
        let report = refine_tree(&ctx, tree, &options, &mut |step, loss| {
            if last_print.elapsed().as_secs_f64() >= 10.0 || step + 1 == total {
                last_print = Instant::now();
                let done = (step + 1) as f64;
                let eta = started.elapsed().as_secs_f64() / done * (total as f64 - done);
                println!(
                    "refine: step {}/{total}, loss {loss:.4}, about {eta:.0} s left",
                    step + 1
                );
            }
        })?;
        println!(
            "refined {} merged nodes in {} steps ({:.1} s): held-out views at a tenth of the \
             Gaussians {:.2} dB -> {:.2} dB against the full model",
            report.nodes_updated,
            report.steps,
            started.elapsed().as_secs_f64(),
            report.held_out_psnr_before,
            report.held_out_psnr_after
        );
        Ok(())
    }
}

/// How the pages of a level-of-detail folder are written (`lod`, `merge --lod`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct PageArgs {
    /// Most Gaussians in a page: the unit a viewer loads and evicts.
    #[arg(long, default_value_t = DEFAULT_PAGE_NODES)]
    page_nodes: u64,
    /// Store pages as f32 3DGS PLY (lossless, about 4 times larger) instead of compressed PLY.
    #[arg(long)]
    lossless: bool,
}

impl PageArgs {
    fn options(self) -> anyhow::Result<WriteOptions> {
        if !(8..=1 << 24).contains(&self.page_nodes) {
            anyhow::bail!("--page-nodes {}: expected 8 to 16777216", self.page_nodes);
        }
        Ok(WriteOptions {
            page_nodes: self.page_nodes,
            encoding: if self.lossless {
                PageEncoding::Ply
            } else {
                PageEncoding::CompressedPly
            },
        })
    }
}

/// Builds and writes the level of detail of `model` into `out`, printing a summary.
pub fn write_lod_of(
    model: &PlyModel,
    out: &Path,
    pages: PageArgs,
    refine: RefineArgs,
) -> anyhow::Result<()> {
    let options = pages.options()?;
    refine.options()?;
    wgsplat::io::lod::write::check_output(out)?;
    let started = Instant::now();
    let mut tree = build_tree(model)?;
    let built = started.elapsed().as_secs_f64();
    refine.run(&mut tree)?;
    let started = Instant::now();
    let index =
        write_lod(&tree, out, options).with_context(|| format!("writing {}", out.display()))?;
    let bytes: u64 = index.pages.iter().map(|p| p.bytes).sum::<u64>() + index.nodes * 32;
    println!(
        "wrote {}: {} Gaussians under {} merged nodes, depth {}, {} pages, {:.1} MB \
         (built in {built:.1} s, written in {:.1} s)",
        out.display(),
        index.leaves,
        index.nodes - index.leaves,
        index.depth,
        index.pages.len(),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs `wgsplat lod`.
pub fn lod(args: LodArgs) -> anyhow::Result<()> {
    wgsplat::data::check_regular_file(&args.model, "the model")?;
    let format = ModelFormat::from_path(&args.model)?;
    let model = read_model(&args.model, format)
        .with_context(|| format!("reading {}", args.model.display()))?;
    write_lod_of(&model, &args.out, args.pages, args.refine)
}
