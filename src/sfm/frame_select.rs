//! Which of a video's frames become images: exact and near duplicates of the frame before are
//! dropped (a video whose encoder repeats frames, a camera held still), then the blurriest frame
//! of each run of neighbours (variance of the Laplacian, the sharpness measure the common capture
//! tools use), where the run's frames were taken close enough together to overlap and spare one
//! ([`RUN_GAP_SECONDS`]).

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::Result;

/// Long side of the grey image sharpness is measured on.
const SHARPNESS_SIZE: u32 = 512;
/// Long side of the grey thumbnails frames are compared on.
const THUMBNAIL_SIZE: u32 = 64;
/// Frames whose thumbnails differ by less than this many grey levels on average (of 255) are
/// duplicates: JPEG noise between two encodings of one picture is well under it, and a camera
/// moving over a textured scene is well above it.
pub const DUPLICATE_LEVELS: f64 = 1.0;

/// Variance of the 4-neighbour Laplacian of a grey image (`width` × `height`, row-major): high for
/// sharp images, low for blurred ones.
pub fn laplacian_variance(grey: &[f32], width: usize, height: usize) -> f64 {
    if width < 3 || height < 3 {
        return 0.0;
    }
    let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for y in 1..height - 1 {
        for x in 1..width - 1 {
            let at = |dx: isize, dy: isize| {
                grey[(y as isize + dy) as usize * width + (x as isize + dx) as usize] as f64
            };
            let lap = at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) - 4.0 * at(0, 0);
            sum += lap;
            sum_sq += lap * lap;
            n += 1.0;
        }
    }
    let mean = sum / n;
    (sum_sq / n - mean * mean).max(0.0)
}

/// What selection needs of one frame: its sharpness, and a small grey image to compare it with
/// its neighbours.
#[derive(Clone, Debug)]
pub struct FrameSummary {
    /// [`laplacian_variance`] of its grey version at a long side of [`SHARPNESS_SIZE`] (so that
    /// the measure does not depend on the frame size).
    pub sharpness: f64,
    /// Its grey version at a long side of [`THUMBNAIL_SIZE`], 0–255.
    pub thumbnail: Vec<f32>,
}

/// Reads the image file at `path` and summarises it.
pub fn summarise(path: &Path) -> Result<FrameSummary> {
    let image = crate::data::image::read_image(path)?;
    let grey_at = |long: u32| {
        let (w, h) = super::photos::limited_size(image.width, image.height, long);
        let small = image.resized_area(w, h);
        let grey: Vec<f32> = small
            .pixels
            .chunks_exact(4)
            .map(|p| 0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2]))
            .collect();
        (grey, w as usize, h as usize)
    };
    let (grey, w, h) = grey_at(SHARPNESS_SIZE);
    Ok(FrameSummary {
        sharpness: laplacian_variance(&grey, w, h),
        thumbnail: grey_at(THUMBNAIL_SIZE).0,
    })
}

/// Mean absolute difference of two thumbnails in grey levels (infinite when their sizes differ).
pub fn thumbnail_difference(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return f64::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from((x - y).abs()))
        .sum::<f64>()
        / a.len() as f64
}

/// Which frames are duplicates of the last frame kept before them: exact repeats (a video whose
/// encoder repeated frames, a camera held still) and near ones, whose thumbnails differ by less
/// than [`DUPLICATE_LEVELS`] grey levels on average. The first frame is never a duplicate.
pub fn duplicates(thumbnails: &[&[f32]]) -> Vec<bool> {
    let mut duplicate = vec![false; thumbnails.len()];
    let mut last_kept: Option<&[f32]> = None;
    for (index, thumbnail) in thumbnails.iter().enumerate() {
        match last_kept {
            Some(last) if thumbnail_difference(last, thumbnail) < DUPLICATE_LEVELS => {
                duplicate[index] = true;
            }
            _ => last_kept = Some(thumbnail),
        }
    }
    duplicate
}

/// The longest time, in seconds of the video, between neighbouring frames of a run that the
/// blurriest frame is dropped from: frames taken 6 a second or more. Frames that close see nearly
/// the same view (a phone carried round a subject turns a degree or two between them), so the
/// sharper ones cover what the blurriest saw; frames further apart are not near copies, and each
/// is kept. That is a video's own rate, or the default rate of a video under 50 s.
pub const RUN_GAP_SECONDS: f64 = 1.0 / 6.0;

/// Which frames to keep: in each run of `run` neighbours (the last run may be shorter), the one
/// with the lowest sharpness is dropped, where no two neighbours of the run are more than
/// [`RUN_GAP_SECONDS`] apart by `times` (each frame's time in the video, in seconds); runs of one
/// frame, and runs with a longer gap, keep every frame. `run` < 2 keeps every frame.
pub fn keep_sharpest(scores: &[f64], times: &[f64], run: usize) -> Vec<bool> {
    let mut keep = vec![true; scores.len()];
    if run < 2 {
        return keep;
    }
    for (chunk_index, chunk) in scores.chunks(run).enumerate() {
        let first = chunk_index * run;
        let close = times.get(first..first + chunk.len()).is_some_and(|t| {
            t.windows(2)
                .all(|w| w[1] - w[0] <= RUN_GAP_SECONDS * (1.0 + 1e-9))
        });
        if chunk.len() < 2 || !close {
            continue;
        }
        let blurriest = chunk
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
            .unwrap_or(0);
        keep[chunk_index * run + blurriest] = false;
    }
    keep
}

/// What [`select_frames`] kept and dropped.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The frames kept, in order.
    pub kept: Vec<PathBuf>,
    /// Frames dropped as duplicates of the one before.
    pub duplicates: usize,
    /// Frames dropped as the blurriest of their run.
    pub blurred: usize,
}

/// Summarises `frames` (taken from a video at `fps` frames per second, in order) on every core,
/// deletes the duplicates ([`duplicates`]) and then the blurriest of each run of `run` of those
/// left whose frames are at most [`RUN_GAP_SECONDS`] apart ([`keep_sharpest`]); returns what is
/// kept.
pub fn select_frames(frames: Vec<PathBuf>, run: usize, fps: f64) -> Result<Selection> {
    let summaries: Vec<FrameSummary> = frames
        .par_iter()
        .map(|f| summarise(f))
        .collect::<Result<_>>()?;
    let thumbnails: Vec<&[f32]> = summaries.iter().map(|s| s.thumbnail.as_slice()).collect();
    let duplicate = duplicates(&thumbnails);
    let mut selection = Selection::default();
    let mut unique = Vec::new();
    let mut times = Vec::new();
    for (index, ((frame, summary), duplicate)) in frames
        .into_iter()
        .zip(&summaries)
        .zip(duplicate)
        .enumerate()
    {
        if duplicate {
            remove(&frame)?;
            selection.duplicates += 1;
        } else {
            unique.push((frame, summary.sharpness));
            times.push(index as f64 / fps);
        }
    }
    let scores: Vec<f64> = unique.iter().map(|u| u.1).collect();
    for ((frame, _), keep) in unique.into_iter().zip(keep_sharpest(&scores, &times, run)) {
        if keep {
            selection.kept.push(frame);
        } else {
            remove(&frame)?;
            selection.blurred += 1;
        }
    }
    Ok(selection)
}

fn remove(frame: &Path) -> Result<()> {
    std::fs::remove_file(frame).map_err(|e| crate::io::io_error(frame, "remove", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blurriest_of_each_run_is_dropped() {
        let scores = [5.0, 1.0, 7.0, 9.0, 3.0, 8.0, 2.0, 6.0, 4.0];
        // A 30 frames/s video's own frames.
        let times: Vec<f64> = (0..scores.len()).map(|i| i as f64 / 30.0).collect();
        assert_eq!(
            keep_sharpest(&scores, &times, 4),
            [true, false, true, true, true, true, false, true, true]
        );
        assert!(keep_sharpest(&scores, &times, 1).iter().all(|k| *k));
    }

    /// Frames taken 0.2 s apart (5 a second: a 10 s phone video gives 50) are not near copies:
    /// none is dropped as the blurriest of its run, where the same scores at 30 a second lose a
    /// quarter. Each run is judged by its own span.
    #[test]
    fn frames_too_far_apart_to_overlap_are_all_kept() {
        let scores: Vec<f64> = (0..50).map(|i| f64::from((i * 37) % 11)).collect();
        let at = |fps: f64| -> Vec<f64> { (0..50).map(|i| f64::from(i) / fps).collect() };
        let kept = |keep: Vec<bool>| keep.iter().filter(|k| **k).count();
        assert_eq!(kept(keep_sharpest(&scores, &at(5.0), 4)), 50);
        assert_eq!(kept(keep_sharpest(&scores, &at(30.0), 4)), 37);
        // At 6 frames/s and more, neighbours still see one view.
        assert_eq!(kept(keep_sharpest(&scores, &at(6.0), 4)), 37);
        assert_eq!(kept(keep_sharpest(&scores, &at(5.9), 4)), 50);
        // A run across a gap of a second (duplicates dropped there) keeps every frame.
        let mut across = at(30.0);
        across[6..].iter_mut().for_each(|t| *t += 1.0);
        let keep = keep_sharpest(&scores, &across, 4);
        assert!(keep[4..8].iter().all(|k| *k), "{keep:?}");
        assert_eq!(kept(keep), 38);
    }

    #[test]
    fn a_blurred_image_scores_lower_than_a_sharp_one() {
        let (w, h) = (32usize, 32usize);
        let sharp: Vec<f32> = (0..w * h)
            .map(|i| {
                if (i % w / 2 + i / w / 2) % 2 == 0 {
                    255.0
                } else {
                    0.0
                }
            })
            .collect();
        let mut blurred = sharp.clone();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let mut sum = 0.0;
                for dy in 0..3 {
                    for dx in 0..3 {
                        sum += sharp[(y + dy - 1) * w + x + dx - 1];
                    }
                }
                blurred[y * w + x] = sum / 9.0;
            }
        }
        let (s, b) = (
            laplacian_variance(&sharp, w, h),
            laplacian_variance(&blurred, w, h),
        );
        assert!(s > 2.0 * b, "sharp {s}, blurred {b}");
        assert_eq!(laplacian_variance(&vec![7.0; w * h], w, h), 0.0);
    }

    #[test]
    fn repeated_and_near_repeated_frames_are_duplicates_of_the_last_kept() {
        let frame = |shift: f32| -> Vec<f32> {
            (0..64).map(|i| (i as f32 * 3.0 + shift) % 255.0).collect()
        };
        let (a, a_noisy, b, c) = (frame(0.0), frame(0.4), frame(40.0), frame(80.0));
        let frames: Vec<&[f32]> = vec![&a, &a, &a_noisy, &b, &b, &c, &a];
        assert_eq!(
            duplicates(&frames),
            [false, true, true, false, true, false, false]
        );
    }
}
