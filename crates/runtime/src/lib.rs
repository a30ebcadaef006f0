//! The one async runtime behind LEDGER's synchronous API: the store's object-store requests,
//! the model endpoints' HTTP, the broker's connections and SQL all run on it, started once per
//! process, rather than a runtime (and a thread) per call.

use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::{Handle, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process's runtime (multi-threaded, IO and timers on), started on first use.
pub fn runtime() -> std::io::Result<&'static Runtime> {
    static STARTING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    // One thread builds it: a second runtime built by a racing thread would have to be dropped,
    // and dropping a runtime inside async code panics.
    let _one = STARTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .thread_name("ledger-async")
        .enable_all()
        .build()?;
    Ok(RUNTIME.get_or_init(|| built))
}

/// Runs `future` to completion on the process's runtime and returns its output. Works from
/// plain threads, rayon workers and from inside async code (tokio's blocking threads, tests
/// under `#[tokio::test]`), where a runtime cannot be entered again: there the future is driven
/// from a scoped thread of its own.
pub fn block_on<F>(future: F) -> std::io::Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    if Handle::try_current().is_err() {
        return Ok(rt.block_on(future));
    }
    let output = std::thread::scope(|s| s.spawn(|| rt.block_on(future)).join())
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    Ok(output)
}

/// Runs `future`, which need not be `Send`, to completion on the process's runtime, on this
/// thread: for sync code outside any runtime (a command's main thread). Inside async code, where
/// the runtime cannot be entered again, it is an error.
pub fn block_on_here<F: Future>(future: F) -> std::io::Result<F::Output> {
    if Handle::try_current().is_ok() {
        return Err(std::io::Error::other(
            "block_on_here called from inside async code",
        ));
    }
    Ok(runtime()?.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_runtime_serves_plain_threads_and_rayon_like_pools() {
        let a = block_on(async {
            tokio::task::yield_now().await;
            1
        })
        .expect("the runtime starts");
        let handles: Vec<_> = (0..4)
            .map(|k| {
                std::thread::spawn(move || {
                    block_on(async move { k * 2 }).expect("the runtime starts")
                })
            })
            .collect();
        let sum: i32 = handles
            .into_iter()
            .map(|h| h.join().expect("the runtime starts"))
            .sum();
        assert_eq!((a, sum), (1, 12));
        let first = runtime().expect("the runtime starts") as *const Runtime;
        assert_eq!(
            first,
            runtime().expect("the runtime starts") as *const Runtime,
            "started once"
        );
    }

    #[tokio::test]
    async fn works_from_inside_async_code() {
        // A sync API called from async code: the runtime cannot be entered on this thread.
        let n = block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            7
        })
        .expect("the runtime starts");
        assert_eq!(n, 7);
    }
}
