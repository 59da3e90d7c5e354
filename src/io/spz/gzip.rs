//! SPZ versions 2 and 3: the header and the arrays in one gzip stream. Reading inflates the
//! 16-byte header first and then exactly the bytes its count implies, after checking that count
//! against what the file's size can hold.

use super::layout::{ARRAY_NAMES, Arrays, array_sizes};
use super::{Header, MAGIC, format_error, try_reserve};
use crate::error::{Error, Result};
use crate::io::progress::Progress;
use crate::io::{io_error, write_atomically};
use std::io::{Read, Write};
use std::path::Path;

/// Header bytes of versions 2 and 3.
const HEADER_BYTES: usize = 16;
/// The most deflate can expand: a 258-byte match costs at least two bits, so no gzip stream
/// inflates to more than about 1032 times its size.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// The error for a failed inflate: a corrupt stream, or (not the file's fault) memory refused.
fn corrupt(path: &Path, e: &std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::OutOfMemory {
        return Error::Io {
            path: path.display().to_string(),
            action: "reserve memory to inflate".into(),
            message: format!("{e}; free memory or use a smaller model"),
        };
    }
    format_error(
        path,
        format!("not a gzip stream, or a corrupt or truncated one ({e})"),
    )
}

/// Reads into `buf` until it is full or the stream ends; returns the bytes read.
fn read_up_to(path: &Path, reader: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(path, &e)),
        }
    }
    Ok(got)
}

/// Reads a version 2 or 3 file whose `file_size` bytes `compressed` yields from its start.
pub(super) fn read(path: &Path, compressed: impl Read, file_size: u64) -> Result<(Header, Arrays)> {
    let mut decoder = flate2::read::GzDecoder::new(compressed);
    let mut head = [0u8; HEADER_BYTES];
    let got = read_up_to(path, &mut decoder, &mut head)?;
    if got < HEADER_BYTES {
        return Err(format_error(
            path,
            format!("the stream holds {got} bytes, too short for the {HEADER_BYTES}-byte header"),
        ));
    }
    let header = Header::parse(path, &head, 2..=3)?;
    let sizes = array_sizes(&header);
    let body: u64 = sizes.iter().sum();
    let capacity = file_size.saturating_mul(MAX_DEFLATE_RATIO);
    if body.saturating_add(HEADER_BYTES as u64) > capacity {
        return Err(format_error(
            path,
            format!(
                "the header claims {} points of SH degree {} ({body} bytes after decompression), more than a {file_size}-byte gzip file can hold (deflate expands at most {MAX_DEFLATE_RATIO}-fold); the file is corrupt",
                header.count, header.degree
            ),
        ));
    }
    let mut arrays = Arrays::default();
    let mut total = 0u64;
    for ((array, size), name) in arrays.arrays.iter_mut().zip(sizes).zip(ARRAY_NAMES) {
        let bytes = usize::try_from(size)
            .map_err(|_| super::memory_error(path, size, &format!("SPZ {name}")))?;
        try_reserve(path, array, bytes, &format!("SPZ {name}"))?;
        (&mut decoder)
            .take(size)
            .read_to_end(array)
            .map_err(|e| corrupt(path, &e))?;
        total += array.len() as u64;
        if (array.len() as u64) < size {
            return Err(format_error(
                path,
                format!(
                    "the stream ends after {total} of the {body} bytes that {} points of SH degree {} need; the file is truncated",
                    header.count, header.degree
                ),
            ));
        }
    }
    let mut extra = [0u8; 1];
    if read_up_to(path, &mut decoder, &mut extra)? > 0 {
        return Err(format_error(
            path,
            format!(
                "the stream holds more than the {body} bytes that {} points of SH degree {} need; the header's count is wrong",
                header.count, header.degree
            ),
        ));
    }
    Ok((header, arrays))
}

/// Writes `header` and `arrays` as one gzip stream, atomically, compressing straight into the
/// file a megabyte at a time (so the compressed copy never sits in memory beside the arrays),
/// counting the bytes in `progress`.
pub(super) fn write(
    path: &Path,
    header: &Header,
    arrays: &Arrays,
    progress: &Progress,
) -> Result<()> {
    let head = header_bytes(header);
    let total: usize = HEADER_BYTES + arrays.arrays.iter().map(Vec::len).sum::<usize>();
    progress.begin("writing SPZ", total as u64);
    write_atomically(path, |w| encode(w, path, &head, arrays, progress))
}

/// The bytes [`write`] writes (for a browser page to offer as a download).
pub(super) fn bytes(path: &Path, header: &Header, arrays: &Arrays) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode(
        &mut out,
        path,
        &header_bytes(header),
        arrays,
        &Progress::new(),
    )?;
    Ok(out)
}

fn header_bytes(header: &Header) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEADER_BYTES);
    head.extend(MAGIC.to_le_bytes());
    head.extend(header.version.to_le_bytes());
    head.extend(header.count.to_le_bytes());
    head.extend([header.degree, header.fractional_bits, header.flags, 0]);
    head
}

/// Compresses `head` and `arrays` into `w` as one gzip stream, a megabyte at a time.
fn encode(
    w: impl Write,
    path: &Path,
    head: &[u8],
    arrays: &Arrays,
    progress: &Progress,
) -> Result<()> {
    let mut encoder = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    for chunk in std::iter::once(head)
        .chain(arrays.arrays.iter().map(Vec::as_slice))
        .flat_map(|a| a.chunks(1 << 20))
    {
        encoder
            .write_all(chunk)
            .map_err(|e| io_error(path, "compress and write", e))?;
        progress.advance(chunk.len() as u64);
    }
    encoder
        .finish()
        .map_err(|e| io_error(path, "compress and write", e))?;
    Ok(())
}
