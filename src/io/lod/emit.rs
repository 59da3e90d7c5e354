//! Writing a frame's cut as the renderer's tensors (`shaders/lod_resolve.wgsl`,
//! `shaders/lod_emit.wgsl`): each node in the cut is resolved to its pool row and its parent's,
//! then copied out and, near the threshold, blended towards its parent.

use super::cut::{Cut, CutOptions, LodGpu, single_page};
use crate::error::Result;
use crate::gpu::kernels;
use crate::gpu::kernels::lod_emit::{BlendParentBindings, EmitRowsBindings};
use crate::gpu::{GpuContext, MemoryCategory};
use crate::ops;
use crate::splat::{Camera, GaussianTensors};
use crate::tensor::{DType, Tensor};

impl LodGpu {
    /// Writes the cut's Gaussians, blended towards their parents, as renderer tensors.
    pub fn emit(
        &self,
        ctx: &GpuContext,
        camera: &Camera,
        options: CutOptions,
        cut: &Cut,
    ) -> Result<GaussianTensors> {
        let n = cut.count as usize;
        let mut enc = ctx.encoder("lod-emit");
        let out = GaussianTensors::uninit(
            &mut enc,
            n.max(1),
            self.sh_degree,
            MemoryCategory::FrameScratch,
            "wgsplat/lod-cut",
        )?;
        let rows_per_page = out.rows_per_page;
        if n == 0 {
            // Nothing in view: one Gaussian that draws nothing.
            out.means.write(&mut enc, &[0f32; 3])?;
            out.log_scales.write(&mut enc, &[-20f32; 3])?;
            out.quats.write(&mut enc, &[1f32, 0.0, 0.0, 0.0])?;
            out.opacity_logits.write(&mut enc, &[-30f32])?;
            out.sh_dc.write(&mut enc, &[0f32; 3])?;
            out.sh_rest
                .write(&mut enc, &vec![0f32; out.sh_rest.len() as usize])?;
            ctx.submit(enc)?;
            return Ok(out);
        }
        let records = Tensor::uninit(
            &mut enc,
            DType::U32,
            &[4 * n],
            MemoryCategory::FrameScratch,
            "wgsplat/lod-records",
        )?;
        single_page(ctx, &records, "cut records")?;
        let resolve = ctx.typed::<kernels::lod_resolve::CutResolve>()?;
        let grid = ops::grid(&enc, cut.count, resolve.threads())?;
        let params = self.cut_params(camera, options, cut.count as u32);
        enc.run(
            &resolve,
            &params,
            kernels::lod_resolve::CutResolveBindings {
                cut_nodes: cut.nodes.page_arg(0),
                spheres: self.spheres.page_arg(0),
                links: self.links.page_arg(0),
                pages_info: self.pages_info.page_arg(0),
                cut_state: cut.state.page_arg(0),
                records: records.page_arg(0),
            },
            grid,
        )?;
        let emit = ctx.typed::<kernels::lod_emit::EmitRows>()?;
        let blend = ctx.typed::<kernels::lod_emit::BlendParent>()?;
        let coeffs = (self.sh_degree + 1) * (self.sh_degree + 1);
        let pages = cut.count.div_ceil(rows_per_page) as usize;
        for blending in [false, true] {
            for page in 0..pages {
                let out_row0 = page as u64 * rows_per_page;
                let out_rows = rows_per_page.min(cut.count - out_row0);
                let grid = ops::grid(&enc, out_rows, emit.threads())?;
                for (b, buffer) in self.pool_buffers.iter().enumerate() {
                    let params = kernels::lod_emit::EmitParams {
                        count: cut.count as u32,
                        pool_row0: (b as u64 * self.rows_per_buffer) as u32,
                        pool_rows: (buffer.len() / u64::from(self.row_width)) as u32,
                        row_width: self.row_width,
                        sh_coeffs: coeffs,
                        out_row0: out_row0 as u32,
                        out_rows: out_rows as u32,
                        ..Default::default()
                    };
                    // Both kernels bind the same buffers (their binding structs are generated
                    // one per entry point).
                    macro_rules! row_bindings {
                        ($bindings:ident) => {
                            $bindings {
                                records: records.page_arg(0),
                                pool: buffer.page_arg(0),
                                means: out.means.page_arg(page),
                                log_scales: out.log_scales.page_arg(page),
                                quats: out.quats.page_arg(page),
                                opacity_logits: out.opacity_logits.page_arg(page),
                                sh_dc: out.sh_dc.page_arg(page),
                                sh_rest: out.sh_rest.page_arg_or_absent(page),
                            }
                        };
                    }
                    if blending {
                        let bindings = row_bindings!(BlendParentBindings);
                        enc.run(&blend, &params, bindings, grid)?;
                    } else {
                        let bindings = row_bindings!(EmitRowsBindings);
                        enc.run(&emit, &params, bindings, grid)?;
                    }
                }
            }
        }
        ctx.submit(enc)?;
        Ok(out)
    }
}
