//! wgsplat in a browser page: the viewer compiled to WebAssembly, on the browser's WebGPU through
//! wgpu, with the project's own readers and rasterizer kernels. `web/build.sh` builds the page
//! into `target/web/`; any static file server serves it.
//!
//! The page opens a model from `?model=NAME` (a file served beside the page), a file picker or a
//! drop, and draws it with the desktop viewer's controls. Scripts follow it through the title:
//! `wgsplat: ready` once the first frame of the requested model is on screen, `wgsplat: error:
//! MESSAGE` when something failed (the message is shown in the page too).
//!
//! `?check=shaders` instead compiles every kernel variant with the browser's own WebGPU compiler
//! and lists what fails.
//!
//! Natively the crate is empty: everything here is for `wasm32`.

#[cfg(target_arch = "wasm32")]
mod app;
#[cfg(target_arch = "wasm32")]
mod check;
#[cfg(target_arch = "wasm32")]
mod lod;
#[cfg(target_arch = "wasm32")]
mod page;
#[cfg(target_arch = "wasm32")]
mod training;

#[cfg(target_arch = "wasm32")]
mod entry {
    use crate::app::WebApp;
    use crate::page::{self, Query};
    use wasm_bindgen::prelude::*;

    /// WebGPU's default `maxStorageBufferBindingSize` (128 MiB).
    const DEFAULT_BINDING_BYTES: u64 = 128 << 20;

    /// Starts the page: opens the GPU, then the app on the page's canvas. Any failure is shown in
    /// the page and put in its title.
    #[wasm_bindgen(start)]
    pub fn start() {
        wasm_bindgen_futures::spawn_local(async {
            if let Err(err) = run().await {
                page::fail(&format!("{err:#}"));
            }
        });
    }

    async fn run() -> anyhow::Result<()> {
        page::set_title("wgsplat: loading");
        let query = Query::from_location()?;
        page::status("opening WebGPU...", false);
        let options = wgsplat::ContextOptions {
            portable: query.portable,
            poison: false,
            // Every tensor in pages of at most WebGPU's default maxStorageBufferBindingSize,
            // whatever the adapter allows: what runs here runs on any WebGPU device.
            max_page_bytes: Some(DEFAULT_BINDING_BYTES),
            ..Default::default()
        };
        let ctx = wgsplat::GpuContext::open(options)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        page::set_data("max-binding-bytes", &ctx.page_bytes().to_string());
        if query.check_shaders {
            let report = crate::check::check_shaders(&ctx).await;
            page::set_data("shaders-checked", &report.checked.to_string());
            page::set_data("shader-failures", &report.failures.len().to_string());
            if report.failures.is_empty() {
                page::status(
                    &format!("{} kernel variants compiled", report.checked),
                    false,
                );
                page::set_title("wgsplat: ready");
                return Ok(());
            }
            anyhow::bail!(
                "{} of {} kernel variants failed to compile:\n{}",
                report.failures.len(),
                report.checked,
                report.failures.join("\n")
            );
        }
        let canvas = page::canvas()?;
        let setup = egui_wgpu::WgpuSetup::Existing(egui_wgpu::WgpuSetupExisting {
            instance: ctx.instance().clone(),
            adapter: ctx.adapter().clone(),
            device: ctx.device().clone(),
            queue: ctx.queue().clone(),
        });
        let web_options = eframe::WebOptions {
            wgpu_options: egui_wgpu::WgpuConfiguration {
                wgpu_setup: setup,
                ..Default::default()
            },
            dithering: false,
            ..Default::default()
        };
        page::hide_status();
        eframe::WebRunner::new()
            .start(
                canvas,
                web_options,
                Box::new(move |cc| Ok(Box::new(WebApp::new(cc, ctx, query)))),
            )
            .await
            .map_err(page::js_error)?;
        Ok(())
    }
}
