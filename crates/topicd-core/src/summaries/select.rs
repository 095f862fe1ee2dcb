//! The first n items of a ranking without sorting all of it: every summary that lists
//! top words or documents (FREX, representative documents) takes its n this way.

/// The `n` first of `items` in the order `cmp` gives (all of them when there are fewer):
/// one partial selection, then a sort of those `n` only.
pub fn first_n_by<T>(mut items: Vec<T>, n: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    if n < items.len() {
        items.select_nth_unstable_by(n, &cmp);
        items.truncate(n);
    }
    items.sort_unstable_by(cmp);
    items
}
