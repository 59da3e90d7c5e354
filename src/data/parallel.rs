//! Loading views on several threads.

use super::dataset_error;
use crate::error::Result;

/// Runs `work` on every item of `items` on up to `available_parallelism` threads, keeping order
/// and returning the first error.
pub(crate) fn parallel_map<T: Sync, U: Send>(
    items: &[T],
    work: impl Fn(&T) -> Result<U> + Sync,
) -> Result<Vec<U>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 16);
    if threads == 1 || items.len() < 2 {
        return items.iter().map(&work).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let results: Vec<Result<Vec<U>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(&work).collect::<Result<Vec<U>>>()))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(dataset_error("", "a dataset worker thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(items.len());
    for part in results {
        out.extend(part?);
    }
    Ok(out)
}
