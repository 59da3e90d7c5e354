//! COLMAP's text model format (`cameras.txt`, `images.txt`, `points3D.txt`). A malformed line gives
//! an error naming the file, the line and the field.

use std::path::Path;

use super::colmap::{ColmapCamera, ColmapImage, check_pose, colmap_camera, model_named};
use super::{PointCloud, dataset_error};
use crate::error::Result;

/// Non-comment lines of a text model file with their 1-based line numbers (empty lines kept).
fn data_lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let text = super::read_regular_text(path, "the COLMAP model file")?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim_start().starts_with('#'))
        .map(|(i, line)| (i + 1, line.trim().to_string()))
        .collect())
}

/// Parses token `index` of a text line as `T`, naming the file, line and field on failure.
fn field<T: std::str::FromStr>(
    path: &Path,
    line: usize,
    tokens: &[&str],
    index: usize,
    name: &str,
) -> Result<T> {
    let token = tokens.get(index).ok_or_else(|| {
        dataset_error(
            path,
            format!(
                "line {line}: missing field {name} (the line has {} fields)",
                tokens.len()
            ),
        )
    })?;
    token.parse().map_err(|_| {
        dataset_error(
            path,
            format!("line {line}: field {name} is {token:?}, not a valid number"),
        )
    })
}

/// Reads `cameras.txt`: `CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]` per line.
pub fn read_cameras_text(path: &Path) -> Result<Vec<ColmapCamera>> {
    let mut cameras = Vec::new();
    for (line, text) in data_lines(path)? {
        let tokens: Vec<&str> = text.split_whitespace().collect();
        if tokens.is_empty() {
            continue;
        }
        let id = field(path, line, &tokens, 0, "CAMERA_ID")?;
        let model = tokens.get(1).copied().unwrap_or("");
        let width = field(path, line, &tokens, 2, "WIDTH")?;
        let height = field(path, line, &tokens, 3, "HEIGHT")?;
        let params: Vec<f64> = (4..tokens.len())
            .map(|i| field(path, line, &tokens, i, "PARAMS"))
            .collect::<Result<_>>()?;
        let model = model_named(path, id, model)?;
        cameras.push(colmap_camera(path, id, model, width, height, &params)?);
    }
    Ok(cameras)
}

/// True when `tokens` can be a `POINTS2D` line: empty, or `X Y POINT3D_ID` triples of numbers.
fn is_points_line(tokens: &[&str]) -> bool {
    tokens.len().is_multiple_of(3) && tokens.iter().all(|t| t.parse::<f64>().is_ok())
}

/// Reads `images.txt`: per image a line `IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME` followed
/// by its (possibly empty) `POINTS2D` line, which is skipped. A second line that is not a
/// `POINTS2D` line (a file written with one line per image, its blank `POINTS2D` lines dropped)
/// is refused, naming the line, rather than read as half the images.
pub fn read_images_text(path: &Path) -> Result<Vec<ColmapImage>> {
    let lines = data_lines(path)?;
    let mut images = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (line, text) = &lines[i];
        if text.is_empty() {
            i += 1;
            continue;
        }
        let tokens: Vec<&str> = text.split_whitespace().collect();
        if tokens.len() < 10 {
            return Err(dataset_error(
                path,
                format!(
                    "line {line}: expected IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME, found {} fields",
                    tokens.len()
                ),
            ));
        }
        let number = |k: usize, name: &str| field::<f64>(path, *line, &tokens, k, name);
        let image = ColmapImage {
            id: field(path, *line, &tokens, 0, "IMAGE_ID")?,
            qvec: [
                number(1, "QW")?,
                number(2, "QX")?,
                number(3, "QY")?,
                number(4, "QZ")?,
            ],
            tvec: [number(5, "TX")?, number(6, "TY")?, number(7, "TZ")?],
            camera_id: field(path, *line, &tokens, 8, "CAMERA_ID")?,
            name: tokens[9..].join(" "),
        };
        check_pose(path, &format!("line {line}"), &image)?;
        // The next data line is this image's POINTS2D line (empty when it has no observations).
        if let Some((points_line, points)) = lines.get(i + 1) {
            let tokens: Vec<&str> = points.split_whitespace().collect();
            if !is_points_line(&tokens) {
                return Err(dataset_error(
                    path,
                    format!(
                        "line {points_line} should be the POINTS2D line of image {:?} (line {line}: empty, or X Y \
                         POINT3D_ID triples) but has {} fields starting {:?}; images.txt needs two lines per image, \
                         the second blank when the image has no 2D points — a file with one line per image lost \
                         those blank lines: put an empty line after each image line, or re-export the model with \
                         `colmap model_converter --output_type TXT`",
                        image.name,
                        tokens.len(),
                        tokens.first().copied().unwrap_or_default()
                    ),
                ));
            }
        }
        images.push(image);
        i += 2;
    }
    Ok(images)
}

/// Reads `points3D.txt`: `POINT3D_ID X Y Z R G B ERROR TRACK[]` per line.
pub fn read_points_text(path: &Path) -> Result<PointCloud> {
    let mut points = PointCloud::default();
    for (line, text) in data_lines(path)? {
        let tokens: Vec<&str> = text.split_whitespace().collect();
        if tokens.is_empty() {
            continue;
        }
        let position = |k: usize, name: &str| field::<f32>(path, line, &tokens, k, name);
        let colour = |k: usize, name: &str| {
            field::<u8>(path, line, &tokens, k, name).map(|c| c as f32 / 255.0)
        };
        points
            .positions
            .push([position(1, "X")?, position(2, "Y")?, position(3, "Z")?]);
        points
            .colors
            .push([colour(4, "R")?, colour(5, "G")?, colour(6, "B")?]);
    }
    Ok(points)
}
