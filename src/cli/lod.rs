//! `wgsplat lod`: a model (any format) to a level-of-detail folder that `render`, the viewer and
//! the page draw under a splat budget; also what `merge --lod` runs on the merged model.

use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::lod::write::DEFAULT_PAGE_NODES;
use wgsplat::io::lod::{PageEncoding, WriteOptions, build_tree, write_lod};
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
pub fn write_lod_of(model: &PlyModel, out: &Path, pages: PageArgs) -> anyhow::Result<()> {
    let options = pages.options()?;
    let started = Instant::now();
    let tree = build_tree(model)?;
    let built = started.elapsed().as_secs_f64();
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
        started.elapsed().as_secs_f64() - built
    );
    Ok(())
}

/// Runs `wgsplat lod`.
pub fn lod(args: LodArgs) -> anyhow::Result<()> {
    wgsplat::data::check_regular_file(&args.model, "the model")?;
    let format = ModelFormat::from_path(&args.model)?;
    let model = read_model(&args.model, format)
        .with_context(|| format!("reading {}", args.model.display()))?;
    write_lod_of(&model, &args.out, args.pages)
}
