//! Views of a tensor's storage (another shape, a prefix, another dtype) and the checks operations
//! make on their operands.

use super::{DType, Tensor, element_count};
use crate::error::{Error, Result};
use std::sync::Arc;

impl Tensor {
    /// The same storage with another shape of equal element count.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        let len = element_count(shape)?;
        if len != self.len {
            return Err(Error::Shape {
                op: "reshape",
                detail: format!(
                    "{:?} has {} elements, {shape:?} has {len}",
                    self.shape, self.len
                ),
            });
        }
        Ok(Tensor {
            shape: shape.to_vec(),
            ..self.clone()
        })
    }

    /// A 1-D view of the first `len` elements, sharing storage.
    pub fn prefix(&self, len: u64) -> Result<Tensor> {
        if len > self.len {
            return Err(Error::Shape {
                op: "prefix",
                detail: format!("asked for {len} elements of a tensor of {}", self.len),
            });
        }
        Ok(Tensor {
            shape: vec![len as usize],
            len,
            ..self.clone()
        })
    }

    /// The same storage viewed as another 32-bit dtype (bit patterns unchanged).
    pub fn bitcast(&self, dtype: DType) -> Tensor {
        Tensor {
            dtype,
            ..self.clone()
        }
    }

    /// Whether two handles share storage.
    pub fn shares_storage_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Checks the element type.
    pub fn expect_dtype(&self, op: &'static str, dtype: DType) -> Result<()> {
        if self.dtype != dtype {
            return Err(Error::DType {
                op,
                expected: format!("{dtype:?}"),
                got: format!("{:?}", self.dtype),
            });
        }
        Ok(())
    }

    /// Checks that two tensors have the same length and the same page layout, so element-wise
    /// kernels can pair page `p` of one with page `p` of the other.
    pub fn expect_same_layout(&self, op: &'static str, other: &Tensor) -> Result<()> {
        self.expect_same_len(op, other)?;
        if self.page_elems() != other.page_elems() {
            return Err(Error::Shape {
                op,
                detail: format!(
                    "page layouts differ ({} vs {} elements per page); create both tensors the same way",
                    self.page_elems(),
                    other.page_elems()
                ),
            });
        }
        Ok(())
    }

    /// Checks that two tensors have the same number of elements.
    pub fn expect_same_len(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.len != other.len {
            return Err(Error::Shape {
                op,
                detail: format!("lengths differ: {} vs {}", self.len, other.len),
            });
        }
        Ok(())
    }
}
