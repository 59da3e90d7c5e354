// Counter-based random numbers: a value depends only on its key, so results depend only on the
// seed and the index, never on scheduling.

fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn uniform01(key: u32) -> f32 {
    // 24 random bits, never exactly 0 (Box-Muller takes a log).
    return (f32(pcg(key) >> 8u) + 0.5) / 16777216.0;
}

fn normal(key: u32) -> f32 {
    let u1 = uniform01(key);
    let u2 = uniform01(key ^ 0x9e3779b9u);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
