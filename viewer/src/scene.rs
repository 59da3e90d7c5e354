//! The scene view's camera: orbit, pan, zoom and fly controls over a camera in wgsplat's
//! conventions (OpenCV axes: x right, y down, z forward), and snapping to dataset cameras.
//!
//! A view snapped to a dataset camera draws through that camera's lens (its distortion, or its
//! fisheye), so the render lines up with the training image pixel for pixel. Orbiting, panning,
//! zooming, flying or changing the field of view keep the lens (at the view's field of view, the
//! principal point centred) until another dataset camera is snapped to, the view is reset, or
//! the lens is turned off ([`ViewCamera::through_lens`]); a view made any other way is a pinhole.

use eframe::egui;
use glam::{DVec3, Vec3};
use wgsplat::splat::{Camera, CameraLens};

/// `a` at unit length, or `a` itself when it is too short to have a direction.
fn normalize(a: Vec3) -> Vec3 {
    if a.length() > 1e-12 { a.normalize() } else { a }
}

/// Rotates `v` by `angle` radians about the unit `axis` (Rodrigues).
fn rotate(v: Vec3, axis: Vec3, angle: f32) -> Vec3 {
    let (s, c) = angle.sin_cos();
    v * c + axis.cross(v) * s + axis * (axis.dot(v) * (1.0 - c))
}

/// An interactive camera: a pose, an orbit centre in front of it and a vertical field of view.
#[derive(Clone, Debug)]
pub struct ViewCamera {
    /// Camera centre in world space.
    pub eye: [f32; 3],
    /// World-space unit axes of the camera: right, down, forward.
    pub axes: [[f32; 3]; 3],
    /// Distance from the eye to the orbit centre along the forward axis.
    pub distance: f32,
    /// World direction orbiting turns about.
    pub up: [f32; 3],
    /// Vertical field of view in degrees.
    pub fov_y_degrees: f32,
    /// A dataset camera shown exactly (its intrinsics and resolution) until the view moves.
    pub exact: Option<Camera>,
    /// The lens the view draws through: the dataset camera's it was snapped to (module docs),
    /// else the pinhole.
    pub lens: CameraLens,
    /// Draw through [`ViewCamera::lens`] (true), or through a pinhole of the same focal length.
    pub through_lens: bool,
}

impl ViewCamera {
    /// A view from a dataset camera, orbiting a centre `distance` in front of it.
    pub fn from_camera(camera: &Camera, distance: f32) -> ViewCamera {
        let r = camera.rotation;
        let axes = [r[0], r[1], r[2]];
        ViewCamera {
            eye: camera.position(),
            axes,
            distance: distance.max(1e-3),
            up: (-Vec3::from(axes[1])).to_array(),
            fov_y_degrees: 2.0 * (0.5 * camera.height as f32 / camera.fy).atan().to_degrees(),
            exact: Some(camera.clone()),
            lens: camera.lens,
            through_lens: true,
        }
    }

    /// A default view of a scene around `center` with radius `extent`, looking along +y.
    pub fn looking_at(center: [f32; 3], extent: f32) -> ViewCamera {
        let distance = (2.5 * extent).max(1e-3);
        let axes = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]];
        ViewCamera {
            eye: (Vec3::from(center) + Vec3::from(axes[2]) * -distance).to_array(),
            axes,
            distance,
            up: [0.0, 0.0, 1.0],
            fov_y_degrees: 50.0,
            exact: None,
            lens: CameraLens::PINHOLE,
            through_lens: true,
        }
    }

    fn target(&self) -> Vec3 {
        Vec3::from(self.eye) + Vec3::from(self.axes[2]) * self.distance
    }

    fn moved(&mut self) {
        self.exact = None;
    }

    /// Turns about the orbit centre by pixel deltas of a drag.
    pub fn orbit(&mut self, delta: egui::Vec2) {
        let target = self.target();
        let yaw = -delta.x * 0.006;
        let pitch = delta.y * 0.006;
        let up = normalize(Vec3::from(self.up));
        let mut axes = self.axes.map(|a| rotate(Vec3::from(a), up, yaw));
        let right = normalize(axes[0]);
        axes = axes.map(|a| normalize(rotate(a, right, pitch)));
        self.axes = axes.map(|a| a.to_array());
        self.eye = (target + axes[2] * -self.distance).to_array();
        self.moved();
    }

    /// Slides the camera and orbit centre in the image plane by pixel deltas.
    pub fn pan(&mut self, delta: egui::Vec2, view_height: f32) {
        let per_pixel = 2.0 * self.distance * (0.5 * self.fov_y_degrees.to_radians()).tan()
            / view_height.max(1.0);
        let [right, down, _] = self.axes.map(Vec3::from);
        let shift = right * (-delta.x * per_pixel) + down * (-delta.y * per_pixel);
        self.eye = (Vec3::from(self.eye) + shift).to_array();
        self.moved();
    }

    /// Moves toward (positive) or away from the orbit centre by wheel steps.
    pub fn zoom(&mut self, steps: f32) {
        let target = self.target();
        self.distance = (self.distance * (-steps * 0.1).exp()).clamp(1e-3, 1e5);
        self.eye = (target + Vec3::from(self.axes[2]) * -self.distance).to_array();
        self.moved();
    }

    /// Flies along the camera axes: `motion` is (right, up, forward) in scene units.
    pub fn fly(&mut self, motion: [f32; 3]) {
        let [right, down, forward] = self.axes.map(Vec3::from);
        let step = right * motion[0] + down * -motion[1] + forward * motion[2];
        self.eye = (Vec3::from(self.eye) + step).to_array();
        self.moved();
    }

    /// Reads mouse and keyboard input over the scene's `response`; returns whether the view moved.
    pub fn handle_input(&mut self, ui: &egui::Ui, response: &egui::Response, extent: f32) -> bool {
        self.handle_input_with(ui, response, extent, true)
    }

    /// [`ViewCamera::handle_input`]; with `primary_orbits` false the primary button is left to
    /// a selection tool (panning, zooming and flying still work).
    pub fn handle_input_with(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        extent: f32,
        primary_orbits: bool,
    ) -> bool {
        let mut moved = false;
        if primary_orbits && response.dragged_by(egui::PointerButton::Primary) {
            self.orbit(response.drag_delta());
            moved = true;
        }
        if response.dragged_by(egui::PointerButton::Secondary)
            || response.dragged_by(egui::PointerButton::Middle)
        {
            self.pan(response.drag_delta(), response.rect.height());
            moved = true;
        }
        if response.hovered() {
            let scroll = ui.input(|i| i.smooth_scroll_delta.y);
            if scroll != 0.0 {
                self.zoom(scroll / 50.0);
                moved = true;
            }
        }
        if !ui.ctx().egui_wants_keyboard_input() {
            let (dt, keys) = ui.input(|i| {
                let key = |k| if i.key_down(k) { 1.0f32 } else { 0.0 };
                let keys = [
                    key(egui::Key::D) - key(egui::Key::A),
                    key(egui::Key::E) - key(egui::Key::Q),
                    key(egui::Key::W) - key(egui::Key::S),
                ];
                (i.stable_dt.min(0.1), keys)
            });
            if keys.iter().any(|k| *k != 0.0) {
                let speed = 0.5 * extent.max(1e-3) * dt;
                self.fly((Vec3::from(keys) * speed).to_array());
                moved = true;
            }
        }
        moved
    }

    /// The lens the view draws through now: [`ViewCamera::lens`], or the pinhole when
    /// [`ViewCamera::through_lens`] is off.
    pub fn drawn_lens(&self) -> CameraLens {
        if self.through_lens {
            self.lens
        } else {
            CameraLens::PINHOLE
        }
    }

    /// The wgsplat camera for a `width` x `height` image: the snapped dataset camera itself
    /// while the view has not moved and the size is its own, else one at the view's field of
    /// view; both through [`ViewCamera::drawn_lens`].
    pub fn camera(&self, width: u32, height: u32, background: [f32; 3]) -> Camera {
        if let Some(exact) = &self.exact
            && exact.width == width
            && exact.height == height
        {
            return Camera {
                background,
                lens: self.drawn_lens(),
                ..exact.clone()
            };
        }
        let f = 0.5 * height as f32 / (0.5 * self.fov_y_degrees.to_radians()).tan();
        let rotation = self.axes;
        let eye = Vec3::from(self.eye);
        let translation = rotation.map(|row| -Vec3::from(row).dot(eye));
        Camera {
            lens: self.drawn_lens(),
            rotation,
            translation,
            fx: f,
            fy: f,
            cx: 0.5 * width as f32,
            cy: 0.5 * height as f32,
            width,
            height,
            near: 0.01,
            far: 1000.0,
            background,
        }
    }
}

/// Centre and RMS radius of a point set.
pub fn point_bounds(points: &[[f32; 3]]) -> ([f32; 3], f32) {
    let n = points.len().max(1) as f64;
    let widen = |p: &[f32; 3]| DVec3::from(p.map(f64::from));
    let center = points.iter().fold(DVec3::ZERO, |sum, p| sum + widen(p) / n);
    let spread: f64 = points
        .iter()
        .map(|p| (widen(p) - center).length_squared() / n)
        .sum();
    (
        center.to_array().map(|c| c as f32),
        spread.sqrt().max(1e-3) as f32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapped_camera_round_trips_and_orbiting_keeps_the_centre() {
        let camera = Camera::facing_origin(64, 48, 4.0, [0.0; 3]);
        let mut view = ViewCamera::from_camera(&camera, 4.0);
        assert_eq!(view.camera(64, 48, [0.0; 3]), camera);
        let centre = view.target();
        view.orbit(egui::vec2(40.0, -25.0));
        let moved = view.target();
        for k in 0..3 {
            assert!(
                (centre[k] - moved[k]).abs() < 1e-4,
                "{centre:?} vs {moved:?}"
            );
        }
        let c = view.camera(64, 48, [0.0; 3]);
        let p = c.to_camera(centre.to_array());
        assert!(
            p[0].abs() < 1e-4 && p[1].abs() < 1e-4 && (p[2] - 4.0).abs() < 1e-3,
            "{p:?}"
        );
    }
}
