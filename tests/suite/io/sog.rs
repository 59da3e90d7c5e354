//! SOG, PlayCanvas's WebP-texture format: round trips within its quantisation (Gaussians come
//! back in Morton order, so they are matched to the originals by position), the bundle and the
//! loose-file forms agreeing, clear errors on damaged sets, and splat-transform reading what
//! wgsplat writes and the other way round.

use std::path::Path;

use wgsplat::io::formats::{ModelFormat, read_model, write_model};
use wgsplat::io::{PlyModel, read_ply};
use wgsplat::testing::TestRng;

use super::TempDir;
use super::formats::{
    FieldErrors, SAME_DECODE, assert_within, field_errors, random_model, run, run_with,
    splat_transform_setup,
};

/// SOG's quantisation for [`random_model`]'s ranges: 16-bit positions in log space (half a step
/// at |x| = 20 is 0.5·ln(21)·2/65535·21), 256-entry k-means codebooks for log scales (over
/// [-8, 2]; with 900 values the gaps between entries reach 0.1) and DC (over ±1.7), 8-bit rotations (half a step of 2/255 over √2 for the three stored, more for the
/// largest, recomputed from them), 8-bit opacity, and an SH palette whose values are codebook
/// entries too.
const SOG_BOUNDS: FieldErrors = FieldErrors {
    position: 1.1e-3,
    log_scale: 0.06,
    rotation: 8e-3,
    opacity: 0.5 / 255.0 + 1e-3,
    dc: 0.015,
    sh_band1: 0.02,
    sh_rest: 0.02,
};

/// A model whose SH past DC are 40 prototypes plus noise of 1e-3, so a palette can hold them:
/// what SOG's SH quantisation is for.
fn clustered_sh_model(n: usize, degree: u32, seed: u64) -> PlyModel {
    let mut model = random_model(n, degree, seed);
    let mut rng = TestRng::new(seed + 1);
    let prototypes: Vec<[[f32; 3]; 15]> = (0..40)
        .map(|_| [[0.0; 3]; 15].map(|c| c.map(|_| rng.range(-0.9, 0.9))))
        .collect();
    let rest = [0, 3, 8, 15][degree as usize];
    for (i, sh) in model.gaussians.sh.iter_mut().enumerate() {
        for j in 1..=rest {
            sh[j] = prototypes[i % 40][j - 1].map(|v| v + rng.range(-1e-3, 1e-3));
        }
    }
    model
}

/// `decoded` reordered to `reference`'s order, each Gaussian matched to the nearest position
/// (asserting every match is one-to-one).
fn align_by_position(reference: &PlyModel, decoded: &PlyModel) -> PlyModel {
    let (r, d) = (&reference.gaussians, &decoded.gaussians);
    assert_eq!(r.means.len(), d.means.len(), "Gaussian counts differ");
    let mut out = decoded.clone();
    let mut used = vec![false; d.means.len()];
    // The decoded Gaussians sorted by x: the search walks out from x in both directions and stops
    // where x alone is farther than the nearest found (exact, without comparing every pair).
    let mut by_x: Vec<usize> = (0..d.means.len()).collect();
    by_x.sort_by(|&a, &b| d.means[a][0].total_cmp(&d.means[b][0]));
    let xs: Vec<f32> = by_x.iter().map(|&j| d.means[j][0]).collect();
    for (i, m) in r.means.iter().enumerate() {
        let distance = |j: usize| (0..3).map(|a| (m[a] - d.means[j][a]).powi(2)).sum::<f32>();
        let start = xs.partition_point(|&x| x < m[0]);
        let mut best = (f32::INFINITY, usize::MAX);
        // Takes position k of the sorted list; false once x alone is farther than the best.
        let mut visit = |k: usize| {
            if (xs[k] - m[0]).powi(2) > best.0 {
                return false;
            }
            // Ties to the lower index, as comparing every pair in order did.
            let candidate = (distance(by_x[k]), by_x[k]);
            if candidate
                .0
                .total_cmp(&best.0)
                .then(candidate.1.cmp(&best.1))
                .is_lt()
            {
                best = candidate;
            }
            true
        };
        for k in start..xs.len() {
            if !visit(k) {
                break;
            }
        }
        for k in (0..start).rev() {
            if !visit(k) {
                break;
            }
        }
        let j = best.1;
        assert!(j < d.means.len(), "no decoded Gaussian near Gaussian {i}");
        assert!(
            !used[j],
            "Gaussians {i} and another both match decoded Gaussian {j}"
        );
        used[j] = true;
        out.gaussians.means[i] = d.means[j];
        out.gaussians.log_scales[i] = d.log_scales[j];
        out.gaussians.quats[i] = d.quats[j];
        out.gaussians.opacity_logits[i] = d.opacity_logits[j];
        out.gaussians.sh[i] = d.sh[j];
    }
    out
}

#[test]
fn sog_round_trip_within_its_quantisation() {
    let dir = TempDir::new("sog");
    for (n, degree) in [(3000, 3), (300, 1), (5, 0)] {
        let model = clustered_sh_model(n, degree, 41 + n as u64);
        let path = dir.0.join(format!("m{n}.sog"));
        assert_eq!(ModelFormat::from_path(&path).unwrap(), ModelFormat::Sog);
        let notes = write_model(&path, ModelFormat::Sog, &model).unwrap();
        assert_eq!(notes.len(), usize::from(degree > 0), "{notes:?}");
        let back = read_model(&path, ModelFormat::Sog).unwrap();
        assert_eq!(back.sh_degree, degree);
        let what = format!("SOG, {n} Gaussians, degree {degree}");
        assert_within(
            &what,
            &field_errors(&model, &align_by_position(&model, &back)),
            &SOG_BOUNDS,
        );
        let bytes = std::fs::metadata(&path).unwrap().len();
        eprintln!(
            "{what}: {:.1} bytes per Gaussian; {notes:?}",
            bytes as f64 / n as f64
        );
    }
    // The loose files (a folder's meta.json) hold exactly what the bundle does.
    let model = clustered_sh_model(500, 2, 3);
    let bundle = dir.0.join("m.sog");
    let folder = dir.0.join("loose");
    std::fs::create_dir_all(&folder).unwrap();
    let meta = folder.join("meta.json");
    assert_eq!(ModelFormat::from_path(&meta).unwrap(), ModelFormat::Sog);
    write_model(&bundle, ModelFormat::Sog, &model).unwrap();
    write_model(&meta, ModelFormat::Sog, &model).unwrap();
    let (a, b) = (
        read_model(&bundle, ModelFormat::Sog).unwrap(),
        read_model(&meta, ModelFormat::Sog).unwrap(),
    );
    assert_eq!(a.gaussians, b.gaussians);
    // Any other name (with an explicit format) is a bundle too.
    let other = dir.0.join("m.bin");
    write_model(&other, ModelFormat::Sog, &model).unwrap();
    assert_eq!(&std::fs::read(&other).unwrap()[..2], b"PK");
    assert_eq!(
        read_model(&other, ModelFormat::Sog).unwrap().gaussians,
        a.gaussians
    );
    assert!(folder.join("shN_labels.webp").exists());
    assert!(wgsplat::io::temporary_files_of(&folder.join("meta.json")).is_empty());
}

#[test]
fn damaged_sog_files_give_clear_errors() {
    let dir = TempDir::new("sog-damaged");
    let model = random_model(200, 1, 9);
    let meta = dir.0.join("meta.json");
    write_model(&meta, ModelFormat::Sog, &model).unwrap();
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    let read = |p: &Path| read_model(p, ModelFormat::Sog).unwrap_err().to_string();
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut value = original.clone();
        edit(&mut value);
        std::fs::write(&meta, serde_json::to_vec(&value).unwrap()).unwrap();
        read(&meta)
    };
    let expect = |err: String, words: &[&str]| {
        assert!(
            words.iter().all(|w| err.contains(w)),
            "{words:?} not all in: {err}"
        );
    };
    expect(
        edited(&|v| drop(v.as_object_mut().unwrap().remove("version"))),
        &["version 1"],
    );
    expect(edited(&|v| v["version"] = 3.into()), &["version 3"]);
    expect(
        edited(&|v| v["count"] = 100_000.into()),
        &["too small", "100000"],
    );
    expect(
        edited(&|v| v["scales"]["codebook"] = serde_json::json!([1.0, 2.0])),
        &["scales.codebook", "2 entries"],
    );
    expect(
        edited(&|v| v["shN"]["count"] = 1.into()),
        &["shN_labels.webp", "past the 1"],
    );
    expect(edited(&|v| v["shN"]["bands"] = 4.into()), &["bands is 4"]);
    expect(
        edited(&|v| v["quats"]["files"] = serde_json::json!(["../quats.webp"])),
        &["plain file names"],
    );
    expect(
        edited(&|v| v["means"]["files"] = serde_json::json!(["means_l.webp"])),
        &["means.files", "2 needed"],
    );
    expect(
        edited(&|v| drop(v.as_object_mut().unwrap().remove("means"))),
        &["means"],
    );
    std::fs::write(&meta, b"{not json").unwrap();
    expect(read(&meta), &["not valid JSON"]);
    std::fs::write(&meta, serde_json::to_vec(&original).unwrap()).unwrap();
    std::fs::write(dir.0.join("scales.webp"), b"RIFF....WEBPjunk").unwrap();
    expect(read(&meta), &["scales.webp", "WebP"]);
    std::fs::remove_file(dir.0.join("quats.webp")).unwrap();
    expect(read(&meta), &["quats.webp", "missing"]);
    // Bundles: not a zip, a truncated zip, and a zip without meta.json (at its root or in its
    // one folder).
    let bundle = dir.0.join("m.sog");
    write_model(&bundle, ModelFormat::Sog, &model).unwrap();
    let bytes = std::fs::read(&bundle).unwrap();
    std::fs::write(&bundle, &bytes[..bytes.len() / 2]).unwrap();
    expect(read(&bundle), &["zip"]);
    std::fs::write(&bundle, b"hello").unwrap();
    expect(read(&bundle), &["zip"]);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&bundle).unwrap());
    for name in ["data/meta.json", "other/meta.json"] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
    }
    zip.finish().unwrap();
    expect(
        read(&bundle),
        &["no meta.json", "data/meta.json", "other/meta.json"],
    );
    // Nothing to write, or too much for WebP's 16383-texel sides, is refused before writing.
    let empty = random_model(0, 0, 1);
    expect(
        write_model(&bundle, ModelFormat::Sog, &empty)
            .unwrap_err()
            .to_string(),
        &["empty"],
    );
}

#[test]
fn splat_transform_reads_and_writes_sog() {
    let model = clustered_sh_model(700, 3, 23);
    let Some((tool, dir, ply)) = splat_transform_setup("sog-splat-transform", &model) else {
        return;
    };
    // 1. splat-transform decodes wgsplat's SOG as wgsplat does, and both are within SOG's
    //    quantisation of the model written.
    let ours = dir.0.join("ours.sog");
    write_model(&ours, ModelFormat::Sog, &model).unwrap();
    let back = dir.0.join("ours_by_them.ply");
    run(&tool, &[&ours, &back]);
    let by_them = read_ply(&back).unwrap();
    let by_us = read_model(&ours, ModelFormat::Sog).unwrap();
    assert_within(
        "wgsplat SOG decoded by splat-transform vs by wgsplat",
        &field_errors(&by_us, &by_them),
        &SAME_DECODE,
    );
    assert_within(
        "wgsplat SOG -> splat-transform -> PLY",
        &field_errors(&model, &align_by_position(&model, &by_them)),
        &SOG_BOUNDS,
    );
    // 2. wgsplat decodes splat-transform's SOG (written on the CPU) as splat-transform does.
    let theirs = dir.0.join("theirs.sog");
    run_with(&tool, &[&ply, &theirs], &["-g", "cpu"]);
    let decoded_by_them = dir.0.join("theirs_decoded.ply");
    run(&tool, &[&theirs, &decoded_by_them]);
    let ours = read_model(&theirs, ModelFormat::Sog).unwrap();
    assert_eq!(ours.sh_degree, 3);
    assert_within(
        "splat-transform SOG decoded by wgsplat vs by splat-transform",
        &field_errors(&read_ply(&decoded_by_them).unwrap(), &ours),
        &SAME_DECODE,
    );
}
