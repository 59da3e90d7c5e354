//! PLY scalar property types, shared by the Gaussian reader (`io::ply`) and the point-cloud
//! reader (`data::ply`).

/// A scalar property type of a PLY header.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    /// The type named in a header (`uchar`, `float32`, ...).
    pub(crate) fn parse(name: &str) -> Option<Scalar> {
        Some(match name {
            "char" | "int8" => Scalar::I8,
            "uchar" | "uint8" => Scalar::U8,
            "short" | "int16" => Scalar::I16,
            "ushort" | "uint16" => Scalar::U16,
            "int" | "int32" => Scalar::I32,
            "uint" | "uint32" => Scalar::U32,
            "float" | "float32" => Scalar::F32,
            "double" | "float64" => Scalar::F64,
            _ => return None,
        })
    }

    /// Bytes in a binary body.
    pub(crate) fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }

    /// The value of exactly `size()` bytes, in either byte order.
    pub(crate) fn decode(self, b: &[u8], big_endian: bool) -> f64 {
        let mut raw = [0u8; 8];
        raw[..b.len()].copy_from_slice(b);
        if big_endian {
            raw[..b.len()].reverse();
        }
        match self {
            Scalar::I8 => f64::from(raw[0] as i8),
            Scalar::U8 => f64::from(raw[0]),
            Scalar::I16 => f64::from(i16::from_le_bytes([raw[0], raw[1]])),
            Scalar::U16 => f64::from(u16::from_le_bytes([raw[0], raw[1]])),
            Scalar::I32 => f64::from(i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
            Scalar::U32 => f64::from(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
            Scalar::F32 => f64::from(f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
            Scalar::F64 => f64::from_le_bytes(raw),
        }
    }
}

impl Scalar {
    /// Multiplier mapping a colour stored in this type to [0, 1].
    pub(crate) fn colour_scale(self) -> f64 {
        match self {
            Scalar::U8 | Scalar::I8 => 1.0 / 255.0,
            Scalar::U16 | Scalar::I16 => 1.0 / 65535.0,
            _ => 1.0,
        }
    }
}
