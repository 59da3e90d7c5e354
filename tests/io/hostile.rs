//! Hostile and careless model files: each reader (INRIA PLY, compressed PLY, SOG, `.splat`) under
//! a few hundred seeded mutations of a small valid file (byte flips, truncations, header-count
//! edits), each giving an error or a model, never a panic, in a child process whose memory is
//! capped and whose peak is checked; and one test per defect found by measurement (counts that
//! wrap size arithmetic, memory bombs, misleading messages, writers whose files their readers
//! refuse, allocation failure, FIFOs).

use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Command;

use wgsplat::error::Error;
use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::{PlyModel, read_ply, write_ply};
use wgsplat::testing::TestRng;

use super::TempDir;
use super::formats::random_model;

/// Set in a child process to the name of the test it runs.
const CHILD_ENV: &str = "WGSPLAT_HOSTILE_CHILD";
/// Peak memory growth a mutation run may cause (the files are a few KB).
const MAX_PEAK_GROWTH_KIB: u64 = 100 << 10;

/// Runs this module's test `name` again in a child process whose address space is capped at
/// `limit_mib` MiB (`ulimit -v`), so that an allocation past it fails there instead of taking the
/// machine's memory, and an abort fails this test only. Returns `false` in the child, which then
/// runs the test's body (and everywhere `sh` cannot cap memory).
fn run_in_limited_child(name: &str, limit_mib: u64) -> bool {
    if !cfg!(target_os = "linux") || std::env::var(CHILD_ENV).is_ok_and(|v| v == name) {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {} && exec \"$0\" \"$@\"",
            limit_mib << 10
        ))
        .arg(&exe)
        .args([
            &format!("hostile::{name}"),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, name)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the child running {name} under a {limit_mib} MiB cap failed ({}):\n{text}",
        output.status
    );
    true
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`), where there is one.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Header-count edits: edge values, values that wrap 64-bit products, and non-numbers.
const EDGE_COUNTS: [&str; 18] = [
    "0",
    "1",
    "255",
    "256",
    "257",
    "65536",
    "2147483647",
    "4294967295",
    "4294967296",
    "5188146770730811331",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "40062909426492753",
    "10256104813182144529",
    "-1",
    "1e30",
    "99999999999999999999999",
];

/// One seeded mutation of `original`: byte flips anywhere or within the first `header` bytes, a
/// truncation, or a number within the first `header` bytes replaced by an edge count.
fn mutate(rng: &mut TestRng, original: &[u8], header: usize) -> (Vec<u8>, String) {
    let mut bytes = original.to_vec();
    let header = header.clamp(1, bytes.len().max(1));
    let pick = |rng: &mut TestRng, n: usize| (rng.next_u64() % n.max(1) as u64) as usize;
    match rng.next_u32() % 4 {
        kind @ (0 | 1) => {
            let span = if kind == 0 { bytes.len() } else { header };
            let flips = 1 + pick(rng, 4);
            for _ in 0..flips {
                let at = pick(rng, span);
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 1 + (rng.next_u32() % 255) as u8;
                }
            }
            (
                bytes,
                format!("{flips} byte flips in the first {span} bytes"),
            )
        }
        2 => {
            let keep = pick(rng, bytes.len());
            bytes.truncate(keep);
            (bytes, format!("truncated to {keep} bytes"))
        }
        _ => {
            let text = &bytes[..header.min(bytes.len())];
            let numbers: Vec<(usize, usize)> = text
                .iter()
                .enumerate()
                .filter(|&(i, b)| b.is_ascii_digit() && (i == 0 || !text[i - 1].is_ascii_digit()))
                .map(|(i, _)| {
                    let len = text[i..].iter().take_while(|b| b.is_ascii_digit()).count();
                    (i, len)
                })
                .collect();
            if numbers.is_empty() {
                return (bytes, "unchanged".into());
            }
            let (at, len) = numbers[pick(rng, numbers.len())];
            let value = EDGE_COUNTS[pick(rng, EDGE_COUNTS.len())];
            bytes.splice(at..at + len, value.bytes()).for_each(drop);
            (bytes, format!("the number at byte {at} set to {value}"))
        }
    }
}

/// Reads `path` as `format`, requiring an error or a model, never a panic; a model holds at most
/// 64 Gaussians per byte of `file_bytes`, and no error is a host-memory failure (nothing this small
/// needs much memory).
fn expect_error_or_model(path: &Path, format: ModelFormat, file_bytes: usize, what: &str) {
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| read_model(path, format)));
    match outcome {
        Err(_) => panic!("reading {} panicked after {what}", path.display()),
        Ok(Ok(model)) => {
            let n = model.gaussians.means.len();
            assert!(
                n <= 64 * file_bytes + 64,
                "{what}: {n} Gaussians from {file_bytes} bytes"
            );
        }
        Ok(Err(e @ Error::HostOutOfMemory { .. })) => {
            panic!("{what}: a file of {file_bytes} bytes asked for too much memory: {e}")
        }
        Ok(Err(e)) => {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                e.to_string().contains(&name),
                "{what}: the error does not name the file: {e}"
            );
        }
    }
}

/// Runs `mutations` seeded mutations of the file `name` (in `dir`, holding `original`, whose
/// first `header` bytes are its header), reading each as `format` and restoring the file after.
fn mutation_run(
    dir: &Path,
    name: &str,
    original: &[u8],
    header: usize,
    format: ModelFormat,
    read_path: &Path,
    (seed, mutations): (u64, usize),
) {
    let mut rng = TestRng::new(seed);
    let path = dir.join(name);
    for m in 0..mutations {
        let (bytes, what) = mutate(&mut rng, original, header);
        std::fs::write(&path, &bytes).unwrap();
        expect_error_or_model(
            read_path,
            format,
            bytes.len(),
            &format!("mutation {m} of {name} (seed {seed}): {what}"),
        );
    }
    std::fs::write(&path, original).unwrap();
}

/// Runs `body` in a memory-capped child (see [`run_in_limited_child`]) and checks there that
/// the peak memory grew by less than [`MAX_PEAK_GROWTH_KIB`].
fn in_capped_child(name: &str, body: impl FnOnce()) {
    if run_in_limited_child(name, 3 << 10) {
        return;
    }
    let before = status_kib("VmRSS:");
    body();
    if let (Some(before), Some(peak)) = (before, status_kib("VmHWM:")) {
        eprintln!("{name}: resident {before} KiB before, peak {peak} KiB");
        assert!(
            peak.saturating_sub(before) < MAX_PEAK_GROWTH_KIB,
            "{name}: peak memory grew by {} KiB reading files of a few KB",
            peak - before
        );
    }
}

/// Bytes up to and including `end_header\n`.
fn header_len(bytes: &[u8]) -> usize {
    bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .map_or(bytes.len(), |p| p + 11)
}

#[test]
fn mutated_ply_files_give_errors_or_models() {
    in_capped_child("mutated_ply_files_give_errors_or_models", || {
        let dir = TempDir::new("hostile-ply");
        let model = random_model(12, 1, 71);
        let path = dir.0.join("m.ply");
        write_ply(&path, &model.gaussians, model.sh_degree).unwrap();
        let binary = std::fs::read(&path).unwrap();
        // The same model as ASCII, with a face element and an element without properties before
        // the vertices.
        let text = String::from_utf8_lossy(&binary[..header_len(&binary)]).into_owned();
        let properties = text.matches("property float").count();
        let header = text
            .replace("binary_little_endian", "ascii")
            .replace(
                "element vertex",
                "element face 1\nproperty list uchar int vertex_indices\nelement note 2\nelement vertex",
            );
        let mut ascii = header.into_bytes();
        ascii.extend_from_slice(b"3 0 1 2\n");
        for record in binary[header_len(&binary)..].chunks_exact(4 * properties) {
            let values: Vec<String> = record
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap()).to_string())
                .collect();
            ascii.extend_from_slice(values.join(" ").as_bytes());
            ascii.push(b'\n');
        }
        for (bytes, seed) in [(&binary, 1), (&ascii, 2)] {
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(read_ply(&path).unwrap().gaussians.means.len(), 12);
            let header = header_len(bytes);
            mutation_run(
                &dir.0,
                "m.ply",
                bytes,
                header,
                ModelFormat::Ply,
                &path,
                (seed, 200),
            );
        }
    });
}

#[test]
fn mutated_compressed_ply_files_give_errors_or_models() {
    in_capped_child("mutated_compressed_ply_files_give_errors_or_models", || {
        let dir = TempDir::new("hostile-compressed");
        let path = dir.0.join("m.compressed.ply");
        for (degree, seed) in [(1, 3), (0, 4)] {
            write_model(
                &path,
                ModelFormat::CompressedPly,
                &random_model(300, degree, 7),
            )
            .unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let header = header_len(&bytes);
            let run = (seed, 200);
            let name = "m.compressed.ply";
            mutation_run(
                &dir.0,
                name,
                &bytes,
                header,
                ModelFormat::CompressedPly,
                &path,
                run,
            );
        }
    });
}

#[test]
fn mutated_splat_files_give_errors_or_models() {
    in_capped_child("mutated_splat_files_give_errors_or_models", || {
        let dir = TempDir::new("hostile-splat");
        let path = dir.0.join("m.splat");
        write_model(&path, ModelFormat::Splat, &random_model(20, 0, 8)).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        mutation_run(
            &dir.0,
            "m.splat",
            &bytes,
            64,
            ModelFormat::Splat,
            &path,
            (5, 300),
        );
    });
}

#[test]
fn mutated_sog_files_give_errors_or_models() {
    in_capped_child("mutated_sog_files_give_errors_or_models", || {
        let dir = TempDir::new("hostile-sog");
        let meta = dir.0.join("meta.json");
        write_model(&meta, ModelFormat::Sog, &random_model(50, 1, 9)).unwrap();
        // Every loose part: meta.json (its numbers edited) and each texture.
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        parts.sort();
        for (k, part) in parts.iter().enumerate() {
            let name = part.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(part).unwrap();
            let header = if name == "meta.json" { bytes.len() } else { 64 };
            let run = (10 + k as u64, if name == "meta.json" { 100 } else { 25 });
            mutation_run(&dir.0, &name, &bytes, header, ModelFormat::Sog, &meta, run);
        }
        // The bundle: flips, truncations, and edits of the numbers in its stored meta.json.
        let bundle = dir.0.join("m.sog");
        write_model(&bundle, ModelFormat::Sog, &random_model(50, 1, 9)).unwrap();
        let bytes = std::fs::read(&bundle).unwrap();
        mutation_run(
            &dir.0,
            "m.sog",
            &bytes,
            bytes.len(),
            ModelFormat::Sog,
            &bundle,
            (30, 100),
        );
    });
}

/// A compressed PLY header (12 chunk floats, no SH) declaring `chunks` and `n`.
fn compressed_header(chunks: u64, n: u64) -> Vec<u8> {
    let mut header = format!("ply\nformat binary_little_endian 1.0\nelement chunk {chunks}\n");
    for p in [
        "min_x",
        "min_y",
        "min_z",
        "max_x",
        "max_y",
        "max_z",
        "min_scale_x",
        "min_scale_y",
        "min_scale_z",
        "max_scale_x",
        "max_scale_y",
        "max_scale_z",
    ] {
        header += &format!("property float {p}\n");
    }
    header += &format!("element vertex {n}\n");
    for p in [
        "packed_position",
        "packed_rotation",
        "packed_scale",
        "packed_color",
    ] {
        header += &format!("property uint {p}\n");
    }
    (header + "end_header\n").into_bytes()
}

/// Counts whose size arithmetic wraps a 64-bit product: `chunks` is `ceil(n / 256)`.
const WRAPPING_N: u64 = 10_256_104_813_182_144_529;

#[test]
fn compressed_ply_counts_that_wrap_the_size_arithmetic_are_refused() {
    let dir = TempDir::new("hostile-wrap");
    let chunks = WRAPPING_N.div_ceil(256);
    // The body is exactly the length the wrapped arithmetic gives, so a wrapped check passes.
    let wrapped = chunks
        .wrapping_mul(12 * 4)
        .wrapping_add(WRAPPING_N.wrapping_mul(16));
    assert!(wrapped < 4096, "the counts wrap to {wrapped}");
    let mut bytes = compressed_header(chunks, WRAPPING_N);
    bytes.resize(bytes.len() + wrapped as usize, 0);
    let path = dir.0.join("wrap.compressed.ply");
    std::fs::write(&path, &bytes).unwrap();
    let err = read_model(&path, ModelFormat::CompressedPly)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&WRAPPING_N.to_string()), "{err}");
}

#[test]
fn compressed_ply_size_errors_name_the_header_counts_and_the_body() {
    let dir = TempDir::new("hostile-wrap-message");
    let chunks = WRAPPING_N.div_ceil(256);
    let mut bytes = compressed_header(chunks, WRAPPING_N);
    bytes.resize(bytes.len() + 100, 0);
    let path = dir.0.join("wrap.compressed.ply");
    std::fs::write(&path, &bytes).unwrap();
    let err = read_model(&path, ModelFormat::CompressedPly)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{WRAPPING_N} Gaussians"))
            && err.contains(&format!("{chunks} chunks"))
            && err.contains("100 bytes"),
        "{err}"
    );
    // A plain short body: the counts, what they need and what there is.
    let mut bytes = compressed_header(1, 10);
    bytes.resize(bytes.len() + 60, 0);
    std::fs::write(&path, &bytes).unwrap();
    let err = read_model(&path, ModelFormat::CompressedPly)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("10 Gaussians") && err.contains("208 bytes") && err.contains("60 bytes"),
        "{err}"
    );
}

/// The files of a loose SOG set of `model` written in `dir`: `meta.json` first, then the
/// textures, as (name, bytes).
fn sog_parts(dir: &Path, model: &PlyModel) -> Vec<(String, Vec<u8>)> {
    std::fs::create_dir_all(dir).unwrap();
    let meta = dir.join("meta.json");
    write_model(&meta, ModelFormat::Sog, model).unwrap();
    let mut parts = vec![("meta.json".to_string(), std::fs::read(&meta).unwrap())];
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".webp"))
        .collect();
    names.sort();
    for name in names {
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        parts.push((name, bytes));
    }
    parts
}

/// Zips `parts` into `path` (deflated, or stored).
fn zip_parts(path: &Path, parts: &[(String, Vec<u8>)], stored: bool) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let method = if stored {
        zip::CompressionMethod::Stored
    } else {
        zip::CompressionMethod::Deflated
    };
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, bytes) in parts {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// `meta.json` of `parts`, parsed.
fn meta_of(parts: &[(String, Vec<u8>)]) -> serde_json::Value {
    serde_json::from_slice(&parts[0].1).unwrap()
}

#[test]
fn sog_small_file_claiming_many_gaussians_is_refused_before_decoding() {
    let dir = TempDir::new("hostile-sog-bomb");
    let parts = sog_parts(&dir.0.join("loose"), &random_model(5, 0, 3));
    // A million Gaussians in uniform textures of their exact size, which compress to almost
    // nothing: decoded, they and the model would take hundreds of MB.
    let count = 1_000_000usize;
    let (width, height) = wgsplat::io::sog::texture_size(count);
    let rgba: Vec<u8> = [128u8, 128, 128, 252].repeat(width * height);
    let mut texture = Vec::new();
    image::codecs::webp::WebPEncoder::new_lossless(&mut texture)
        .encode(
            &rgba,
            width as u32,
            height as u32,
            image::ExtendedColorType::Rgba8,
        )
        .unwrap();
    let mut meta = meta_of(&parts);
    meta["count"] = count.into();
    let mut bomb = vec![("meta.json".to_string(), serde_json::to_vec(&meta).unwrap())];
    for (name, _) in &parts[1..] {
        bomb.push((name.clone(), texture.clone()));
    }
    let path = dir.0.join("bomb.sog");
    zip_parts(&path, &bomb, false);
    let size = std::fs::metadata(&path).unwrap().len();
    let err = read_model(&path, ModelFormat::Sog).unwrap_err().to_string();
    assert!(
        err.contains(&count.to_string()) && err.contains(&format!("{size} bytes")),
        "{err}"
    );
}

#[test]
fn sog_reads_only_the_entries_meta_json_names_within_their_bounds() {
    let dir = TempDir::new("hostile-sog-entries");
    let parts = sog_parts(&dir.0.join("loose"), &random_model(5, 0, 4));
    let expected = read_model(&dir.0.join("loose/meta.json"), ModelFormat::Sog).unwrap();
    // An entry meta.json never names, damaged (its checksum no longer matches): it is never
    // inflated, so the model reads.
    let marker = b"notes meta.json does not name".repeat(64);
    let mut with_notes = parts.clone();
    with_notes.push(("notes.bin".into(), marker.clone()));
    let path = dir.0.join("notes.sog");
    zip_parts(&path, &with_notes, true);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    bytes[at + 100] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let model = read_model(&path, ModelFormat::Sog).unwrap();
    assert_eq!(model.gaussians, expected.gaussians);
    // A named texture larger than any texture of 5 Gaussians: refused by its stated size.
    let mut oversized = parts.clone();
    let sh0 = oversized.iter_mut().find(|(n, _)| n == "sh0.webp").unwrap();
    sh0.1 = vec![0; 8 << 20];
    let path = dir.0.join("oversized.sog");
    zip_parts(&path, &oversized, false);
    let err = read_model(&path, ModelFormat::Sog).unwrap_err().to_string();
    assert!(
        err.contains("\"sh0.webp\"") && err.contains(&format!("{} bytes, more than", 8 << 20)),
        "{err}"
    );
}

#[test]
fn sog_parts_are_found_in_one_folder_and_missing_ones_named_precisely() {
    let dir = TempDir::new("hostile-sog-names");
    let parts = sog_parts(&dir.0.join("loose"), &random_model(20, 1, 5));
    let flat = dir.0.join("flat.sog");
    zip_parts(&flat, &parts, false);
    let expected = read_model(&flat, ModelFormat::Sog).unwrap();
    // Zipped with their folder (`zip -r scene.sog scene/`).
    let nested: Vec<(String, Vec<u8>)> = parts
        .iter()
        .map(|(n, b)| (format!("scene/{n}"), b.clone()))
        .collect();
    let path = dir.0.join("nested.sog");
    zip_parts(&path, &nested, false);
    assert_eq!(
        read_model(&path, ModelFormat::Sog).unwrap().gaussians,
        expected.gaussians
    );
    // A part meta.json names twice is there both times.
    let mut twice = parts.clone();
    let mut meta = meta_of(&parts);
    meta["quats"]["files"] = meta["sh0"]["files"].clone();
    twice[0].1 = serde_json::to_vec(&meta).unwrap();
    let path = dir.0.join("twice.sog");
    zip_parts(&path, &twice, false);
    let model = read_model(&path, ModelFormat::Sog).unwrap();
    assert_eq!(model.gaussians.means, expected.gaussians.means);
    // An entry in another case: the message names the entry there is.
    let mut cased = parts.clone();
    let low = cased.iter_mut().find(|(n, _)| n == "means_l.webp").unwrap();
    low.0 = "Means_l.webp".into();
    let path = dir.0.join("cased.sog");
    zip_parts(&path, &cased, false);
    let err = read_model(&path, ModelFormat::Sog).unwrap_err().to_string();
    assert!(
        err.contains("\"means_l.webp\"")
            && err.contains("\"Means_l.webp\"")
            && err.contains("case"),
        "{err}"
    );
}

/// `bytes` with `line` inserted after the first line (`ply\n`).
fn with_header_line(bytes: &[u8], line: &str) -> Vec<u8> {
    let mut out = bytes[..4].to_vec();
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(&bytes[4..]);
    out
}

#[test]
fn ply_long_comment_lines_are_read() {
    let dir = TempDir::new("hostile-ply-comment");
    let model = random_model(3, 0, 6);
    let path = dir.0.join("m.ply");
    write_ply(&path, &model.gaussians, 0).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let comment = format!("comment {}\n", "x".repeat(4096 - 9));
    assert_eq!(comment.len(), 4096);
    std::fs::write(&path, with_header_line(&bytes, &comment)).unwrap();
    assert_eq!(read_ply(&path).unwrap().gaussians, model.gaussians);
    // A line past any real header's is named as too long, not as an unknown line.
    let comment = format!("comment {}\n", "x".repeat(100_000));
    std::fs::write(&path, with_header_line(&bytes, &comment)).unwrap();
    let err = read_ply(&path).unwrap_err().to_string();
    assert!(err.contains("header line 2 is longer than"), "{err}");
}

#[test]
fn ply_size_errors_name_the_header_count_and_the_file_size() {
    let dir = TempDir::new("hostile-ply-size");
    let model = random_model(4, 0, 7);
    let path = dir.0.join("m.ply");
    write_ply(&path, &model.gaussians, 0).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes[..header_len(&bytes)]).into_owned();
    for count in ["5188146770730811331", "18446744073709551615", "5"] {
        let edited = text.replace("element vertex 4", &format!("element vertex {count}"));
        let mut file = edited.into_bytes();
        file.extend_from_slice(&bytes[header_len(&bytes)..]);
        std::fs::write(&path, &file).unwrap();
        let err = read_ply(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("declares {count} vertices"))
                && err.contains(&format!("the file is {} bytes", file.len())),
            "{err}"
        );
    }
}

#[test]
fn splat_empty_model_round_trips() {
    let dir = TempDir::new("hostile-splat-empty");
    let path = dir.0.join("empty.splat");
    write_model(&path, ModelFormat::Splat, &random_model(0, 0, 1)).unwrap();
    let model = read_model(&path, ModelFormat::Splat).unwrap();
    assert_eq!(model.gaussians.means.len(), 0);
}

#[test]
fn writers_refuse_values_their_readers_refuse() {
    let dir = TempDir::new("hostile-writers");
    let values = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        100.0,
        -110.0,
    ];
    let attributes = [
        "position",
        "log scale",
        "rotation",
        "opacity logit",
        "SH coefficients",
    ];
    for format in [ModelFormat::Splat, ModelFormat::CompressedPly] {
        let path = dir.0.join(format!("m.{}", format.extension()));
        for (a, attribute) in attributes.iter().enumerate() {
            for value in values {
                let mut model = random_model(6, 1, 2);
                let g = &mut model.gaussians;
                match a {
                    0 => g.means[3][1] = value,
                    1 => g.log_scales[3][2] = value,
                    2 => g.quats[3][0] = value,
                    3 => g.opacity_logits[3] = value,
                    _ => g.sh[3][0][1] = value,
                }
                let _ = std::fs::remove_file(&path);
                let case = format!("{format:?} with the {attribute} {value}");
                match write_model(&path, format, &model) {
                    Ok(_) => {
                        assert!(value.is_finite(), "{case} was written");
                        if let Err(e) = read_model(&path, format) {
                            panic!("{case} was written, and its reader refuses it: {e}");
                        }
                    }
                    Err(e) => {
                        let message = e.to_string();
                        assert!(
                            message.contains("Gaussian 3") && message.contains(attribute),
                            "{case}: {message}"
                        );
                        assert!(!path.exists(), "{case}: refused, but a file was written");
                    }
                }
            }
        }
    }
}

#[test]
fn allocation_failure_is_an_error_naming_the_bytes() {
    if run_in_limited_child("allocation_failure_is_an_error_naming_the_bytes", 3 << 10) {
        return;
    }
    let dir = TempDir::new("hostile-alloc");
    let path = dir.0.join("huge.ply");
    // A genuine (sparse) file of 64M degree-0 Gaussians: its model takes 15 GB, past the cap.
    let n: u64 = 64 << 20;
    let model = random_model(1, 0, 8);
    write_ply(&path, &model.gaussians, 0).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header = String::from_utf8_lossy(&bytes[..header_len(&bytes)])
        .replace("element vertex 1", &format!("element vertex {n}"));
    let record = (bytes.len() - header_len(&bytes)) as u64;
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(header.as_bytes()).unwrap();
    file.set_len(header.len() as u64 + n * record).unwrap();
    drop(file);
    let per_gaussian = (4 * (3 + 3 + 4 + 1 + 48)) as u64;
    match read_ply(&path) {
        Err(Error::HostOutOfMemory { what, bytes }) => {
            assert_eq!(bytes, n * per_gaussian);
            assert!(what.contains("huge.ply"), "{what}");
        }
        Err(e) => panic!("expected an out-of-memory error: {e}"),
        Ok(_) => panic!("read {n} Gaussians under a 3 GiB cap"),
    }
}

#[test]
fn fifo_model_inputs_are_refused_without_blocking() {
    let dir = TempDir::new("hostile-fifo");
    let fifo = |path: &Path| {
        Command::new("mkfifo")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !fifo(&dir.0.join("probe")) {
        eprintln!("skipping: mkfifo is not available here");
        return;
    }
    // The loose SOG set's own folder, with a FIFO for one texture.
    let set = dir.0.join("set");
    sog_parts(&set, &random_model(5, 0, 9));
    std::fs::remove_file(set.join("quats.webp")).unwrap();
    assert!(fifo(&set.join("quats.webp")));
    let mut inputs = vec![(set.join("meta.json"), "quats.webp")];
    for name in ["m.ply", "m.splat", "m.spz", "m.compressed.ply", "m.sog"] {
        let path = dir.0.join(name);
        assert!(fifo(&path));
        inputs.push((path, name));
    }
    let meta = dir.0.join("fifo/meta.json");
    std::fs::create_dir_all(meta.parent().unwrap()).unwrap();
    assert!(fifo(&meta));
    inputs.push((meta, "meta.json"));
    for (path, named) in inputs {
        let (tx, rx) = std::sync::mpsc::channel();
        let reading = path.clone();
        std::thread::spawn(move || {
            let format = ModelFormat::from_path(&reading).unwrap();
            let _ = tx.send(read_model(&reading, format).map(|_| ()));
        });
        let result = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("reading the FIFO {} blocked", path.display()));
        let err = result.unwrap_err().to_string();
        assert!(err.contains("FIFO") && err.contains(named), "{err}");
    }
}
