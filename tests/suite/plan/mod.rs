//! The scale-out commands: partition, block training (requeue, no-op, bounds), merge and the
//! manifest's versioning. Quality on the built-in town is in `quality`.

mod block_signal;
mod blocks;
mod merge;
mod partition;
mod quality;
mod scenes;
