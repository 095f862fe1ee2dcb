//! How the process asks glibc's allocator to hand memory back.
//!
//! Why it exists: the service promises memory budgets (`--fit-memory-mb`,
//! `--model-cache-mb`, `--request-memory-mb`) by what fits, models and requests hold.
//! glibc's allocator raises its mmap threshold each time a large block is freed (up to
//! 32 MiB), after which blocks of that size come from the heap arenas and stay there
//! once freed: a fit that encodes a checkpoint of 80 MB, or a request that builds a
//! ranking, leaves that memory resident after it is done, and the process held up to
//! twice what its fits used (bench/README.md, "Fit memory estimates"). A fixed
//! threshold keeps every block of at least [`MMAP_THRESHOLD_BYTES`] in its own mapping,
//! returned to the system when freed. Smaller blocks, where most allocations are, are
//! unaffected.
//!
//! An operator who sets glibc's own variable (`MALLOC_MMAP_THRESHOLD_`) keeps it: the
//! environment wins.

/// Blocks of this size or larger are mapped on their own and unmapped when freed.
pub const MMAP_THRESHOLD_BYTES: usize = 256 << 10;

/// Fix the allocator's mmap threshold (glibc on Linux; elsewhere nothing to do). Call
/// once, first thing in `main`, before any thread starts.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only changes allocator settings; it is called before any other
        // thread exists.
        let ok = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int) };
        debug_assert_eq!(ok, 1, "mallopt(M_MMAP_THRESHOLD) accepted");
    }
}
