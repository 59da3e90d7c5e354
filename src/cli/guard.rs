//! Outputs that would destroy inputs: a render folder inside the dataset's image folders, or a
//! converted model written over the model it was read from. Paths are compared after resolving
//! symbolic links and `..` (as far as they exist), and files by device and inode where the
//! platform has them, so another spelling of the same place is caught too.

use std::path::{Component, Path, PathBuf};
use wgsplat::data::Dataset;

/// `path` made absolute with its existing part resolved (symbolic links, `.` and `..`); the part
/// that does not exist yet is appended as written, without `.` components.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.as_path();
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut resolved = canonical;
            for part in missing.iter().rev() {
                if *part == ".." {
                    resolved.pop();
                } else {
                    resolved.push(part);
                }
            }
            return resolved;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(Component::Normal(name))) => {
                missing.push(name);
                existing = parent;
            }
            (Some(parent), Some(Component::ParentDir)) => {
                missing.push("..".as_ref());
                existing = parent;
            }
            (Some(parent), _) => existing = parent,
            (None, _) => return absolute,
        }
    }
}

/// True when `a` and `b` name the same existing file: the same device and inode (Unix), or the
/// same resolved path.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    a.exists() && resolve(a) == resolve(b)
}

/// Refuses to write `output` when it is the file `input` (another name for it included): the
/// input would be replaced before anyone could compare the two.
pub(crate) fn refuse_output_over_input(input: &Path, output: &Path) -> anyhow::Result<()> {
    if same_file(input, output) || resolve(input) == resolve(output) {
        anyhow::bail!(
            "the output {} is the input {}: writing it would replace the model being converted; choose \
             another output file",
            output.display(),
            input.display()
        );
    }
    Ok(())
}

/// The folders the dataset's photographs and masks live in: every loaded view's folder, and
/// beside a dataset `root` its `images`, `images_2`, `images_4`, `images_8` and `masks` folders.
fn input_folders(root: &Path, dataset: &Dataset) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = dataset
        .views()
        .filter_map(|view| view.path.as_deref()?.parent().map(resolve))
        .collect();
    for name in ["images", "images_2", "images_4", "images_8", "masks"] {
        let folder = root.join(name);
        if folder.is_dir() {
            folders.push(resolve(&folder));
        }
    }
    folders.sort();
    folders.dedup();
    folders
}

/// Refuses an output folder `out` that is, or lies inside, one of the folders of the dataset at
/// `root` that hold its images or masks: files written there could replace the photographs.
pub(crate) fn refuse_output_among_images(
    out: &Path,
    root: Option<&Path>,
    dataset: &Dataset,
) -> anyhow::Result<()> {
    let Some(root) = root else {
        return Ok(());
    };
    let target = resolve(out);
    if let Some(folder) = input_folders(root, dataset)
        .into_iter()
        .find(|folder| target.starts_with(folder))
    {
        anyhow::bail!(
            "the output folder {} is inside {}, which holds the dataset's images: files written there could \
             replace them; choose an output folder outside the dataset's image folders (e.g. --out renders)",
            out.display(),
            folder.display()
        );
    }
    Ok(())
}
