//! Reading PlayCanvas's compressed PLY ([`super::compressed_ply`] describes the layout). The
//! header's counts meet sizes in checked arithmetic only, and the body's length must be exactly
//! what they declare before anything is allocated or indexed.

use super::compressed_ply::{
    CHUNK, CHUNK_PROPERTIES, Element, VERTEX_PROPERTIES, format_error, lerp, unpack_111011,
    unpack_rotation, unpack_unorm,
};
use super::ply::PlyModel;
use super::splat_file::SH_C0;
use crate::error::Result;
use std::path::Path;

/// Reads a compressed PLY. The header must be exactly the schema above (12 or 18 chunk floats,
/// 4 vertex words, 0, 9, 24 or 45 SH bytes); anything else, a body of the wrong length, or a
/// chunk range that is not finite, is an error naming the file. Header counts meet sizes in
/// checked arithmetic only, so no count can wrap past the length check.
pub fn read_compressed_ply(path: &Path) -> Result<PlyModel> {
    read_compressed_ply_bytes(path, &super::host::read_whole_file(path)?)
}

/// [`read_compressed_ply`] of a whole file held in memory; `path` names it in messages.
pub fn read_compressed_ply_bytes(path: &Path, bytes: &[u8]) -> Result<PlyModel> {
    let end = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .ok_or_else(|| {
            format_error(
                path,
                "no end_header line: not a PLY file, or a truncated one",
            )
        })?;
    let header = std::str::from_utf8(&bytes[..end])
        .map_err(|_| format_error(path, "the header is not text"))?;
    let body = &bytes[end + 11..];
    let layout = Layout::parse(path, header, body.len())?;
    decode(path, &layout, body)
}

/// What a compressed PLY's header declares, checked against its body's length.
struct Layout {
    /// Floats per chunk row (12 or 18).
    chunk_columns: usize,
    /// Gaussians.
    n: usize,
    /// SH bytes per Gaussian (0, 9, 24 or 45).
    rest_bytes: usize,
}

impl Layout {
    fn parse(path: &Path, header: &str, body_len: usize) -> Result<Layout> {
        let mut lines = header
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("comment"));
        if lines.next() != Some("ply") || lines.next() != Some("format binary_little_endian 1.0") {
            return Err(format_error(
                path,
                "expected `ply` and `format binary_little_endian 1.0`",
            ));
        }
        let mut elements: Vec<Element> = Vec::new();
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["element", name, count] => {
                    let count = count.parse().map_err(|_| {
                        format_error(
                            path,
                            format!(
                                "element {name} has the count {count:?}, not a non-negative integer"
                            ),
                        )
                    })?;
                    elements.push((name.to_string(), count, Vec::new()));
                }
                ["property", kind, name] => match elements.last_mut() {
                    Some(e) => e.2.push((kind.to_string(), name.to_string())),
                    None => return Err(format_error(path, "a property before any element")),
                },
                _ => {
                    return Err(format_error(
                        path,
                        format!("unexpected header line {line:?}"),
                    ));
                }
            }
            if elements.len() > 3 {
                return Err(format_error(
                    path,
                    "more than the three elements chunk, vertex and sh",
                ));
            }
        }
        let schema = |i: usize, name: &str, kind: &str, names: &[&str]| -> Result<u64> {
            let Some((element, count, props)) = elements.get(i) else {
                return Err(format_error(path, format!("element {name} is missing")));
            };
            let matches = element == name
                && props.len() == names.len()
                && props
                    .iter()
                    .zip(names)
                    .all(|((k, p), want)| k == kind && p == want);
            if !matches {
                return Err(format_error(
                    path,
                    format!("element {i} is not the compressed {name} element ({props:?})"),
                ));
            }
            Ok(*count)
        };
        let chunk_columns = if elements.first().map_or(0, |e| e.2.len()) == 12 {
            12
        } else {
            18
        };
        let chunks = schema(0, "chunk", "float", &CHUNK_PROPERTIES[..chunk_columns])?;
        let n = schema(1, "vertex", "uint", &VERTEX_PROPERTIES)?;
        let rest_bytes = match elements.get(2) {
            None => 0,
            Some((_, _, props)) => {
                let names: Vec<String> = (0..props.len()).map(|i| format!("f_rest_{i}")).collect();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                if ![9, 24, 45].contains(&props.len()) || schema(2, "sh", "uchar", &names)? != n {
                    return Err(format_error(
                        path,
                        "the sh element must hold 9, 24 or 45 uchar f_rest values per Gaussian",
                    ));
                }
                props.len()
            }
        };
        if chunks != n.div_ceil(CHUNK as u64) {
            return Err(format_error(
                path,
                format!("{chunks} chunks do not fit {n} Gaussians (256 per chunk)"),
            ));
        }
        let needed = chunks
            .checked_mul(chunk_columns as u64 * 4)
            .and_then(|c| c.checked_add(n.checked_mul(16 + rest_bytes as u64)?));
        if needed != Some(body_len as u64) {
            let needed = match needed {
                Some(bytes) => format!("{bytes} bytes"),
                None => "more bytes than any file holds".into(),
            };
            return Err(format_error(
                path,
                format!(
                    "the header declares {n} Gaussians in {chunks} chunks, which take {needed}, \
                     but {body_len} bytes follow the header; the file is truncated or damaged"
                ),
            ));
        }
        Ok(Layout {
            chunk_columns,
            // At most the body's length, so it fits.
            n: n as usize,
            rest_bytes,
        })
    }
}

/// The Gaussians of a body whose length [`Layout::parse`] checked.
fn decode(path: &Path, layout: &Layout, body: &[u8]) -> Result<PlyModel> {
    let &Layout {
        chunk_columns,
        n,
        rest_bytes,
    } = layout;
    let word = |offset: usize| -> [u8; 4] {
        body.get(offset..offset + 4)
            .and_then(|w| w.try_into().ok())
            .unwrap_or([0; 4])
    };
    let float = |offset: usize| f32::from_le_bytes(word(offset));
    let vertex_start = n.div_ceil(CHUNK) * chunk_columns * 4;
    for (index, value) in (0..vertex_start / 4).map(|i| (i, float(4 * i))) {
        if !value.is_finite() {
            return Err(format_error(
                path,
                format!(
                    "chunk {}'s {} is {value}; chunk ranges must be finite",
                    index / chunk_columns,
                    CHUNK_PROPERTIES[index % chunk_columns]
                ),
            ));
        }
    }
    let sh_start = vertex_start + n * 16;
    let rest = rest_bytes / 3;
    let mut g = super::host::gaussians_with_capacity(n, path)?;
    for i in 0..n {
        let c = i / CHUNK;
        let bound = |k: usize| float((c * chunk_columns + k) * 4);
        let packed = |k: usize| u32::from_le_bytes(word(vertex_start + i * 16 + 4 * k));
        let p = unpack_111011(packed(0));
        let s = unpack_111011(packed(2));
        let colour = packed(3);
        g.means
            .push([0, 1, 2].map(|k| lerp(bound(k), bound(3 + k), p[k])));
        g.log_scales
            .push([0, 1, 2].map(|k| lerp(bound(6 + k), bound(9 + k), s[k])));
        g.quats.push(unpack_rotation(packed(1)));
        let mut sh = [[0.0f32; 3]; 16];
        sh[0] = [0, 1, 2].map(|k| {
            let t = unpack_unorm(colour >> (24 - 8 * k as u32), 8);
            let rgb = if chunk_columns == 18 {
                lerp(bound(12 + k), bound(15 + k), t)
            } else {
                t
            };
            (rgb - 0.5) / SH_C0
        });
        let alpha = unpack_unorm(colour, 8).clamp(0.5 / 255.0, 254.5 / 255.0);
        g.opacity_logits.push((alpha / (1.0 - alpha)).ln());
        let sh_bytes = body.get(sh_start + i * rest_bytes..).unwrap_or_default();
        // Channel-major bytes: all of red's coefficients, then green's, then blue's.
        for (j, coefficient) in sh[1..=rest].iter_mut().enumerate() {
            for (k, value) in coefficient.iter_mut().enumerate() {
                let unit = match sh_bytes.get(k * rest + j).copied().unwrap_or(128) {
                    0 => 0.0,
                    255 => 1.0,
                    b => (f32::from(b) + 0.5) / 256.0,
                };
                *value = (unit - 0.5) * 8.0;
            }
        }
        g.sh.push(sh);
    }
    if let Some(i) = (0..n).find(|&i| {
        g.means[i]
            .iter()
            .chain(&g.log_scales[i])
            .chain(&g.sh[i][0])
            .any(|v| !v.is_finite())
    }) {
        return Err(format_error(
            path,
            format!(
                "Gaussian {i} decodes to a non-finite value (its chunk's range spans more than a 32-bit float holds)"
            ),
        ));
    }
    Ok(PlyModel {
        gaussians: g,
        sh_degree: [0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 3][rest] as u32,
    })
}
