//! What a queued fit is told while it waits for memory.
//!
//! Why it exists: the runner admits fits by their memory estimates
//! (`Store::claim_next_job_within` with the room its running fits leave), and a job
//! passed over must say why in words a user can act on; the words live here, apart from
//! the claim loop.

/// Why a queued job waits: what it needs against what the running fits leave.
pub(super) fn waiting_for_memory(needs: u64, budget: u64, in_use: u64, running: usize) -> String {
    let mb = |b: u64| b as f64 / 1048576.0;
    format!(
        "waiting for memory: this fit is estimated to need {:.0} MB at its peak; {} running fit{} on this replica {} {:.0} MB of its {:.0} MB fit budget (--fit-memory-mb), leaving {:.0} MB",
        mb(needs),
        running,
        if running == 1 { "" } else { "s" },
        if running == 1 { "holds" } else { "hold" },
        mb(in_use),
        mb(budget),
        mb(budget.saturating_sub(in_use))
    )
}
