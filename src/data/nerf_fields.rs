//! The fields of a NeRF / nerfstudio frame that name files or poses (`file_path`'s image,
//! `mask_path`, `transform_matrix`), checked with errors that name the frame, the field and the
//! value as written; and JSON values shown briefly in messages.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::dataset_error;
use crate::error::Result;

/// nerfstudio's `mask_path` of a frame (relative to the JSON's folder), which must exist.
pub(super) fn mask_path(
    path: &Path,
    folder: &Path,
    frame: &Value,
    name: &str,
) -> Result<Option<PathBuf>> {
    let mask = match frame.get("mask_path") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(mask)) => mask,
        Some(other) => {
            return Err(dataset_error(
                path,
                format!(
                    "frame {name:?}: \"mask_path\" is {} ({}); expected a string, the mask's path relative to \
                     this file",
                    shorten(other),
                    json_kind(other)
                ),
            ));
        }
    };
    let full = folder.join(mask);
    if !full.exists() {
        return Err(dataset_error(
            path,
            format!("frame {name:?}: mask_path {mask:?} does not exist"),
        ));
    }
    super::check_regular_file(&full, &format!("the mask of frame {name:?}"))?;
    Ok(Some(full))
}

/// The 4×4 (or 3×4) `transform_matrix` of a frame.
pub(super) fn transform_matrix(path: &Path, frame: &Value, name: &str) -> Result<[[f64; 4]; 4]> {
    let bad = |why: &str| {
        dataset_error(
            path,
            format!(
                "frame {name:?}: transform_matrix {why}; expected a 4x4 camera-to-world matrix"
            ),
        )
    };
    let rows = match frame.get("transform_matrix") {
        Some(Value::Array(rows)) => rows,
        Some(other) => {
            return Err(bad(&format!(
                "is {} ({}), not a list of rows",
                shorten(other),
                json_kind(other)
            )));
        }
        None => return Err(bad("is missing")),
    };
    if rows.len() != 3 && rows.len() != 4 {
        return Err(bad(&format!("has {} rows", rows.len())));
    }
    let mut m = [
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    for (r, row) in rows.iter().enumerate() {
        let row = row
            .as_array()
            .filter(|row| row.len() == 4)
            .ok_or_else(|| bad("has a row that is not 4 numbers"))?;
        for (c, v) in row.iter().enumerate() {
            m[r][c] = v.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
                bad(&format!(
                    "has the entry {} at row {r}, column {c}, not a finite number",
                    shorten(v)
                ))
            })?;
        }
    }
    for a in 0..3 {
        for b in 0..3 {
            let dot: f64 = (0..3).map(|k| m[k][a] * m[k][b]).sum();
            if (dot - if a == b { 1.0 } else { 0.0 }).abs() > 1e-3 {
                return Err(bad(
                    "has a rotation part that is not orthonormal (scaled or sheared)",
                ));
            }
        }
    }
    let determinant = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
        - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if determinant < 0.0 {
        return Err(bad(&format!(
            "has a rotation part with determinant {}: a reflection (a mirrored camera), not a rotation; \
             the exporter flipped one axis — negate one column of the rotation, or re-export the poses",
            super::compact_number(determinant)
        )));
    }
    if m[0][3].abs().max(m[1][3].abs()).max(m[2][3].abs()) >= f64::from(f32::MAX) {
        return Err(bad(&format!(
            "has the camera position [{}, {}, {}], too large to be a position",
            super::compact_number(m[0][3]),
            super::compact_number(m[1][3]),
            super::compact_number(m[2][3])
        )));
    }
    Ok(m)
}

/// A JSON value for a message, cut to 60 characters.
pub(super) fn shorten(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The kind of a JSON value: "a number", "a string", ...
pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The image file of a `file_path`: as written when it exists, else with `.png`, `.jpg` or
/// `.jpeg` appended (NeRF-synthetic omits the extension).
pub(super) fn resolve_image(folder: &Path, file_path: &str) -> Result<PathBuf> {
    let base = folder.join(file_path);
    if base.is_file() {
        return Ok(base);
    }
    if base.exists() && !base.is_dir() {
        super::check_regular_file(&base, &format!("the image of frame {file_path:?}"))?;
    }
    for extension in ["png", "jpg", "jpeg", "PNG", "JPG", "JPEG"] {
        let candidate = folder.join(format!("{file_path}.{extension}"));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(dataset_error(
        &base,
        format!(
            "image {file_path:?} is missing (also tried .png/.jpg/.jpeg appended); every frame's image must be present"
        ),
    ))
}
