//! A camera path edited as keyframes, as the viewer's camera-path panel does: keys added at a
//! view, removed and reordered, a fixed time between neighbouring keys; the frames rendered are
//! [`paths::through`] the keys (splines on positions, slerp on rotations), the same path code the
//! CLI's `--path cameras` uses, and the path reads and writes nerfstudio's `camera_path.json`.

use super::camera_path::{CameraPath, CameraType, PathFrame};
use super::paths;
use crate::error::{Error, Result};

/// The most frames a keyframe path may have (an hour at 60 fps).
pub const MAX_FRAMES: usize = 216_000;

/// Keyframes in order and the time from one to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyframes {
    /// The keys, in the order the path visits them.
    pub keys: Vec<PathFrame>,
    /// Seconds from one key to the next.
    pub seconds_between: f64,
    /// The projection the path is rendered and written with: a path read from a file keeps its
    /// own, one made at the viewer's cameras takes theirs (a fisheye view's makes a fisheye path).
    pub camera_type: CameraType,
}

impl Default for Keyframes {
    fn default() -> Self {
        Keyframes {
            keys: Vec::new(),
            seconds_between: 1.0,
            camera_type: CameraType::Perspective,
        }
    }
}

impl Keyframes {
    /// The keys of a path read from a file: every frame a key, `1 / fps` apart, so the path
    /// renders again frame for frame as it was written.
    pub fn from_path(path: &CameraPath) -> Keyframes {
        Keyframes {
            keys: path.frames.clone(),
            seconds_between: 1.0 / path.fps,
            camera_type: path.camera_type,
        }
    }

    /// Adds `key` at the end.
    pub fn push(&mut self, key: PathFrame) {
        self.keys.push(key);
    }

    /// Removes key `index`; `None` when there is no such key.
    pub fn remove(&mut self, index: usize) -> Option<PathFrame> {
        (index < self.keys.len()).then(|| self.keys.remove(index))
    }

    /// Swaps key `index` with the one before it; false when it is the first or out of range.
    pub fn move_up(&mut self, index: usize) -> bool {
        if index == 0 || index >= self.keys.len() {
            return false;
        }
        self.keys.swap(index - 1, index);
        true
    }

    /// Swaps key `index` with the one after it; false when it is the last or out of range.
    pub fn move_down(&mut self, index: usize) -> bool {
        if index + 1 >= self.keys.len() {
            return false;
        }
        self.keys.swap(index, index + 1);
        true
    }

    /// The path's length in seconds: the time between keys times the gaps between them.
    pub fn duration_seconds(&self) -> f64 {
        self.keys.len().saturating_sub(1) as f64 * self.seconds_between
    }

    /// Frames rendered at `fps`: one per `1 / fps` seconds from the first key to the last, both
    /// included (one frame for a single key, none without keys).
    pub fn frame_count(&self, fps: f64) -> usize {
        if self.keys.is_empty() {
            return 0;
        }
        let gaps = (self.duration_seconds() * fps).round();
        if gaps.is_finite() && gaps >= 0.0 {
            (gaps as usize).saturating_add(1).min(MAX_FRAMES + 1)
        } else {
            1
        }
    }

    /// `count` frames through the keys, equally spaced in time (a polyline to draw uses many
    /// frames per gap, a preview or a video [`Keyframes::frame_count`]).
    pub fn sample(&self, count: usize) -> Vec<PathFrame> {
        paths::through(&self.keys, count)
    }

    /// The frame shown `seconds` after the first key at `fps` (the last after the end); `None`
    /// without keys.
    pub fn frame_at(&self, seconds: f64, fps: f64) -> Option<PathFrame> {
        let count = self.frame_count(fps);
        let index = (seconds.max(0.0) * fps).floor();
        let index = if index.is_finite() { index as usize } else { 0 };
        self.sample(count)
            .get(index.min(count.saturating_sub(1)))
            .cloned()
    }

    /// The path rendered at `width` × `height` and `fps`: [`Keyframes::frame_count`] frames
    /// through the keys. An error when there are no keys, the rate or the time between keys is
    /// not a positive number, or the path would pass [`MAX_FRAMES`].
    pub fn path(&self, width: u32, height: u32, fps: f64) -> Result<CameraPath> {
        let invalid = |name: &str, value: String, expected: &str| Error::InvalidSetting {
            name: name.into(),
            value,
            expected: expected.into(),
        };
        if self.keys.is_empty() {
            return Err(invalid(
                "keyframes",
                "none".into(),
                "at least one keyframe: add one at the current view",
            ));
        }
        if !(fps.is_finite() && fps > 0.0) {
            return Err(invalid("fps", fps.to_string(), "a number above 0"));
        }
        if !(self.seconds_between.is_finite() && self.seconds_between > 0.0) {
            return Err(invalid(
                "seconds between keyframes",
                self.seconds_between.to_string(),
                "a number above 0",
            ));
        }
        if !(1..=16384).contains(&width) || !(1..=16384).contains(&height) {
            return Err(invalid(
                "frame size",
                format!("{width}x{height}"),
                "each side 1 to 16384 pixels",
            ));
        }
        let count = self.frame_count(fps);
        if count > MAX_FRAMES {
            return Err(invalid(
                "path length",
                format!("{count} frames"),
                "at most 216000 frames: fewer seconds between keyframes or a lower rate",
            ));
        }
        Ok(CameraPath {
            width,
            height,
            fps,
            frames: self.sample(count),
            near: super::camera_path::NEAR,
            camera_type: self.camera_type,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(x: f64) -> PathFrame {
        PathFrame {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            position: [x, 0.0, 5.0],
            fov_y_degrees: 50.0,
        }
    }

    #[test]
    fn keys_are_added_removed_and_reordered() {
        let mut keys = Keyframes::default();
        for x in [0.0, 1.0, 2.0] {
            keys.push(key(x));
        }
        let xs = |k: &Keyframes| k.keys.iter().map(|f| f.position[0]).collect::<Vec<_>>();
        assert!(keys.move_up(2));
        assert_eq!(xs(&keys), [0.0, 2.0, 1.0]);
        assert!(!keys.move_up(0) && !keys.move_down(2) && !keys.move_up(7));
        assert!(keys.move_down(0));
        assert_eq!(xs(&keys), [2.0, 0.0, 1.0]);
        assert_eq!(keys.remove(1), Some(key(0.0)));
        assert_eq!(keys.remove(5), None);
        assert_eq!(xs(&keys), [2.0, 1.0]);
    }

    #[test]
    fn the_path_has_one_frame_per_tick_and_passes_through_every_key() {
        let mut keys = Keyframes {
            seconds_between: 0.5,
            ..Keyframes::default()
        };
        assert_eq!(keys.frame_count(10.0), 0);
        assert!(keys.path(64, 48, 10.0).is_err());
        for x in [0.0, 1.0, 3.0] {
            keys.push(key(x));
        }
        // Two gaps of 0.5 s at 10 fps: 10 intervals, 11 frames; keys at frames 0, 5 and 10.
        let path = keys.path(64, 48, 10.0).unwrap();
        assert_eq!(path.frames.len(), 11);
        assert_eq!((path.width, path.height, path.fps), (64, 48, 10.0));
        for (k, at) in [(0, 0), (1, 5), (2, 10)] {
            let d = path.frames[at].position[0] - keys.keys[k].position[0];
            assert!(d.abs() < 1e-12, "key {k} at frame {at}: {d}");
        }
        assert_eq!(keys.frame_at(0.5, 10.0), Some(path.frames[5].clone()));
        assert_eq!(keys.frame_at(99.0, 10.0), path.frames.last().cloned());
        for bad in [0.0, f64::NAN, -1.0] {
            assert!(keys.path(64, 48, bad).is_err());
        }
        keys.seconds_between = 0.0;
        let err = keys.path(64, 48, 10.0).unwrap_err().to_string();
        assert!(err.contains("seconds between keyframes"), "{err}");
    }

    #[test]
    fn a_path_read_back_as_keys_renders_the_same_frames() {
        let keys = Keyframes {
            keys: vec![key(0.0), key(2.0), key(3.0)],
            seconds_between: 0.3,
            ..Keyframes::default()
        };
        let path = keys.path(32, 32, 10.0).unwrap();
        let again = Keyframes::from_path(&path).path(32, 32, path.fps).unwrap();
        assert_eq!(again.frames.len(), path.frames.len());
        for (a, b) in again.frames.iter().zip(&path.frames) {
            for k in 0..3 {
                assert!((a.position[k] - b.position[k]).abs() < 1e-9);
            }
        }
    }
}
