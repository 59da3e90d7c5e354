//! The test suite as one binary, by layer: the GPU runtime ([`gpu`], [`ops`], [`memory`]),
//! splatting ([`render`]), loss, optimizers and densification ([`fitting`], [`densify_memory`]),
//! training, datasets and files ([`train`], [`io`]), and the commands end to end ([`cli`],
//! [`sfm`], [`plan`], [`engines`], [`slurm`]).
//!
//! One binary, so that its tests share the cores whichever layer they exercise (a test that
//! waits on a Slurm job or a child process no longer leaves a core idle while nothing else may
//! run), the kernel-path contexts of `wgsplat::testing` are created once for every module, and
//! the build links the runtime into one test executable. A test that holds the process's
//! resident memory flat (`memory::longrun`) runs in a child process of its own
//! (`common::child`), since other tests in the same process would move it.

mod common;

mod cli;
mod densify_memory;
mod engines;
mod fitting;
mod gpu;
mod io;
mod memory;
mod ops;
mod plan;
mod render;
mod sfm;
mod slurm;
mod train;
