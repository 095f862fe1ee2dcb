//! LDA over the ranks of a distributed fit, giving the single-process fit's bytes.
//!
//! Why it exists: a corpus whose tokens and assignments do not fit one machine is split
//! over R ranks ([`crate::ranks`]). The partitioned schedule ([`super::partition`])
//! already cuts the documents into P blocks and the vocabulary into P blocks and samples
//! P disjoint cells per round, each from its own stream (seed, sweep, cell); this module
//! runs that same schedule with the document blocks spread over the ranks:
//!
//! - rank q owns the document blocks [`crate::ranks::block_range`]`(P, R, q)`, a
//!   contiguous run, with their tokens, assignments z and document-topic counts n_dk
//!   (the document side, 1/R of it per rank);
//! - every rank keeps an array of the topic-word counts n_kw (the shared side), of which
//!   only the word blocks it is sampling are current: in round r, document block i
//!   samples word block (i + r) mod P, which document block i − 1 samples next round, so
//!   after each round a rank sends the word block of its first document block to the
//!   rank owning the block before it and receives the one its last block needs (one
//!   block per rank and round: the counts that must move, and no more);
//! - the topic totals n_k are the round's snapshot plus the cells' moves, summed over the
//!   ranks as integers after each round, as one process sums its cells;
//! - when a sweep is followed by something that reads all of n_kw (the log joint, a kept
//!   sweep, α/β re-estimation, the end), the ranks gather the word blocks they hold;
//! - every float reduction over documents runs in document order: the log joint's
//!   document terms are passed from rank to rank ([`Ranks::fold_in_rank_order`]), θ is
//!   gathered to rank 0 in rank order, which is document order.
//!
//! So rank 0 ends with exactly the model [`super::fit_lda`] makes from the same corpus,
//! parameters and seed, for every R.
//!
//! The sparse kernel (more than [`super::sampler::DENSE_MAX_TOPICS`] topics) samples
//! the corpus' sync blocks in order against a snapshot; over ranks, each rank samples
//! its own documents of the block and the ranks exchange their moves (word, old topic,
//! new topic) after it, so every rank keeps n_kw whole and applies the same integer
//! moves one process applies.

mod chain;
mod fit;
mod shard;

pub use shard::{LdaShard, ShardPlan};

pub use fit::fit_lda_ranked;
