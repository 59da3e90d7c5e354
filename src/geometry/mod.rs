//! Geometry of points, segments and ellipsoids that the trainer, the datasets and the front ends
//! share: the nearest neighbours of camera centres ([`neighbours`]) and the distance from a
//! segment to a Gaussian's ellipsoid ([`ellipsoid`]), and the nearest point of a set to any
//! query point ([`nearest`], which the mesh scores use).

pub mod ellipsoid;
pub mod nearest;
pub mod neighbours;

pub use ellipsoid::{segment_distance, segment_ellipsoid_distance, whitened_distance};
pub use nearest::PointTree;
pub use neighbours::{NearestOthers, nearest_others};
