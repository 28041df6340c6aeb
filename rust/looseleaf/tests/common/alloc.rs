//! A global allocator for the test binaries that read hostile files: it records the largest
//! single allocation, and refuses (returns null for) any larger than its cap, so that a read
//! sizing its memory by a count a file merely claims fails its test (an error, or an abort of
//! the test binary) instead of taking the machine's memory.
//!
//! A binary installs it with
//! `#[global_allocator] static ALLOCATOR: GuardedAllocator = GuardedAllocator::new(1 << 30);`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

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
