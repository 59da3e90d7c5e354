//! Splat model formats: round trips through `.splat` and SPZ within each format's documented
//! quantisation (the worst error per field is printed), SPZ's coordinate convention pinned to
//! its spec, clear errors on damaged files, and PlayCanvas's `splat-transform` as a third-party
//! reader and writer (run where Node.js is installed; `.ci/run` installs the tool).

use std::path::{Path, PathBuf};
use std::process::Command;

use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::{PlyModel, read_ply, write_ply};
use wgsplat::splat::reference::CpuGaussians;
use wgsplat::testing::TestRng;

use super::TempDir;

/// A model whose values lie inside every format's range (SPZ: SH within ±1, log scales up to 5,
/// positions within ±2048).
pub(super) fn random_model(n: usize, sh_degree: u32, seed: u64) -> PlyModel {
    let mut rng = TestRng::new(seed);
    let mut g = CpuGaussians::default();
    for _ in 0..n {
        g.means.push([0; 3].map(|_| rng.range(-20.0, 20.0)));
        g.log_scales.push([0; 3].map(|_| rng.range(-8.0, 2.0)));
        g.quats.push([0; 4].map(|_| rng.range(-1.0, 1.0)));
        g.opacity_logits.push(rng.range(-4.0, 4.0));
        let mut sh = [[0.0f32; 3]; 16];
        sh[0] = [0; 3].map(|_| rng.range(-1.7, 1.7));
        let rest = [0, 3, 8, 15][sh_degree as usize];
        for coefficient in &mut sh[1..=rest] {
            *coefficient = [0; 3].map(|_| rng.range(-0.9, 0.9));
        }
        g.sh.push(sh);
    }
    PlyModel {
        gaussians: g,
        sh_degree,
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Largest errors per field between two models, with quaternions compared up to sign after
/// normalising and opacities after the sigmoid.
#[derive(Debug, Default)]
pub(super) struct FieldErrors {
    pub position: f32,
    pub log_scale: f32,
    pub rotation: f32,
    pub opacity: f32,
    pub dc: f32,
    pub sh_band1: f32,
    pub sh_rest: f32,
}

pub(super) fn field_errors(a: &PlyModel, b: &PlyModel) -> FieldErrors {
    let (a, b_model) = (&a.gaussians, b);
    let b = &b_model.gaussians;
    assert_eq!(a.means.len(), b.means.len(), "Gaussian counts differ");
    let mut e = FieldErrors::default();
    let max = |acc: &mut f32, v: f32| *acc = acc.max(if v.is_nan() { f32::INFINITY } else { v });
    let normalise = |q: [f32; 4]| {
        let n = q.iter().map(|v| v * v).sum::<f32>().sqrt();
        q.map(|v| v / n)
    };
    for i in 0..a.means.len() {
        for k in 0..3 {
            max(&mut e.position, (a.means[i][k] - b.means[i][k]).abs());
            max(
                &mut e.log_scale,
                (a.log_scales[i][k] - b.log_scales[i][k]).abs(),
            );
        }
        let (qa, qb) = (normalise(a.quats[i]), normalise(b.quats[i]));
        let same: f32 = (0..4).map(|k| (qa[k] - qb[k]).abs()).fold(0.0, f32::max);
        let flipped: f32 = (0..4).map(|k| (qa[k] + qb[k]).abs()).fold(0.0, f32::max);
        max(&mut e.rotation, same.min(flipped));
        max(
            &mut e.opacity,
            (sigmoid(a.opacity_logits[i]) - sigmoid(b.opacity_logits[i])).abs(),
        );
        for c in 0..3 {
            max(&mut e.dc, (a.sh[i][0][c] - b.sh[i][0][c]).abs());
            for j in 1..16 {
                let d = (a.sh[i][j][c] - b.sh[i][j][c]).abs();
                if j <= 3 {
                    max(&mut e.sh_band1, d);
                } else {
                    max(&mut e.sh_rest, d);
                }
            }
        }
    }
    e
}

/// Asserts every field error is within its bound, naming the first that is not.
pub(super) fn assert_within(what: &str, e: &FieldErrors, bounds: &FieldErrors) {
    eprintln!("{what}: worst errors {e:?}");
    let fields = [
        ("position", e.position, bounds.position),
        ("log scale", e.log_scale, bounds.log_scale),
        ("rotation", e.rotation, bounds.rotation),
        ("opacity", e.opacity, bounds.opacity),
        ("SH DC", e.dc, bounds.dc),
        ("SH band 1", e.sh_band1, bounds.sh_band1),
        ("SH bands 2-3", e.sh_rest, bounds.sh_rest),
    ];
    for (name, got, bound) in fields {
        assert!(got <= bound, "{what}: {name} error {got} exceeds {bound}");
    }
}

/// Bounds of 1e-4 on every field: two decoders of the same file.
pub(super) const SAME_DECODE: FieldErrors = FieldErrors {
    position: 1e-4,
    log_scale: 1e-4,
    rotation: 1e-4,
    opacity: 1e-4,
    dc: 1e-4,
    sh_band1: 1e-4,
    sh_rest: 1e-4,
};

/// SPZ's quantisation: 1/4096 positions, 1/16 log scales, 8-bit alpha and colour (0.15 scale),
/// 9-bit smallest-three rotations, SH buckets of 8/128 (band 1) and 16/128 (bands 2, 3).
pub(super) const SPZ_BOUNDS: FieldErrors = FieldErrors {
    position: 0.5 / 4096.0 + 1e-5,
    log_scale: 0.5 / 16.0 + 1e-5,
    rotation: 4e-3,
    opacity: 0.5 / 255.0 + 1e-3,
    dc: 0.5 / (0.15 * 255.0) + 1e-4,
    sh_band1: 4.5 / 128.0,
    sh_rest: 8.5 / 128.0,
};

#[test]
fn spz_round_trip_within_its_quantisation() {
    let dir = TempDir::new("spz");
    for degree in [0, 1, 3] {
        let model = random_model(2000, degree, 7 + u64::from(degree));
        let path = dir.0.join(format!("m{degree}.spz"));
        let dropped = write_model(&path, ModelFormat::Spz, &model).unwrap();
        assert!(dropped.is_empty(), "{dropped:?}");
        let back = read_model(&path, ModelFormat::Spz).unwrap();
        assert_eq!(back.sh_degree, degree);
        assert_within(
            &format!("SPZ degree {degree}"),
            &field_errors(&model, &back),
            &SPZ_BOUNDS,
        );
        let bytes = std::fs::metadata(&path).unwrap().len();
        eprintln!(
            "SPZ degree {degree}: {:.1} bytes per Gaussian",
            bytes as f64 / 2000.0
        );
    }
}

/// `.splat`'s quantisation: f32 positions and scales, 8-bit colour (DC), opacity and rotation
/// components (renormalised after decoding; readers decode a byte as `(b - 128) / 128` or, as
/// splat-transform does, `b / 127.5 - 1`, which moves a component by up to another half step).
const SPLAT_BOUNDS: FieldErrors = FieldErrors {
    position: 0.0,
    log_scale: 1e-5,
    rotation: 1.5 / 128.0,
    opacity: 0.5 / 255.0 + 1e-3,
    dc: 0.5 / 255.0 / 0.282_094_8 + 1e-4,
    sh_band1: 0.0,
    sh_rest: 0.0,
};

/// What a `.splat` file can hold of `model`: SH degree 0.
fn degree_zero(model: &PlyModel) -> PlyModel {
    let mut expected = model.clone();
    for sh in &mut expected.gaussians.sh {
        sh[1..].iter_mut().for_each(|c| *c = [0.0; 3]);
    }
    expected
}

#[test]
fn splat_round_trip_within_its_quantisation() {
    let dir = TempDir::new("splat");
    // The DC range of random_model keeps the colour inside [0, 1], where .splat does not clamp.
    let model = random_model(2000, 3, 11);
    let path = dir.0.join("m.splat");
    let dropped = write_model(&path, ModelFormat::Splat, &model).unwrap();
    assert!(
        dropped.iter().any(|d| d.contains("SH degree 0")),
        "{dropped:?}"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2000 * 32);
    let back = read_model(&path, ModelFormat::Splat).unwrap();
    assert_eq!(back.sh_degree, 0);
    assert_within(
        ".splat",
        &field_errors(&degree_zero(&model), &back),
        &SPLAT_BOUNDS,
    );
}

/// Compressed PLY's quantisation for `random_model` (chunk ranges of 40 units in position, 10
/// in log scale, 0.96 in colour): 11-10-11-bit positions and scales, 8-bit colours in the chunk
/// range and opacity, 10-bit smallest-three rotations, SH in 8 bits over ±4.
const COMPRESSED_BOUNDS: FieldErrors = FieldErrors {
    position: 0.5 * 40.0 / 1023.0,
    log_scale: 0.5 * 10.0 / 1023.0,
    rotation: 3e-3,
    opacity: 0.5 / 255.0 + 1e-3,
    dc: 0.5 * 0.96 / 255.0 / 0.282_094_8,
    sh_band1: 0.5 * 8.0 / 256.0 + 1e-5,
    sh_rest: 0.5 * 8.0 / 256.0 + 1e-5,
};

#[test]
fn compressed_ply_round_trip_within_its_quantisation() {
    let dir = TempDir::new("compressed");
    for (n, degree) in [(1000, 3), (256, 1), (3, 0)] {
        let model = random_model(n, degree, 31 + n as u64);
        let path = dir.0.join(format!("m{n}.compressed.ply"));
        assert_eq!(
            ModelFormat::from_path(&path).unwrap(),
            ModelFormat::CompressedPly
        );
        let dropped = write_model(&path, ModelFormat::CompressedPly, &model).unwrap();
        assert!(dropped.is_empty(), "{dropped:?}");
        let back = read_model(&path, ModelFormat::CompressedPly).unwrap();
        assert_eq!(back.sh_degree, degree);
        let what = format!("compressed PLY, {n} Gaussians, degree {degree}");
        assert_within(&what, &field_errors(&model, &back), &COMPRESSED_BOUNDS);
        let bytes = std::fs::metadata(&path).unwrap().len();
        eprintln!("{what}: {:.1} bytes per Gaussian", bytes as f64 / n as f64);
    }
    // A truncated body and a plain PLY under the name are named.
    let path = dir.0.join("m1000.compressed.ply");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    let err = read_model(&path, ModelFormat::CompressedPly)
        .unwrap_err()
        .to_string();
    assert!(err.contains("truncated"), "{err}");
    write_ply(&path, &random_model(5, 0, 1).gaussians, 0).unwrap();
    let err = read_model(&path, ModelFormat::CompressedPly)
        .unwrap_err()
        .to_string();
    assert!(err.contains("chunk"), "{err}");
}

#[test]
fn spz_stores_right_up_back_coordinates() {
    // One Gaussian at (1, 2, 3) with the identity rotation: SPZ holds (1, -2, -3) (PLY's
    // right-down-front turned into right-up-back, as the reference library converts).
    let dir = TempDir::new("spz-axes");
    let mut model = random_model(1, 0, 3);
    model.gaussians.means[0] = [1.0, 2.0, 3.0];
    let path = dir.0.join("one.spz");
    write_model(&path, ModelFormat::Spz, &model).unwrap();
    let mut data = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut data)
        .unwrap();
    assert_eq!(&data[..4], &0x5053_474eu32.to_le_bytes());
    assert_eq!(u32::from_le_bytes(data[4..8].try_into().unwrap()), 3);
    let coordinate = |k: usize| {
        let b = &data[16 + 3 * k..19 + 3 * k];
        i32::from_le_bytes([b[0], b[1], b[2], if b[2] & 0x80 != 0 { 0xff } else { 0 }]) as f32
            / 4096.0
    };
    assert_eq!(
        [coordinate(0), coordinate(1), coordinate(2)],
        [1.0, -2.0, -3.0]
    );
}

#[test]
fn damaged_files_give_clear_errors() {
    let dir = TempDir::new("damaged");
    let model = random_model(10, 1, 5);
    let spz = dir.0.join("m.spz");
    write_model(&spz, ModelFormat::Spz, &model).unwrap();
    let read = |p: &Path, f| read_model(p, f).unwrap_err().to_string();
    // Not gzip, truncated gzip, wrong magic, wrong version, a count the data does not hold.
    std::fs::write(spz.with_extension("x.spz"), b"hello").unwrap();
    assert!(read(&spz.with_extension("x.spz"), ModelFormat::Spz).contains("gzip"));
    let bytes = std::fs::read(&spz).unwrap();
    std::fs::write(dir.0.join("cut.spz"), &bytes[..bytes.len() / 2]).unwrap();
    assert!(read(&dir.0.join("cut.spz"), ModelFormat::Spz).contains("SPZ"));
    let raw = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut data = Vec::new();
        use std::io::{Read, Write};
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut data)
            .unwrap();
        edit(&mut data);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&data).unwrap();
        let path = dir.0.join("edited.spz");
        std::fs::write(&path, enc.finish().unwrap()).unwrap();
        read(&path, ModelFormat::Spz)
    };
    assert!(raw(&|d| d[0] ^= 1).contains("magic"));
    assert!(raw(&|d| d[4] = 7).contains("version 7"));
    assert!(raw(&|d| d[8] = 11).contains("11 points"));
    assert!(raw(&|d| d[14] |= 2).contains("extensions"));
    // .splat: not a whole number of records, and a NaN position.
    let splat = dir.0.join("m.splat");
    write_model(&splat, ModelFormat::Splat, &model).unwrap();
    let mut bytes = std::fs::read(&splat).unwrap();
    std::fs::write(dir.0.join("cut.splat"), &bytes[..31]).unwrap();
    assert!(read(&dir.0.join("cut.splat"), ModelFormat::Splat).contains("32-byte"));
    bytes[32..36].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&splat, &bytes).unwrap();
    assert!(read(&splat, ModelFormat::Splat).contains("Gaussian 1"));
    // An unknown extension is named, with the ones that are read.
    let err = ModelFormat::from_path(Path::new("scene.ksplat"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("scene.ksplat") && err.contains(".sog"),
        "{err}"
    );
}

/// The `splat-transform` command: `$WGSPLAT_SPLAT_TRANSFORM`, else the copy `.ci/run` installs
/// under `target/npm`, else one on PATH. `None` (skip, with the reason printed) only where
/// Node.js itself is absent.
pub(super) fn splat_transform() -> Option<PathBuf> {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipping: Node.js is not installed, so PlayCanvas's splat-transform cannot run");
        return None;
    }
    let candidates = [
        std::env::var_os("WGSPLAT_SPLAT_TRANSFORM").map(PathBuf::from),
        Some(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/npm/node_modules/.bin/splat-transform"),
        ),
        Some(PathBuf::from("splat-transform")),
    ];
    for candidate in candidates.into_iter().flatten() {
        if Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Some(candidate);
        }
    }
    panic!(
        "Node.js is installed but splat-transform is not: `npm install --prefix target/npm @playcanvas/splat-transform` \
         (or set WGSPLAT_SPLAT_TRANSFORM)"
    );
}

pub(super) fn run(tool: &Path, args: &[&Path]) {
    run_with(tool, args, &[]);
}

/// Runs splat-transform on `args` with the options `extra` (and `-w`), asserting success.
pub(super) fn run_with(tool: &Path, args: &[&Path], extra: &[&str]) {
    let output = Command::new(tool)
        .args(args)
        .args(extra)
        .arg("-w")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "splat-transform {args:?} {extra:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// splat-transform, a fresh folder `name`, and `model` written there as `model.ply`; `None`
/// (the test skips, saying why) where Node.js is absent.
pub(super) fn splat_transform_setup(
    name: &str,
    model: &PlyModel,
) -> Option<(PathBuf, TempDir, PathBuf)> {
    let tool = splat_transform()?;
    let dir = TempDir::new(name);
    let ply = dir.0.join("model.ply");
    write_ply(&ply, &model.gaussians, model.sh_degree).unwrap();
    Some((tool, dir, ply))
}

#[test]
fn splat_transform_reads_and_writes_what_wgsplat_does() {
    let model = random_model(700, 3, 21);
    let Some((tool, dir, ply)) = splat_transform_setup("splat-transform", &model) else {
        return;
    };
    // 1. splat-transform reads wgsplat's SPZ and .splat and writes them back as PLY.
    for (format, expected, bounds) in [
        (ModelFormat::Spz, model.clone(), SPZ_BOUNDS),
        (ModelFormat::Splat, degree_zero(&model), SPLAT_BOUNDS),
        (ModelFormat::CompressedPly, model.clone(), COMPRESSED_BOUNDS),
    ] {
        let ours = dir.0.join(format!("ours.{}", format.extension()));
        write_model(&ours, format, &model).unwrap();
        let back = dir.0.join(format!("from_{}.ply", format.name()));
        run(&tool, &[&ours, &back]);
        let read = read_ply(&back).unwrap();
        let what = format!("wgsplat {} -> splat-transform -> PLY", format.name());
        assert_within(&what, &field_errors(&expected, &read), &bounds);
    }
    // 2. wgsplat reads the SPZ splat-transform writes from the same PLY.
    let theirs = dir.0.join("theirs.spz");
    run_with(&tool, &[&ply, &theirs], &["--spz-version", "3"]);
    let read = read_model(&theirs, ModelFormat::Spz).unwrap();
    assert_within(
        "PLY -> splat-transform SPZ -> wgsplat",
        &field_errors(&model, &read),
        &SPZ_BOUNDS,
    );
    // 3. wgsplat decodes the compressed PLY splat-transform writes (its Gaussians reordered along
    //    a Morton curve) as splat-transform itself decodes it.
    let theirs = dir.0.join("theirs.compressed.ply");
    run(&tool, &[&ply, &theirs]);
    let decoded_by_them = dir.0.join("theirs_decoded.ply");
    run(&tool, &[&theirs, &decoded_by_them]);
    let ours = read_model(&theirs, ModelFormat::CompressedPly).unwrap();
    let what = "splat-transform compressed PLY decoded by wgsplat vs by splat-transform";
    assert_within(
        what,
        &field_errors(&read_ply(&decoded_by_them).unwrap(), &ours),
        &SAME_DECODE,
    );
}

/// A model file read from memory (what the browser page does with a download or a dropped file)
/// gives exactly what reading the file gives, in every format; a damaged buffer fails with the
/// same kind of error naming the model.
#[test]
fn every_format_reads_the_same_from_memory() {
    let dir = TempDir::new("from-memory");
    let model = random_model(500, 1, 41);
    for format in ModelFormat::ALL {
        let name = format!("m.{}", format.extension());
        let path = dir.0.join(&name);
        let stored = if format == ModelFormat::Splat {
            degree_zero(&model)
        } else {
            model.clone()
        };
        write_model(&path, format, &stored).unwrap();
        let from_file = read_model(&path, format).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let from_memory = wgsplat::io::formats::read_model_bytes(&name, &bytes)
            .unwrap_or_else(|e| panic!("{name} from memory: {e}"));
        assert_eq!(from_memory.sh_degree, from_file.sh_degree, "{name}");
        assert!(
            from_memory.gaussians == from_file.gaussians,
            "{name}: the Gaussians differ"
        );
        // Past the half and not a whole number of .splat records.
        let cut = &bytes[..bytes.len() / 2 + 1];
        match wgsplat::io::formats::read_model_bytes(&name, cut) {
            Ok(_) => panic!("half of {name} must not read"),
            Err(err) => assert!(err.to_string().contains(&name), "{name}: {err}"),
        }
    }
}
