//! A global allocator that refuses (returns null for) single allocations over a cap, as
//! `rust/looseleaf/tests/common/alloc.rs` does for the crate's own hostile-input tests.
//!
//! libFuzzer's `-malloc_limit_mb` only sees allocations through a sanitizer's malloc hooks, and
//! the fuzzer here runs without a sanitizer: this allocator is the cap on single allocations.
//! A reader that sizes its memory by a count the file merely claims either gets an error from
//! a fallible allocation (`try_reserve`, fine: the reader reports it) or aborts on an
//! infallible one (a finding). libFuzzer's `-rss_limit_mb` bounds the total.
//!
//! A binary installs it with
//! `#[global_allocator] static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(CAP);`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The cap the fuzz target and the regression test install: 1 GiB at once. An input is a few
/// KiB; what it may make the reader allocate for one batch of rows is bounded by the crate's
/// own limits (`encodings/limits.rs`), and larger requests than this one come only from
/// counts a file claims without backing them.
pub const CAP: usize = 1 << 30;

/// The system allocator, with a cap on single allocations and a record of the largest.
pub struct GuardedAllocator {
    cap: usize,
}

static LARGEST_ALLOCATION: AtomicUsize = AtomicUsize::new(0);

impl GuardedAllocator {
    /// An allocator refusing single allocations of more than `cap` bytes.
    pub const fn new(cap: usize) -> Self {
        Self { cap }
    }
}

/// The largest single allocation (or reallocation) asked for so far by the process, refused
/// ones included.
pub fn largest_allocation() -> usize {
    LARGEST_ALLOCATION.load(Ordering::Relaxed)
}

// SAFETY: every call is forwarded unchanged to the system allocator, except those over the cap,
// which return null as an allocator may when it cannot allocate.
unsafe impl GlobalAlloc for GuardedAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes there).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(new_size, Ordering::Relaxed);
        if new_size > self.cap {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
