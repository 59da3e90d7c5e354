//! What `wgsplat sfm` was given: folders of photographs, or video files. Checks that the output
//! folder is safe to write (it must not hold the inputs, nor be someone else's folder).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// File extensions read as photographs (what the image decoder reads).
pub const IMAGE_EXTENSIONS: &[&str] = &["jpg", "jpeg", "png", "webp"];
/// File extensions read as videos (through ffmpeg).
pub const VIDEO_EXTENSIONS: &[&str] = &[
    "mp4", "mov", "m4v", "mkv", "avi", "webm", "mts", "m2ts", "mpg", "mpeg", "3gp", "wmv",
];
/// Fewer images than this cannot make a model worth training.
pub const MIN_IMAGES: usize = 3;

/// The inputs, sorted by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// Photographs, in name order (folder by folder).
    pub images: Vec<PathBuf>,
    /// Video files, in the order given.
    pub videos: Vec<PathBuf>,
    /// The name each photograph gets in `images/` ([`super::photos::output_name`]), in the order
    /// of `images`: distinct, also without regard to case.
    pub image_names: Vec<String>,
    /// The prefix of each video's frames in `images/` (`PREFIX_000001.jpg`, …), in the order of
    /// `videos`.
    pub frame_prefixes: Vec<String>,
}

fn sfm_error(message: String) -> Error {
    Error::Sfm {
        stage: "inputs".into(),
        message,
    }
}

fn has_extension(path: &Path, list: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| list.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// True when `path`'s extension is a photograph's.
pub fn is_image_file(path: &Path) -> bool {
    has_extension(path, IMAGE_EXTENSIONS)
}

/// True when `path`'s extension is a video's.
pub fn is_video_file(path: &Path) -> bool {
    has_extension(path, VIDEO_EXTENSIONS)
}

/// The photographs directly in `dir` (not in sub-folders), sorted by name.
pub fn images_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| crate::io::io_error(dir, "list", e))?;
    let mut images = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| crate::io::io_error(dir, "list", e))?
            .path();
        if path.is_file() && is_image_file(&path) {
            images.push(path);
        }
    }
    images.sort();
    Ok(images)
}

/// Sorts `paths` into photographs and videos. A folder gives its photographs; a file must be a
/// video. Names must be unique across folders (they become the image names of the model).
pub fn classify(paths: &[PathBuf]) -> Result<Inputs> {
    if paths.is_empty() {
        return Err(sfm_error(
            "no input given: pass a folder of photographs or one or more video files".into(),
        ));
    }
    let mut inputs = Inputs::default();
    for path in paths {
        if path.is_dir() {
            let images = images_in(path)?;
            if images.is_empty() {
                let videos = std::fs::read_dir(path)
                    .map(|d| d.flatten().filter(|e| is_video_file(&e.path())).count())
                    .unwrap_or(0);
                let hint = if videos > 0 {
                    format!(
                        "; it holds {videos} video file(s): pass them themselves as INPUT (e.g. `wgsplat sfm {}/*.mp4 --out DATA`)",
                        path.display()
                    )
                } else {
                    String::new()
                };
                return Err(sfm_error(format!(
                    "{} holds no photographs ({}){hint}",
                    path.display(),
                    IMAGE_EXTENSIONS.join(", ")
                )));
            }
            inputs.images.extend(images);
        } else if path.is_file() && is_video_file(path) {
            inputs.videos.push(path.clone());
        } else if path.is_file() {
            return Err(sfm_error(format!(
                "{} is neither a folder of photographs nor a video ({}); pass the folder that holds the photographs",
                path.display(),
                VIDEO_EXTENSIONS.join(", ")
            )));
        } else {
            return Err(sfm_error(format!("{} does not exist", path.display())));
        }
    }
    inputs.image_names = inputs
        .images
        .iter()
        .map(|p| super::photos::output_name(p))
        .collect();
    let count = inputs.videos.len();
    inputs.frame_prefixes = (inputs.videos.iter().enumerate())
        .map(|(index, video)| frame_prefix(video, index, count))
        .collect();
    check_distinct_names(&inputs)?;
    Ok(inputs)
}

/// Refuses inputs that would share a name in `images/`: two photographs (the same name in two
/// folders, `a.png` beside `a.webp`, names that differ only in case, or non-UTF-8 names that read
/// alike), or a photograph named like a video's frames. Both are named, before anything is
/// written.
fn check_distinct_names(inputs: &Inputs) -> Result<()> {
    let mut by_key: std::collections::HashMap<String, &Path> = std::collections::HashMap::new();
    for (path, name) in inputs.images.iter().zip(&inputs.image_names) {
        if let Some(other) = by_key.insert(name.to_lowercase(), path) {
            return Err(sfm_error(format!(
                "the photographs {:?} and {:?} would both be {name:?} in the dataset's images/ \
                 (names are compared without case, WebP becomes PNG, and bytes that are not UTF-8 \
                 read as U+FFFD): nothing was written; rename one of them",
                other, path
            )));
        }
        for (video, prefix) in inputs.videos.iter().zip(&inputs.frame_prefixes) {
            if is_frame_name(name, prefix) {
                return Err(sfm_error(format!(
                    "the photograph {path:?} is named like the frames taken from the video {video:?} \
                     ({prefix}_000001.jpg, …): nothing was written; rename the photograph or the video"
                )));
            }
        }
    }
    Ok(())
}

/// True when `name` is a frame name `PREFIX_DIGITS.jpg`, without regard to case.
fn is_frame_name(name: &str, prefix: &str) -> bool {
    let lower = name.to_lowercase();
    lower
        .strip_prefix(&format!("{}_", prefix.to_lowercase()))
        .and_then(|rest| rest.strip_suffix(".jpg"))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// A file-name-safe prefix for the frames of the `index`-th of `count` videos.
pub fn frame_prefix(video: &Path, index: usize, count: usize) -> String {
    let stem: String = video
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = if stem.is_empty() {
        "video".into()
    } else {
        stem
    };
    if count > 1 {
        format!("{index:02}_{stem}")
    } else {
        stem
    }
}

/// Fails unless there are at least [`MIN_IMAGES`] images.
pub fn check_enough_images(count: usize, source: &str) -> Result<()> {
    if count >= MIN_IMAGES {
        return Ok(());
    }
    Err(sfm_error(format!(
        "too few images: {source} gave {count}, and structure from motion needs at least {MIN_IMAGES} \
         (a good capture has 30 to 300 photographs, each overlapping its neighbours by 60 to 80%); \
         take more photographs, or extract more frames with a higher --fps"
    )))
}

/// The absolute, link-resolved form of `path`, or of its nearest existing ancestor with the
/// rest appended (the output folder need not exist yet).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            return rest.iter().rev().fold(canonical, |p, part| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Refuses an output folder that holds an input (or is one), or that has files wgsplat did not
/// write (`marker` is the file an earlier `wgsplat sfm` left there). Nothing is written before
/// this check passes.
pub fn check_output(out: &Path, inputs: &[PathBuf], marker: &Path) -> Result<()> {
    let out_resolved = resolved(out);
    for input in inputs {
        let input_resolved = resolved(input);
        if input_resolved.starts_with(&out_resolved) {
            return Err(sfm_error(format!(
                "the output folder {} holds the input {}: writing there could overwrite the originals. \
                 Nothing was written; choose an output folder outside the inputs (e.g. --out {})",
                out.display(),
                input.display(),
                suggestion(input)
            )));
        }
    }
    if out.is_file() {
        return Err(sfm_error(format!(
            "the output {} is a file; give a folder (it is created when missing)",
            out.display()
        )));
    }
    let has_entries = std::fs::read_dir(out)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if has_entries && !marker.is_file() {
        return Err(sfm_error(format!(
            "the output folder {} is not empty and was not written by `wgsplat sfm` (no {}): \
             nothing was written; choose a new or empty folder",
            out.display(),
            marker.display()
        )));
    }
    Ok(())
}

/// A sibling output folder name for `input`'s error message.
fn suggestion(input: &Path) -> String {
    let stem = input
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("capture");
    format!("{stem}_sfm")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_read_without_case() {
        assert!(is_image_file(Path::new("a/IMG_1.JPG")));
        assert!(is_video_file(Path::new("walk.MOV")));
        assert!(!is_image_file(Path::new("notes.txt")));
    }

    #[test]
    fn frame_prefixes_are_safe_and_distinct() {
        assert_eq!(frame_prefix(Path::new("a/My walk.MOV"), 0, 1), "My_walk");
        assert_eq!(frame_prefix(Path::new("a/x.mp4"), 1, 2), "01_x");
        assert!(is_frame_name("WALK_000012.JPG", "walk"));
        assert!(!is_frame_name("walk_x.jpg", "walk") && !is_frame_name("walk_.jpg", "walk"));
    }

    #[test]
    fn too_few_images_is_refused_and_enough_pass() {
        let err = check_enough_images(2, "photos/").unwrap_err().to_string();
        assert!(
            err.contains("too few images") && err.contains("gave 2"),
            "{err}"
        );
        check_enough_images(MIN_IMAGES, "photos/").unwrap();
    }
}
