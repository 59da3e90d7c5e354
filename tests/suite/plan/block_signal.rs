//! A block asked to stop during its final evaluation (a signal under Slurm, where scoring a large
//! block takes minutes) stops there with a checkpoint at its last iteration, and the requeued
//! task scores it without training again: the same model, byte for byte, and the same scores as
//! the block that was never stopped.

use std::cell::Cell;

use super::blocks::small_plan;
use super::merge::scratch;
use wgsplat::plan::outputs::{CHECKPOINT_FILE, DONE_FILE, METRICS_FILE, MODEL_FILE, block_dir};
use wgsplat::plan::{BlockOutcome, BlockStop, train_block};
use wgsplat::train::TrainEvent;

fn ctx() -> &'static wgsplat::GpuContext {
    wgsplat::testing::both_paths()[0]
}

#[test]
fn a_stop_during_the_final_evaluation_leaves_a_checkpoint_that_only_scores() {
    let straight = scratch("block_eval_straight");
    let (plan, dataset) = small_plan(&straight);
    let stopped = scratch("block_eval_stopped");
    plan.save(&stopped).unwrap();
    let quiet = &mut |_| {};
    train_block(
        ctx(),
        &straight,
        &plan,
        0,
        &dataset,
        BlockStop::never(),
        quiet,
    )
    .unwrap();

    // The request comes once the last iteration is trained, so the evaluation sees it.
    let trained = Cell::new(false);
    let last = plan.config.iterations;
    let requested = || trained.get();
    let stop = BlockStop {
        at: None,
        requested: Some(&requested),
    };
    let outcome = train_block(ctx(), &stopped, &plan, 0, &dataset, stop, &mut |event| {
        if let TrainEvent::Progress { iteration, .. } = event {
            trained.set(trained.get() || iteration == last);
        }
    })
    .unwrap();
    assert_eq!(outcome, BlockOutcome::Interrupted { iteration: last });
    let dir = block_dir(&stopped, 0);
    assert!(dir.join(CHECKPOINT_FILE).is_file() && dir.join(MODEL_FILE).is_file());
    assert!(!dir.join(DONE_FILE).exists() && !dir.join(METRICS_FILE).exists());

    let outcome = train_block(
        ctx(),
        &stopped,
        &plan,
        0,
        &dataset,
        BlockStop::never(),
        quiet,
    )
    .unwrap();
    assert!(
        matches!(outcome, BlockOutcome::Finished { resumed_from: Some(i), .. } if i == last),
        "{outcome:?}"
    );
    let read =
        |root: &std::path::Path, file: &str| std::fs::read(block_dir(root, 0).join(file)).unwrap();
    assert!(read(&straight, MODEL_FILE) == read(&stopped, MODEL_FILE));
    let psnr = |root: &std::path::Path| {
        let metrics: serde_json::Value = serde_json::from_slice(&read(root, METRICS_FILE)).unwrap();
        metrics["psnr"].as_f64().unwrap()
    };
    assert_eq!(psnr(&straight), psnr(&stopped));
    std::fs::remove_dir_all(&straight).unwrap();
    std::fs::remove_dir_all(&stopped).unwrap();
}
