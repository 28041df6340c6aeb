//! [`map_in_parallel`]: independent jobs of one write (a column each) run on scoped threads.

use std::sync::Mutex;

/// `f` applied to every item, on up to `threads` threads (this one included), results in the
/// order of `items`.
///
/// Items are handed out one at a time as threads become free, so jobs of unequal cost (a string
/// column next to a boolean one) even out. Threads are scoped to the call: `items` may borrow
/// from the caller (each column's writer, mutably), and a panic in `f` reaches the caller.
pub fn map_in_parallel<T: Send, R: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let count = items.len();
    let queue = Mutex::new(items.into_iter().enumerate());
    let work = || {
        let mut done = Vec::new();
        loop {
            // The lock is held only to take the next item, never while `f` runs.
            let next = queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
            let Some((index, item)) = next else { return done };
            done.push((index, f(item)));
        }
    };
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(count).collect();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for helper in helpers {
            match helper.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (index, result) in all {
            results[index] = Some(result);
        }
    });
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items() {
        let items: Vec<u64> = (0..1000).collect();
        // Uneven costs, so that threads finish items out of order.
        let squares = map_in_parallel(items, 4, |i| {
            if i % 7 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            i * i
        });
        assert_eq!(squares, (0..1000).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(map_in_parallel(Vec::<u8>::new(), 4, |i| i), Vec::<u8>::new());
        assert_eq!(map_in_parallel(vec![3], 1, |i| i + 1), vec![4]);
    }

    #[test]
    fn items_may_borrow_mutably() {
        let mut counters = vec![0u32; 10];
        let items: Vec<&mut u32> = counters.iter_mut().collect();
        map_in_parallel(items, 3, |counter| *counter += 1);
        assert_eq!(counters, vec![1; 10]);
    }
}
