//! The one PLY reader: the header (ASCII, either binary byte order; comments, `obj_info`, any
//! scalar and list property type; CR LF or LF line ends), and the `vertex` element's values read
//! as records, skipping the elements before it. Every count is checked against the file size
//! before anything is allocated, every arithmetic step on counts is checked, and a short or
//! malformed file is an [`Error::Format`] naming the file, never a panic. [`super::ply`] (3DGS
//! models) and [`crate::data::ply`] (point clouds) both read through it.

use super::io_error;
use super::ply_header::{Element, Encoding, parse_header};
pub(crate) use super::ply_header::{Property, format_error};
use crate::error::{Error, Result};
use crate::io::ply_scalar::Scalar;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Reads the values of a PLY body one scalar at a time.
enum Body<R: BufRead> {
    Binary { reader: R, big_endian: bool },
    Ascii { text: String, position: usize },
}

impl<R: BufRead> Body<R> {
    /// The next scalar, or `None` at the end of the data.
    fn next(&mut self, ty: Scalar) -> std::io::Result<Option<f64>> {
        match self {
            Body::Binary { reader, big_endian } => {
                let mut buf = [0u8; 8];
                let b = &mut buf[..ty.size()];
                match reader.read_exact(b) {
                    Ok(()) => Ok(Some(ty.decode(b, *big_endian))),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Body::Ascii { text, position } => {
                let rest = &text[*position..];
                let start = rest.len() - rest.trim_start().len();
                let token_len = rest[start..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - start);
                *position += start + token_len;
                if token_len == 0 {
                    return Ok(None);
                }
                let token = &rest[start..start + token_len];
                token.parse::<f64>().map(Some).map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{token:?} is not a number"),
                    )
                })
            }
        }
    }
}

/// The file being read and what kind of file it should be, for errors.
struct Origin {
    path: std::path::PathBuf,
    kind: String,
}

impl Origin {
    fn error(&self, message: impl Into<String>) -> Error {
        format_error(&self.path, &self.kind, message)
    }

    /// The next scalar of `body`, with errors naming `what` was being read.
    fn value<R: BufRead>(
        &self,
        body: &mut Body<R>,
        ty: Scalar,
        what: impl Fn() -> String,
    ) -> Result<f64> {
        body.next(ty)
            .map_err(|e| self.error(format!("bad value in {}: {e}", what())))?
            .ok_or_else(|| {
                self.error(format!(
                    "it is truncated or malformed: the data ends inside {}",
                    what()
                ))
            })
    }
}

/// An open PLY file (or a PLY held in memory) positioned at the start of its `vertex` element.
pub(crate) struct VertexReader<R: BufRead = BufReader<std::fs::File>> {
    origin: Origin,
    body: Body<R>,
    vertex: Element,
    file_len: u64,
}

impl VertexReader {
    /// Opens `path` (a file of `kind`, for messages), parses the header, checks that the data
    /// declared up to the end of the vertices fits in the file, and skips the elements before
    /// the vertices.
    pub(crate) fn open(path: &Path, kind: &str) -> Result<Self> {
        let (file, file_len) = super::host::open_regular_file(path)?;
        VertexReader::with_reader(
            path,
            kind,
            BufReader::with_capacity(1 << 20, file),
            file_len,
        )
    }
}

impl<'a> VertexReader<&'a [u8]> {
    /// [`VertexReader::open`] of a whole file held in memory; `path` names it in messages.
    pub(crate) fn from_bytes(path: &Path, kind: &str, bytes: &'a [u8]) -> Result<Self> {
        VertexReader::with_reader(path, kind, bytes, bytes.len() as u64)
    }
}

impl<R: BufRead> VertexReader<R> {
    fn with_reader(path: &Path, kind: &str, mut reader: R, file_len: u64) -> Result<Self> {
        let header = parse_header(path, kind, &mut reader)?;
        let vertex_index = header
            .elements
            .iter()
            .position(|e| e.name == "vertex")
            .ok_or_else(|| format_error(path, kind, "it has no vertex element"))?;
        let vertex = header.elements[vertex_index].clone();
        let mut body = match header.encoding {
            Encoding::Ascii => {
                let body_len = file_len.saturating_sub(header.bytes);
                let mut text = String::new();
                text.try_reserve_exact(usize::try_from(body_len).unwrap_or(usize::MAX))
                    .map_err(|_| Error::HostOutOfMemory {
                        what: format!("the ASCII body of {}", path.display()),
                        bytes: body_len,
                    })?;
                reader
                    .read_to_string(&mut text)
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::InvalidData => {
                            format_error(path, kind, "the ASCII body is not text")
                        }
                        _ => io_error(path, "read", e),
                    })?;
                Body::Ascii { text, position: 0 }
            }
            encoding => {
                // Refuse early when fixed-size vertices cannot fit in the file (this also bounds
                // every allocation a lying header could ask for).
                if let Some(stride) = vertex.fixed_stride() {
                    // Elements with lists count as empty here; every product and sum is checked.
                    let before = header.elements[..vertex_index]
                        .iter()
                        .map(|e| e.fixed_stride().map_or(Some(0), |s| s.checked_mul(e.count)))
                        .try_fold(0u64, |acc, bytes| acc.checked_add(bytes?));
                    let needed = stride
                        .checked_mul(vertex.count)
                        .and_then(|v| v.checked_add(before?))
                        .and_then(|v| v.checked_add(header.bytes));
                    if needed.is_none_or(|n| n > file_len) {
                        let needed = match needed {
                            Some(bytes) => format!("{bytes} bytes"),
                            None => "more bytes than any file holds".into(),
                        };
                        return Err(format_error(
                            path,
                            kind,
                            format!(
                                "it is truncated: the header declares {} vertices of {stride} bytes, which with the header ({} bytes) and the elements before the vertices take {needed}, but the file is {file_len} bytes",
                                vertex.count, header.bytes
                            ),
                        ));
                    }
                }
                Body::Binary {
                    reader,
                    big_endian: encoding == Encoding::BigEndian,
                }
            }
        };
        let origin = Origin {
            path: path.to_path_buf(),
            kind: kind.to_owned(),
        };
        // An element without properties has no bytes, whatever count it declares.
        let before = header.elements[..vertex_index]
            .iter()
            .filter(|e| !e.properties.is_empty());
        for element in before {
            for i in 0..element.count {
                for property in &element.properties {
                    let what = || {
                        format!(
                            "{} {i} of {} ({})",
                            element.name, element.count, property.name
                        )
                    };
                    let items = match property.list_count {
                        Some(count_ty) => origin.value(&mut body, count_ty, what)? as u64,
                        None => 1,
                    };
                    for _ in 0..items {
                        origin.value(&mut body, property.ty, what)?;
                    }
                }
            }
        }
        Ok(VertexReader {
            origin,
            body,
            vertex,
            file_len,
        })
    }

    /// The vertex element's properties, in file order.
    pub(crate) fn properties(&self) -> &[Property] {
        &self.vertex.properties
    }

    /// The vertex count the header declares.
    pub(crate) fn vertex_count(&self) -> u64 {
        self.vertex.count
    }

    /// A capacity for per-vertex vectors that a lying header cannot inflate past the file size
    /// (every property takes at least one byte).
    pub(crate) fn capacity_hint(&self) -> usize {
        let per_vertex = self.vertex.properties.len().max(1) as u64;
        let bounded = self.vertex.count.min(self.file_len / per_vertex);
        usize::try_from(bounded).unwrap_or(usize::MAX)
    }

    /// Reads every vertex: property `p` goes to `record[slot_of_property[p]]` (ignored when
    /// `None`; list properties must be ignored), then `on_vertex(index, record)` runs.
    pub(crate) fn read_records(
        mut self,
        slot_of_property: &[Option<usize>],
        slots: usize,
        mut on_vertex: impl FnMut(u64, &[f32]) -> Result<()>,
    ) -> Result<()> {
        let mut record = vec![0f32; slots];
        let count = self.vertex.count;
        let properties = &self.vertex.properties;
        let body = &mut self.body;
        let origin = &self.origin;
        // Binary vertices without lists are read a whole record at a time.
        let stride = properties
            .iter()
            .map(|p| p.list_count.is_none().then_some(p.ty.size()))
            .sum::<Option<usize>>();
        let mut fixed = match (&*body, stride) {
            (Body::Binary { big_endian, .. }, Some(stride)) => {
                let mut offset = 0;
                let mut fields = Vec::new();
                for (property, slot) in properties.iter().zip(slot_of_property) {
                    if let Some(slot) = slot {
                        fields.push((offset, property.ty, *slot));
                    }
                    offset += property.ty.size();
                }
                Some((vec![0u8; stride], fields, *big_endian))
            }
            _ => None,
        };
        for i in 0..count {
            if let (Some((bytes, fields, big_endian)), Body::Binary { reader, .. }) =
                (&mut fixed, &mut *body)
            {
                reader.read_exact(bytes).map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => origin.error(format!(
                        "it is truncated or malformed: the data ends inside vertex {i} of {count}"
                    )),
                    _ => io_error(&origin.path, "read", e),
                })?;
                for &(offset, ty, slot) in fields.iter() {
                    record[slot] =
                        ty.decode(&bytes[offset..offset + ty.size()], *big_endian) as f32;
                }
            } else {
                for (property, slot) in properties.iter().zip(slot_of_property) {
                    let what = || format!("vertex {i} of {count} ({})", property.name);
                    let items = match property.list_count {
                        Some(count_ty) => origin.value(body, count_ty, what)? as u64,
                        None => 1,
                    };
                    for _ in 0..items {
                        let value = origin.value(body, property.ty, what)?;
                        if let Some(slot) = slot {
                            record[*slot] = value as f32;
                        }
                    }
                }
            }
            on_vertex(i, &record)?;
        }
        Ok(())
    }
}
