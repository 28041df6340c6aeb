//! The runtime the native methods run on, and how a JVM thread waits for it.
//!
//! Spark runs a task per core, each blocking its own JVM thread in a native method while the
//! process's one tokio runtime does the I/O and decoding. A thread blocked in native code does
//! not see Java's interruption, so [`JvmThread::wait`] looks every [`INTERRUPT_POLL`] whether the
//! task was killed or the thread interrupted (`TaskInterruption.isInterrupted()` on the Java
//! side), and if so gives up: the future is dropped, which stops its reads (a killed task stops
//! its read within a second instead of waiting out a store's retries), and the method throws a
//! `LooseleafInterruptedException`.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use jni::{Env, jni_sig, jni_str};

use crate::policy::Failure;

/// How often a waiting native method checks whether its task was killed.
pub const INTERRUPT_POLL: Duration = Duration::from_millis(100);

/// The process's runtime, shared by every native method.
pub fn runtime() -> Result<&'static tokio::runtime::Runtime, Failure> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("looseleaf")
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Failure::new(format!("cannot start the I/O runtime: {e}")))
}

/// The JVM thread a native method runs on, for waiting on the runtime interruptibly.
pub struct JvmThread<'a, 'local> {
    env: &'a mut Env<'local>,
}

impl<'a, 'local> JvmThread<'a, 'local> {
    /// The thread of `env`.
    pub fn new(env: &'a mut Env<'local>) -> Self {
        Self { env }
    }

    /// Runs `future` to completion on the runtime, unless the task is killed or the thread
    /// interrupted first (see the module documentation).
    ///
    /// # Errors
    /// A `LooseleafInterruptedException` failure when interrupted; a failure of the check
    /// itself (the Java side's class missing) as such.
    pub fn wait<F: Future>(&mut self, future: F) -> Result<F::Output, Failure> {
        let runtime = runtime()?;
        runtime.block_on(async {
            tokio::pin!(future);
            // The first check is one period away: an interval's immediate first tick still
            // waits for the timer driver's next millisecond, which cost every call (each batch
            // of a scan) about 1 ms.
            let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + INTERRUPT_POLL, INTERRUPT_POLL);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    output = &mut future => return Ok(output),
                    _ = poll.tick() => {
                        if self.interrupted()? {
                            return Err(Failure::interrupted(
                                "looseleaf: the read or write was stopped: its Spark task was killed or its thread interrupted",
                            ));
                        }
                    }
                }
            }
        })
    }

    /// Whether the thread's task was killed or the thread interrupted.
    fn interrupted(&mut self) -> Result<bool, Failure> {
        let answer = self.env.call_static_method(
            jni_str!("io/looseleaf/spark/TaskInterruption"),
            jni_str!("isInterrupted"),
            jni_sig!("()Z"),
            &[],
        )?;
        Ok(answer.z()?)
    }
}
