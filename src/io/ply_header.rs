//! The PLY header, as the one PLY reader ([`super::ply_read`]) parses it: the format line, the
//! elements with their scalar and list properties, comments and `obj_info`, CR LF or LF line
//! ends, with the line length and count bounded.

use super::io_error;
use crate::error::{Error, Result};
use crate::io::ply_scalar::Scalar;
use std::io::{BufRead, Read};
use std::path::Path;

/// Longest header line read, line end included: far above any real header line (long comments
/// included), and a bound on binary files without line ends.
const MAX_HEADER_LINE: u64 = 1 << 16;
/// Most header lines we read.
const MAX_HEADER_LINES: usize = 10_000;

/// An [`Error::Format`] for a file of `kind`.
pub(crate) fn format_error(path: &Path, kind: &str, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        kind: kind.into(),
        message: message.into(),
    }
}

/// How the body is encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Encoding {
    Ascii,
    LittleEndian,
    BigEndian,
}

/// A property: a scalar, or a list with its count and item types.
#[derive(Clone, Debug)]
pub(crate) struct Property {
    /// Its name.
    pub(crate) name: String,
    /// Its scalar type (a list's item type).
    pub(crate) ty: Scalar,
    /// A list's count type; `None` for a scalar property.
    pub(crate) list_count: Option<Scalar>,
}

#[derive(Clone, Debug)]
pub(super) struct Element {
    pub(super) name: String,
    pub(super) count: u64,
    pub(super) properties: Vec<Property>,
}

impl Element {
    /// Bytes per instance in a binary body, when it has no lists.
    pub(super) fn fixed_stride(&self) -> Option<u64> {
        self.properties
            .iter()
            .map(|p| p.list_count.is_none().then_some(p.ty.size() as u64))
            .sum()
    }
}

pub(super) struct Header {
    pub(super) encoding: Encoding,
    pub(super) elements: Vec<Element>,
    pub(super) bytes: u64,
    /// The text of each `comment` line, after the word `comment`, in order.
    pub(super) comments: Vec<String>,
}

/// The word that starts the header comment recording a model's near plane:
/// `comment near_plane 0.16` (see [`crate::data::near_plane`]). Readers that do not know it
/// skip it, as every comment.
pub const NEAR_PLANE_COMMENT: &str = "near_plane";

impl Header {
    /// The near plane the `comment near_plane DIST` line records; `None` without one. A line
    /// whose distance is not a positive number is an error naming the file.
    pub(super) fn near_plane(&self, path: &Path, kind: &str) -> Result<Option<f32>> {
        let mut found = None;
        for comment in &self.comments {
            let words: Vec<&str> = comment.split_whitespace().collect();
            if words.first() != Some(&NEAR_PLANE_COMMENT) {
                continue;
            }
            let value = match words.as_slice() {
                [_, value] => value.parse::<f32>().ok(),
                _ => None,
            };
            let near = value
                .and_then(|v| crate::data::near_plane::check_near_plane(v, "near_plane").ok())
                .ok_or_else(|| {
                    format_error(
                        path,
                        kind,
                        format!(
                            "the header's comment {comment:?} should give the near plane as one \
                             positive distance (`comment near_plane 0.16`); fix or remove the line"
                        ),
                    )
                })?;
            found = Some(near);
        }
        Ok(found)
    }
}

pub(super) fn parse_header(path: &Path, kind: &str, reader: &mut impl BufRead) -> Result<Header> {
    let mut encoding = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut comments = Vec::new();
    let mut bytes = 0u64;
    let mut line = Vec::new();
    for number in 1..=MAX_HEADER_LINES {
        line.clear();
        let read = reader
            .by_ref()
            .take(MAX_HEADER_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(path, "read", e))?;
        bytes += read as u64;
        if read == 0 && number == 1 {
            return Err(format_error(path, kind, "the file is empty"));
        }
        if read == 0 {
            return Err(format_error(
                path,
                kind,
                "the header ends without an end_header line (the file is truncated or not a PLY)",
            ));
        }
        if read as u64 == MAX_HEADER_LINE && line.last() != Some(&b'\n') {
            return Err(format_error(
                path,
                kind,
                format!(
                    "header line {number} is longer than {MAX_HEADER_LINE} bytes (no line end within them); \
                     a PLY header has short lines, so the file is damaged or not a PLY"
                ),
            ));
        }
        let not_ply = || {
            format_error(
                path,
                kind,
                "it does not start with the line \"ply\"; it is not a PLY file",
            )
        };
        let text = std::str::from_utf8(&line).map_err(|_| {
            if number == 1 {
                not_ply()
            } else {
                format_error(path, kind, format!("header line {number} is not text"))
            }
        })?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |what: &str| {
            format_error(
                path,
                kind,
                format!("header line {number} ({:?}): {what}", text.trim_end()),
            )
        };
        if number == 1 {
            if words != ["ply"] {
                return Err(not_ply());
            }
            continue;
        }
        match words.as_slice() {
            ["comment", ..] => {
                let rest = text
                    .trim_start()
                    .strip_prefix("comment")
                    .unwrap_or_default();
                comments.push(rest.trim().to_owned());
            }
            [] | ["obj_info", ..] => {}
            ["format", kind, version] => {
                if !version.starts_with('1') {
                    return Err(bad("only PLY version 1.0 is supported"));
                }
                encoding = Some(match *kind {
                    "ascii" => Encoding::Ascii,
                    "binary_little_endian" => Encoding::LittleEndian,
                    "binary_big_endian" => Encoding::BigEndian,
                    _ => {
                        return Err(bad(
                            "unknown format (expected ascii, binary_little_endian or binary_big_endian)",
                        ));
                    }
                });
            }
            ["element", name, count] => {
                let count = count
                    .parse::<u64>()
                    .map_err(|_| bad("the element count is not a non-negative integer"))?;
                elements.push(Element {
                    name: name.to_string(),
                    count,
                    properties: Vec::new(),
                });
            }
            ["property", "list", count_ty, item_ty, name] => {
                let element = elements
                    .last_mut()
                    .ok_or_else(|| bad("property before any element"))?;
                let count_ty =
                    Scalar::parse(count_ty).ok_or_else(|| bad("unknown list count type"))?;
                let ty = Scalar::parse(item_ty).ok_or_else(|| bad("unknown list item type"))?;
                element.properties.push(Property {
                    name: name.to_string(),
                    ty,
                    list_count: Some(count_ty),
                });
            }
            ["property", ty, name] => {
                let element = elements
                    .last_mut()
                    .ok_or_else(|| bad("property before any element"))?;
                let ty = Scalar::parse(ty).ok_or_else(|| bad("unknown property type"))?;
                element.properties.push(Property {
                    name: name.to_string(),
                    ty,
                    list_count: None,
                });
            }
            ["end_header"] => {
                let encoding = encoding
                    .ok_or_else(|| format_error(path, kind, "the header has no format line"))?;
                return Ok(Header {
                    encoding,
                    elements,
                    bytes,
                    comments,
                });
            }
            _ => return Err(bad("not a PLY header line")),
        }
    }
    Err(format_error(
        path,
        kind,
        format!("no end_header within {MAX_HEADER_LINES} header lines"),
    ))
}
