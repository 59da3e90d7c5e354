//! Hostile and careless model files: each reader (INRIA PLY, compressed PLY, SOG, `.splat`) under
//! a few hundred seeded mutations of a small valid file (byte flips, truncations, header-count
//! edits), each giving an error or a model, never a panic, in a child process whose memory is
//! capped and whose peak is checked; and, in [`cases`], one test per defect found by
//! measurement.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use wgsplat::error::Error;
use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::{read_ply, write_ply};
use wgsplat::testing::TestRng;

use super::formats::random_model;
use super::{MemoryCap, TempDir, run_in_capped_child};

mod cases;

/// Peak memory growth a mutation run may cause (the files are a few KB).
const MAX_PEAK_GROWTH_KIB: u64 = 100 << 10;

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
    // The same bytes read from memory (as the browser page reads them) end the same way: a model
    // of the same size, or an error naming the file, never a panic or a host-memory failure.
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    if name != "meta.json" {
        let bytes = std::fs::read(path).unwrap();
        let in_memory = std::panic::catch_unwind(AssertUnwindSafe(|| {
            wgsplat::io::formats::read_model_bytes(&name, &bytes)
        }));
        match (&outcome, in_memory) {
            (_, Err(_)) => panic!("reading {name} from memory panicked after {what}"),
            (_, Ok(Err(e @ Error::HostOutOfMemory { .. }))) => {
                panic!("{what}: {name} in memory asked for too much memory: {e}")
            }
            (Ok(Ok(model)), Ok(Ok(again))) => assert_eq!(
                model.gaussians.means.len(),
                again.gaussians.means.len(),
                "{what}: {name} reads differently from memory"
            ),
            (Ok(Err(_)), Ok(Err(e))) => assert!(
                e.to_string().contains(&name),
                "{what}: the error from memory does not name the file: {e}"
            ),
            (_, Ok(again)) => panic!(
                "{what}: {name} from the file and from memory disagree (memory: {})",
                if again.is_ok() { "a model" } else { "an error" }
            ),
        }
    }
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

/// The address space a child running one of these tests may use.
pub(super) const CHILD_CAP: MemoryCap = MemoryCap::AddressSpaceMib(3 << 10);

/// Runs `body` in a memory-capped child (see [`run_in_capped_child`]) and checks there that
/// the peak memory grew by less than [`MAX_PEAK_GROWTH_KIB`].
fn in_capped_child(name: &str, body: impl FnOnce()) {
    if run_in_capped_child(name, CHILD_CAP) {
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
pub(super) fn header_len(bytes: &[u8]) -> usize {
    bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .map_or(bytes.len(), |p| p + 11)
}

#[test]
fn mutated_ply_files_give_errors_or_models() {
    in_capped_child("hostile::mutated_ply_files_give_errors_or_models", || {
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
    in_capped_child(
        "hostile::mutated_compressed_ply_files_give_errors_or_models",
        || {
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
        },
    );
}

#[test]
fn mutated_splat_files_give_errors_or_models() {
    in_capped_child("hostile::mutated_splat_files_give_errors_or_models", || {
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
    in_capped_child("hostile::mutated_sog_files_give_errors_or_models", || {
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
