// Chunked rasterization (src/splat/raster.rs). Visible splats are stored in pages of whole rows,
// and each rasterizer runs once per page (a "chunk"): the forward pass front to back, the backward
// pass back to front, each dispatch carrying per-pixel state to the next. The uniform names the
// chunk: `page_offset` = its first splat, `count` = its splats, `aux` = all visible splats (V).
//
// Within one tile's run of `splat_from_isect`, splat ids ascend (depth order), so a chunk's
// intersections are a contiguous sub-run, found by binary search. The importer declares
// `u: RenderUniform` and `splat_from_isect: array<u32>`.
//
// On CPU adapters a chunk's sub-run is further cut into slices of at most `u.slice_len`
// intersections, one dispatch each (`u.slice` = 0, 1, ...): llvmpipe leaves every loop of an
// invocation once it has run 65,535 loop iterations in all, so no dispatch may walk a long run
// whole. A tile whose sub-run is shorter takes it all in slice 0 and leaves the later slices at
// once. With `slice_len` 0 (GPUs) slice 0 is the whole sub-run.

// Whether this dispatch rasterizes the frontmost chunk (splat 0).
fn chunk_is_first() -> bool {
    return u.page_offset == 0u;
}

// Whether this dispatch rasterizes the backmost chunk (splat V - 1).
fn chunk_is_last() -> bool {
    return u.page_offset + u.count >= u.aux;
}

// The first index in [lo, hi) whose splat is at least `splat` (hi when there is none).
fn first_isect_from_splat(lo_in: u32, hi_in: u32, splat: u32) -> u32 {
    var lo = lo_in;
    var hi = hi_in;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if splat_from_isect[mid] < splat {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The sub-run of the tile's run [start, end) whose splats belong to this chunk. With one chunk
// it is the whole run, found without a search.
fn chunk_run(start: u32, end: u32) -> vec2<u32> {
    var lo = start;
    if !chunk_is_first() {
        lo = first_isect_from_splat(start, end, u.page_offset);
    }
    var hi = end;
    if !chunk_is_last() {
        hi = first_isect_from_splat(lo, end, u.page_offset + u.count);
    }
    return vec2<u32>(lo, hi);
}

// Slice `u.slice` of the sub-run `run`, counted from its front (forward pass): (begin, end,
// whether it holds the sub-run's first intersection, whether it holds its last). A slice past the
// end of the run is empty and holds neither; slice 0 of an empty run holds both.
fn slice_from_front(run: vec2<u32>) -> vec4<u32> {
    if u.slice_len == 0u {
        return vec4<u32>(run, 1u, 1u);
    }
    let len = run.y - run.x;
    let skip = min(u.slice * u.slice_len, len);
    let take = min(u.slice_len, len - skip);
    let holds = u.slice == 0u || skip < len;
    return vec4<u32>(run.x + skip, run.x + skip + take, u32(u.slice == 0u), u32(holds && skip + take == len));
}

// Slice `u.slice` of the sub-run `run`, counted from its back (backward pass): (begin, end,
// whether it holds the sub-run's last intersection, whether it holds its first). A slice past the
// front of the run is empty and holds neither; slice 0 of an empty run holds both.
fn slice_from_back(run: vec2<u32>) -> vec4<u32> {
    if u.slice_len == 0u {
        return vec4<u32>(run, 1u, 1u);
    }
    let len = run.y - run.x;
    let skip = min(u.slice * u.slice_len, len);
    let take = min(u.slice_len, len - skip);
    let holds = u.slice == 0u || skip < len;
    return vec4<u32>(run.y - skip - take, run.y - skip, u32(u.slice == 0u), u32(holds && skip + take == len));
}
