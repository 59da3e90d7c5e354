//! NumPy `.npy` files of 32-bit floats (version 1.0, little endian, C order): how the depth and
//! normal maps reach Python, Open3D or a notebook without a converter.

use std::path::Path;

use crate::data::image::write_atomically;
use crate::error::Result;

/// Writes `values` (row-major, `shape[0] × shape[1] × …` of them) as a float32 `.npy` array of
/// `shape`, atomically.
pub fn write_npy_f32(
    path: &Path,
    shape: &[usize],
    values: impl Iterator<Item = f32>,
) -> Result<()> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic, version, header length, then the header padded with spaces to a multiple of 64
    // bytes (the format's alignment) and ended by a newline.
    let unpadded = 10 + header.len() + 1;
    let padding = unpadded.div_ceil(64) * 64 - unpadded;
    let count: usize = shape.iter().product();
    let mut bytes = Vec::with_capacity(unpadded + padding + count * 4);
    bytes.extend_from_slice(b"\x93NUMPY\x01\x00");
    bytes.extend_from_slice(&((header.len() + padding + 1) as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(std::iter::repeat_n(b' ', padding));
    bytes.push(b'\n');
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    debug_assert_eq!(
        bytes.len(),
        unpadded + padding + count * 4,
        "values match the shape"
    );
    write_atomically(path, &bytes)
}
