//! Running async test code: the one runtime of a test binary's synchronous (proptest) tests, and
//! [`within_deadline`], which tells a hung read from a slow one.

use std::future::Future;
use std::sync::OnceLock;

/// One multi-threaded runtime for the synchronous (proptest) tests of a test binary.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
    })
}

/// Longer than any read of a test takes on a loaded 2-core machine, by far: a read still
/// running after it hung.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(120);

/// `future`'s output, or a panic naming `what` if `deadline` passes first.
///
/// The deadline is looked at *before* the future is polled again: a read that lost a wake-up
/// moves only when the timer wakes its thread, and `tokio::time::timeout` (which polls the
/// future first) would let it finish late and pass. Needs a runtime with a time driver.
pub async fn within_deadline<T>(what: &str, deadline: std::time::Duration, future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut timer = std::pin::pin!(tokio::time::sleep(deadline));
    std::future::poll_fn(|cx| {
        if timer.as_mut().poll(cx).is_ready() {
            panic!("{what}: still running after {deadline:?}, hung");
        }
        future.as_mut().poll(cx)
    })
    .await
}
