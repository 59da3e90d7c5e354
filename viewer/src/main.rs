//! wgsplat-viewer: the desktop front end. The live training view lands with issue 7; until then this
//! binary reports the adapter it would use, so the crate builds and links against the library.

fn main() -> anyhow::Result<()> {
    let ctx = wgsplat::gpu::GpuContext::from_env()?;
    println!(
        "wgsplat-viewer: the interactive viewer is not built yet; adapter: {}",
        ctx.info().name
    );
    Ok(())
}
