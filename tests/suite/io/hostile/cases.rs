//! One test per defect found by measuring the model readers and writers with hostile files:
//! counts that wrap size arithmetic, memory bombs, misleading messages, writers whose files their
//! own readers refuse, an empty `.splat`, allocation failure, and FIFOs.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use wgsplat::error::Error;
use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::{PlyModel, read_ply, write_ply};

use super::super::TempDir;
use super::super::formats::random_model;
use super::super::run_in_capped_child;
use super::{CHILD_CAP, header_len};

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
    let test = "hostile::cases::allocation_failure_is_an_error_naming_the_bytes";
    if run_in_capped_child(test, CHILD_CAP) {
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
