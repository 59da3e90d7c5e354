//! Byte sizes as users write them: `--memory-budget` (bytes or a fraction of the adapter's
//! memory) and `--image-cache` (bytes only), and the adapter's memory a fraction refers to.
//! [`crate::train::budget`] re-exports these.

use crate::error::{Error, Result};

/// A budget as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ByteBudget {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A fraction in (0, 1] of the adapter's memory.
    Fraction(f64),
}

/// Parses `8GiB`, `512MiB`, `1.5GB`, `2000000000` or a fraction such as `0.5`.
pub fn parse_byte_budget(text: &str) -> Result<ByteBudget> {
    parse_size(
        text,
        "memory budget",
        "write bytes with a unit (8GiB, 512MiB, 6GB) or a fraction of the adapter's memory (0.5)",
        true,
    )
}

/// Parses `--image-cache`: an absolute size such as `256MiB`, `2GiB` or `500000000` (no
/// fraction: the cache is sized in bytes, apart from any budget).
pub fn parse_image_cache_size(text: &str) -> Result<u64> {
    parse_byte_size(text, "image cache", "the GPU image cache's size")
}

/// Parses an absolute size such as `256MiB`, `2GiB` or `500000000` (no fraction) of `what`
/// (e.g. "the level of detail's GPU page memory"); errors name `op`.
pub fn parse_byte_size(text: &str, op: &'static str, what: &str) -> Result<u64> {
    let how = format!("write {what} in bytes with a unit (256MiB, 2GiB, 500MB)");
    match parse_size(text, op, &how, false)? {
        ByteBudget::Bytes(bytes) => Ok(bytes),
        ByteBudget::Fraction(f) => Err(Error::InvalidArgument {
            op,
            detail: format!("{text:?} reads as a fraction ({f}), which it does not take; {how}"),
        }),
    }
}

/// The parser both take: a number and an optional unit; a bare number of at most 1 is a fraction
/// where `fractions` allows one.
fn parse_size(text: &str, op: &'static str, how: &str, fractions: bool) -> Result<ByteBudget> {
    let bad = |why: &str| Error::InvalidArgument {
        op,
        detail: format!("{text:?}: {why}; {how}"),
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 = number.parse().map_err(|_| bad("not a number"))?;
    if !value.is_finite() || value <= 0.0 {
        return Err(bad("must be above zero"));
    }
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" if value <= 1.0 && fractions => return Ok(ByteBudget::Fraction(value)),
        "" if value < 1.0 => return Ok(ByteBudget::Fraction(value)),
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "t" | "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => return Err(bad("unknown unit")),
    };
    Ok(ByteBudget::Bytes((value * scale as f64) as u64))
}

/// Bytes a budget stands for: a fraction needs the adapter's memory size (`adapter_bytes`).
pub fn resolve_budget(budget: ByteBudget, adapter_bytes: Option<u64>) -> Result<u64> {
    match (budget, adapter_bytes) {
        (ByteBudget::Bytes(bytes), _) => Ok(bytes),
        (ByteBudget::Fraction(f), Some(total)) => Ok((total as f64 * f) as u64),
        (ByteBudget::Fraction(f), None) => Err(Error::InvalidArgument {
            op: "memory budget",
            detail: format!(
                "a fraction ({f}) needs the adapter's memory size, which this backend does not report; give bytes instead (e.g. 8GiB)"
            ),
        }),
    }
}

/// The adapter's memory, where it can be known: a CPU adapter (lavapipe) uses host memory, so
/// its size is the machine's (`/proc/meminfo`); wgpu reports no size for discrete GPUs.
pub fn adapter_memory_bytes(info: &crate::gpu::ContextInfo) -> Option<u64> {
    if !info.adapter.device_type.eq_ignore_ascii_case("cpu") {
        return None;
    }
    crate::train::setup::host_memory_bytes("MemTotal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_units_and_fractions() {
        assert_eq!(
            parse_byte_budget("8GiB").unwrap(),
            ByteBudget::Bytes(8 << 30)
        );
        assert_eq!(
            parse_byte_budget("1.5 GB").unwrap(),
            ByteBudget::Bytes(1_500_000_000)
        );
        assert_eq!(
            parse_byte_budget("512mib").unwrap(),
            ByteBudget::Bytes(512 << 20)
        );
        assert_eq!(parse_byte_budget("0.5").unwrap(), ByteBudget::Fraction(0.5));
        assert_eq!(parse_byte_budget("4096").unwrap(), ByteBudget::Bytes(4096));
        for bad in ["", "-1GiB", "0", "8 parsecs", "GiB"] {
            assert!(parse_byte_budget(bad).is_err(), "{bad:?} parsed");
        }
        assert!(resolve_budget(ByteBudget::Fraction(0.5), None).is_err());
        assert_eq!(
            resolve_budget(ByteBudget::Fraction(0.5), Some(1000)).unwrap(),
            500
        );
    }

    #[test]
    fn image_cache_sizes_are_bytes_only() {
        assert_eq!(parse_image_cache_size("96MiB").unwrap(), 96 << 20);
        assert_eq!(parse_image_cache_size("2GB").unwrap(), 2_000_000_000);
        assert_eq!(parse_image_cache_size("1").unwrap(), 1);
        let fraction = parse_image_cache_size("0.25").unwrap_err().to_string();
        assert!(
            fraction.contains("image cache") && fraction.contains("fraction (0.25)"),
            "{fraction}"
        );
        for bad in ["", "0", "-5MiB", "3 furlongs"] {
            let err = parse_image_cache_size(bad).unwrap_err().to_string();
            assert!(
                err.contains("image cache") && err.contains("256MiB"),
                "{err}"
            );
        }
    }
}
