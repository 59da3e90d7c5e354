//! Turning one posed image file into a [`View`]: reading it (or its pre-scaled copy in INRIA's
//! `images_N`), applying its mask, undistorting it to a pinhole camera, and scaling it to the
//! requested resolution, in that order. Shared by the COLMAP and NeRF readers.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::image::{RgbaImage, read_image};
use super::lens::Lens;
use super::resolution::CappedWidths;
use super::undistort::Undistortion;
use super::{AlphaMeaning, ImageSource, LoadOptions, Resolution, View, dataset_error};
use crate::error::Result;
use crate::splat::Camera;

/// Everything needed to load one view.
#[derive(Clone)]
pub(crate) struct ViewRequest {
    /// The view's name in its dataset.
    pub name: String,
    /// The image file to read.
    pub image_path: PathBuf,
    /// Set when `image_path` is a copy pre-scaled by this factor (INRIA's `images_N`), which
    /// replaces the resolution option's downscaling.
    pub prescaled: Option<u32>,
    /// The mask file (0 = ignore), when the dataset has one for this view.
    pub mask_path: Option<PathBuf>,
    /// The pose, planes and background; its intrinsics are replaced by the loaded ones.
    pub camera: Camera,
    /// The lens at `full_size`.
    pub lens: Lens,
    /// The size the lens was calibrated at (`None`: the image's own size).
    pub full_size: Option<(u32, u32)>,
    /// Names the camera in messages ("camera 3").
    pub camera_name: String,
}

/// The cameras sharing one lens and image size, and their undistortion (made once).
type CacheSlot = (
    BTreeSet<String>,
    Arc<OnceLock<std::result::Result<Arc<Undistortion>, String>>>,
);

/// Undistortions computed once per lens and image size (cameras with equal parameters share
/// one), and the widths the default width cap resized, shared by the loading threads.
#[derive(Default)]
pub(crate) struct UndistortCache {
    slots: Mutex<HashMap<(String, u32, u32), CacheSlot>>,
    /// The widths the default width cap resized (for its note).
    capped: CappedWidths,
    /// Bytes of decoded pixels kept in host memory so far, against
    /// [`LoadOptions::host_image_budget`].
    kept_bytes: std::sync::atomic::AtomicU64,
    /// Views whose pixels did not fit the budget, and their bytes: read at each use instead.
    streamed: Mutex<(usize, u64)>,
}

impl UndistortCache {
    fn get(
        &self,
        request: &ViewRequest,
        lens: &Lens,
        width: u32,
        height: u32,
    ) -> std::result::Result<Arc<Undistortion>, String> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            // Debug formatting of f64 round-trips, so equal keys mean equal parameters.
            let entry = slots
                .entry((format!("{lens:?}"), width, height))
                .or_default();
            entry.0.insert(request.camera_name.clone());
            entry.1.clone()
        };
        slot.get_or_init(|| Undistortion::new(lens, width, height).map(Arc::new))
            .clone()
    }

    /// One note per undistorted lens (and a warning per cropped field of view), and one for the
    /// images the default width cap resized, sorted.
    pub fn notes(&self) -> Vec<String> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut notes: Vec<String> = Vec::new();
        for (names, slot) in slots.values() {
            let Some(Ok(u)) = slot.get() else { continue };
            let first = names.iter().next().cloned().unwrap_or_default();
            let camera = match names.len() {
                1 => first,
                n => format!("{first} and {} more with the same lens", n - 1),
            };
            notes.push(format!("{camera}: {}", u.describe()));
            if let Some(crop) = u.fov_crop {
                notes.push(format!(
                    "warning: {camera} ({}) sees {:.0}° x {:.0}°, wider than a pinhole image can hold; its undistorted \
                     images keep {:.0}° x {:.0}° (at most {:.0}° from the axis) and drop {:.1}% of its pixels",
                    u.source.model.name(),
                    crop.source_degrees[0],
                    crop.source_degrees[1],
                    crop.kept_degrees[0],
                    crop.kept_degrees[1],
                    super::undistort::MAX_HALF_FOV_DEGREES,
                    100.0 * u.dropped_fraction
                ));
            }
        }
        notes.extend(self.capped.note());
        let (streamed, bytes) = *self.streamed.lock().unwrap_or_else(|e| e.into_inner());
        if streamed > 0 {
            notes.push(format!(
                "{streamed} images ({}) do not fit the host memory kept for decoded images ({}): they are read \
                 from disk at each use (--host-image-memory sets that share)",
                crate::gpu::memory::format_bytes(bytes),
                crate::gpu::memory::format_bytes(self.kept_bytes.load(std::sync::atomic::Ordering::Relaxed))
            ));
        }
        notes.sort();
        notes
    }
}

impl UndistortCache {
    /// Whether `bytes` more decoded pixels fit `budget` with those kept so far (and if so, they
    /// are counted as kept); otherwise the view is counted as streamed.
    fn keep(&self, bytes: u64, budget: u64) -> bool {
        use std::sync::atomic::Ordering;
        let kept = self
            .kept_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| {
                (kept + bytes <= budget).then_some(kept + bytes)
            })
            .is_ok();
        if !kept {
            let mut streamed = self.streamed.lock().unwrap_or_else(|e| e.into_inner());
            streamed.0 += 1;
            streamed.1 += bytes;
        }
        kept
    }
}

/// Loads the view `request` describes (module docs give the order of the steps). Past
/// [`LoadOptions::host_image_budget`], the view keeps no pixels but an [`ImageSource`] that
/// loads it again the same way.
pub(crate) fn load_view(
    request: &ViewRequest,
    options: &LoadOptions,
    cache: &Arc<UndistortCache>,
) -> Result<View> {
    let mut view = load_view_pixels(request, options, cache)?;
    if let Some(budget) = options.host_image_budget
        && !cache.keep(view.image.pixels.len() as u64, budget)
    {
        let (request, cache) = (request.clone(), Arc::clone(cache));
        let options = LoadOptions {
            progress: Default::default(),
            host_image_budget: None,
            ..options.clone()
        };
        view.stream_from(ImageSource::new(move || {
            Ok(load_view_pixels(&request, &options, &cache)?.image)
        }));
    }
    Ok(view)
}

/// [`load_view`] with the pixels, whatever the budget.
fn load_view_pixels(
    request: &ViewRequest,
    options: &LoadOptions,
    cache: &UndistortCache,
) -> Result<View> {
    let path = &request.image_path;
    let mut image = read_image(path)?;
    let (width, height) = (image.width, image.height);
    let full = request.full_size.unwrap_or((width, height));
    let mut lens = request.lens;
    match request.prescaled {
        Some(factor) => {
            let expected = Resolution::Factor(factor).target_size(full.0, full.1)?;
            if width.abs_diff(expected.0) > 1 || height.abs_diff(expected.1) > 1 {
                return Err(dataset_error(
                    path,
                    format!(
                        "the pre-scaled image is {width}x{height}, but its camera is {}x{} and 1/{factor} of that is \
                         about {}x{}; regenerate images_{factor} from images/",
                        full.0, full.1, expected.0, expected.1
                    ),
                ));
            }
            lens = lens.scaled(
                f64::from(width) / f64::from(full.0),
                f64::from(height) / f64::from(full.1),
            );
        }
        None if (width, height) != full => {
            return Err(dataset_error(
                path,
                format!(
                    "the image is {width}x{height} but its camera says {}x{}; the images must be the ones the cameras \
                     were reconstructed with — do not resize them by hand, use the resolution option instead",
                    full.0, full.1
                ),
            ));
        }
        None => {}
    }
    let mut alpha = AlphaMeaning::Coverage;
    if options.alpha_as_mask {
        alpha = AlphaMeaning::Mask;
    }
    if let Some(mask_path) = &request.mask_path {
        let mask = read_mask(mask_path, (width, height), full, path)?;
        if alpha == AlphaMeaning::Coverage {
            make_opaque(&mut image, options.background);
            alpha = AlphaMeaning::Mask;
        }
        for (pixel, m) in image.pixels.chunks_exact_mut(4).zip(mask) {
            pixel[3] = ((u16::from(pixel[3]) * u16::from(m) + 127) / 255) as u8;
        }
    }
    if !lens.is_pinhole() && !options.undistort {
        // The lens stays on the camera; the pixels past its fold (which no ray reaches) leave
        // the loss.
        if let Some(seen) = lens_coverage(&lens, width, height) {
            if alpha == AlphaMeaning::Coverage {
                make_opaque(&mut image, options.background);
                alpha = AlphaMeaning::Mask;
            }
            for (pixel, seen) in image.pixels.chunks_exact_mut(4).zip(seen) {
                pixel[3] = if seen { pixel[3] } else { 0 };
            }
        }
    } else if !lens.is_pinhole() {
        let undistortion = cache.get(request, &lens, width, height).map_err(|why| {
            dataset_error(
                path,
                format!("{} cannot be undistorted: {why}", request.camera_name),
            )
        })?;
        let (undistorted, validity) = undistortion.apply(&image)?;
        image = undistorted;
        lens = undistortion.target;
        if let Some(validity) = validity {
            if alpha == AlphaMeaning::Coverage {
                make_opaque(&mut image, options.background);
                alpha = AlphaMeaning::Mask;
            }
            for (pixel, v) in image.pixels.chunks_exact_mut(4).zip(validity) {
                pixel[3] = if v == 0 { 0 } else { pixel[3] };
            }
        }
    }
    let resolution = match request.prescaled {
        Some(_) => Resolution::Full,
        None => options.resolution,
    };
    let (target_w, target_h) = resolution.target_size(image.width, image.height)?;
    if let Resolution::MaxWidth(cap) = resolution
        && target_w < image.width
    {
        cache.capped.record(image.width, cap);
    }
    let sx = f64::from(target_w) / f64::from(image.width);
    let sy = f64::from(target_h) / f64::from(image.height);
    let scaled = lens.scaled(sx, sy);
    let mut camera = request.camera.clone();
    camera.fx = scaled.fx as f32;
    camera.fy = scaled.fy as f32;
    camera.cx = scaled.cx as f32;
    camera.cy = scaled.cy as f32;
    camera.width = target_w;
    camera.height = target_h;
    camera.lens = scaled.camera_lens();
    camera.lens.limit = camera
        .lens
        .limit
        .min(view_limit(&scaled, target_w, target_h));
    check_camera(&request.name, path, &camera)?;
    let image = image.resized_area(target_w, target_h);
    options.progress.tick();
    Ok(View {
        name: request.name.clone(),
        path: Some(path.clone()),
        camera,
        image,
        alpha,
        source: None,
    })
}

/// Checks that the loaded camera of view `name` can be rendered in single precision: a finite
/// pose, positive finite focal lengths and a finite principal point. A value that is finite in the
/// file but not as an `f32` (a translation of 1e300) is named here, with the view, rather than
/// refused later by the renderer without either.
fn check_camera(name: &str, path: &Path, camera: &Camera) -> Result<()> {
    let finite = |values: &[f32]| values.iter().all(|v| v.is_finite());
    let show = |values: &[f32]| {
        values
            .iter()
            .map(|&v| super::compact_number(f64::from(v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rotation: Vec<f32> = camera.rotation.iter().flatten().copied().collect();
    let problem = if !finite(&rotation) {
        Some(format!(
            "its world-to-camera rotation [{}] is not finite",
            show(&rotation)
        ))
    } else if !finite(&camera.translation) {
        Some(format!(
            "its world-to-camera translation [{}] is not finite in single precision",
            show(&camera.translation)
        ))
    } else if !(finite(&[camera.fx, camera.fy]) && camera.fx > 0.0 && camera.fy > 0.0) {
        Some(format!(
            "its focal lengths fx {} and fy {} pixels are not positive and finite in single precision",
            show(&[camera.fx]),
            show(&[camera.fy])
        ))
    } else if !finite(&[camera.cx, camera.cy]) {
        Some(format!(
            "its principal point ({}) is not finite in single precision",
            show(&[camera.cx, camera.cy])
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(dataset_error(
            path,
            format!(
                "view {name:?}: {problem}; the dataset's cameras are corrupt — fix or re-export them"
            ),
        )),
    }
}

/// How far past its image a lens's projection is trusted: as the pinhole projection clamps its
/// Jacobian 30% of the half field past the image's edge, a Gaussian whose mean lies more than
/// this factor beyond the image's widest corner (in normalised radius, or in angle for a
/// fisheye) is culled, so far off-screen splats cannot spread over the whole image.
const VIEW_MARGIN: f64 = 1.3;

/// The largest normalised radius (angle for a fisheye) whose Gaussians `lens` draws for a
/// `width` × `height` image: [`VIEW_MARGIN`] times its widest corner's (`f32::MAX` when a corner
/// lies past the lens's fold, where the fold limits it instead).
fn view_limit(lens: &Lens, width: u32, height: u32) -> f32 {
    let corners = [
        [0.0, 0.0],
        [f64::from(width), 0.0],
        [0.0, f64::from(height)],
        [f64::from(width), f64::from(height)],
    ];
    let mut widest: f64 = 0.0;
    for [px, py] in corners {
        let n = [(px - lens.cx) / lens.fx, (py - lens.cy) / lens.fy];
        let radius = if lens.is_fisheye() {
            lens.undistort_angle(n).map(|[u, v]| (u * u + v * v).sqrt())
        } else {
            lens.undistort(n).map(|[x, y]| (x * x + y * y).sqrt())
        };
        match radius {
            Some(r) => widest = widest.max(r),
            None => return f32::MAX,
        }
    }
    (widest * VIEW_MARGIN) as f32
}

/// Which pixels of a `width` × `height` image `lens` sees one to one (`None`: all of them): a
/// pixel is seen when its distorted radius lies inside the image of the radius (or angle) where
/// the lens's radial map folds, [`CameraLens::limit`](crate::splat::CameraLens::limit).
fn lens_coverage(lens: &Lens, width: u32, height: u32) -> Option<Vec<bool>> {
    let folded = lens.fold_radius()?;
    let seen: Vec<bool> = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| {
            let dx = (f64::from(x) + 0.5 - lens.cx) / lens.fx;
            let dy = (f64::from(y) + 0.5 - lens.cy) / lens.fy;
            (dx * dx + dy * dy).sqrt() < folded
        })
        .collect();
    seen.contains(&false).then_some(seen)
}

/// Composites every pixel on `background` and makes it opaque.
fn make_opaque(image: &mut RgbaImage, background: [f32; 3]) {
    for pixel in image.pixels.chunks_exact_mut(4) {
        if pixel[3] == 255 {
            continue;
        }
        let a = f32::from(pixel[3]) / 255.0;
        for k in 0..3 {
            let v = f32::from(pixel[k]) * a + background[k] * 255.0 * (1.0 - a);
            pixel[k] = v.round().clamp(0.0, 255.0) as u8;
        }
        pixel[3] = 255;
    }
}

/// Reads a mask (any PNG/JPEG; its first channel, 0 = ignore, anything else = keep) for an image
/// of `size`. A mask at the full calibrated size `full` is area-downscaled to `size` (for
/// pre-scaled images). Any other size is an error naming both files.
fn read_mask(
    path: &Path,
    size: (u32, u32),
    full: (u32, u32),
    image_path: &Path,
) -> Result<Vec<u8>> {
    let mask = read_image(path)?;
    let binary = RgbaImage {
        width: mask.width,
        height: mask.height,
        pixels: mask
            .pixels
            .chunks_exact(4)
            .flat_map(|p| {
                let keep = if p[0] > 0 { 255 } else { 0 };
                [keep, keep, keep, 255]
            })
            .collect(),
    };
    let resized = if (mask.width, mask.height) == size {
        binary
    } else if (mask.width, mask.height) == full {
        binary.resized_area(size.0, size.1)
    } else {
        return Err(dataset_error(
            path,
            format!(
                "the mask is {}x{} but its image {} is {}x{}; a mask must have its image's size",
                mask.width,
                mask.height,
                image_path.display(),
                size.0,
                size.1
            ),
        ));
    };
    Ok(resized.pixels.chunks_exact(4).map(|p| p[0]).collect())
}

/// The mask of image `name` in `masks_dir`: the same relative name, else with its extension
/// replaced by (or followed by) `.png`.
pub(crate) fn find_mask(masks_dir: &Path, name: &str) -> Option<PathBuf> {
    let same = masks_dir.join(name);
    let replaced = same.with_extension("png");
    let appended = masks_dir.join(format!("{name}.png"));
    [same, replaced, appended].into_iter().find(|p| p.is_file())
}
