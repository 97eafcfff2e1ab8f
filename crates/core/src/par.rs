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
    let threads = threads().min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let (next, f) = (&next, &f);
    let worker = |_| {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { return mine };
            mine.push((i, f(item)));
        }
    };
    let mut done: Vec<(usize, R)> = on_threads(0..threads, worker).into_iter().flatten().collect();
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The threads work is split over: the machine's cores, up to [`MAX_THREADS`].
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_THREADS)
}

/// `f` of each of `runs`, each on a thread of its own, the results in the order of the runs;
/// a panic of one is this thread's.
pub(crate) fn on_threads<T: Send, R: Send>(
    runs: impl Iterator<Item = T>,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let f = &f;
    std::thread::scope(|scope| {
        let workers: Vec<_> = runs.map(|run| scope.spawn(move || f(run))).collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    })
}

/// [`map`], starting the items heaviest first by `weight` (in the order of `items` among
/// equals): a long item started last would run alone on one core while the others idle.
/// The results come in the order of `items`.
pub(crate) fn map_heaviest_first<T: Sync, R: Send>(
    items: &[T],
    weight: impl Fn(&T) -> u32,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut done: Vec<(usize, R)> = map(&start_order(items, weight), |&i| (i, f(&items[i])));
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The places of `items`, heaviest first by `weight`, in their order among equals.
fn start_order<T>(items: &[T], weight: impl Fn(&T) -> u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(weight(&items[i])));
    order
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

    #[test]
    fn the_heaviest_items_start_first_and_results_keep_the_items_order() {
        let items: Vec<u32> = vec![1, 5, 2, 5, 9];
        assert_eq!(super::start_order(&items, |&w| w), vec![4, 1, 3, 2, 0]);
        assert_eq!(
            super::map_heaviest_first(&items, |&w| w, |&w| w * 10),
            vec![10, 50, 20, 50, 90]
        );
        let waste: Vec<u32> = crate::waste::RULES.iter().map(|r| r.weight()).collect();
        let first = super::start_order(&waste, |&w| w)[0];
        assert_eq!(crate::waste::RULES[first].code(), "W006", "the longest rule starts first");
    }
}
