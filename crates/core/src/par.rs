//! Independent pieces of work on the machine's cores, their results in the order of the
//! work: the waste rules and the reconciliation checks read one window and share nothing
//! else, so a month's audit runs them side by side instead of one after another.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads used at most.
const MAX_THREADS: usize = 8;

/// `f` of every item of `items`, on up to as many threads as the machine has cores (each
/// takes the next item not yet taken, so a long item does not hold the others back), in the
/// order of `items`. One core, or one item: on this thread.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(items.len()).min(MAX_THREADS);
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let (next, f) = (&next, &f);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return mine };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_in_the_order_of_the_items_whatever_order_they_finish_in() {
        let items: Vec<u64> = (0..40).collect();
        // Early items take longest, so they finish last.
        let out = super::map(&items, |&n| {
            std::thread::sleep(std::time::Duration::from_millis(40 - n));
            n * n
        });
        assert_eq!(out, items.iter().map(|n| n * n).collect::<Vec<_>>());
        assert_eq!(super::map(&[] as &[u8], |&b| b), Vec::<u8>::new());
    }
}
