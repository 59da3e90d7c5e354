//! The viewer streaming a level-of-detail folder under a memory budget, in one scripted run: a
//! folder built here from the built-in scene's initial Gaussians (a few thousand, pages of 64),
//! a pool of twelve pages, and a flight from far away to near the centre and across. Every
//! frame's resident bytes stay within the budget, pages are loaded only for what some cut
//! wanted (or their parent pages, which the pool loads first), the pool evicts as the camera
//! moves, and the last frame draws the model.

use std::collections::BTreeSet;
use wgsplat::GpuContext;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::lod::{LodScene, PageEncoding, WriteOptions, build_tree, write_lod};
use wgsplat::io::ply::PlyModel;
use wgsplat::train::TrainConfig;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::setup::apply_builtin_recipe;

mod common;
use common::{rect_of, run_viewer, scratch_dir};

const PAGE_NODES: u64 = 64;
const POOL_PAGES: u64 = 12;
const FLIGHT: u32 = 10;

/// Pages holding the parents of `page`'s nodes, and theirs, up to the root page.
fn ancestors(scene: &LodScene, page: u32, out: &mut BTreeSet<u32>) {
    let record = &scene.index.pages[page as usize];
    for node in record.first_node..record.first_node + record.nodes {
        let parent = scene.skeleton.parent[node as usize];
        if let Some(&q) = scene.node_page.get(parent as usize)
            && q != page
            && out.insert(q)
        {
            ancestors(scene, q, out);
        }
    }
}

fn pages(value: &serde_json::Value) -> BTreeSet<u32> {
    let list = value.as_array().expect("a list of pages");
    list.iter()
        .map(|p| p.as_u64().expect("a page number") as u32)
        .collect()
}

#[test]
fn a_flight_over_a_level_of_detail_stays_in_its_budget_and_loads_only_what_cuts_want() {
    let ctx = GpuContext::from_env().expect("a GPU");
    let dir = scratch_dir("lod");
    let dataset = generate(&BuiltinOptions {
        resolution: 32,
        points: 3000,
        ..BuiltinOptions::default()
    })
    .expect("the built-in scene");
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    let params = initial_gaussians(&ctx, &dataset, &config).expect("initial Gaussians");
    let model = PlyModel {
        gaussians: params.download(&ctx).expect("download"),
        sh_degree: 0,
    };
    let tree = build_tree(&model).expect("the tree");
    let folder = dir.join("scene.lod");
    let options = WriteOptions {
        page_nodes: PAGE_NODES,
        encoding: PageEncoding::CompressedPly,
    };
    write_lod(&tree, &folder, options).expect("writing the level of detail");
    let scene = LodScene::open(&folder).expect("reading it back");
    let page_bytes = PAGE_NODES * 14 * 4;
    let budget = POOL_PAGES * page_bytes;
    assert!(
        scene.page_count() as u64 > 4 * POOL_PAGES,
        "{} pages",
        scene.page_count()
    );

    let (shot, sidecar) = run_viewer(
        &dir,
        &[
            folder.to_str().expect("a UTF-8 path"),
            "--lod-memory",
            &budget.to_string(),
            "--lod-loads",
            "3",
            "--fly",
            &FLIGHT.to_string(),
            "--frames",
            &(FLIGHT + 2).to_string(),
            "--width",
            "900",
            "--height",
            "600",
        ],
    );
    let lod = &sidecar["lod"];
    let figure = |name: &str| {
        lod[name]
            .as_u64()
            .unwrap_or_else(|| panic!("no {name} in {lod}"))
    };
    eprintln!(
        "{} frames, {} pages loaded, {} evicted, most {} resident bytes of {budget}",
        figure("frames"),
        figure("pages_loaded"),
        figure("pages_evicted"),
        figure("max_resident_bytes")
    );
    assert_eq!(figure("budget_bytes"), budget);
    assert_eq!(figure("page_bytes"), page_bytes);
    assert!(figure("frames") >= u64::from(FLIGHT), "{lod}");
    assert!(
        figure("max_resident_bytes") <= budget && figure("pool_bytes") <= budget,
        "{lod}"
    );
    assert!(
        figure("max_resident_bytes") >= (POOL_PAGES - 1) * page_bytes,
        "{lod}"
    );

    // Pages loaded: only those some cut wanted, and the parent pages loaded before them.
    let (loaded, wanted) = (pages(&lod["loaded"]), pages(&lod["wanted"]));
    let mut allowed: BTreeSet<u32> = wanted.clone();
    allowed.insert(0);
    for &p in &wanted {
        ancestors(&scene, p, &mut allowed);
    }
    let stray: Vec<_> = loaded.difference(&allowed).collect();
    assert!(
        stray.is_empty(),
        "pages {stray:?} loaded without a cut wanting them"
    );
    assert!(
        wanted.len() as u64 > POOL_PAGES && figure("pages_evicted") > 0,
        "the flight should want more pages than the pool holds: {lod}"
    );
    assert!(
        loaded.len() < scene.page_count(),
        "every page was loaded: {lod}"
    );

    // The last frame draws the model: many colours, and much of the image off the background.
    let scene_region = sidecar["scene"].clone();
    let [x0, y0, x1, y1] = rect_of(&scene_region);
    let (mut lit, mut total) = (0u64, 0u64);
    let mut colors = BTreeSet::new();
    for y in y0..y1.min(shot.height()) {
        for x in x0..x1.min(shot.width()) {
            let p = shot.get_pixel(x, y).0;
            colors.insert(p);
            total += 1;
            lit += u64::from(p[0].max(p[1]).max(p[2]) > 8);
        }
    }
    assert!(
        colors.len() > 50 && lit * 10 > total,
        "{} colours, {lit} of {total} pixels lit",
        colors.len()
    );
    assert!(figure("gaussians") > 0, "{lod}");
    std::fs::remove_dir_all(&dir).ok();
}
