//! SPZ version 4: a plain 32-byte header, a table of contents, and one zstd frame per non-empty
//! attribute array. Reading checks the count against the file's size and every table entry
//! against the sizes the count implies before anything is inflated, and inflates each stream
//! into a buffer of exactly its expected size, refusing one that would grow past it.

use super::layout::{ARRAY_NAMES, Arrays, array_sizes};
use super::{Header, MAGIC, format_error, try_reserve};
use crate::error::Result;
use crate::io::progress::Progress;
use crate::io::{io_error, write_atomically};
use std::io::{Read, Write};
use std::path::Path;

/// Header bytes of version 4.
const HEADER_BYTES: usize = 32;
/// Bytes per table-of-contents entry: compressed and uncompressed size, u64 each.
const TOC_ENTRY_BYTES: u64 = 16;
/// The reference library's bound on a version 4 file's points: at most 1024 decompressed bytes
/// per file byte, and at least the 9 bytes of a position per point.
const MAX_RATIO: u64 = 1024;
const MIN_BYTES_PER_POINT: u64 = 9;
/// The smallest zstd window accepted whatever a stream's size (encoders round windows up; this
/// one writes 128 KiB windows).
const MIN_WINDOW: u64 = 1 << 20;

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Reads a version 4 file whose `file_size` bytes `file` yields from its start.
pub(super) fn read(path: &Path, file: impl Read, file_size: u64) -> Result<(Header, Arrays)> {
    let mut bytes = Vec::new();
    let size = usize::try_from(file_size)
        .map_err(|_| super::memory_error(path, file_size, "the SPZ file"))?;
    try_reserve(path, &mut bytes, size, "the SPZ file")?;
    file.take(file_size)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", e))?;
    let len = bytes.len() as u64;
    if bytes.len() < HEADER_BYTES {
        return Err(format_error(
            path,
            format!("{len} bytes is too short for the {HEADER_BYTES}-byte version 4 header"),
        ));
    }
    let header = Header::parse(path, &bytes[..16], 4..=4)?;
    let (streams, toc_offset) = (
        u64::from(bytes[15]),
        u64::from(u32::from_le_bytes([
            bytes[16], bytes[17], bytes[18], bytes[19],
        ])),
    );
    let count = u64::from(header.count);
    if count * MIN_BYTES_PER_POINT > len.saturating_mul(MAX_RATIO) {
        return Err(format_error(
            path,
            format!(
                "the header claims {count} points, more than a {len}-byte file can hold ({MAX_RATIO} decompressed bytes per file byte at most, {MIN_BYTES_PER_POINT} per point at least); the file is corrupt"
            ),
        ));
    }
    let toc_end = toc_offset + streams * TOC_ENTRY_BYTES;
    if toc_offset < HEADER_BYTES as u64 || toc_end > len {
        return Err(format_error(
            path,
            format!(
                "the table of contents ({streams} streams at byte {toc_offset}) does not lie between the {HEADER_BYTES}-byte header and the end of the {len}-byte file"
            ),
        ));
    }
    let sizes = array_sizes(&header);
    let present: Vec<usize> = (0..6).filter(|&k| sizes[k] > 0).collect();
    if streams != present.len() as u64 {
        return Err(format_error(
            path,
            format!(
                "the file has {streams} streams, but {count} points of SH degree {} need {} ({})",
                header.degree,
                present.len(),
                present
                    .iter()
                    .map(|&k| ARRAY_NAMES[k])
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let mut ranges = Vec::with_capacity(present.len());
    let mut offset = toc_end;
    for (i, &k) in present.iter().enumerate() {
        let entry = (toc_offset + i as u64 * TOC_ENTRY_BYTES) as usize;
        let (compressed, uncompressed) = (u64_at(&bytes, entry), u64_at(&bytes, entry + 8));
        if uncompressed != sizes[k] {
            return Err(format_error(
                path,
                format!(
                    "stream {i} ({}) claims {uncompressed} bytes, but {count} points of SH degree {} need {}",
                    ARRAY_NAMES[k], header.degree, sizes[k]
                ),
            ));
        }
        if compressed > len - offset {
            return Err(format_error(
                path,
                format!(
                    "stream {i} ({}) of {compressed} bytes at byte {offset} runs past the end of the {len}-byte file; the file is truncated",
                    ARRAY_NAMES[k]
                ),
            ));
        }
        ranges.push((k, offset as usize..(offset + compressed) as usize));
        offset += compressed;
    }
    if offset != len {
        return Err(format_error(
            path,
            format!(
                "{} bytes follow the last stream (which ends at byte {offset}); the file is corrupt",
                len - offset
            ),
        ));
    }
    let mut arrays = Arrays::default();
    for (k, range) in ranges {
        arrays.arrays[k] = inflate(path, &bytes[range], sizes[k], ARRAY_NAMES[k])?;
    }
    Ok((header, arrays))
}

/// Inflates the zstd frames in `source` into exactly `expected` bytes, refusing a stream that
/// holds fewer or more, or whose checksum does not match.
fn inflate(path: &Path, mut source: &[u8], expected: u64, name: &str) -> Result<Vec<u8>> {
    let what = format!("the SPZ {name}");
    let bytes = usize::try_from(expected)
        .ok()
        .and_then(|b| b.checked_add(1))
        .ok_or_else(|| super::memory_error(path, expected, &what))?;
    let mut out = Vec::new();
    try_reserve(path, &mut out, bytes, &what)?;
    let window = expected.saturating_mul(2).max(MIN_WINDOW);
    let corrupt = |e: &dyn std::fmt::Display| {
        format_error(path, format!("the zstd stream of {name} is corrupt ({e})"))
    };
    while !source.is_empty() {
        let mut decoder =
            ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut source, window)
                .map_err(|e| corrupt(&e))?;
        let room = expected + 1 - out.len() as u64;
        (&mut decoder)
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| corrupt(&e))?;
        if out.len() as u64 > expected {
            return Err(format_error(
                path,
                format!(
                    "the zstd stream of {name} decompresses to more than the {expected} bytes its header and table of contents give; the file is corrupt"
                ),
            ));
        }
        let frame = decoder.into_frame_decoder();
        if let (Some(stored), Some(computed)) = (
            frame.get_checksum_from_data(),
            frame.get_calculated_checksum(),
        ) && stored != computed
        {
            return Err(corrupt(&format!(
                "checksum {stored:#010x} stored, {computed:#010x} computed"
            )));
        }
    }
    if (out.len() as u64) < expected {
        return Err(format_error(
            path,
            format!(
                "the zstd stream of {name} holds {} of the {expected} bytes its table of contents gives; the file is truncated",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Writes `header` and `arrays` as version 4, atomically: each non-empty array compressed as
/// one zstd frame, counting the bytes compressed in `progress`.
pub(super) fn write(
    path: &Path,
    header: &Header,
    arrays: &Arrays,
    progress: &Progress,
) -> Result<()> {
    let total: usize = arrays.arrays.iter().map(Vec::len).sum();
    progress.begin("writing SPZ", total as u64);
    let mut frames = Vec::new();
    for array in arrays.arrays.iter().filter(|a| !a.is_empty()) {
        let frame = ruzstd::encoding::compress_to_vec(
            &array[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        progress.advance(array.len() as u64);
        frames.push((frame, array.len() as u64));
    }
    let mut head = Vec::with_capacity(HEADER_BYTES + frames.len() * TOC_ENTRY_BYTES as usize);
    head.extend(MAGIC.to_le_bytes());
    head.extend(header.version.to_le_bytes());
    head.extend(header.count.to_le_bytes());
    head.extend([
        header.degree,
        header.fractional_bits,
        header.flags,
        frames.len() as u8,
    ]);
    head.extend((HEADER_BYTES as u32).to_le_bytes());
    head.extend([0u8; 12]);
    for (frame, raw) in &frames {
        head.extend((frame.len() as u64).to_le_bytes());
        head.extend(raw.to_le_bytes());
    }
    write_atomically(path, |w| {
        for part in std::iter::once(&head).chain(frames.iter().map(|(f, _)| f)) {
            w.write_all(part).map_err(|e| io_error(path, "write", e))?;
        }
        Ok(())
    })
}
