//! [`Urgency`]: the signal that a decoder is waiting for a page, so that nothing holds back the
//! reads it needs.
//!
//! The byte budget's priority bypass is enough when every request's priority is the exact
//! lowest row it serves. Some priorities can only be estimated before the data is read (the
//! items of a whole page of lists, whose offsets are not read first), and an estimate could
//! leave a request the decoder needs behind a full budget. Each scheduled page therefore
//! carries an `Urgency` shared by every request made for it (including the follow-ups of
//! indirect I/O); the decoder sets it when it starts waiting for the page, and the
//! [`IoScheduler`](super::IoScheduler) then issues the page's reads whatever the budget.
//! Decoders only wait for pages of the batch they are assembling, so this exceeds the budget by
//! at most one batch's pages, and never leaves a read waiting on one that cannot come.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Listener = Box<dyn FnOnce() + Send>;

/// A flag shared by the requests of one page, set when a decoder waits for the page.
#[derive(Clone, Default)]
pub struct Urgency(Arc<State>);

#[derive(Default)]
struct State {
    set: AtomicBool,
    /// Called once when the flag is set; guarded so that a listener added while the flag is
    /// being set is either run by `set` or sees the flag and runs itself.
    listeners: Mutex<Vec<Listener>>,
}

impl std::fmt::Debug for Urgency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Urgency").field(&self.is_set()).finish()
    }
}

impl Urgency {
    /// A flag not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a decoder is waiting.
    pub fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Acquire)
    }

    /// Marks the page as awaited and runs the listeners (once).
    pub fn set(&self) {
        let listeners = {
            let mut guard = self.0.listeners.lock().unwrap_or_else(|p| p.into_inner());
            if self.0.set.swap(true, Ordering::AcqRel) {
                return;
            }
            std::mem::take(&mut *guard)
        };
        for listener in listeners {
            listener();
        }
    }

    /// Runs `listener` when the flag is set, or now if it already is.
    pub fn on_set(&self, listener: impl FnOnce() + Send + 'static) {
        {
            let mut guard = self.0.listeners.lock().unwrap_or_else(|p| p.into_inner());
            if !self.0.set.load(Ordering::Acquire) {
                guard.push(Box::new(listener));
                return;
            }
        }
        listener();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn listeners_run_once_whenever_they_are_added() {
        let urgency = Urgency::new();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        urgency.on_set(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 0);
        urgency.set();
        urgency.set();
        assert_eq!(count.load(Ordering::SeqCst), 1);
        let c = count.clone();
        urgency.on_set(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(count.load(Ordering::SeqCst), 2);
        assert!(urgency.is_set());
    }
}
