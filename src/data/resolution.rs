//! The default size of photographs: images wider than [`DEFAULT_MAX_WIDTH`] are loaded at that
//! width unless a resolution is asked for (INRIA's rule for `-r` left unset; Brush caps at
//! 1920), and the dataset's notes say so once. [`Resolution::MaxWidth`] is the cap;
//! [`CappedWidths`] gathers, across the loading threads, which widths it resized.
//!
//! [`Resolution::MaxWidth`]: super::Resolution::MaxWidth

use crate::error::{Error, Result};
use std::sync::Mutex;

/// The width photographs are loaded at when none is asked for and they are wider (INRIA's 1600).
pub const DEFAULT_MAX_WIDTH: u32 = 1600;

/// The size an image of `width` × `height` is used at under a width cap of `cap` pixels: its own
/// when it is no wider, else `cap` wide with the aspect ratio kept (as [`Resolution::Width`]).
///
/// [`Resolution::Width`]: super::Resolution::Width
pub fn capped_size(cap: u32, width: u32, height: u32) -> Result<(u32, u32)> {
    if cap == 0 {
        return Err(Error::InvalidSetting {
            name: "resolution".into(),
            value: "a width cap of 0 px".into(),
            expected: "a width cap of at least 1 px (the default is 1600)".into(),
        });
    }
    super::Resolution::Width(cap).target_size(width, height)
}

/// The source widths a width cap resized while loading one dataset (shared by its loading
/// threads), for the one note that says so.
#[derive(Debug, Default)]
pub(crate) struct CappedWidths {
    /// `(narrowest, widest, cap)` of the resized images, once one was.
    seen: Mutex<Option<(u32, u32, u32)>>,
}

impl CappedWidths {
    /// Records that an image `width` pixels wide was resized to the cap `cap`.
    pub fn record(&self, width: u32, cap: u32) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen = Some(match *seen {
            None => (width, width, cap),
            Some((lo, hi, _)) => (lo.min(width), hi.max(width), cap),
        });
    }

    /// The note for the dataset, when an image was resized.
    pub fn note(&self) -> Option<String> {
        let seen = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.map(|(lo, hi, cap)| cap_note(lo, hi, cap))
    }
}

/// The line saying that images `narrowest` to `widest` pixels wide are loaded at `cap` wide.
pub fn cap_note(narrowest: u32, widest: u32, cap: u32) -> String {
    let widths = match narrowest == widest {
        true => format!("{widest}"),
        false => format!("{narrowest} to {widest}"),
    };
    format!(
        "images are {widths} px wide: using them at {cap} px wide (INRIA's default for \
         photographs); pass -r 1 to keep full resolution"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Resolution;

    #[test]
    fn the_cap_resizes_only_wider_images_and_notes_them_once() {
        let cap = Resolution::MaxWidth(DEFAULT_MAX_WIDTH);
        assert_eq!(cap.target_size(2000, 1000).unwrap(), (1600, 800));
        assert_eq!(cap.target_size(1600, 1200).unwrap(), (1600, 1200));
        assert_eq!(cap.target_size(800, 600).unwrap(), (800, 600));
        assert!(Resolution::MaxWidth(0).target_size(8, 8).is_err());
        let widths = CappedWidths::default();
        assert_eq!(widths.note(), None);
        widths.record(3200, 1600);
        assert_eq!(
            widths.note().unwrap(),
            "images are 3200 px wide: using them at 1600 px wide (INRIA's default for \
             photographs); pass -r 1 to keep full resolution"
        );
        widths.record(2000, 1600);
        widths.record(4000, 1600);
        assert!(
            widths
                .note()
                .unwrap()
                .starts_with("images are 2000 to 4000 px wide"),
            "{:?}",
            widths.note()
        );
    }
}
