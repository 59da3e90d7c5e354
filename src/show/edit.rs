//! Cleaning a trained model up, in the manner of splat-transform's filters: keep the Gaussians
//! inside (or outside) an axis-aligned box, drop the faint ones and the large ones, and drop
//! floaters, the Gaussians whose centre fewer than K training cameras see ([`views_seeing`], the
//! visibility count the trainer's floater pruning shares). Each filter runs on what the ones
//! before it kept, and says how many it removed.

use crate::error::{Error, Result};
use crate::splat::Camera;
use crate::splat::reference::CpuGaussians;

/// An axis-aligned box in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CropBox {
    /// The smallest corner.
    pub min: [f32; 3],
    /// The largest corner.
    pub max: [f32; 3],
}

impl CropBox {
    /// Parses `MINX,MINY,MINZ,MAXX,MAXY,MAXZ`; each minimum must be below its maximum.
    pub fn parse(text: &str) -> Result<CropBox> {
        let invalid = |why: &str| Error::InvalidSetting {
            name: "--crop-box".into(),
            value: text.into(),
            expected: format!("MINX,MINY,MINZ,MAXX,MAXY,MAXZ: six finite numbers, {why}"),
        };
        let values: Vec<f32> = text
            .split(',')
            .map(|v| v.trim().parse::<f32>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| invalid("separated by commas"))?;
        if values.len() != 6 || values.iter().any(|v| !v.is_finite()) {
            return Err(invalid("separated by commas"));
        }
        let (min, max) = (
            [values[0], values[1], values[2]],
            [values[3], values[4], values[5]],
        );
        if (0..3).any(|k| min[k] >= max[k]) {
            return Err(invalid("each minimum below its maximum"));
        }
        Ok(CropBox { min, max })
    }

    /// The box of `[min x, min y, min z, max x, max y, max z]`; each minimum must be finite and
    /// below its maximum (the reason otherwise).
    pub fn from_corners(c: [f32; 6]) -> std::result::Result<CropBox, String> {
        if c.iter().any(|v| !v.is_finite()) || (0..3).any(|k| c[k] >= c[k + 3]) {
            return Err("each minimum must be finite and below its maximum".into());
        }
        Ok(CropBox {
            min: [c[0], c[1], c[2]],
            max: [c[3], c[4], c[5]],
        })
    }

    /// True when `p` lies inside the box (its faces included).
    pub fn contains(&self, p: [f32; 3]) -> bool {
        (0..3).all(|k| p[k] >= self.min[k] && p[k] <= self.max[k])
    }
}

/// The filters to apply, in this order; `None` leaves a filter out.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// Keep the Gaussians whose centre is inside the box (outside with `crop_invert`).
    pub crop_box: Option<CropBox>,
    /// Keep those outside the box instead.
    pub crop_invert: bool,
    /// Drop those whose opacity is below this.
    pub min_opacity: Option<f32>,
    /// Drop those whose largest scale (standard deviation, world units) is above this.
    pub max_scale: Option<f32>,
    /// Drop those whose centre fewer than `.1` of the cameras `.0` see.
    pub min_views: Option<(Vec<Camera>, u32)>,
}

/// How many Gaussians each filter removed, in the order they ran, and how many are left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterReport {
    /// (the filter as the user named it, Gaussians it removed).
    pub removed: Vec<(String, usize)>,
    /// Gaussians kept.
    pub kept: usize,
}

/// True when `camera` sees the point `p`: in front of it, between its near and far planes, and
/// projecting inside its image.
pub fn camera_sees(camera: &Camera, p: [f32; 3]) -> bool {
    project_centre(camera, p).is_some_and(|[u, v]| {
        (0.0..camera.width as f32).contains(&u) && (0.0..camera.height as f32).contains(&v)
    })
}

/// Where the point `p` projects in `camera`'s image, in pixels (pixel `(i, j)` covers
/// `[i, i + 1) × [j, j + 1)`, as the rasterizer places a Gaussian's centre), through the camera's
/// lens, or `None` when it is not between the near and far planes (a fisheye's depth is the
/// ray's length, as the rasterizer's) or past where the lens sees one to one. Inside or outside
/// the image alike.
pub fn project_centre(camera: &Camera, p: [f32; 3]) -> Option<[f32; 2]> {
    let [x, y, z] = camera.to_camera(p);
    if camera.lens.is_pinhole() {
        return (z > camera.near && z < camera.far)
            .then(|| [camera.fx * x / z + camera.cx, camera.fy * y / z + camera.cy]);
    }
    let focal = [camera.fx, camera.fy].map(f64::from);
    let principal = [camera.cx, camera.cy].map(f64::from);
    let seen = camera
        .lens
        .project(focal, principal, [x, y, z].map(f64::from))?;
    let (near, far) = (f64::from(camera.near), f64::from(camera.far));
    (seen.depth > near && seen.depth < far).then(|| seen.pixel.map(|v| v as f32))
}

/// For each of `means`, how many of `cameras` see it ([`camera_sees`]): the visibility count of
/// the floater filter (`convert --min-views`) and of the trainer's `--prune-min-views`.
pub fn views_seeing(means: &[[f32; 3]], cameras: &[Camera]) -> Vec<u32> {
    use rayon::prelude::*;
    means
        .par_iter()
        .map(|&p| cameras.iter().filter(|c| camera_sees(c, p)).count() as u32)
        .collect()
}

/// Keeps the Gaussians of `gaussians` whose `keep` is true (the same order), every attribute.
pub fn retain(gaussians: &mut CpuGaussians, keep: &[bool]) {
    fn filter<T: Clone>(values: &mut Vec<T>, keep: &[bool]) {
        let mut flags = keep.iter();
        values.retain(|_| *flags.next().unwrap_or(&true));
    }
    filter(&mut gaussians.means, keep);
    filter(&mut gaussians.log_scales, keep);
    filter(&mut gaussians.quats, keep);
    filter(&mut gaussians.opacity_logits, keep);
    filter(&mut gaussians.sh, keep);
}

/// Applies `filters` to `gaussians` in order and reports what each removed.
pub fn apply(gaussians: &mut CpuGaussians, filters: &Filters) -> FilterReport {
    let mut report = FilterReport::default();
    let mut run =
        |name: String, keep: &dyn Fn(&CpuGaussians, usize) -> bool, g: &mut CpuGaussians| {
            let flags: Vec<bool> = (0..g.means.len()).map(|i| keep(g, i)).collect();
            let removed = flags.iter().filter(|k| !**k).count();
            retain(g, &flags);
            report.removed.push((name, removed));
        };
    if let Some(crop) = filters.crop_box {
        let invert = filters.crop_invert;
        let name = if invert {
            "--crop-box --crop-invert"
        } else {
            "--crop-box"
        };
        run(
            name.into(),
            &|g, i| crop.contains(g.means[i]) != invert,
            gaussians,
        );
    }
    if let Some(min) = filters.min_opacity {
        let name = format!("--min-opacity {min}");
        run(name, &|g, i| sigmoid(g.opacity_logits[i]) >= min, gaussians);
    }
    if let Some(max) = filters.max_scale {
        let name = format!("--max-scale {max}");
        let log_max = max.ln();
        run(
            name,
            &|g, i| g.log_scales[i].iter().all(|s| *s <= log_max),
            gaussians,
        );
    }
    if let Some((cameras, k)) = &filters.min_views {
        let seen = views_seeing(&gaussians.means, cameras);
        let name = format!("--min-views {k} ({} cameras)", cameras.len());
        run(name, &|_, i| seen[i] >= *k, gaussians);
    }
    report.kept = gaussians.means.len();
    report
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_are_parsed_with_their_faces_inside() {
        let b = CropBox::parse("-1, -2, -3, 1, 2, 3").unwrap();
        assert!(b.contains([1.0, -2.0, 0.0]) && !b.contains([1.01, 0.0, 0.0]));
        for bad in ["1,2,3", "0,0,0,1,1,nan", "1,0,0,0,1,1", "a,b,c,d,e,f"] {
            let err = CropBox::parse(bad).unwrap_err().to_string();
            assert!(err.contains("--crop-box") && err.contains("MINX"), "{err}");
        }
    }

    #[test]
    fn a_camera_sees_what_projects_inside_its_image_in_front_of_it() {
        let camera = Camera::facing_origin(64, 48, 3.0, [0.0; 3]);
        let seen = views_seeing(
            &[[0.0, 0.0, 0.0], [0.0, 0.0, -5.0], [100.0, 0.0, 0.0]],
            &[camera.clone(), camera],
        );
        assert_eq!(seen, [2, 0, 0]);
    }

    /// Through a fisheye a point 100° off the axis (behind the camera's plane) is seen, where
    /// the pinhole has it behind; and it lands where the lens puts it, `f θ` from the centre.
    #[test]
    fn a_fisheye_camera_sees_past_90_degrees_where_its_lens_puts_the_point() {
        let mut camera = Camera::facing_origin(64, 48, 3.0, [0.0; 3]);
        camera.lens = crate::splat::CameraLens::fisheye([0.0; 4], [0.0; 2], [0.0; 2]);
        (camera.fx, camera.fy) = (8.0, 8.0);
        // Camera at z = −3 looking along +z: a point 2 from it at 100° towards +x.
        let theta = 100f32.to_radians();
        let p = [2.0 * theta.sin(), 0.0, -3.0 + 2.0 * theta.cos()];
        let [u, v] = project_centre(&camera, p).expect("the fisheye sees it");
        assert!(
            (u - (32.0 + 8.0 * theta)).abs() < 1e-3 && (v - 24.0).abs() < 1e-4,
            "{u} {v}"
        );
        assert_eq!(views_seeing(&[p], std::slice::from_ref(&camera)), [1]);
        camera.lens = crate::splat::CameraLens::PINHOLE;
        assert_eq!(project_centre(&camera, p), None);
    }
}
