//! The level-of-detail folder: round trips in both encodings, and hostile indexes and skeletons
//! refused by name.

use super::format::{NODE_RECORD_BYTES, PageEncoding};
use super::tree::{build_tree, tests::random_model};
use super::{LodScene, WriteOptions, write_lod};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgsplat-lod-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn written(name: &str, encoding: PageEncoding) -> (PathBuf, super::LodTree) {
    let model = random_model(3000, 7);
    let tree = build_tree(&model).unwrap();
    let dir = scratch(name).join("scene.lod");
    let options = WriteOptions {
        page_nodes: 256,
        encoding,
    };
    write_lod(&tree, &dir, options).unwrap();
    (dir, tree)
}

fn open_err(dir: &Path) -> String {
    LodScene::open(dir).unwrap_err().to_string()
}

#[test]
fn a_lossless_folder_reads_back_bit_for_bit_page_by_page() {
    let (dir, tree) = written("lossless", PageEncoding::Ply);
    let scene = LodScene::open(&dir).unwrap();
    assert_eq!(scene.skeleton, tree.skeleton);
    assert!(scene.page_count() > 10, "{} pages", scene.page_count());
    for page in 0..scene.page_count() {
        let g = scene.read_page(page).unwrap();
        let first = scene.index.pages[page].first_node as usize;
        for (i, node) in (first..first + g.means.len()).enumerate() {
            assert_eq!(g.means[i], tree.gaussians.means[node], "node {node}");
            assert_eq!(g.sh[i], tree.gaussians.sh[node], "node {node}");
            assert_eq!(scene.node_page[node] as usize, page);
        }
    }
    assert_eq!(scene.read_leaves().unwrap().means.len(), 3000);
    // Writing again replaces the folder.
    write_lod(&tree, &dir, WriteOptions::default()).unwrap();
    assert_eq!(LodScene::open(&dir).unwrap().page_count(), 1);
}

#[test]
fn a_compressed_folder_keeps_counts_and_positions_to_its_quantisation() {
    let (dir, tree) = written("compressed", PageEncoding::CompressedPly);
    let scene = LodScene::open(&dir).unwrap();
    let page = scene.page_count() - 1;
    let g = scene.read_page(page).unwrap();
    let first = scene.index.pages[page].first_node as usize;
    for (i, node) in (first..first + g.means.len()).enumerate() {
        for k in 0..3 {
            let (got, want) = (g.means[i][k], tree.gaussians.means[node][k]);
            assert!(
                (got - want).abs() < 0.02,
                "node {node} axis {k}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn a_folder_that_is_not_a_tree_is_not_replaced() {
    let dir = scratch("not-lod");
    std::fs::write(dir.join("photo.jpg"), b"mine").unwrap();
    let tree = build_tree(&random_model(20, 1)).unwrap();
    let err = write_lod(&tree, &dir, WriteOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a level-of-detail folder"), "{err}");
    assert!(dir.join("photo.jpg").exists());
}

fn edit_index(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("index.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
}

fn edit_node_word(dir: &Path, node: usize, word: usize, value: u32) {
    let path = dir.join("tree.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = node * NODE_RECORD_BYTES + 4 * word;
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn hostile_indexes_are_refused_naming_what_is_wrong() {
    // A node count past the skeleton file.
    let (dir, _) = written("count", PageEncoding::Ply);
    edit_index(&dir, |v| {
        v["nodes"] = (v["nodes"].as_u64().unwrap() + 1).into();
        let last = v["pages"].as_array().unwrap().len() - 1;
        v["pages"][last]["nodes"] = (v["pages"][last]["nodes"].as_u64().unwrap() + 1).into();
    });
    let err = open_err(&dir);
    assert!(err.contains("bytes where the index's"), "{err}");
    // A count that would overflow the size computation.
    edit_index(&dir, |v| v["nodes"] = (1u64 << 62).into());
    let err = open_err(&dir);
    assert!(err.contains("nodes (1 to"), "{err}");

    // A page reaching past the tree.
    let (dir, _) = written("page-past", PageEncoding::Ply);
    edit_index(&dir, |v| {
        let last = v["pages"].as_array().unwrap().len() - 1;
        let nodes = v["pages"][last]["nodes"].as_u64().unwrap();
        v["pages"][last]["nodes"] = (nodes + 5).into();
    });
    let err = open_err(&dir);
    assert!(err.contains("past the tree's"), "{err}");

    // Pages that overlap.
    let (dir, _) = written("page-overlap", PageEncoding::Ply);
    edit_index(&dir, |v| v["pages"][1]["first_node"] = 1.into());
    let err = open_err(&dir);
    assert!(err.contains("must tile the nodes"), "{err}");

    // A page file outside the folder.
    let (dir, _) = written("page-escape", PageEncoding::Ply);
    edit_index(&dir, |v| v["pages"][0]["file"] = "../../etc/passwd".into());
    let err = open_err(&dir);
    assert!(err.contains("leaves the folder"), "{err}");

    // A damaged page file.
    let (dir, _) = written("page-bytes", PageEncoding::Ply);
    let scene = LodScene::open(&dir).unwrap();
    let page = scene.page_path(2);
    let mut bytes = std::fs::read(&page).unwrap();
    bytes.truncate(bytes.len() - 7);
    std::fs::write(&page, bytes).unwrap();
    let err = scene.read_page(2).unwrap_err().to_string();
    assert!(err.contains("where the index says"), "{err}");
}

#[test]
fn hostile_skeletons_are_refused_naming_the_node() {
    // A cycle: a node made the parent of its own parent.
    let (dir, tree) = written("cycle", PageEncoding::Ply);
    let child = tree.skeleton.first_child[1] as usize;
    edit_node_word(&dir, 1, 4, child as u32);
    let err = open_err(&dir);
    assert!(err.contains("does not come before it"), "{err}");

    // Children past the end of the tree.
    let (dir, tree) = written("children-past", PageEncoding::Ply);
    let interior = (0..tree.skeleton.len())
        .rev()
        .find(|&n| tree.skeleton.child_count[n] > 0)
        .unwrap();
    edit_node_word(&dir, interior, 5, tree.skeleton.len() as u32 - 1);
    let err = open_err(&dir);
    assert!(err.contains("lie outside"), "{err}");

    // A bounding sphere that is not a number.
    let (dir, _) = written("sphere", PageEncoding::Ply);
    edit_node_word(&dir, 3, 3, f32::NAN.to_bits());
    let err = open_err(&dir);
    assert!(err.contains("not finite"), "{err}");

    // A root that claims a parent.
    let (dir, _) = written("root", PageEncoding::Ply);
    edit_node_word(&dir, 0, 4, 0);
    let err = open_err(&dir);
    assert!(err.contains("must be the root"), "{err}");
}
