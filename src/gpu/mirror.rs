//! Checks that a Rust `#[repr(C)]` struct mirrors a WGSL struct: same size and the same member
//! names at the same offsets, as reflected by naga from the shader file.

use crate::gpu::shader::{self, Variant};

/// A Rust struct that mirrors a WGSL struct. Build one with [`crate::mirror!`].
#[derive(Clone, Debug)]
pub struct Mirror {
    /// Rust type name.
    pub rust: &'static str,
    /// Shader file holding the WGSL struct.
    pub file: &'static str,
    /// WGSL struct name.
    pub wgsl: &'static str,
    /// `size_of` the Rust type.
    pub size: usize,
    /// Rust field names and `offset_of` each.
    pub fields: Vec<(&'static str, usize)>,
}

/// Describes a Rust struct as a [`Mirror`] of a WGSL struct.
#[macro_export]
macro_rules! mirror {
    ($ty:ty, $file:expr, $wgsl:expr, [$($field:ident),* $(,)?]) => {
        $crate::gpu::mirror::Mirror {
            rust: stringify!($ty),
            file: $file,
            wgsl: $wgsl,
            size: ::std::mem::size_of::<$ty>(),
            fields: vec![$((stringify!($field), ::std::mem::offset_of!($ty, $field))),*],
        }
    };
}

impl Mirror {
    /// Compares against naga's reflection; the error names the first difference.
    pub fn check(&self) -> Result<(), String> {
        let compiled = shader::compile(self.file, Variant::PORTABLE).map_err(|e| e.to_string())?;
        let ty = compiled
            .module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(self.wgsl))
            .map(|(_, t)| t)
            .ok_or_else(|| format!("{}: no struct {} in {}", self.rust, self.wgsl, self.file))?;
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            return Err(format!("{} in {} is not a struct", self.wgsl, self.file));
        };
        if *span as usize != self.size {
            return Err(format!(
                "{}: Rust size {} != WGSL {} size {}",
                self.rust, self.size, self.wgsl, span
            ));
        }
        if members.len() != self.fields.len() {
            return Err(format!(
                "{}: {} Rust fields, {} WGSL members",
                self.rust,
                self.fields.len(),
                members.len()
            ));
        }
        for (member, (name, offset)) in members.iter().zip(&self.fields) {
            let wgsl_name = member.name.as_deref().unwrap_or("");
            if wgsl_name != *name || member.offset as usize != *offset {
                return Err(format!(
                    "{}: field {name} at {offset} vs WGSL {wgsl_name} at {}",
                    self.rust, member.offset
                ));
            }
        }
        Ok(())
    }
}
