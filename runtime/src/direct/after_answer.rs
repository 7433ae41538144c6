//! Work a call leaves for after its answer is written.
//!
//! A direct call runs inside its connection's task: over HTTP, hyper's
//! connection future polls the handler and writes the response in the
//! same poll that completes it. Work spawned onto the runtime from that
//! poll runs only once the task yields, that is after the write: on the
//! current-thread runtime (the default, `--worker-threads 1`) strictly so,
//! and on the multi-thread one the task takes the worker's LIFO slot,
//! which the other workers cannot steal, without waking any of them.
//! What goes here must not change the answer: the response schema check,
//! whose hand-off to its thread is a futex wake-up and then a busy core
//! while the client still waits for its bytes.

/// Runs `work` once the current task yields (after this poll's writes),
/// or at once outside a Tokio runtime.
pub fn after_this_poll(work: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        // The handle is dropped: nothing waits for the work.
        Ok(runtime) => drop(runtime.spawn(async move { work() })),
        Err(_) => work(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn flag() -> (Arc<AtomicBool>, impl FnOnce() + Send + 'static) {
        let done = Arc::new(AtomicBool::new(false));
        let set = done.clone();
        (done, move || set.store(true, Ordering::SeqCst))
    }

    /// The work waits for the task to yield: everything the task does
    /// before (writing the answer) comes first.
    #[test]
    fn the_work_runs_only_after_the_current_task_yields() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let (done, work) = flag();
            after_this_poll(work);
            assert!(!done.load(Ordering::SeqCst), "ran before the task yielded");
            tokio::task::yield_now().await;
            assert!(done.load(Ordering::SeqCst), "never ran after the yield");
        });
    }

    /// The multi-thread runtime: the same order on a worker.
    #[test]
    fn on_a_worker_of_the_multi_thread_runtime_too() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let (done, seen_before) = rt.block_on(async {
            tokio::spawn(async {
                let (done, work) = flag();
                after_this_poll(work);
                let seen_before = done.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                (done, seen_before)
            })
            .await
            .unwrap()
        });
        assert!(!seen_before, "ran before the task yielded");
        for _ in 0..1000 {
            if done.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("never ran");
    }

    /// Outside a runtime (a synchronous caller) nothing is lost.
    #[test]
    fn outside_a_runtime_the_work_runs_at_once() {
        let (done, work) = flag();
        after_this_poll(work);
        assert!(done.load(Ordering::SeqCst));
    }
}
