//! Hostile SPZ files: a seeded mutation test of the reader (every version) and gzip and zstd
//! bombs (small files claiming or holding huge contents), each run in a child process whose
//! memory is capped, so that an unbounded allocation fails the test instead of passing slowly.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::spz::SpzAxes;
use wgsplat::testing::TestRng;

use super::formats::random_model;
use super::spz::{spz_version_2_bytes, write_with};
use super::{MemoryCap, TempDir, run_in_capped_child};

/// The memory a child test may use: the data segment and private writable mappings, far below
/// the gigabytes that the hostile files below claim, far above what their honest contents need.
const CHILD_CAP: MemoryCap = MemoryCap::DataBytes(160 << 20);

/// Runs the test `name` of this module again in a child process with its memory capped by
/// `prlimit` (util-linux), see [`run_in_capped_child`].
fn rerun_with_memory_cap(name: &str) -> bool {
    run_in_capped_child(&format!("spz_hostile::{name}"), CHILD_CAP)
}

/// A small valid file of each version, for the mutation test.
fn seed_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let model = random_model(24, 1, 99);
    let mut seeds = vec![("v2".to_string(), spz_version_2_bytes(&model).0)];
    for version in [3, 4] {
        let path = dir.join(format!("seed{version}.spz"));
        write_with(&path, &model, version, SpzAxes::Rub);
        let bytes = std::fs::read(&path).unwrap();
        // Version 3 is gzip; version 4 starts with its plain header.
        assert_eq!(bytes.starts_with(b"NGSP\x04"), version == 4);
        seeds.push((format!("v{version}"), bytes));
    }
    seeds
}

/// One seeded mutation of `seed`: flipped bytes, a truncation, an extension, or an extreme
/// value written over a header or table-of-contents field.
fn mutate(seed: &[u8], rng: &mut TestRng) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    let pick = |rng: &mut TestRng, n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    match rng.next_u32() % 5 {
        0 => {
            for _ in 0..1 + pick(rng, 4) {
                let at = pick(rng, bytes.len());
                bytes[at] ^= 1 << pick(rng, 8);
            }
        }
        1 => bytes.truncate(pick(rng, bytes.len())),
        2 => {
            let extra = pick(rng, 64);
            bytes.extend((0..extra).map(|_| rng.next_u32() as u8));
        }
        _ => {
            // An extreme little-endian word at a field boundary of the first 64 bytes.
            let at = 4 * pick(rng, 16);
            let values = [
                0u64,
                1,
                0xff,
                u64::from(u32::MAX),
                u64::MAX,
                1 << 31,
                1 << 40,
            ];
            let value = values[pick(rng, values.len())];
            let width = if rng.next_u32().is_multiple_of(2) {
                4
            } else {
                8
            };
            let end = (at + width).min(bytes.len());
            if at < end {
                let len = end - at;
                bytes[at..end].copy_from_slice(&value.to_le_bytes()[..len]);
            }
        }
    }
    bytes
}

#[test]
fn spz_reader_survives_mutated_files() {
    if rerun_with_memory_cap("spz_reader_survives_mutated_files") {
        return;
    }
    let dir = TempDir::new("spz-fuzz");
    let seeds = seed_files(&dir.0);
    let path = dir.0.join("mutated.spz");
    for (name, seed) in &seeds {
        std::fs::write(&path, seed).unwrap();
        read_model(&path, ModelFormat::Spz)
            .unwrap_or_else(|e| panic!("the {name} seed does not read: {e}"));
    }
    let mut rng = TestRng::new(2027);
    let (mut models, mut errors) = (0, 0);
    let started = Instant::now();
    for case in 0..300 {
        let (name, seed) = &seeds[case % seeds.len()];
        let bytes = mutate(seed, &mut rng);
        std::fs::write(&path, &bytes).unwrap();
        let result = std::panic::catch_unwind(|| read_model(&path, ModelFormat::Spz));
        match result {
            Ok(Ok(model)) => {
                models += 1;
                let n = model.gaussians.means.len();
                assert!(
                    n <= 24 * 1024,
                    "case {case} ({name}): {n} Gaussians from {} bytes",
                    bytes.len()
                );
            }
            Ok(Err(e)) => {
                errors += 1;
                let message = e.to_string();
                assert!(
                    message.contains("mutated.spz") && !message.contains("reserve memory"),
                    "case {case} ({name}): {message}"
                );
            }
            Err(_) => panic!("case {case} ({name}): the reader panicked on {bytes:02x?}"),
        }
    }
    eprintln!(
        "300 mutated SPZ files: {models} read as models, {errors} refused, in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// A gzip stream of `zeros` zero bytes after `head`, compressed a megabyte at a time.
fn gzip_of_zeros(head: &[u8], zeros: usize) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(head).unwrap();
    let block = vec![0u8; 1 << 20];
    for _ in 0..zeros >> 20 {
        encoder.write_all(&block).unwrap();
    }
    encoder.finish().unwrap()
}

fn spz_header(version: u32, count: u32, degree: u8) -> Vec<u8> {
    let mut head = b"NGSP".to_vec();
    head.extend(version.to_le_bytes());
    head.extend(count.to_le_bytes());
    head.extend([degree, 12, 0, 0]);
    head
}

fn refused_quickly(path: &Path, bytes: &[u8], expected: &str) {
    std::fs::write(path, bytes).unwrap();
    let started = Instant::now();
    let err = read_model(path, ModelFormat::Spz).unwrap_err().to_string();
    let took = started.elapsed();
    eprintln!("{} bytes refused in {took:?}: {err}", bytes.len());
    assert!(err.contains(expected), "expected {expected:?} in: {err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn spz_gzip_bomb_is_refused_quickly() {
    if rerun_with_memory_cap("spz_gzip_bomb_is_refused_quickly") {
        return;
    }
    let dir = TempDir::new("spz-gzip-bomb");
    let path: PathBuf = dir.0.join("bomb.spz");
    // 10 points claimed, 512 MiB of zeros after them: only the 10 points' bytes are inflated.
    let bomb = gzip_of_zeros(&spz_header(3, 10, 0), 512 << 20);
    refused_quickly(&path, &bomb, "holds more than");
    // 4 billion points of SH degree 3 claimed by a file of a few hundred bytes.
    let claim = gzip_of_zeros(&spz_header(3, u32::MAX, 3), 0);
    refused_quickly(&path, &claim, "more than a");
}

/// A zstd frame of `blocks` RLE blocks of 128 KiB zeros each (4 bytes per block), declaring a
/// window of `2^window_log` bytes.
fn zstd_rle_frame(blocks: usize, window_log: u8) -> Vec<u8> {
    let mut frame = 0xfd2f_b528u32.to_le_bytes().to_vec();
    frame.push(0); // no content size, no checksum, not single-segment
    frame.push((window_log - 10) << 3);
    for b in 0..blocks {
        let last = u32::from(b + 1 == blocks);
        let header = last | (1 << 1) | ((128 << 10) << 3);
        frame.extend(&header.to_le_bytes()[..3]);
        frame.push(0);
    }
    frame
}

/// A version 4 file of `count` points of SH degree 0 whose streams are `frames`, the table of
/// contents giving the sizes `count` implies.
fn spz4_file(count: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = spz_header(4, count, 0);
    bytes[15] = frames.len() as u8;
    bytes.extend(32u32.to_le_bytes());
    bytes.extend([0u8; 12]);
    for (frame, per_point) in frames.iter().zip([9u64, 1, 3, 3, 4]) {
        bytes.extend((frame.len() as u64).to_le_bytes());
        bytes.extend((per_point * u64::from(count)).to_le_bytes());
    }
    for frame in frames {
        bytes.extend(frame);
    }
    bytes
}

#[test]
fn spz_zstd_bomb_is_refused_quickly() {
    if rerun_with_memory_cap("spz_zstd_bomb_is_refused_quickly") {
        return;
    }
    let dir = TempDir::new("spz-zstd-bomb");
    let path = dir.0.join("bomb.spz");
    // 1000 points claimed (9,000 bytes of positions), a positions frame of 1 GiB of zeros.
    let frames: Vec<Vec<u8>> = [8192, 1, 1, 1, 1]
        .into_iter()
        .map(|blocks| zstd_rle_frame(blocks, 17))
        .collect();
    refused_quickly(
        &path,
        &spz4_file(1000, &frames),
        "decompresses to more than",
    );
    // A frame declaring a 2 GiB window for a 9,000-byte stream.
    let mut frames = frames;
    frames[0] = zstd_rle_frame(1, 31);
    refused_quickly(&path, &spz4_file(1000, &frames), "corrupt");
    // 4 billion points claimed by a file of a few hundred bytes.
    refused_quickly(&path, &spz4_file(u32::MAX, &frames), "more than a");
}
