//! A JPEG's structure walked from its start-of-image marker to its end-of-image marker, so that a
//! truncated photograph (an interrupted copy or download) is refused: the decoder fills the
//! missing rows with grey and reports nothing, and training would then fit that grey.
//!
//! The walk follows the markers as the JPEG standard (ITU T.81, B.1) lays them out: segments
//! with a length are skipped whole (an EXIF thumbnail, itself a JPEG, lies inside APP1 and is
//! skipped with it), and after each start-of-scan the entropy-coded data runs to the next marker
//! (0xFF followed by anything but 0x00, a fill 0xFF or a restart marker). Bytes after the
//! end-of-image marker (trailers such as a motion photo's video) are not read.

/// Start of image.
const SOI: u8 = 0xD8;
/// End of image.
const EOI: u8 = 0xD9;
/// Start of scan: entropy-coded data follows its header.
const SOS: u8 = 0xDA;
/// Restart markers RST0 to RST7, inside entropy-coded data.
const RST: std::ops::RangeInclusive<u8> = 0xD0..=0xD7;
/// The temporary marker: no length.
const TEM: u8 = 0x01;

/// Whether `bytes` begin with a JPEG's start-of-image marker.
pub fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] == SOI
}

/// Checks that the JPEG in `bytes` reaches its end-of-image marker; the error says where its
/// structure ends or breaks.
pub fn check_jpeg_complete(bytes: &[u8]) -> Result<(), String> {
    if !is_jpeg(bytes) {
        return Err("it does not start with a JPEG start-of-image marker".into());
    }
    let truncated = |at: usize| {
        Err(format!(
            "the file is truncated: its {} bytes end at byte {at} without reaching the JPEG's \
             end-of-image marker (an interrupted copy or download?)",
            bytes.len()
        ))
    };
    let mut pos = 2;
    loop {
        // A marker: 0xFF (any number of fill 0xFF), then its code.
        if pos >= bytes.len() {
            return truncated(pos);
        }
        if bytes[pos] != 0xFF {
            return Err(format!(
                "byte {pos} is 0x{:02X} where a JPEG marker should begin",
                bytes[pos]
            ));
        }
        while pos < bytes.len() && bytes[pos] == 0xFF {
            pos += 1;
        }
        let Some(&code) = bytes.get(pos) else {
            return truncated(pos);
        };
        pos += 1;
        match code {
            EOI => return Ok(()),
            c if RST.contains(&c) || c == TEM || c == SOI => continue,
            _ => {}
        }
        let Some(length) = bytes.get(pos..pos + 2) else {
            return truncated(bytes.len());
        };
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        if length < 2 {
            return Err(format!(
                "the segment of marker 0x{code:02X} at byte {} has length {length}",
                pos - 2
            ));
        }
        pos += length;
        if pos > bytes.len() {
            return truncated(bytes.len());
        }
        if code == SOS {
            match end_of_entropy_data(bytes, pos) {
                Some(end) => pos = end,
                None => return truncated(bytes.len()),
            }
        }
    }
}

/// The position of the marker that ends the entropy-coded data starting at `pos`, or `None` when
/// the bytes end first.
fn end_of_entropy_data(bytes: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        let at = pos + bytes.get(pos..)?.iter().position(|&b| b == 0xFF)?;
        let next = *bytes.get(at + 1)?;
        match next {
            0x00 => pos = at + 2,
            0xFF => pos = at + 1,
            c if RST.contains(&c) => pos = at + 2,
            _ => return Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A baseline JPEG of a 24×16 gradient, as the image crate encodes it.
    fn jpeg() -> Vec<u8> {
        let (w, h) = (24u32, 16u32);
        let pixels: Vec<u8> = (0..w * h)
            .flat_map(|i| [(i % w * 10) as u8, (i / w * 15) as u8, (i * 7 % 256) as u8])
            .collect();
        let mut bytes = Vec::new();
        ::image::ImageEncoder::write_image(
            ::image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90),
            &pixels,
            w,
            h,
            ::image::ExtendedColorType::Rgb8,
        )
        .unwrap();
        bytes
    }

    #[test]
    fn every_truncation_of_a_jpeg_is_refused_and_the_whole_file_accepted() {
        let bytes = jpeg();
        assert_eq!(check_jpeg_complete(&bytes), Ok(()));
        for len in 0..bytes.len() {
            let error = check_jpeg_complete(&bytes[..len]).unwrap_err();
            if len >= 2 {
                assert!(error.contains("truncated"), "{len}: {error}");
            }
        }
    }

    #[test]
    fn a_trailer_after_the_end_marker_is_accepted() {
        let mut bytes = jpeg();
        bytes.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x10, 0x12, 0x34, 0xFF]);
        assert_eq!(check_jpeg_complete(&bytes), Ok(()));
    }

    /// An APP1 segment holding a whole JPEG (as an EXIF thumbnail does) is skipped by its
    /// length: its end marker does not end the main image.
    #[test]
    fn a_thumbnail_inside_a_segment_does_not_end_the_image() {
        let main = jpeg();
        let thumbnail = jpeg();
        let mut bytes = main[..2].to_vec();
        bytes.extend_from_slice(&[0xFF, 0xE1]);
        bytes.extend_from_slice(&((thumbnail.len() + 2) as u16).to_be_bytes());
        bytes.extend_from_slice(&thumbnail);
        bytes.extend_from_slice(&main[2..]);
        assert_eq!(check_jpeg_complete(&bytes), Ok(()));
        let cut = bytes.len() - main.len() / 3;
        assert!(
            check_jpeg_complete(&bytes[..cut])
                .unwrap_err()
                .contains("truncated")
        );
    }

    /// Segment lengths that cannot be (below the two bytes of the length itself) or that run
    /// past the file are refused, never read past.
    #[test]
    fn impossible_segment_lengths_are_refused() {
        let bytes = jpeg();
        for length in [0u16, 1] {
            let mut broken = bytes[..2].to_vec();
            broken.extend_from_slice(&[0xFF, 0xE1]);
            broken.extend_from_slice(&length.to_be_bytes());
            broken.extend_from_slice(&bytes[2..]);
            let error = check_jpeg_complete(&broken).unwrap_err();
            assert!(error.contains(&format!("has length {length}")), "{error}");
        }
        let mut past_the_end = bytes[..2].to_vec();
        past_the_end.extend_from_slice(&[0xFF, 0xE1, 0xFF, 0xFF]);
        past_the_end.extend_from_slice(&bytes[2..]);
        assert!(
            check_jpeg_complete(&past_the_end)
                .unwrap_err()
                .contains("truncated")
        );
    }

    #[test]
    fn a_broken_marker_is_named() {
        let mut bytes = jpeg();
        bytes[2] = 0x12;
        assert!(
            check_jpeg_complete(&bytes)
                .unwrap_err()
                .contains("byte 2 is 0x12")
        );
        assert!(check_jpeg_complete(b"\x89PNG").is_err());
    }
}
