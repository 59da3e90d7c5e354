//! The two quantisers the SOG writer needs ([`super::sog`]).
//!
//! - [`ScalarCodebook`]: 256 values fitted to a set of scalars (log scales, or SH DC colours) by
//!   one-dimensional k-means. Lloyd's iterations run on the sorted values with prefix sums, so
//!   an iteration costs 256 binary searches, whatever the number of values.
//! - [`fit_palette`]: a palette of SH vectors (the coefficients past DC, 3·K values per Gaussian)
//!   and each Gaussian's label, by k-means in 3·K dimensions. Assignment is exhaustive while
//!   points × centroids is small; beyond that the palette is fitted in two levels (√k coarse
//!   clusters, then each split in proportion to its size), which keeps a 10M-Gaussian model to
//!   minutes on two cores. Every step runs on all cores through `rayon` and is deterministic.

use rayon::prelude::*;

/// Entries in a scalar codebook (one byte per label).
pub const CODEBOOK_SIZE: usize = 256;
/// Lloyd iterations of the scalar codebook.
const SCALAR_ITERATIONS: usize = 40;

/// 256 ascending values and the nearest-value lookup into them.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarCodebook {
    /// The values, ascending.
    pub values: Vec<f32>,
}

impl ScalarCodebook {
    /// Fits 256 values to `values` (consumed: they are sorted in place) by one-dimensional
    /// k-means, starting from the quantiles of the distinct values. Fewer than 256 distinct values
    /// are kept exactly (the last one repeated).
    pub fn fit(mut values: Vec<f32>) -> ScalarCodebook {
        values.retain(|v| v.is_finite());
        values.par_sort_unstable_by(f32::total_cmp);
        let mut distinct: Vec<(f32, u64)> = Vec::new();
        for &v in &values {
            match distinct.last_mut() {
                Some((last, count)) if *last == v => *count += 1,
                _ => distinct.push((v, 1)),
            }
        }
        drop(values);
        if distinct.is_empty() {
            return ScalarCodebook {
                values: vec![0.0; CODEBOOK_SIZE],
            };
        }
        if distinct.len() <= CODEBOOK_SIZE {
            let mut out: Vec<f32> = distinct.iter().map(|d| d.0).collect();
            out.resize(CODEBOOK_SIZE, *out.last().unwrap_or(&0.0));
            return ScalarCodebook { values: out };
        }
        // Prefix sums of counts and of count × value over the distinct values.
        let mut count_before = Vec::with_capacity(distinct.len() + 1);
        let mut sum_before = Vec::with_capacity(distinct.len() + 1);
        let (mut c, mut s) = (0u64, 0f64);
        count_before.push(0);
        sum_before.push(0.0);
        for &(v, n) in &distinct {
            c += n;
            s += f64::from(v) * n as f64;
            count_before.push(c);
            sum_before.push(s);
        }
        let u = distinct.len();
        let mut centroids: Vec<f64> = (0..CODEBOOK_SIZE)
            .map(|j| f64::from(distinct[(2 * j + 1) * u / (2 * CODEBOOK_SIZE)].0))
            .collect();
        for _ in 0..SCALAR_ITERATIONS {
            let mut start = 0;
            let mut moved = false;
            for j in 0..CODEBOOK_SIZE {
                let end = if j + 1 == CODEBOOK_SIZE {
                    u
                } else {
                    let boundary = 0.5 * (centroids[j] + centroids[j + 1]);
                    start + distinct[start..].partition_point(|d| f64::from(d.0) < boundary)
                };
                let n = count_before[end] - count_before[start];
                if n > 0 {
                    let mean = (sum_before[end] - sum_before[start]) / n as f64;
                    moved |= mean != centroids[j];
                    centroids[j] = mean;
                }
                start = end;
            }
            if !moved {
                break;
            }
        }
        let mut values: Vec<f32> = centroids.iter().map(|&c| c as f32).collect();
        values.sort_by(f32::total_cmp);
        ScalarCodebook { values }
    }

    /// The index of the value nearest `v` (ties to the lower one; NaN to 0).
    pub fn label(&self, v: f32) -> u8 {
        let above = self.values.partition_point(|&c| c < v);
        if above == 0 {
            return 0;
        }
        if above >= self.values.len() {
            return (self.values.len() - 1) as u8;
        }
        if v - self.values[above - 1] <= self.values[above] - v {
            (above - 1) as u8
        } else {
            above as u8
        }
    }
}

/// A palette of vectors and the label of every point.
#[derive(Clone, Debug)]
pub struct Palette {
    /// `len × dim` values, one centroid after another.
    pub centroids: Vec<f32>,
    /// The centroid of each point.
    pub labels: Vec<u32>,
}

impl Palette {
    /// Centroids in the palette.
    pub fn len(&self, dim: usize) -> usize {
        self.centroids.len() / dim.max(1)
    }
}

/// Lloyd's iterations fit on at most this many points per centroid (an evenly strided sample, as
/// large k-means libraries do); every point is labelled against the result.
const SAMPLE_PER_CENTROID: usize = 64;

/// Points × centroids per iteration below which the palette is fitted in one level.
pub const ONE_LEVEL_WORK: usize = 1 << 26;

/// Fits a palette of at most `k` centroids to the `n` points `point(i)` (each `dim` values) with
/// `iterations` Lloyd iterations per level: one level while `n × k <= one_level_work`, else
/// two ([`ONE_LEVEL_WORK`] in the writer; tests lower it to cover both).
pub fn fit_palette<'a>(
    point: &(dyn Fn(usize) -> &'a [f32] + Sync),
    n: usize,
    dim: usize,
    k: usize,
    iterations: usize,
    one_level_work: usize,
) -> Palette {
    let k = k.min(n);
    if k == 0 {
        return Palette {
            centroids: Vec::new(),
            labels: vec![0; n],
        };
    }
    let everyone: Vec<u32> = (0..n as u32).collect();
    if n.saturating_mul(k) <= one_level_work {
        let (centroids, labels) = lloyd(point, &everyone, dim, k, iterations);
        return Palette { centroids, labels };
    }
    let coarse_k = (k as f64).sqrt().ceil() as usize;
    let (_, coarse_labels) = lloyd(point, &everyone, dim, coarse_k, iterations);
    drop(everyone);
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); coarse_k];
    for (i, &c) in coarse_labels.iter().enumerate() {
        members[c as usize].push(i as u32);
    }
    drop(coarse_labels);
    let shares = apportion(k, n, &members.iter().map(Vec::len).collect::<Vec<_>>());
    let fitted: Vec<(Vec<f32>, Vec<u32>)> = members
        .par_iter()
        .zip(shares.par_iter())
        .map(|(m, &share)| lloyd(point, m, dim, share, iterations))
        .collect();
    let mut palette = Palette {
        centroids: Vec::with_capacity(k * dim),
        labels: vec![0; n],
    };
    for ((centroids, labels), m) in fitted.into_iter().zip(&members) {
        let offset = palette.len(dim) as u32;
        for (&i, &label) in m.iter().zip(&labels) {
            palette.labels[i as usize] = offset + label;
        }
        palette.centroids.extend_from_slice(&centroids);
    }
    palette
}

/// Splits `k` centroids over groups of the given sizes in proportion (largest remainders), each
/// group at least one (when it has members) and at most its size; the shares sum to at most `k`.
fn apportion(k: usize, n: usize, sizes: &[usize]) -> Vec<usize> {
    let mut shares: Vec<usize> = sizes
        .iter()
        .map(|&s| if s == 0 { 0 } else { (k * s / n).clamp(1, s) })
        .collect();
    let mut left = k.saturating_sub(shares.iter().sum());
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&g| std::cmp::Reverse((k * sizes[g]) % n.max(1)));
    while left > 0 {
        let mut gave = false;
        for &g in &order {
            if left > 0 && shares[g] < sizes[g] {
                shares[g] += 1;
                left -= 1;
                gave = true;
            }
        }
        if !gave {
            break;
        }
    }
    shares
}

/// Lloyd's k-means over the points `members` (or a sample of them, past
/// [`SAMPLE_PER_CENTROID`] per centroid) with `k` centroids started at evenly spaced members. A centroid left empty moves to the member worst served by the others, so a poor start
/// does not waste it. Returns the centroids and each member's label.
fn lloyd<'a>(
    point: &(dyn Fn(usize) -> &'a [f32] + Sync),
    members: &[u32],
    dim: usize,
    k: usize,
    iterations: usize,
) -> (Vec<f32>, Vec<u32>) {
    let k = k.min(members.len());
    if members.len() > SAMPLE_PER_CENTROID * k {
        // Fit on an evenly strided sample, then label everyone once.
        let sample_len = SAMPLE_PER_CENTROID * k;
        let sample: Vec<u32> = (0..sample_len)
            .map(|s| members[s * members.len() / sample_len])
            .collect();
        let (centroids, _) = lloyd(point, &sample, dim, k, iterations);
        let mut labels = vec![u32::MAX; members.len()];
        let mut distances = vec![0f32; members.len()];
        assign(point, members, dim, &centroids, &mut labels, &mut distances);
        return (centroids, labels);
    }
    let m = members.len();
    let mut centroids: Vec<f32> = (0..k)
        .flat_map(|j| point(members[j * m / k] as usize).iter().copied())
        .collect();
    let mut labels = vec![u32::MAX; m];
    let mut distances = vec![0f32; m];
    for iteration in 0..=iterations {
        let changed = assign(point, members, dim, &centroids, &mut labels, &mut distances);
        if iteration == iterations || (iteration > 0 && changed == 0) {
            break;
        }
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0u64; k];
        for (&i, &label) in members.iter().zip(&labels) {
            let label = label as usize;
            counts[label] += 1;
            for (s, &v) in sums[label * dim..][..dim].iter_mut().zip(point(i as usize)) {
                *s += f64::from(v);
            }
        }
        let empty: Vec<usize> = (0..k).filter(|&j| counts[j] == 0).collect();
        for j in 0..k {
            if counts[j] > 0 {
                for d in 0..dim {
                    centroids[j * dim + d] = (sums[j * dim + d] / counts[j] as f64) as f32;
                }
            }
        }
        if !empty.is_empty() {
            let mut worst: Vec<usize> = (0..m).collect();
            let e = empty.len().min(m);
            worst.select_nth_unstable_by(e - 1, |&a, &b| distances[b].total_cmp(&distances[a]));
            worst[..e].sort_unstable();
            for (&j, &w) in empty.iter().zip(&worst[..e]) {
                centroids[j * dim..][..dim].copy_from_slice(point(members[w] as usize));
            }
        }
    }
    (centroids, labels)
}

/// `|a − b|²` in eight independent partial sums, which the compiler turns into vector code.
fn squared_distance(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() / 8 * 8);
    let (b8, b_rest) = b.split_at(a8.len());
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for k in 0..8 {
            let d = x[k] - y[k];
            lanes[k] += d * d;
        }
    }
    let tail: f32 = a_rest
        .iter()
        .zip(b_rest)
        .map(|(x, y)| (x - y) * (x - y))
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// Gives every member its nearest centroid (ties to the lower index) and its squared distance;
/// returns how many labels changed.
fn assign<'a>(
    point: &(dyn Fn(usize) -> &'a [f32] + Sync),
    members: &[u32],
    dim: usize,
    centroids: &[f32],
    labels: &mut [u32],
    distances: &mut [f32],
) -> usize {
    labels
        .par_chunks_mut(1024)
        .zip(distances.par_chunks_mut(1024))
        .zip(members.par_chunks(1024))
        .map(|((labels, distances), members)| {
            let mut changed = 0;
            for ((label, distance), &i) in labels.iter_mut().zip(distances).zip(members) {
                let p = point(i as usize);
                let mut best = (f32::INFINITY, 0u32);
                for (j, c) in centroids.chunks_exact(dim).enumerate() {
                    let d = squared_distance(p, c);
                    if d < best.0 {
                        best = (d, j as u32);
                    }
                }
                changed += usize::from(*label != best.1);
                *label = best.1;
                *distance = best.0;
            }
            changed
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codebook_keeps_few_values_exactly_and_labels_nearest() {
        let book = ScalarCodebook::fit(vec![3.0, -1.0, 3.0, 0.5]);
        assert_eq!(&book.values[..3], &[-1.0, 0.5, 3.0]);
        assert_eq!(book.values[3], 3.0);
        assert_eq!(book.label(-5.0), 0);
        assert_eq!(book.label(0.6), 1);
        assert_eq!(book.label(2.0), 2);
    }

    #[test]
    fn codebook_of_uniform_values_has_small_error() {
        let values: Vec<f32> = (0..100_000).map(|i| i as f32 / 100_000.0).collect();
        let book = ScalarCodebook::fit(values.clone());
        let worst = values
            .iter()
            .map(|&v| (book.values[book.label(v) as usize] - v).abs())
            .fold(0.0, f32::max);
        // 256 evenly spread entries over [0, 1): half a step is 1/512.
        assert!(worst < 1.2 / 512.0, "worst error {worst}");
    }

    #[test]
    fn palette_recovers_separated_clusters_in_one_and_two_levels() {
        let dim = 9;
        let clusters = 64;
        let points: Vec<f32> = (0..clusters * 50)
            .flat_map(|i| {
                let c = i / 50;
                (0..dim).map(move |d| (c * 7 + d) as f32 + 0.01 * ((i * 31 + d) % 5) as f32)
            })
            .collect();
        let point = |i: usize| &points[i * dim..][..dim];
        for work in [usize::MAX, 1] {
            let palette = fit_palette(&point, clusters * 50, dim, clusters, 10, work);
            for i in 0..clusters * 50 {
                let label = palette.labels[i] as usize;
                let c = &palette.centroids[label * dim..][..dim];
                // Members lie within 0.04 of each other per coordinate; clusters 7 apart.
                let err = c
                    .iter()
                    .zip(point(i))
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max);
                assert!(
                    err <= 0.04 + 1e-5,
                    "work {work}: point {i} is {err} from its centroid"
                );
            }
        }
    }
}
