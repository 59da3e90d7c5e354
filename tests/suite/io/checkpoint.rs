//! Checkpoints: bit-exact round trips of parameters, moments, step count, iteration, RNG state and
//! extra JSON (paged and on both paths), identical training after a reload, and clear errors for
//! truncated, corrupt and foreign files.

use std::path::{Path, PathBuf};
use wgsplat::io::checkpoint::{MAGIC, load_checkpoint, save_checkpoint};
use wgsplat::optim::{AdamConfig, GaussianOptimizer, LearningRateSchedule, MomentStorage};
use wgsplat::splat::GaussianTensors;
use wgsplat::testing::{TestRng, both_paths, both_paths_small_pages};
use wgsplat::{Error, GpuContext, MemoryCategory};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn random_set(
    enc: &mut wgsplat::Encoder,
    rng: &mut TestRng,
    n: usize,
    degree: u32,
    category: MemoryCategory,
) -> GaussianTensors {
    let t = GaussianTensors::uninit(enc, n, degree, category, "g").unwrap();
    for a in t.attributes() {
        let mut data = rng.vec_f32(a.len() as usize, -1.0, 1.0);
        // Special bit patterns must survive too.
        for (i, v) in [
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(1),
        ]
        .into_iter()
        .enumerate()
        {
            if i < data.len() {
                data[i] = v;
            }
        }
        a.write(enc, &data).unwrap();
    }
    t
}

/// A model and an optimizer that has taken two steps.
fn trained_model(
    ctx: &GpuContext,
    n: usize,
    degree: u32,
    seed: u64,
) -> (GaussianTensors, GaussianOptimizer) {
    trained_model_with(ctx, n, degree, seed, MomentStorage::default())
}

fn trained_model_with(
    ctx: &GpuContext,
    n: usize,
    degree: u32,
    seed: u64,
    moments: MomentStorage,
) -> (GaussianTensors, GaussianOptimizer) {
    let mut rng = TestRng::new(seed);
    let mut enc = ctx.encoder("model");
    let params =
        GaussianTensors::uninit(&mut enc, n, degree, MemoryCategory::Parameters, "params").unwrap();
    for a in params.attributes() {
        a.write(&mut enc, &rng.vec_f32(a.len() as usize, -1.0, 1.0))
            .unwrap();
    }
    let mut opt = GaussianOptimizer::new(
        &mut enc,
        &params,
        AdamConfig {
            eps: 1e-12,
            moments,
            ..Default::default()
        },
    )
    .unwrap();
    for step in 1..=2 {
        let grads = random_set(&mut enc, &mut rng, n, degree, MemoryCategory::Gradients);
        // No special values in real gradients (they would poison the whole model).
        for a in grads.attributes() {
            a.write(&mut enc, &rng.vec_f32(a.len() as usize, -1.0, 1.0))
                .unwrap();
        }
        opt.step(
            &mut enc,
            &params,
            &grads,
            &LearningRateSchedule::three_dgs(2.0, 100).at(step),
        )
        .unwrap();
    }
    ctx.submit(enc).unwrap();
    (params, opt)
}

/// The words of the parameters and of every moment tensor.
fn all_bits(ctx: &GpuContext, params: &GaussianTensors, opt: &GaussianOptimizer) -> Vec<Vec<u32>> {
    std::iter::once(params)
        .chain(opt.moments().sets())
        .flat_map(|s| u32_bits(ctx, s))
        .collect()
}

fn check_round_trip(ctx: &GpuContext, dir: &Path, n: usize, degree: u32, moments: MomentStorage) {
    let (params, opt) = trained_model_with(ctx, n, degree, n as u64 + 5, moments);
    // Put special values into the parameters and moments as well.
    let mut enc = ctx.encoder("special");
    let mut rng = TestRng::new(77);
    let special = random_set(&mut enc, &mut rng, n, degree, MemoryCategory::Other);
    for (dst, src) in params.attributes().into_iter().zip(special.attributes()) {
        wgsplat::ops::copy(&mut enc, src, dst).unwrap();
    }
    ctx.submit(enc).unwrap();
    let path = dir.join(format!(
        "ckpt-{n}-{degree}-{}-{}.bin",
        ctx.info().kernel_path().to_string().replace(' ', "_"),
        moments.name()
    ));
    let extra = serde_json::json!({ "config": { "iterations": 30000, "name": "garden" }, "loss": [0.5, 0.25] });
    let rng_state = 0xDEAD_BEEF_0123_4567u64;
    save_checkpoint(ctx, &path, &params, &opt, 12_345, rng_state, &extra).unwrap();
    assert!(
        wgsplat::io::temporary_files_of(&path).is_empty(),
        "temporary file left behind"
    );
    let loaded = load_checkpoint(ctx, &path).unwrap();
    assert_eq!(loaded.iteration, 12_345);
    assert_eq!(loaded.rng_state, rng_state);
    assert_eq!(loaded.extra, extra);
    assert_eq!(loaded.optimizer.step_count(), opt.step_count());
    assert_eq!(loaded.optimizer.config, opt.config);
    assert_eq!(loaded.params.len(), n as u64);
    assert_eq!(loaded.params.max_sh_degree(), degree);
    assert_eq!(loaded.params.rows_per_page, params.rows_per_page);
    assert_eq!(loaded.params.means.category(), MemoryCategory::Parameters);
    assert_eq!(loaded.optimizer.moments().storage(), moments);
    assert_eq!(
        loaded.optimizer.moments().sets()[0].sh_rest.category(),
        MemoryCategory::OptimizerState
    );
    let want = all_bits(ctx, &params, &opt);
    let got = all_bits(ctx, &loaded.params, &loaded.optimizer);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        wgsplat::testing::compare_exact(
            &format!("checkpoint n={n} degree={degree} tensor {i}"),
            g,
            w,
        )
        .unwrap();
    }
}

fn u32_bits(ctx: &GpuContext, t: &GaussianTensors) -> Vec<Vec<u32>> {
    t.attributes()
        .map(|a| a.bitcast(wgsplat::DType::U32).read::<u32>(ctx).unwrap())
        .to_vec()
}

#[test]
fn checkpoint_round_trip_is_bit_exact() {
    let dir = temp_dir("round-trip");
    for ctx in both_paths() {
        for (n, degree) in [(0, 3), (1, 0), (300, 3), (77, 2)] {
            for moments in [
                MomentStorage::Packed,
                MomentStorage::Bf16,
                MomentStorage::F32,
            ] {
                check_round_trip(ctx, &dir, n, degree, moments);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn checkpoint_round_trip_paged() {
    let dir = temp_dir("paged");
    for ctx in both_paths_small_pages() {
        check_round_trip(ctx, &dir, 1000, 3, MomentStorage::Packed);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Training after a reload continues exactly as without it, in every moment storage.
#[test]
fn checkpoint_resume_continues_identically() {
    for moments in [
        MomentStorage::Packed,
        MomentStorage::Bf16,
        MomentStorage::F32,
    ] {
        resume_continues_identically(moments);
    }
}

fn resume_continues_identically(moments: MomentStorage) {
    let dir = temp_dir(&format!("resume-{}", moments.name()));
    let ctx = both_paths_small_pages()[1];
    let (params, mut opt) = trained_model_with(ctx, 600, 3, 9, moments);
    let path = dir.join("resume.ckpt");
    save_checkpoint(ctx, &path, &params, &opt, 2, 0, &serde_json::Value::Null).unwrap();
    let mut loaded = load_checkpoint(ctx, &path).unwrap();
    let mut rng = TestRng::new(1234);
    let mut enc = ctx.encoder("grads");
    let grads =
        GaussianTensors::uninit(&mut enc, 600, 3, MemoryCategory::Gradients, "grads").unwrap();
    for a in grads.attributes() {
        a.write(&mut enc, &rng.vec_f32(a.len() as usize, -1.0, 1.0))
            .unwrap();
    }
    let lrs = LearningRateSchedule::three_dgs(2.0, 100).at(3);
    opt.step(&mut enc, &params, &grads, &lrs).unwrap();
    loaded
        .optimizer
        .step(&mut enc, &loaded.params, &grads, &lrs)
        .unwrap();
    ctx.submit(enc).unwrap();
    assert_eq!(u32_bits(ctx, &loaded.params), u32_bits(ctx, &params));
    assert_eq!(
        all_bits(ctx, &loaded.params, &loaded.optimizer),
        all_bits(ctx, &params, &opt)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn expect_format_error(ctx: &GpuContext, path: &Path, needle: &str) {
    match load_checkpoint(ctx, path) {
        Err(e @ Error::Format { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains(&path.display().to_string()),
                "error does not name the file: {message}"
            );
            assert!(
                message.contains(needle),
                "expected {needle:?} in: {message}"
            );
        }
        Err(e) => panic!("expected a format error, got {e}"),
        Ok(_) => panic!("loading {} should fail", path.display()),
    }
}

#[test]
fn checkpoint_corruption_gives_errors() {
    let dir = temp_dir("corrupt");
    let ctx = both_paths()[1];
    let (params, opt) = trained_model(ctx, 40, 1, 3);
    let path = dir.join("good.ckpt");
    save_checkpoint(
        ctx,
        &path,
        &params,
        &opt,
        7,
        8,
        &serde_json::json!({"k": 1}),
    )
    .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], &MAGIC);
    let bad = dir.join("bad.ckpt");

    // Truncation anywhere.
    let header_end = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let cuts = (0..bytes.len())
        .filter(|&c| c < 40 || c.abs_diff(header_end) < 8 || c + 16 > bytes.len() || c % 97 == 0);
    for cut in cuts {
        std::fs::write(&bad, &bytes[..cut]).unwrap();
        let err = load_checkpoint(ctx, &bad)
            .err()
            .unwrap_or_else(|| panic!("cut at {cut} loaded"));
        assert!(
            err.to_string().contains(&bad.display().to_string()),
            "{err}"
        );
    }
    std::fs::write(&bad, &bytes[..bytes.len() - 100]).unwrap();
    expect_format_error(ctx, &bad, "truncated");

    // A flipped bit in the data, in the checksum, or in the header.
    for (at, needle) in [
        (header_end + 1000, "checksum"),
        (bytes.len() - 3, "checksum"),
        (header_end - 20, ""),
    ] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        std::fs::write(&bad, &flipped).unwrap();
        expect_format_error(ctx, &bad, needle);
    }
    // Trailing garbage, wrong version, wrong magic, a PLY, an empty file.
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"junk");
    std::fs::write(&bad, &longer).unwrap();
    expect_format_error(ctx, &bad, "past the end");
    let mut version = bytes.clone();
    version[8] = 9;
    std::fs::write(&bad, &version).unwrap();
    expect_format_error(ctx, &bad, "version 9");
    std::fs::write(
        &bad,
        b"ply\nformat binary_little_endian 1.0\nelement vertex 0\nend_header\n",
    )
    .unwrap();
    expect_format_error(ctx, &bad, "not a wgsplat checkpoint");
    std::fs::write(&bad, b"").unwrap();
    expect_format_error(ctx, &bad, "too short");
    assert!(matches!(
        load_checkpoint(ctx, &dir.join("missing.ckpt")),
        Err(Error::Io { .. })
    ));

    // A failed save leaves the previous checkpoint in place and no temporary file.
    let (other_params, _) = trained_model(ctx, 41, 1, 4);
    assert!(
        save_checkpoint(
            ctx,
            &path,
            &other_params,
            &opt,
            1,
            1,
            &serde_json::Value::Null
        )
        .is_err()
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert!(wgsplat::io::temporary_files_of(&path).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 64-bit FNV-1a, the checkpoint's checksum.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A version 1 file: the prefix, `header` and `tensors`, and the checksum.
fn version_1_file(header: &serde_json::Value, tensors: &[u8]) -> Vec<u8> {
    file_of_version(1, header, tensors)
}

/// Saves `params` and `opt` to `path` and returns the file's JSON header and its tensor bytes.
fn saved_parts(
    ctx: &GpuContext,
    path: &Path,
    params: &GaussianTensors,
    opt: &GaussianOptimizer,
) -> (serde_json::Value, Vec<u8>) {
    save_checkpoint(ctx, path, params, opt, 2, 7, &serde_json::Value::Null).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[16..16 + json_len]).unwrap();
    (header, bytes[16 + json_len..bytes.len() - 8].to_vec())
}

/// A file of format `version`: the prefix, `header` and `tensors`, and a valid checksum.
fn file_of_version(version: u32, header: &serde_json::Value, tensors: &[u8]) -> Vec<u8> {
    let json = serde_json::to_vec(header).unwrap();
    let mut file = MAGIC.to_vec();
    file.extend(version.to_le_bytes());
    file.extend((json.len() as u32).to_le_bytes());
    file.extend(&json);
    file.extend(tensors);
    file.extend(fnv1a(&file).to_le_bytes());
    file
}

/// A checkpoint of version 1 (f32 moments, no `moments` in the header), made from a version 2
/// file with f32 moments: it loads with the same bits, and resumes in either storage.
#[test]
fn version_1_checkpoints_still_load() {
    let dir = temp_dir("version-1");
    let ctx = both_paths()[1];
    let (params, opt) = trained_model_with(ctx, 300, 3, 21, MomentStorage::F32);
    let (mut header, tensors) = saved_parts(ctx, &dir.join("v2.ckpt"), &params, &opt);
    assert_eq!(header["moments"], "f32");
    header.as_object_mut().unwrap().remove("moments");
    header["format_version"] = 1.into();
    let old = version_1_file(&header, &tensors);
    let old_path = dir.join("v1.ckpt");
    std::fs::write(&old_path, &old).unwrap();
    let loaded = load_checkpoint(ctx, &old_path).unwrap();
    assert_eq!(loaded.optimizer.moments().storage(), MomentStorage::F32);
    assert_eq!(
        all_bits(ctx, &loaded.params, &loaded.optimizer),
        all_bits(ctx, &params, &opt)
    );
    let packed = loaded
        .optimizer
        .converted(ctx, MomentStorage::Packed)
        .unwrap();
    assert_eq!(packed.moments().storage(), MomentStorage::Packed);
    // A version 1 header that names a storage is refused, as is a version from the future.
    header["moments"] = "bf16".into();
    std::fs::write(&old_path, version_1_file(&header, &tensors)).unwrap();
    expect_format_error(ctx, &old_path, "version 1 header names a moment storage");
    let mut future = std::fs::read(dir.join("v2.ckpt")).unwrap();
    future[8] = 4;
    std::fs::write(&old_path, &future).unwrap();
    expect_format_error(ctx, &old_path, "reads versions 1 to 3");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Hostile version-2 headers with a valid checksum: the moment storage that does not match the
/// tensors or their types, an unknown storage, counts that overflow or exceed the file. Each is a
/// format error naming the file, before any tensor is allocated.
#[test]
fn hostile_version_2_headers_are_refused() {
    let dir = temp_dir("hostile-v2");
    let ctx = both_paths()[1];
    let (params, opt) = trained_model_with(ctx, 50, 3, 31, MomentStorage::Bf16);
    let (header, tensors) = saved_parts(ctx, &dir.join("v2.ckpt"), &params, &opt);
    let tensors = &tensors[..];
    let bad = dir.join("bad.ckpt");
    // Each hostile header as version 2 and as version 3 (this build's).
    let refused = |edit: &dyn Fn(&mut serde_json::Value), needle: &str| {
        let mut h = header.clone();
        edit(&mut h);
        for version in [2, 3] {
            h["format_version"] = version.into();
            std::fs::write(&bad, file_of_version(version, &h, tensors)).unwrap();
            expect_format_error(ctx, &bad, needle);
        }
    };
    // The storage says f32 but the tensors are packed words.
    refused(&|h| h["moments"] = "f32".into(), "tensor list");
    // A packed tensor listed as f32 (the wrong type).
    refused(&|h| h["tensors"][6]["dtype"] = "f32".into(), "tensor list");
    // A storage nobody knows, and the packed state, which version 2 did not have.
    refused(&|h| h["moments"] = "f16".into(), "JSON header is invalid");
    let mut h = header.clone();
    h["moments"] = "packed".into();
    std::fs::write(&bad, file_of_version(2, &h, tensors)).unwrap();
    expect_format_error(ctx, &bad, "version 2 header names the packed state");
    // Counts past 32 bits, and counts whose tensors the file does not hold.
    refused(&|h| h["gaussians"] = (1u64 << 40).into(), "tensor list");
    let huge = 1u64 << 31;
    refused(
        &|h| {
            h["gaussians"] = huge.into();
            let widths = [3u64, 3, 4, 1, 3, 45];
            let entries = h["tensors"].as_array_mut().unwrap();
            for (i, entry) in entries.iter_mut().enumerate() {
                let width = widths[i % 6];
                entry["shape"][0] = huge.into();
                entry["bytes"] = (huge * width * 4).into();
            }
        },
        "truncated",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A version-2 checkpoint with bfloat16 moments (the 16-bit state before version 3) loads with the
/// same bits, and converts to the packed state to within the packed state's rounding.
#[test]
fn version_2_bfloat16_checkpoints_load_and_convert() {
    let dir = temp_dir("version-2-bf16");
    let ctx = both_paths()[1];
    let (params, opt) = trained_model_with(ctx, 200, 3, 33, MomentStorage::Bf16);
    let path = dir.join("v3.ckpt");
    save_checkpoint(ctx, &path, &params, &opt, 2, 7, &serde_json::Value::Null).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[16..16 + json_len]).unwrap();
    assert_eq!(header["moments"], "bf16");
    header["format_version"] = 2.into();
    let old_path = dir.join("v2.ckpt");
    std::fs::write(
        &old_path,
        file_of_version(2, &header, &bytes[16 + json_len..bytes.len() - 8]),
    )
    .unwrap();
    let loaded = load_checkpoint(ctx, &old_path).unwrap();
    assert_eq!(loaded.optimizer.moments().storage(), MomentStorage::Bf16);
    assert_eq!(
        all_bits(ctx, &loaded.params, &loaded.optimizer),
        all_bits(ctx, &params, &opt)
    );
    let [m, v] = loaded.optimizer.read_moments(ctx).unwrap();
    let packed = loaded
        .optimizer
        .converted(ctx, MomentStorage::Packed)
        .unwrap();
    let step = packed.config.ratio_step();
    let [pm, pv] = packed.read_moments(ctx).unwrap();
    for a in 0..m.len() {
        for i in 0..m[a].len() {
            // v: bfloat16 values are exact in 19 bits; m: within half a step of sqrt(v).
            assert_eq!(pv[a][i], v[a][i], "v of attribute {a} element {i}");
            let tolerance = 0.5 * step * v[a][i].sqrt() * 1.001 + 1e-30;
            assert!(
                (pm[a][i] - m[a][i]).abs() <= tolerance,
                "m of attribute {a} element {i}: {} converted to {}",
                m[a][i],
                pm[a][i]
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
