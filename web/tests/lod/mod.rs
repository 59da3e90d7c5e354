//! The page streaming a level-of-detail folder over HTTP (`?lod=scene.lod/`): a city of over a
//! million Gaussians built here from the built-in scene's initial Gaussians tiled 8 × 7, served
//! beside the page, drawn under a memory budget far smaller than the folder. The page draws it, fetches only pages some cut wanted
//! (or their parent pages, which the pool loads first), keeps its resident pages within the
//! budget and every tensor within WebGPU's default binding size.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use wgsplat::GpuContext;
use wgsplat::data::builtin::{BuiltinOptions, generate};
use wgsplat::io::lod::city::tiled;
use wgsplat::io::lod::{LodScene, PageEncoding, WriteOptions, build_tree, write_lod};
use wgsplat::io::ply::PlyModel;
use wgsplat::train::TrainConfig;
use wgsplat::train::init::initial_gaussians;
use wgsplat::train::setup::apply_builtin_recipe;

/// Gaussians of one copy of the scene, and the copies of the city.
const GAUSSIANS: usize = 20_000;
const TILES: (usize, usize) = (8, 7);
/// At least this many Gaussians in the city.
const CITY_GAUSSIANS: usize = 1_000_000;
const PAGE_NODES: u64 = 4096;
const POOL_PAGES: u64 = 24;

/// Builds the folder in `scratch`; returns its path.
pub fn build(scratch: &Path) -> PathBuf {
    let ctx = GpuContext::from_env().expect("a GPU");
    let dataset = generate(&BuiltinOptions {
        resolution: 32,
        points: GAUSSIANS,
        ..BuiltinOptions::default()
    })
    .expect("the built-in scene");
    let mut config = TrainConfig::default();
    apply_builtin_recipe(&mut config);
    let params = initial_gaussians(&ctx, &dataset, &config).expect("initial Gaussians");
    let one = PlyModel {
        gaussians: params.download(&ctx).expect("download"),
        sh_degree: 0,
    };
    let (model, _) = tiled(&one, TILES.0, TILES.1);
    assert!(model.gaussians.means.len() >= CITY_GAUSSIANS);
    let folder = scratch.join("scene.lod");
    let options = WriteOptions {
        page_nodes: PAGE_NODES,
        encoding: PageEncoding::CompressedPly,
    };
    write_lod(&build_tree(&model).expect("the tree"), &folder, options).expect("writing it");
    folder
}

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

fn page_list(data: &serde_json::Value, name: &str) -> BTreeSet<u32> {
    let text = data[name].as_str().unwrap_or_default();
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().expect("a page number"))
        .collect()
}

/// Opens the folder in the page and checks what it fetched, kept and drew.
pub fn streams_under_its_budget(base: &str, scratch: &Path, folder: &Path) {
    let scene = LodScene::open(folder).expect("the folder reads");
    let page_bytes = PAGE_NODES * 14 * 4;
    let budget = POOL_PAGES * page_bytes;
    assert!(
        scene.page_count() as u64 > 2 * POOL_PAGES,
        "{} pages",
        scene.page_count()
    );
    let file = scratch.join("lod.png");
    let url =
        format!("{base}/index.html?lod=scene.lod/&lod-memory={budget}&tau=0.5&bare=1&size=192x144");
    let visit = super::visit(&url, Some(&file));
    println!("level of detail: {}", visit.report);
    assert_eq!(visit.exit, 0, "the page failed: {}", visit.report);
    let data = &visit.report["data"];
    let number = |name: &str| -> u64 {
        data[name]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {data}"))
    };
    assert!(number("maxBindingBytes") <= 128 << 20, "{data}");
    assert_eq!(number("lodBudgetBytes"), budget);
    assert!(
        number("lodMaxResidentBytes") <= budget && number("lodPoolBytes") <= budget,
        "{data}"
    );
    assert!(
        number("lodGaussians") > 0 && number("lodFrames") > 0,
        "{data}"
    );

    // Pages fetched over HTTP: only what some cut wanted, and their parent pages.
    let requests = super::REQUESTS
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    let fetched: BTreeSet<u32> = (0..scene.page_count() as u32)
        .filter(|&p| {
            let file = format!("scene.lod/{}", scene.index.pages[p as usize].file);
            requests.contains(&file)
        })
        .collect();
    let wanted = page_list(data, "lodWanted");
    let mut allowed = wanted.clone();
    allowed.insert(0);
    for &p in &wanted {
        ancestors(&scene, p, &mut allowed);
    }
    let stray: Vec<_> = fetched.difference(&allowed).collect();
    assert!(
        stray.is_empty(),
        "pages {stray:?} fetched without a cut wanting them"
    );
    assert_eq!(
        fetched,
        page_list(data, "lodLoaded"),
        "fetched and loaded differ"
    );
    assert!(
        fetched.len() > 1 && fetched.len() < scene.page_count(),
        "{} of {} pages fetched",
        fetched.len(),
        scene.page_count()
    );

    // It draws: many colours, and a part of the image off the black background (the starting
    // camera sees the whole root sphere, which the scene's stray points make wide).
    let shot = image::open(&file).expect("the screenshot reads").to_rgba8();
    let (mut lit, mut colors) = (0u32, BTreeSet::new());
    for y in 0..144 {
        for x in 0..192 {
            let p = shot.get_pixel(x, y).0;
            colors.insert([p[0], p[1], p[2]]);
            lit += u32::from(p[0].max(p[1]).max(p[2]) > 8);
        }
    }
    assert!(
        colors.len() > 50 && lit * 50 > 192 * 144,
        "{} colours, {lit} pixels lit",
        colors.len()
    );
}
