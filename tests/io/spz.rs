//! SPZ beyond the round trips in [`super::formats`]: version 4 (written by wgsplat and by
//! PlayCanvas's splat-transform, whose default it is), version 2 crafted from the spec, the
//! option to keep PLY axes, and hostile files: a seeded mutation test and gzip and zstd bombs,
//! run in a child process whose memory is capped so that an unbounded allocation fails the test.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use wgsplat::io::PlyModel;
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::progress::Progress;
use wgsplat::io::read_ply;
use wgsplat::io::spz::{SpzAxes, SpzOptions, read_spz_with, write_spz_with};
use wgsplat::testing::TestRng;

use super::TempDir;
use super::formats::{
    SAME_DECODE, SPZ_BOUNDS, assert_within, field_errors, random_model, run, run_with,
    splat_transform_setup,
};

/// The memory a child test may use: the data segment and private writable mappings, far below
/// the gigabytes that the hostile files below claim, far above what their honest contents need.
const CHILD_MEMORY_LIMIT: u64 = 160 << 20;
const CHILD_ENV: &str = "WGSPLAT_TEST_MEMORY_CAPPED";

/// Runs the test `name` again in a child process with its memory capped by `prlimit` (util-linux)
/// and returns true when the caller should stop (the child ran the body and passed). Returns
/// false in the child itself, and where `prlimit` is missing (the body then runs uncapped).
fn rerun_with_memory_cap(name: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return false;
    }
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("prlimit is missing: running {name} without a memory cap");
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("prlimit")
        .arg(format!("--data={CHILD_MEMORY_LIMIT}"))
        .arg("--")
        .arg(&exe)
        .args([
            &format!("spz::{name}"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{text}");
    assert!(
        output.status.success() && text.contains("1 passed"),
        "{name} failed under a {} MiB memory cap ({})",
        CHILD_MEMORY_LIMIT >> 20,
        output.status
    );
    true
}

fn write_with(path: &Path, model: &PlyModel, version: u32, axes: SpzAxes) {
    let options = SpzOptions { version, axes };
    let dropped = write_spz_with(path, model, &Progress::new(), &options).unwrap();
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[test]
fn spz_version_4_round_trip_within_its_quantisation() {
    let dir = TempDir::new("spz4");
    for degree in [0, 1, 3] {
        let model = random_model(1500, degree, 40 + u64::from(degree));
        let path = dir.0.join(format!("m{degree}.spz"));
        write_with(&path, &model, 4, SpzAxes::Rub);
        let bytes = std::fs::read(&path).unwrap();
        // A plain header: "NGSP", version 4, the count, and (degree 0: no SH) 5 or 6 streams
        // whose table of contents starts right after the 32 bytes.
        assert_eq!(&bytes[..4], b"NGSP");
        assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 4);
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 1500);
        assert_eq!(bytes[15], if degree == 0 { 5 } else { 6 });
        assert_eq!(u32::from_le_bytes(bytes[16..20].try_into().unwrap()), 32);
        let back = read_model(&path, ModelFormat::Spz).unwrap();
        assert_eq!(back.sh_degree, degree);
        let what = format!("SPZ 4 degree {degree}");
        assert_within(&what, &field_errors(&model, &back), &SPZ_BOUNDS);
        eprintln!(
            "{what}: {:.1} bytes per Gaussian",
            bytes.len() as f64 / 1500.0
        );
    }
    // An empty model has no streams and reads back empty.
    let empty = random_model(0, 0, 1);
    let path = dir.0.join("empty.spz");
    write_with(&path, &empty, 4, SpzAxes::Rub);
    assert_eq!(
        read_model(&path, ModelFormat::Spz)
            .unwrap()
            .gaussians
            .means
            .len(),
        0
    );
}

#[test]
fn spz_ply_axes_skip_the_conversion() {
    // One Gaussian at (1, 2, 3): with PLY axes the file holds (1, 2, 3), not the spec's
    // (1, -2, -3); it reads back unchanged with PLY axes, and negated in y and z with the spec's.
    let dir = TempDir::new("spz-ply-axes");
    let mut model = random_model(50, 3, 8);
    model.gaussians.means[0] = [1.0, 2.0, 3.0];
    for version in [3, 4] {
        let path = dir.0.join(format!("v{version}.spz"));
        write_with(&path, &model, version, SpzAxes::Ply);
        let same = read_spz_with(&path, SpzAxes::Ply).unwrap();
        assert_within(
            &format!("SPZ {version}, PLY axes"),
            &field_errors(&model, &same),
            &SPZ_BOUNDS,
        );
        let spec = read_spz_with(&path, SpzAxes::Rub).unwrap();
        assert_eq!(spec.gaussians.means[0], [1.0, -2.0, -3.0]);
        // The spec's reading of a file in PLY axes is the model turned 180° about x: positions
        // and quaternions mirrored back equal the PLY-axes reading.
        let rub = dir.0.join(format!("rub{version}.spz"));
        write_with(&rub, &spec, version, SpzAxes::Ply);
        let twice = read_spz_with(&rub, SpzAxes::Rub).unwrap();
        assert_within(
            &format!("SPZ {version}, PLY axes converted twice"),
            &field_errors(&same, &twice),
            &SPZ_BOUNDS,
        );
    }
    // The command line: --spz-version 4 --spz-axes ply writes version 4 in PLY axes, and reads
    // it back the same way.
    let ply = dir.0.join("model.ply");
    wgsplat::io::write_ply(&ply, &model.gaussians, 3).unwrap();
    let spz = dir.0.join("cli.spz");
    let back = dir.0.join("back.ply");
    let wgsplat = env!("CARGO_BIN_EXE_wgsplat");
    for (from, to) in [(&ply, &spz), (&spz, &back)] {
        let output = Command::new(wgsplat)
            .arg("convert")
            .args([from, to])
            .args(["--spz-version", "4", "--spz-axes", "ply"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    }
    let bytes = std::fs::read(&spz).unwrap();
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 4);
    assert_eq!(
        read_spz_with(&spz, SpzAxes::Ply).unwrap().gaussians.means[0],
        [1.0, 2.0, 3.0]
    );
    assert_within(
        "CLI, SPZ 4 in PLY axes",
        &field_errors(&model, &read_ply(&back).unwrap()),
        &SPZ_BOUNDS,
    );
    let err = Command::new(wgsplat)
        .arg("convert")
        .args([&ply, &spz])
        .args(["--spz-version", "5"])
        .output()
        .unwrap();
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("spz-version"));
}

/// Version 2 encoded here from the spec: the 16-byte header and the arrays in right-up-back
/// axes, rotations as the x, y, z bytes of the normalised quaternion with w >= 0. Also returns
/// the quaternions as the spec decodes those bytes (w derived from x, y, z), in PLY axes.
fn spz_version_2_bytes(model: &PlyModel) -> (Vec<u8>, Vec<[f32; 4]>) {
    let g = &model.gaussians;
    let n = g.means.len();
    let mut data = Vec::new();
    data.extend(b"NGSP");
    data.extend(2u32.to_le_bytes());
    data.extend((n as u32).to_le_bytes());
    data.extend([model.sh_degree as u8, 12, 0, 0]);
    let to_byte = |v: f32| v.round().clamp(0.0, 255.0) as u8;
    for m in &g.means {
        for (k, flip) in [1.0, -1.0, -1.0].into_iter().enumerate() {
            let fixed = (m[k] * flip * 4096.0).round() as i32;
            data.extend(&fixed.to_le_bytes()[..3]);
        }
    }
    for &o in &g.opacity_logits {
        data.push(to_byte(255.0 / (1.0 + (-o).exp())));
    }
    for sh in &g.sh {
        data.extend(sh[0].map(|v| to_byte(v * 0.15 * 255.0 + 127.5)));
    }
    for s in &g.log_scales {
        data.extend(s.map(|v| to_byte((v + 10.0) * 16.0)));
    }
    let mut decoded = Vec::new();
    for q in &g.quats {
        let norm = q.iter().map(|v| v * v).sum::<f32>().sqrt();
        let sign = if q[0] < 0.0 { -1.0 } else { 1.0 };
        let rub = [q[1], -q[2], -q[3]];
        let bytes = rub.map(|v| to_byte((sign * v / norm) * 127.5 + 127.5));
        data.extend(bytes);
        let xyz = bytes.map(|b| f32::from(b) / 127.5 - 1.0);
        let w = (1.0 - xyz.iter().map(|v| v * v).sum::<f32>())
            .max(0.0)
            .sqrt();
        decoded.push([w, xyz[0], -xyz[1], -xyz[2]]);
    }
    // Band 1 (the only one here): coefficients y, z, x of RDF become -y, -z, x in RUB.
    for sh in &g.sh {
        for (j, flip) in [-1.0, -1.0, 1.0].into_iter().enumerate() {
            data.extend(sh[1 + j].map(|v| to_byte(flip * v * 128.0 + 128.0)));
        }
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&data).unwrap();
    (encoder.finish().unwrap(), decoded)
}

#[test]
fn spz_version_2_is_read() {
    let dir = TempDir::new("spz2");
    let model = random_model(400, 1, 12);
    let path = dir.0.join("v2.spz");
    let (bytes, decoded_quats) = spz_version_2_bytes(&model);
    std::fs::write(&path, bytes).unwrap();
    let back = read_model(&path, ModelFormat::Spz).unwrap();
    assert_eq!(back.sh_degree, 1);
    // Version 2's rotations are 8-bit x, y, z with w derived (far off where w is small), so they
    // are compared with the spec's decoding of the bytes; its SH is not bucketed.
    let mut expected = model.clone();
    expected.gaussians.quats = decoded_quats;
    let bounds = super::formats::FieldErrors {
        rotation: 1e-5,
        sh_band1: 0.5 / 128.0 + 1e-5,
        ..SPZ_BOUNDS
    };
    assert_within(
        "SPZ 2 crafted from the spec",
        &field_errors(&expected, &back),
        &bounds,
    );
}

#[test]
fn splat_transform_default_spz_version_4_is_read() {
    let model = random_model(600, 3, 23);
    let Some((tool, dir, ply)) = splat_transform_setup("splat-transform-spz4", &model) else {
        return;
    };
    let theirs = dir.0.join("theirs.spz");
    run(&tool, &[&ply, &theirs]);
    let bytes = std::fs::read(&theirs).unwrap();
    assert_eq!(
        &bytes[..4],
        b"NGSP",
        "splat-transform's default is version 4"
    );
    assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 4);
    let read = read_model(&theirs, ModelFormat::Spz).unwrap();
    assert_within(
        "PLY -> splat-transform SPZ 4 (default) -> wgsplat",
        &field_errors(&model, &read),
        &SPZ_BOUNDS,
    );
    // The same file decoded by splat-transform and by wgsplat agree.
    let decoded = dir.0.join("theirs_decoded.ply");
    run(&tool, &[&theirs, &decoded]);
    assert_within(
        "splat-transform SPZ 4 decoded by wgsplat vs by splat-transform",
        &field_errors(&read_ply(&decoded).unwrap(), &read),
        &SAME_DECODE,
    );
}

#[test]
fn splat_transform_reads_our_spz_version_4() {
    let model = random_model(600, 3, 24);
    let Some((tool, dir, _ply)) = splat_transform_setup("splat-transform-ours4", &model) else {
        return;
    };
    let ours = dir.0.join("ours.spz");
    write_with(&ours, &model, 4, SpzAxes::Rub);
    assert_eq!(&std::fs::read(&ours).unwrap()[..8], b"NGSP\x04\0\0\0");
    let back = dir.0.join("from_ours.ply");
    run_with(&tool, &[&ours, &back], &[]);
    assert_within(
        "wgsplat SPZ 4 -> splat-transform -> PLY",
        &field_errors(&model, &read_ply(&back).unwrap()),
        &SPZ_BOUNDS,
    );
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
