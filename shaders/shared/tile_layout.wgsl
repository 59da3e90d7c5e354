// How the rasterizer's kernels (rasterize.wgsl, rasterize_backward.wgsl) lay a 16x16 tile over a
// workgroup. Each invocation owns COLUMNS groups of four pixels stacked in one pixel column, held
// as vec4 components, so one splat read serves 4 * COLUMNS pixels.
// - GPUs: 64 invocations per tile, invocation i owning column i % 16, rows 4 (i / 16) .. + 3.
// - CPU adapters (CPU_LAYOUT, e.g. lavapipe): 16 invocations per tile, invocation x owning the
//   tile's whole column x as four groups of four rows. Every workgroup-memory load of splat data
//   then serves 16 pixels instead of 4, and a splat's sums cross 16 invocations instead of 64 (on
//   lavapipe each such access is a loop over the lanes; ../shared/notes/lavapipe-performance.md).
// The importer imports shared/splat.wgsl (TILE_SIZE) first.
#if CPU_LAYOUT
const WORKGROUP: u32 = 16u;
const COLUMNS: u32 = 4u;
#else
const WORKGROUP: u32 = 64u;
const COLUMNS: u32 = 1u;
#endif

// The pixel column and the first row of invocation `lid`'s pixels in tile `tile` of a grid
// `tiles_x` tiles wide; its groups start at rows first_row + 4k, k < COLUMNS.
fn column_origin(tile: u32, tiles_x: u32, lid: u32) -> vec2<u32> {
    let px = (tile % tiles_x) * TILE_SIZE + lid % TILE_SIZE;
    let first_row = (tile / tiles_x) * TILE_SIZE + (lid / TILE_SIZE) * 4u * COLUMNS;
    return vec2<u32>(px, first_row);
}
