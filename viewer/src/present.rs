//! Getting a rendered image onto the screen without a CPU round trip: `shaders/viewer_present.wgsl`
//! packs the rasterizer's f32 RGBA tensor into 8-bit pixels in a GPU buffer, a buffer-to-texture
//! copy moves them into an `Rgba8Unorm` texture, and egui draws that texture as a native one.

use wgsplat::gpu::GpuBuffer;
use wgsplat::gpu::kernels::{Arg, PageRows, viewer_present};
use wgsplat::tensor::Tensor;
use wgsplat::{GpuContext, MemoryCategory};

/// Pixels per texture row in the staging buffer: copies need rows aligned to 256 bytes.
fn row_stride(width: u32) -> u32 {
    width.div_ceil(64) * 64
}

/// An egui texture fed from the GPU, with its staging buffer.
pub struct PresentTarget {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The texture id egui draws.
    pub id: eframe::egui::TextureId,
    texture: wgpu::Texture,
    staging: GpuBuffer,
}

impl PresentTarget {
    /// A `width` x `height` texture registered with egui's renderer.
    pub fn new(
        ctx: &GpuContext,
        renderer: &mut egui_wgpu::Renderer,
        width: u32,
        height: u32,
    ) -> anyhow::Result<Self> {
        let texture = ctx.device().create_texture(&wgpu::TextureDescriptor {
            label: Some("viewer/scene"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        let id = renderer.register_native_texture(ctx.device(), &view, wgpu::FilterMode::Nearest);
        let bytes = u64::from(row_stride(width)) * u64::from(height) * 4;
        let mut enc = ctx.encoder("viewer: staging");
        let staging = enc.alloc(bytes, MemoryCategory::Staging, "viewer/present")?;
        ctx.submit(enc)?;
        Ok(PresentTarget {
            width,
            height,
            id,
            texture,
            staging,
        })
    }

    /// Unregisters the texture from egui.
    pub fn release(self, renderer: &mut egui_wgpu::Renderer) {
        renderer.free_texture(&self.id);
    }

    /// Converts `image` (`[height, width, 4]` f32) into the texture; with `reference` (packed 8-bit
    /// RGBA, `width * height` words), shows `|image - reference| * gain` instead.
    pub fn present(
        &self,
        ctx: &GpuContext,
        image: &Tensor,
        reference: Option<(&GpuBuffer, f32)>,
    ) -> anyhow::Result<()> {
        let shown = match reference {
            Some((truth, gain)) => Shown::Difference(truth, gain),
            None => Shown::Colour,
        };
        self.present_shown(ctx, image, shown)
    }

    /// Shows the normals of a render (`normals`, `[height, width, 3]` alpha-weighted sums, and
    /// `image` for the opacity) in the normal-map convention.
    pub fn present_normals(
        &self,
        ctx: &GpuContext,
        image: &Tensor,
        normals: &Tensor,
    ) -> anyhow::Result<()> {
        let pixels = u64::from(self.width) * u64::from(self.height);
        anyhow::ensure!(
            normals.len() == pixels * 3 && normals.num_pages() == 1,
            "the normals hold {} values in {} pages, the view {} pixels",
            normals.len(),
            normals.num_pages(),
            pixels
        );
        self.present_shown(ctx, image, Shown::Normals(normals))
    }

    fn present_shown(&self, ctx: &GpuContext, image: &Tensor, shown: Shown) -> anyhow::Result<()> {
        let pixels = u64::from(self.width) * u64::from(self.height);
        anyhow::ensure!(
            image.len() == pixels * 4,
            "the render has {} values, the view {} pixels",
            image.len(),
            pixels
        );
        u32::try_from(pixels)
            .map_err(|_| anyhow::anyhow!("{pixels} pixels do not fit a u32 index"))?;
        // One row per pixel, paged like the image (4 floats a pixel).
        let pixels_per_page = image.page_elems() / 4;
        let params = |page: PageRows| viewer_present::PresentParams {
            width: self.width,
            height: self.height,
            row_stride: row_stride(self.width),
            first_pixel: page.first_row as u32,
            page_pixels: page.rows as u32,
            difference_gain: match shown {
                Shown::Difference(_, gain) => gain,
                _ => 1.0,
            },
            ..Default::default()
        };
        let out = || Arg::raw(self.staging.raw());
        let mut enc = ctx.encoder("viewer: present");
        match shown {
            Shown::Difference(truth, _) => {
                let kernel = ctx.typed::<viewer_present::PresentDifference>()?;
                enc.run_pages(&kernel, pixels, pixels_per_page, |page| {
                    let bindings = viewer_present::PresentDifferenceBindings {
                        image: image.page_arg(page.page),
                        out: out(),
                        reference: Arg::raw(truth.raw()),
                    };
                    (params(page), bindings)
                })?
            }
            Shown::Normals(normals) => {
                let kernel = ctx.typed::<viewer_present::PresentNormals>()?;
                enc.run_pages(&kernel, pixels, pixels_per_page, |page| {
                    let bindings = viewer_present::PresentNormalsBindings {
                        image: image.page_arg(page.page),
                        out: out(),
                        normals: normals.page_arg(0),
                    };
                    (params(page), bindings)
                })?
            }
            Shown::Colour => {
                let kernel = ctx.typed::<viewer_present::Present>()?;
                enc.run_pages(&kernel, pixels, pixels_per_page, |page| {
                    let bindings = viewer_present::PresentBindings {
                        image: image.page_arg(page.page),
                        out: out(),
                    };
                    (params(page), bindings)
                })?
            }
        }
        enc.raw().copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: self.staging.raw(),
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row_stride(self.width) * 4),
                    rows_per_image: Some(self.height),
                },
            },
            self.texture.as_image_copy(),
            wgpu::Extent3d {
                width: self.width,
                height: self.height,
                depth_or_array_layers: 1,
            },
        );
        ctx.submit(enc)?;
        Ok(())
    }
}

/// Uploads 8-bit RGBA pixels as one packed word each (the reference of a difference view).
pub fn upload_reference(ctx: &GpuContext, pixels: &[u8]) -> anyhow::Result<GpuBuffer> {
    let packed = wgsplat::data::image::pack_rgba8(pixels);
    let mut enc = ctx.encoder("viewer: reference image");
    let buffer = enc.alloc(
        (packed.len().max(1) * 4) as u64,
        MemoryCategory::Other,
        "viewer/reference",
    )?;
    enc.upload(buffer.raw(), 0, bytemuck::cast_slice(&packed))?;
    ctx.submit(enc)?;
    Ok(buffer)
}

/// What a present pass shows.
#[derive(Clone, Copy)]
enum Shown<'a> {
    Colour,
    /// The scaled absolute difference to a packed reference image.
    Difference(&'a GpuBuffer, f32),
    /// The render's normals.
    Normals(&'a Tensor),
}
