//! SPZ beyond the round trips in [`super::formats`]: version 4 (written by wgsplat and by
//! PlayCanvas's splat-transform, whose default it is), version 2 crafted from the spec, and the
//! option to keep PLY axes. Hostile SPZ files are in [`super::spz_hostile`].

use std::io::Write as _;
use std::path::Path;
use std::process::Command;

use wgsplat::io::PlyModel;
use wgsplat::io::formats::{ModelFormat, read_model};
use wgsplat::io::progress::Progress;
use wgsplat::io::read_ply;
use wgsplat::io::spz::{SpzAxes, SpzOptions, read_spz_with, write_spz_with};

use super::TempDir;
use super::formats::{
    SAME_DECODE, SPZ_BOUNDS, assert_within, field_errors, random_model, run, run_with,
    splat_transform_setup,
};

pub(super) fn write_with(path: &Path, model: &PlyModel, version: u32, axes: SpzAxes) {
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
pub(super) fn spz_version_2_bytes(model: &PlyModel) -> (Vec<u8>, Vec<[f32; 4]>) {
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

/// The streams of a version 4 file (header checked by the reader elsewhere), inflated.
fn spz4_streams(bytes: &[u8]) -> Vec<Vec<u8>> {
    let streams = usize::from(bytes[15]);
    let mut offset = 32 + 16 * streams;
    let mut out = Vec::new();
    for i in 0..streams {
        let entry = 32 + 16 * i;
        let compressed = u64::from_le_bytes(bytes[entry..entry + 8].try_into().unwrap()) as usize;
        let mut decoder =
            ruzstd::decoding::StreamingDecoder::new(&bytes[offset..offset + compressed]).unwrap();
        let mut stream = Vec::new();
        std::io::Read::read_to_end(&mut decoder, &mut stream).unwrap();
        out.push(stream);
        offset += compressed;
    }
    out
}

#[test]
fn spz_version_4_of_sh_degree_4_is_read_without_band_4() {
    // A degree-3 file written by wgsplat, rewritten as degree 4 with band 4 (9 coefficients per
    // point) filled with noise: the reader keeps bands 0 to 3 and drops band 4.
    let dir = TempDir::new("spz4-degree4");
    let model = random_model(100, 3, 17);
    let path = dir.0.join("d3.spz");
    write_with(&path, &model, 4, SpzAxes::Rub);
    let bytes = std::fs::read(&path).unwrap();
    let mut streams = spz4_streams(&bytes);
    let sh: Vec<u8> = streams[5]
        .chunks(45)
        .enumerate()
        .flat_map(|(i, point)| {
            let noise = (0..27).map(move |k| (i * 31 + k * 7) as u8);
            point.iter().copied().chain(noise).collect::<Vec<_>>()
        })
        .collect();
    streams[5] = sh;
    let mut file = bytes[..32].to_vec();
    file[12] = 4;
    let frames: Vec<Vec<u8>> = streams
        .iter()
        .map(|s| {
            ruzstd::encoding::compress_to_vec(&s[..], ruzstd::encoding::CompressionLevel::Fastest)
        })
        .collect();
    for (frame, stream) in frames.iter().zip(&streams) {
        file.extend((frame.len() as u64).to_le_bytes());
        file.extend((stream.len() as u64).to_le_bytes());
    }
    frames.iter().for_each(|f| file.extend(f));
    let path4 = dir.0.join("d4.spz");
    std::fs::write(&path4, file).unwrap();
    let three = read_model(&path, ModelFormat::Spz).unwrap();
    let four = read_model(&path4, ModelFormat::Spz).unwrap();
    assert_eq!(four.sh_degree, 3);
    assert_within(
        "SPZ 4 of degree 4 vs degree 3",
        &field_errors(&three, &four),
        &super::formats::FieldErrors::default(),
    );
}
