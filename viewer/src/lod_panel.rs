//! The "Level of detail" panel (splat budget, threshold τ and the streaming figures) and the
//! scripted flight over a level of detail's bounds that tests record (`--fly N`).

use crate::lod::LodStats;
use crate::scene::ViewCamera;
use eframe::egui;
use wgsplat::io::lod::CutOptions;

/// Megabytes, for the panel.
fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Shows the panel: controls for the splat budget and τ (written to `options`, which the next
/// frame's cut uses), then what the last frame drew and what is resident (`stats`; `loading`
/// says pages are still arriving).
pub fn show(ui: &mut egui::Ui, options: &mut CutOptions, stats: &LodStats, loading: bool) {
    let s = stats;
    let leaves = s.leaves.max(1);
    let mut limited = options.splat_budget < leaves;
    let mut budget = options.splat_budget.min(leaves);
    let mut tau = options.tau_pixels;
    ui.checkbox(&mut limited, "splat budget");
    ui.add_enabled(
        limited,
        egui::Slider::new(&mut budget, 1..=leaves)
            .logarithmic(true)
            .text("Gaussians"),
    );
    ui.add(
        egui::Slider::new(&mut tau, 0.25..=32.0)
            .logarithmic(true)
            .text("τ (px)"),
    );
    options.splat_budget = if limited { budget.max(1) } else { u64::MAX };
    options.tau_pixels = tau;
    ui.label(format!("{} of {} Gaussians drawn", s.gaussians, s.leaves));
    ui.label(format!(
        "threshold used {:.2} px{}",
        s.tau_pixels,
        if s.budget_raised {
            " (raised to meet the budget)"
        } else {
            ""
        }
    ));
    ui.label(format!(
        "pages resident {} / {} (pool {} slots)",
        s.pages_resident,
        s.pages_total,
        s.pool_bytes / s.page_bytes.max(1)
    ));
    ui.label(format!(
        "resident {:.2} MB / budget {:.2} MB (most {:.2} MB)",
        mb(s.resident_bytes),
        mb(s.budget_bytes),
        mb(s.max_resident_bytes)
    ));
    ui.label(format!(
        "pages missing {}{}",
        s.pages_missing,
        if loading { ", loading..." } else { "" }
    ));
    ui.label(format!(
        "loaded {} pages, evicted {}",
        s.pages_loaded, s.pages_evicted
    ));
}

/// The camera of frame `frame` of a flight of `frames` over a model of centre `center` and
/// radius `radius`: from far away, in front of the model and to its left, to close to its
/// centre and across to its right, the centre always in view (looking along +y, as [`ViewCamera::looking_at`]).
pub fn flight_camera(center: [f32; 3], radius: f32, frame: u32, frames: u32) -> ViewCamera {
    let t = if frames <= 1 {
        1.0
    } else {
        frame.min(frames - 1) as f32 / (frames - 1) as f32
    };
    let mut camera = ViewCamera::looking_at(center, radius);
    let distance = radius * (3.0 * (1.0 - t) + 0.8 * t);
    let across = radius * (-0.25 + 0.5 * t);
    camera.eye = [center[0] + across, center[1] - distance, center[2]];
    camera.distance = distance.max(1e-3);
    camera
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flight_goes_from_far_to_near_and_across() {
        let (c, r) = ([1.0, 2.0, 3.0], 2.0);
        let first = flight_camera(c, r, 0, 10);
        let last = flight_camera(c, r, 9, 10);
        assert_eq!(flight_camera(c, r, 20, 10).eye, last.eye);
        let dist = |v: &ViewCamera| (c[1] - v.eye[1]).abs();
        assert!(dist(&first) > 3.0 * dist(&last), "{first:?} {last:?}");
        assert!(first.eye[0] < c[0] && last.eye[0] > c[0]);
        let camera = first.camera(64, 48, [0.0; 3]);
        let p = camera.to_camera(c);
        assert!(p[2] > 0.0, "the centre is in front: {p:?}");
    }
}
