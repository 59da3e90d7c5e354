//! Seeded mutation tests of the dataset readers (COLMAP text and binary, NeRF / nerfstudio JSON):
//! a few hundred edits of a small valid dataset each, every one giving an error or a usable
//! dataset, never a panic (a loader thread's included) nor a camera that cannot be rendered. The
//! seeds are fixed, so a failure repeats; a new reader starts with a test like these.

use std::path::Path;

use wgsplat::data::Dataset;

use super::TempDir;
use super::hostile_data::{
    CAMERAS_TXT, IDENTITY, IDENTITY_POSE, IMAGES_TXT, all_train, cameras_bin,
    colmap_binary_dataset, colmap_text_dataset, nerfstudio_dataset, nerfstudio_json,
};

/// xorshift64*: a small seeded generator, so that every run mutates the same way.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `bytes` with one random edit: a byte replaced, a range deleted or repeated, a value
    /// spliced in, or the end cut off.
    fn mutate(&mut self, bytes: &[u8], values: &[&[u8]]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        let at = self.below(out.len());
        match self.below(5) {
            0 => out[at] = b"0123456789-.e nN\n#\x00\xffa"[self.below(20)],
            1 => {
                let end = (at + 1 + self.below(16)).min(out.len());
                out.drain(at..end);
            }
            2 => {
                let end = (at + 1 + self.below(32)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(at..at, copy);
            }
            3 => {
                let value = values[self.below(values.len())];
                let end = (at + value.len()).min(out.len());
                out.splice(at..end, value.iter().copied());
            }
            _ => out.truncate(at),
        }
        out
    }
}

/// Loads the dataset at `root`, failing the test on a panic (also one a loader thread turned
/// into an error) and on a dataset with a camera that cannot be rendered (a pose or focal length
/// that is not finite in single precision): an error or a usable dataset, nothing between.
fn load_without_panic(root: &Path, what: &str) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Dataset::load(root, &all_train())
    }));
    match result {
        Err(_) => panic!("{what}: the reader panicked"),
        Ok(Err(e)) => assert!(!e.to_string().contains("panicked"), "{what}: {e}"),
        Ok(Ok(dataset)) => {
            for view in dataset.views() {
                let c = &view.camera;
                let pose = c.rotation.iter().flatten().chain(&c.translation);
                let usable = pose.chain([&c.cx, &c.cy]).all(|v| v.is_finite())
                    && c.fx.is_finite()
                    && c.fy.is_finite()
                    && c.fx > 0.0
                    && c.fy > 0.0;
                assert!(
                    usable,
                    "{what}: view {:?} loaded with the camera {c:?}",
                    view.name
                );
            }
        }
    }
}

const TEXT_VALUES: [&[u8]; 8] = [
    b"nan",
    b"-inf",
    b"1e308",
    b"-1e300",
    b"0 0 0 0",
    b"18446744073709551616",
    b"-1",
    b"\n\n",
];

#[test]
fn mutated_colmap_text_models_give_errors_or_datasets_never_panics() {
    let dir = TempDir::new("mutate-colmap-text");
    let sparse = colmap_text_dataset(&dir.0, IMAGES_TXT);
    let mut mutator = Mutator(0x5eed_c01a);
    for round in 0..300 {
        let (file, original) = match round % 2 {
            0 => ("images.txt", IMAGES_TXT),
            _ => ("cameras.txt", CAMERAS_TXT),
        };
        let mutated = mutator.mutate(original.as_bytes(), &TEXT_VALUES);
        std::fs::write(sparse.join(file), &mutated).unwrap();
        load_without_panic(
            &dir.0,
            &format!(
                "round {round}, {file}: {:?}",
                String::from_utf8_lossy(&mutated)
            ),
        );
        std::fs::write(sparse.join(file), original).unwrap();
    }
}

#[test]
fn mutated_colmap_binary_models_give_errors_or_datasets_never_panics() {
    let dir = TempDir::new("mutate-colmap-binary");
    let sparse = colmap_binary_dataset(&dir.0, [IDENTITY_POSE; 4]);
    let images = std::fs::read(sparse.join("images.bin")).unwrap();
    let cameras = cameras_bin();
    let nan = f64::NAN.to_le_bytes();
    let huge = 1e300f64.to_le_bytes();
    let max = u64::MAX.to_le_bytes();
    let zero = [0u8; 8];
    let big = 1u64.wrapping_shl(40).to_le_bytes();
    let values: [&[u8]; 5] = [&nan, &huge, &max, &zero, &big];
    let mut mutator = Mutator(0xb1a_5eed);
    for round in 0..300 {
        let (file, original) = match round % 2 {
            0 => ("images.bin", &images),
            _ => ("cameras.bin", &cameras),
        };
        let mutated = mutator.mutate(original, &values);
        std::fs::write(sparse.join(file), &mutated).unwrap();
        load_without_panic(&dir.0, &format!("round {round}, {file}: {mutated:?}"));
        std::fs::write(sparse.join(file), original).unwrap();
    }
}

/// `value` with one node (chosen by `mutator`) replaced by a hostile JSON value.
fn mutate_json(value: &mut serde_json::Value, mutator: &mut Mutator) {
    let replacements = [
        serde_json::json!(null),
        serde_json::json!(5),
        serde_json::json!(-1),
        serde_json::json!(1e300),
        serde_json::json!("images/f9.png"),
        serde_json::json!(""),
        serde_json::json!([]),
        serde_json::json!([[1, 0], [0, 1]]),
        serde_json::json!({}),
        serde_json::json!(true),
    ];
    let mut node = value;
    for _ in 0..4 {
        let children = match node {
            serde_json::Value::Array(items) if !items.is_empty() => items.len(),
            serde_json::Value::Object(map) if !map.is_empty() => map.len(),
            _ => break,
        };
        if mutator.below(3) == 0 {
            break;
        }
        let pick = mutator.below(children);
        node = match node {
            serde_json::Value::Array(items) => &mut items[pick],
            serde_json::Value::Object(map) => map.values_mut().nth(pick).unwrap(),
            _ => unreachable!(),
        };
    }
    *node = replacements[mutator.below(replacements.len())].clone();
}

#[test]
fn mutated_nerf_transforms_give_errors_or_datasets_never_panics() {
    let dir = TempDir::new("mutate-nerf");
    let good = format!(r#""file_path": "images/f1.png", "transform_matrix": {IDENTITY}"#);
    let json = nerfstudio_json(
        &good,
        r#""camera_model": "OPENCV", "k1": 0.01, "test_filenames": ["images/f1.png"],"#,
    );
    nerfstudio_dataset(&dir.0, &json);
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut mutator = Mutator(0x0ef_5eed);
    for round in 0..300 {
        let mutated = if round % 3 == 0 {
            mutator.mutate(json.as_bytes(), &TEXT_VALUES)
        } else {
            let mut value = parsed.clone();
            mutate_json(&mut value, &mut mutator);
            value.to_string().into_bytes()
        };
        std::fs::write(dir.0.join("transforms.json"), &mutated).unwrap();
        load_without_panic(
            &dir.0,
            &format!("round {round}: {}", String::from_utf8_lossy(&mutated)),
        );
    }
}
