//! The Gaussians of a model on the GPU: one row tensor per attribute, all paged with the same
//! number of rows per page so a kernel can bind page `p` of each and see the same Gaussians.

use super::reference::CpuGaussians;
use super::sh::coefficient_count;
use crate::error::{Error, Result};
use crate::gpu::{Encoder, GpuContext, MemoryCategory};
use crate::tensor::{DType, Tensor};

/// Widest row of any attribute (16 SH coefficients x RGB), which fixes the rows per page.
pub const MAX_ROW_WIDTH: u64 = 48;

/// GPU tensors of a set of Gaussians, in the pre-activation form the optimizer updates.
#[derive(Clone, Debug)]
pub struct GaussianTensors {
    /// Positions, `[N, 3]`.
    pub means: Tensor,
    /// Log scales, `[N, 3]`.
    pub log_scales: Tensor,
    /// Unnormalised rotations (w, x, y, z), `[N, 4]`.
    pub quats: Tensor,
    /// Logit opacities, `[N]`.
    pub opacity_logits: Tensor,
    /// SH DC terms, `[N, 3]`.
    pub sh_dc: Tensor,
    /// SH coefficients 1.., `[N, K, 3]` with K = 0, 3, 8 or 15.
    pub sh_rest: Tensor,
    /// Rows per page shared by every attribute.
    pub rows_per_page: u64,
}

/// One attribute (parameter group) of a Gaussian, in [`GaussianTensors::attributes`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Attribute {
    /// World positions `[N, 3]`.
    Means,
    /// Log scales `[N, 3]`.
    LogScales,
    /// Unnormalised quaternions (w, x, y, z) `[N, 4]`.
    Quats,
    /// Logit opacities `[N]`.
    OpacityLogits,
    /// SH DC coefficients `[N, 3]`.
    ShDc,
    /// SH coefficients past DC `[N, 3K]`.
    ShRest,
}

impl Attribute {
    /// Every attribute, in [`GaussianTensors::attributes`] order.
    pub const ALL: [Attribute; 6] = [
        Attribute::Means,
        Attribute::LogScales,
        Attribute::Quats,
        Attribute::OpacityLogits,
        Attribute::ShDc,
        Attribute::ShRest,
    ];

    /// Its position in [`Attribute::ALL`] (and in [`GaussianTensors::attributes`]).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its name in checkpoints and messages.
    pub fn name(self) -> &'static str {
        ATTRIBUTE_NAMES[self.index()]
    }

    /// Its tensor's shape for `n` Gaussians with SH up to `max_sh_degree`.
    pub fn shape(self, n: usize, max_sh_degree: u32) -> Vec<usize> {
        match self {
            Attribute::Means | Attribute::LogScales | Attribute::ShDc => vec![n, 3],
            Attribute::Quats => vec![n, 4],
            Attribute::OpacityLogits => vec![n],
            Attribute::ShRest => vec![n, coefficient_count(max_sh_degree) - 1, 3],
        }
    }

    /// Floats per Gaussian (the product of [`Attribute::shape`] past the row count).
    pub fn width(self, max_sh_degree: u32) -> u64 {
        self.shape(1, max_sh_degree)
            .iter()
            .map(|&d| d as u64)
            .product()
    }
}

/// Names of the attributes, in [`Attribute::ALL`] order.
pub const ATTRIBUTE_NAMES: [&str; 6] = [
    "means",
    "log_scales",
    "quats",
    "opacity_logits",
    "sh_dc",
    "sh_rest",
];

impl GaussianTensors {
    /// Uninitialised f32 tensors for `n` Gaussians with SH up to `max_sh_degree`.
    pub fn uninit(
        enc: &mut Encoder,
        n: usize,
        max_sh_degree: u32,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Self> {
        Self::uninit_typed(enc, DType::F32, n, max_sh_degree, category, label)
    }

    /// [`GaussianTensors::uninit`] with elements of `dtype` (4 bytes: packed optimizer state).
    pub fn uninit_typed(
        enc: &mut Encoder,
        dtype: DType,
        n: usize,
        max_sh_degree: u32,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Self> {
        if max_sh_degree > 3 {
            return Err(Error::InvalidArgument {
                op: "GaussianTensors",
                detail: format!("SH degree {max_sh_degree} is above 3"),
            });
        }
        let rows = enc.ctx().rows_per_page(MAX_ROW_WIDTH);
        let mut make = |attribute: Attribute| {
            Tensor::uninit_rows(
                enc,
                dtype,
                &attribute.shape(n, max_sh_degree),
                rows,
                category,
                &format!("{label}.{}", attribute.name()),
            )
        };
        Ok(GaussianTensors {
            means: make(Attribute::Means)?,
            log_scales: make(Attribute::LogScales)?,
            quats: make(Attribute::Quats)?,
            opacity_logits: make(Attribute::OpacityLogits)?,
            sh_dc: make(Attribute::ShDc)?,
            sh_rest: make(Attribute::ShRest)?,
            rows_per_page: rows,
        })
    }

    /// Device bytes [`GaussianTensors::uninit`] takes for `n` Gaussians in `category` in `ctx`
    /// (the memory plan's unit: the parameters, the gradient chunk and each moment set are one
    /// such set; a packed moment set has the same bytes).
    pub fn planned_bytes(
        ctx: &GpuContext,
        category: MemoryCategory,
        n: u64,
        max_sh_degree: u32,
    ) -> u64 {
        let rows = ctx.rows_per_page(MAX_ROW_WIDTH);
        let bytes = |a: &Attribute| {
            Tensor::planned_rows_bytes(category, DType::F32, n, a.width(max_sh_degree), rows)
        };
        Attribute::ALL.iter().map(bytes).sum()
    }

    /// Zero-filled f32 tensors with the same shapes and layout as `other` (gradients, moments).
    pub fn zeros_like(
        enc: &mut Encoder,
        other: &GaussianTensors,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Self> {
        Self::zeros_like_typed(enc, other, DType::F32, category, label)
    }

    /// [`GaussianTensors::zeros_like`] with elements of `dtype` (4 bytes: packed moments).
    pub fn zeros_like_typed(
        enc: &mut Encoder,
        other: &GaussianTensors,
        dtype: DType,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Self> {
        let t = Self::uninit_typed(
            enc,
            dtype,
            other.len() as usize,
            other.max_sh_degree(),
            category,
            label,
        )?;
        for tensor in t.attributes() {
            for page in 0..tensor.num_pages() {
                enc.clear(tensor.page(page).raw(), 0, tensor.page_len(page) * 4);
            }
        }
        Ok(t)
    }

    /// A new set shaped like `self` (count, SH size, paging), in `self`'s memory category, holding
    /// `data`: one host vector per attribute in [`Attribute::ALL`] order, of the element type
    /// the new tensors take.
    pub fn with_rows<T: crate::tensor::Element>(
        &self,
        enc: &mut Encoder,
        label: &str,
        data: &[Vec<T>],
    ) -> Result<GaussianTensors> {
        let out = Self::uninit_typed(
            enc,
            T::DTYPE,
            self.len() as usize,
            self.max_sh_degree(),
            self.means.category(),
            label,
        )?;
        if data.len() != 6 {
            return Err(Error::Shape {
                op: "GaussianTensors::with_rows",
                detail: format!("6 attribute vectors expected, got {}", data.len()),
            });
        }
        for (t, values) in out.attributes().into_iter().zip(data) {
            if !t.is_empty() {
                t.write(enc, values)?;
            }
        }
        Ok(out)
    }

    /// Uploads CPU Gaussians, keeping SH up to `max_sh_degree`.
    pub fn upload(
        enc: &mut Encoder,
        cpu: &CpuGaussians,
        max_sh_degree: u32,
        category: MemoryCategory,
        label: &str,
    ) -> Result<Self> {
        let n = cpu.means.len();
        let lengths = [
            cpu.log_scales.len(),
            cpu.quats.len(),
            cpu.opacity_logits.len(),
            cpu.sh.len(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(Error::Shape {
                op: "GaussianTensors::upload",
                detail: format!("{n} means but attribute lengths {lengths:?}"),
            });
        }
        let t = Self::uninit(enc, n, max_sh_degree, category, label)?;
        let rest = coefficient_count(max_sh_degree) - 1;
        let flat3 = |v: &[[f32; 3]]| v.iter().flatten().copied().collect::<Vec<f32>>();
        t.means.write(enc, &flat3(&cpu.means))?;
        t.log_scales.write(enc, &flat3(&cpu.log_scales))?;
        t.quats.write(
            enc,
            &cpu.quats.iter().flatten().copied().collect::<Vec<f32>>(),
        )?;
        t.opacity_logits.write(enc, &cpu.opacity_logits)?;
        t.sh_dc
            .write(enc, &cpu.sh.iter().flat_map(|c| c[0]).collect::<Vec<f32>>())?;
        let rest_data: Vec<f32> = cpu
            .sh
            .iter()
            .flat_map(|c| c[1..=rest].iter().flatten().copied())
            .collect();
        t.sh_rest.write(enc, &rest_data)?;
        Ok(t)
    }

    /// Reads everything back (SH coefficients past the model's degree are zero).
    pub fn download(&self, ctx: &GpuContext) -> Result<CpuGaussians> {
        crate::gpu::readback::blocking("the model's parameters", self.fetch(ctx))
    }

    /// [`GaussianTensors::download`] in the form that also runs in a browser, where the data is
    /// awaited (see [`crate::gpu::Readback::fetch`]).
    pub async fn fetch(&self, ctx: &GpuContext) -> Result<CpuGaussians> {
        let rows3 = |v: Vec<f32>| -> Vec<[f32; 3]> {
            v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        let dc = rows3(self.sh_dc.fetch::<f32>(ctx).await?);
        let rest = self.sh_rest.fetch::<f32>(ctx).await?;
        let k = self.sh_rest_count() as usize;
        let sh = dc
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut c = [[0f32; 3]; 16];
                c[0] = *d;
                for j in 0..k {
                    c[j + 1] = [
                        rest[(i * k + j) * 3],
                        rest[(i * k + j) * 3 + 1],
                        rest[(i * k + j) * 3 + 2],
                    ];
                }
                c
            })
            .collect();
        Ok(CpuGaussians {
            means: rows3(self.means.fetch::<f32>(ctx).await?),
            log_scales: rows3(self.log_scales.fetch::<f32>(ctx).await?),
            quats: self
                .quats
                .fetch::<f32>(ctx)
                .await?
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect(),
            opacity_logits: self.opacity_logits.fetch::<f32>(ctx).await?,
            sh,
        })
    }

    /// Number of Gaussians.
    pub fn len(&self) -> u64 {
        self.opacity_logits.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SH rest coefficients stored per Gaussian.
    pub fn sh_rest_count(&self) -> u32 {
        self.sh_rest.shape().get(1).copied().unwrap_or(0) as u32
    }

    /// The largest SH degree the model stores.
    pub fn max_sh_degree(&self) -> u32 {
        match self.sh_rest_count() {
            0..=2 => 0,
            3..=7 => 1,
            8..=14 => 2,
            _ => 3,
        }
    }

    /// The six attribute tensors, mutably, in [`ATTRIBUTE_NAMES`] order (row surgery replaces
    /// them one at a time; keep their lengths equal).
    pub fn attributes_mut(&mut self) -> [&mut Tensor; 6] {
        [
            &mut self.means,
            &mut self.log_scales,
            &mut self.quats,
            &mut self.opacity_logits,
            &mut self.sh_dc,
            &mut self.sh_rest,
        ]
    }

    /// The six attribute tensors, in [`ATTRIBUTE_NAMES`] order.
    pub fn attributes(&self) -> [&Tensor; 6] {
        [
            &self.means,
            &self.log_scales,
            &self.quats,
            &self.opacity_logits,
            &self.sh_dc,
            &self.sh_rest,
        ]
    }

    /// Gaussians in page `page` (every attribute has the same count there).
    pub fn page_rows(&self, page: usize) -> u64 {
        self.len()
            .saturating_sub(page as u64 * self.rows_per_page)
            .min(self.rows_per_page)
    }

    /// Number of pages.
    pub fn num_pages(&self) -> usize {
        self.len().div_ceil(self.rows_per_page) as usize
    }
}
