//! Checks of HPC and PCM on the chain driver: fits are pinned to their model bytes, and
//! a fit interrupted at any checkpoint (in burn-in, on and between kept scans, just
//! after a mode refit, at the end of the first chain and inside the second chain of an
//! HPC refit, ...) and resumed on another thread count ends with exactly the bytes, and
//! the progress trace, of the uninterrupted fit; checkpoints that do not fit the chain
//! are rejected.

use super::fit::fit_hpc;
use super::model::HpcModel;
use super::params::HpcParams;
use super::simulate::{simulate, SimulationConfig};
use super::variant::Supervision;
use crate::corpus::builder::build_corpus;
use crate::corpus::preprocess::{PreprocessOptions, StopWords};
use crate::corpus::Corpus;
use crate::models::chain::{Checkpoint, Resume};
use crate::models::test_kit::SEED;
use crate::models::{CancelToken, Checkpointing, FitContext, Progress, StepKind, TopicModel};
use serde_json::json;
use std::sync::Mutex;

/// CRC-64/XZ of a model's encoding in the layout its pins were recorded in (before
/// `threads` left the parameters).
fn fingerprint(model: &HpcModel) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&super::model::as_before_threads_left(&model.encode()))
}

/// 360 documents of about 80 tokens over 200 words, drawn from HPC with two levels of
/// labels (3 top labels with 3 children each, K = 12); every seventh document is tagged
/// for a split when `tagged` (test, validation, dev or train in turn), and PCM's copy
/// has no labels.
fn small_corpus(supervision: Supervision, tagged: bool) -> Corpus {
    build(small_documents(supervision, tagged))
}

fn build(docs: Vec<crate::corpus::RawDocument>) -> Corpus {
    build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], docs).expect("corpus builds")
}

/// [`small_corpus`]'s documents before preprocessing.
fn small_documents(supervision: Supervision, tagged: bool) -> Vec<crate::corpus::RawDocument> {
    let config = SimulationConfig { eta: -2.0, ..SimulationConfig::small(360, 200, vec![3, 3], 80.0) };
    let mut docs = simulate(&config, 17).to_raw_documents();
    for (d, doc) in docs.iter_mut().enumerate() {
        if supervision == Supervision::Unsupervised {
            doc.labels = None;
        }
        if tagged {
            doc.split = ["test", "validation", "train", "dev", "Test", "", "train"].get(d % 7).filter(|t| !t.is_empty()).map(|t| t.to_string());
        }
    }
    docs
}

/// A configuration the checks fit: its name, HPC or PCM, whether the
/// corpus carries split tags, the params, how many documents land in each split, and
/// the fingerprint of the model the scan loop before the chain driver produced
/// (computed with that code, seed [`SEED`], x86-64).
struct Case {
    name: &'static str,
    supervision: Supervision,
    tagged: bool,
    params: serde_json::Value,
    /// Training, validation and test documents.
    split: (usize, usize, usize),
    pin: u64,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "hpc_splits",
            supervision: Supervision::Labelled,
            tagged: false,
            params: json!({"iterations": 12, "burn_in": 5, "hessian_every": 3, "validation_fraction": 0.2, "test_fraction": 0.2}),
            split: (219, 75, 66),
            pin: PIN_HPC_SPLITS,
        },
        Case {
            name: "hpc_thinned_full",
            supervision: Supervision::Labelled,
            tagged: false,
            params: json!({"iterations": 14, "burn_in": 4, "thin": 3, "hessian_every": 2, "rate_curvature": "full", "predictor": "single_label"}),
            split: (312, 48, 0),
            pin: PIN_HPC_THINNED_FULL,
        },
        Case {
            name: "hpc_tagged",
            supervision: Supervision::Labelled,
            tagged: true,
            params: json!({"iterations": 9, "burn_in": 3, "thin": 2, "hessian_every": 4, "rate_curvature": "tree_diagonal"}),
            split: (154, 103, 103),
            pin: PIN_HPC_TAGGED,
        },
        Case {
            name: "pcm",
            supervision: Supervision::Unsupervised,
            tagged: false,
            params: json!({"topics": 4, "iterations": 12, "burn_in": 6, "thin": 2, "hessian_every": 4}),
            split: (360, 0, 0),
            pin: PIN_PCM,
        },
        Case {
            name: "pcm_test_split",
            supervision: Supervision::Unsupervised,
            tagged: false,
            params: json!({"topics": 3, "iterations": 8, "burn_in": 2, "thin": 3, "hessian_every": 1, "test_fraction": 0.25, "rate_curvature": "tree_diagonal"}),
            split: (279, 0, 81),
            pin: PIN_PCM_TEST_SPLIT,
        },
    ]
}

// The three HPC pins were renewed when the label priors began counting the validation
// documents' label sets (the chain's part of the bytes was unchanged; PCM has no labels),
// and all five with encoding version 4 (the trailing refit flag), when HPC's rates began
// to be refitted on the training and validation documents by default
// (`refit_with_validation`). With the refit off, each of the five models was the
// version-3 bytes (those pins) but for the version byte and the flag.
const PIN_HPC_SPLITS: u64 = 0x07bb5314b2073b30;
const PIN_HPC_THINNED_FULL: u64 = 0xabd4eceb1cf9dd91;
const PIN_HPC_TAGGED: u64 = 0x2beea14aca8ef7b2;
const PIN_PCM: u64 = 0xe874ea89b396d3a2;
const PIN_PCM_TEST_SPLIT: u64 = 0xcf7b90e5f2602ad7;

fn params_of(case: &Case) -> HpcParams {
    HpcParams::from_json(&case.params, case.supervision).expect("params are valid")
}

/// Whether the case's job runs the second chain (HPC with validation documents, refit on).
fn refits(case: &Case) -> bool {
    params_of(case).refit_with_validation && case.split.1 > 0
}

/// The job's iterations: one chain's, or both chains' for a refit.
fn job_iterations(case: &Case) -> usize {
    params_of(case).iterations * if refits(case) { 2 } else { 1 }
}

/// What one run did: the model, its progress reports, its checkpoints and what became
/// of the one it was handed.
struct Run {
    model: HpcModel,
    progress: Vec<Progress>,
    checkpoints: Vec<(u64, Vec<u8>)>,
    resumed: Vec<Resume>,
}

/// Fit `case` on `threads` threads, checkpointing after every scan, from `resume` if
/// given.
fn fit(corpus: &Corpus, case: &Case, threads: usize, resume: Option<&[u8]>) -> Run {
    let p = params_of(case);
    let (progress, checkpoints, resumed) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let cancel = CancelToken::new();
    let ctx = FitContext {
        progress: &|p| progress.lock().unwrap().push(p),
        cancel: &cancel,
        sample: &|_, _| panic!("HPC stores no thinned samples"),
        checkpoint: Checkpointing {
            every: Some(std::time::Duration::ZERO),
            save: &|it, bytes| checkpoints.lock().unwrap().push((it, bytes)),
            resume_from: resume,
            resumed: &|r| resumed.lock().unwrap().push(r),
            ready: crate::models::ALWAYS_READY,
        },
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let model = pool.install(|| fit_hpc(corpus, &p, case.supervision, SEED, &ctx)).expect("fit runs");
    Run { model, progress: progress.into_inner().unwrap(), checkpoints: checkpoints.into_inner().unwrap(), resumed: resumed.into_inner().unwrap() }
}

/// The same (corpus, params, seed) gives the pinned model bytes, and checkpointing
/// after every scan changes nothing.
#[test]
fn fits_are_pinned_to_their_model_bytes() {
    let mut wrong = Vec::new();
    for case in cases() {
        let corpus = small_corpus(case.supervision, case.tagged);
        let p = params_of(&case);
        let silent = FitContext::silent(|ctx| fit_hpc(&corpus, &p, case.supervision, SEED, ctx).expect("fit runs"));
        let s = &silent.summary;
        // A refitted model's rates learned from the validation documents too.
        let learned = case.split.0 + if refits(&case) { case.split.1 } else { 0 };
        assert_eq!(
            (s.training_documents, s.validation_documents, s.test_documents),
            (learned, case.split.1, case.split.2),
            "{}: the documents' roles",
            case.name
        );
        assert_eq!(silent.refitted_with_validation, refits(&case), "{}", case.name);
        if fingerprint(&silent) != case.pin {
            wrong.push(format!("{}: {:#018x}", case.name, fingerprint(&silent)));
        }
        let checkpointed = fit(&corpus, &case, 1, None);
        assert_eq!(checkpointed.model.encode(), silent.encode(), "{}: checkpoints change nothing", case.name);
    }
    assert!(wrong.is_empty(), "fingerprints changed: {wrong:?}");
}

/// The job iterations after which the checks interrupt `case`'s fit: in each chain, the
/// first scan, the last of burn-in, the first after it, a kept scan and the one after it
/// (between kept scans when thinning), just after the last mode refit, mid-way and the
/// last but one; for a refit also the first chain's last scan (its hand-over).
fn interruptions(case: &Case) -> Vec<usize> {
    let p = params_of(case);
    let one = chain_interruptions(&p);
    if !refits(case) {
        return one;
    }
    let n = p.iterations;
    one.iter().copied().chain([n]).chain(one.iter().map(|it| n + it)).collect()
}

/// [`interruptions`] within one chain.
fn chain_interruptions(p: &HpcParams) -> Vec<usize> {
    let last_refit = (1..=p.iterations).filter(|&it| p.refits_modes(it)).max().expect("scan 1 refits");
    let first_kept = p.burn_in + p.thin;
    let mut at = vec![1, p.burn_in, p.burn_in + 1, first_kept, first_kept + 1, last_refit, (p.iterations + p.burn_in) / 2, p.iterations - 1];
    at.retain(|&it| it >= 1 && it < p.iterations);
    at.sort_unstable();
    at.dedup();
    at
}

/// Interrupt every case of one family after several scans and resume on 2 threads (the
/// original ran on 1): the same model bytes, and the same progress from there on.
fn check_resumed_fits(supervision: Supervision) {
    for case in cases().into_iter().filter(|c| c.supervision == supervision) {
        let corpus = small_corpus(case.supervision, case.tagged);
        let full = fit(&corpus, &case, 1, None);
        let total = job_iterations(&case);
        assert!(full.resumed.is_empty());
        assert_eq!(full.checkpoints.len(), total - 1, "{}: one per scan but the last", case.name);
        assert!(full.checkpoints.iter().enumerate().all(|(i, c)| c.0 as usize == i + 1), "{}: the second chain's count on from the first's", case.name);
        assert!(
            full.progress.iter().enumerate().all(|(i, r)| (r.iteration, r.total) == (i as u64 + 1, total as u64)),
            "{}: progress counts through both chains",
            case.name
        );
        assert!(full.progress.iter().all(|r| r.loglik_per_token.is_some()), "{}: every scan reports its log-likelihood", case.name);
        let bytes = full.model.encode();
        for it in interruptions(&case) {
            let (saved_at, checkpoint) = &full.checkpoints[it - 1];
            assert_eq!(*saved_at as usize, it);
            let resumed = fit(&corpus, &case, 2, Some(checkpoint));
            assert_eq!(resumed.resumed, vec![Resume::From(it as u64)], "{} after {it}", case.name);
            assert_eq!(resumed.model.encode(), bytes, "{}: resumed after scan {it}", case.name);
            // Its progress and checkpoints continue the first run's.
            let rest = &full.progress[it..];
            assert_eq!(resumed.progress.len(), rest.len());
            for (a, b) in resumed.progress.iter().zip(rest) {
                assert_eq!(
                    (a.iteration, a.loglik_per_token.map(f64::to_bits), &a.diagnostics),
                    (b.iteration, b.loglik_per_token.map(f64::to_bits), &b.diagnostics)
                );
            }
            assert_eq!(resumed.checkpoints.first().map(|c| c.0), Some(it as u64 + 1).filter(|&n| (n as usize) < total));
        }
    }
}

#[test]
fn a_resumed_hpc_fit_equals_the_uninterrupted_one() {
    check_resumed_fits(Supervision::Labelled);
}

#[test]
fn a_resumed_pcm_fit_equals_the_uninterrupted_one() {
    check_resumed_fits(Supervision::Unsupervised);
}

/// The progress names both counts of kept scans and says which scans refit the modes,
/// in the diagnostics and as the typed step kind (which the CLI times scans by).
#[test]
fn progress_reports_kept_scans_and_mode_refits() {
    let case = &cases()[1];
    let p = params_of(case);
    let run = fit(&small_corpus(case.supervision, case.tagged), case, 1, None);
    let schedule = p.schedule();
    let n = p.iterations;
    assert!(refits(case) && run.progress.len() == 2 * n, "both chains report");
    for r in &run.progress {
        // Each chain's own scan number.
        let it = (r.iteration as usize - 1) % n + 1;
        let kept = (1..=it).filter(|&i| schedule.is_kept(i)).count();
        assert_eq!((&r.diagnostics["kept_scans"], &r.diagnostics["kept_sweeps"]), (&json!(kept), &json!(kept)), "scan {it}");
        assert_eq!(r.diagnostics["mode_refit"], json!(p.refits_modes(it)), "scan {it}");
        assert_eq!(r.kind, Some(if p.refits_modes(it) { StepKind::Refit } else { StepKind::Steady }), "scan {it}");
        for key in ["rate_acceptance", "untouched_acceptance", "affinity_acceptance", "log_likelihood_words", "log_likelihood_labels", "log_posterior"] {
            assert!(r.diagnostics[key].as_f64().is_some_and(f64::is_finite), "scan {it}: {key}");
        }
    }
    // The trace is the words' log-likelihood per token of the chain's documents: the
    // same token count through each chain, the model's (both chains' documents) in the
    // second.
    let tokens: Vec<f64> = run.progress.iter().map(|r| r.diagnostics["log_likelihood_words"].as_f64().unwrap() / r.loglik_per_token.unwrap()).collect();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    assert!(tokens[..n].iter().all(|&t| close(t, tokens[0])) && tokens[n..].iter().all(|&t| close(t, run.model.summary.tokens)), "{tokens:?}");
    assert!(tokens[0] < run.model.summary.tokens, "the first chain has fewer documents");
    assert_eq!(run.model.summary.kept_scans, (1..=p.iterations).filter(|&i| schedule.is_kept(i)).count());
}

/// A checkpoint that is cut short, has a byte flipped in its state's header, or
/// belongs to other parameters, another family or another corpus is rejected and the
/// fit starts over (and so still ends with the same model).
#[test]
fn unusable_checkpoints_are_rejected_and_the_fit_starts_over() {
    let case = &cases()[0];
    let corpus = small_corpus(case.supervision, case.tagged);
    let p = params_of(case);
    let full = fit(&corpus, case, 1, None);
    let good = &full.checkpoints[6].1;
    let decoded = Checkpoint::decode_for(good, "hpc", SEED, &p.schedule()).expect("a good checkpoint decodes");
    let with_state = |state: Vec<u8>| Checkpoint { state, ..decoded.clone() }.encode();
    let mut bumped_version = decoded.state.clone();
    bumped_version[0] = 9;
    // The byte after the version and the parameters' bytes starts the token count.
    let mut other_tokens = decoded.state.clone();
    let params_len = postcard::to_allocvec(&p).unwrap().len();
    assert!(params_len < 128, "a one-byte length");
    let tokens_at = 1 + 1 + params_len;
    other_tokens[tokens_at] ^= 0x10;
    // Other parameters with the same schedule: a different Hessian schedule.
    let other_case =
        Case { params: json!({"iterations": 12, "burn_in": 5, "hessian_every": 4, "validation_fraction": 0.2, "test_fraction": 0.2}), ..cases().remove(0) };
    let for_other_params = fit(&corpus, &other_case, 1, None).checkpoints[6].1.clone();
    // PCM's checkpoint, and HPC's on another corpus, relabelled as this chain's.
    let pcm = &cases()[3];
    let pcm_run = fit(&small_corpus(Supervision::Unsupervised, false), pcm, 1, None);
    let mut as_hpc = Checkpoint::decode_for(&pcm_run.checkpoints[2].1, "pcm", SEED, &params_of(pcm).schedule()).unwrap();
    (as_hpc.family, as_hpc.schedule) = ("hpc".into(), p.schedule());
    let tagged = fit(&small_corpus(Supervision::Labelled, true), &Case { tagged: true, ..cases().remove(0) }, 1, None);
    let other_corpus = tagged.checkpoints[6].1.clone();
    let truncated_state = with_state(decoded.state[..decoded.state.len() - 3].to_vec());
    for (what, bad) in [
        ("truncated", good[..good.len() - 9].to_vec()),
        ("garbage", vec![1, 2, 3]),
        ("state version", with_state(bumped_version)),
        ("token count", with_state(other_tokens)),
        ("truncated state", truncated_state),
        ("other params", for_other_params),
        ("pcm", as_hpc.encode()),
        ("other corpus", other_corpus),
    ] {
        let run = fit(&corpus, case, 1, Some(&bad));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{what}: {:?}", run.resumed);
        assert_eq!(run.model.encode(), full.model.encode(), "{what}");
    }
}

/// The refit keeps the first chain's calibration (temperature, thresholds, label sets)
/// and the fit without it is the first chain's model: the two differ in their rates and
/// in the documents those learned from, not in how probabilities become label sets.
#[test]
fn a_refit_keeps_the_first_chains_calibration() {
    let case = &cases()[0];
    assert!(refits(case));
    let corpus = small_corpus(case.supervision, case.tagged);
    let refitted = fit(&corpus, case, 2, None).model;
    let mut params = case.params.clone();
    params["refit_with_validation"] = json!(false);
    let first_only = fit(&corpus, &Case { params, ..cases().remove(0) }, 2, None);
    let first = first_only.model;
    assert_eq!(first_only.checkpoints.len(), params_of(case).iterations - 1, "one chain");
    assert!(!first.refitted_with_validation && refitted.refitted_with_validation);
    assert_eq!((&refitted.prediction, &refitted.thresholds), (&first.prediction, &first.thresholds));
    assert_ne!(refitted.mu, first.mu);
    let (a, b) = (&refitted.summary, &first.summary);
    assert_eq!((a.training_documents, b.training_documents), (case.split.0 + case.split.1, case.split.0));
    assert!(a.tokens > b.tokens);
    // Both models are scored on the test split, with the same calibration.
    let score = |m: &HpcModel| m.evaluation.as_ref().expect("a test split").model.micro.f1;
    assert!(score(&refitted) > 0.0 && score(&first) > 0.0);
}

/// A checkpoint of the second chain whose calibration does not decode, or does not fit
/// the corpus, is rejected and the job starts over from the first chain, ending with
/// the uninterrupted model.
#[test]
fn a_second_chain_checkpoint_with_a_bad_calibration_is_rejected() {
    let case = &cases()[0];
    let corpus = small_corpus(case.supervision, case.tagged);
    let p = params_of(case);
    let full = fit(&corpus, case, 1, None);
    let (at, good) = &full.checkpoints[p.iterations + 3];
    assert_eq!(*at as usize, p.iterations + 4);
    let decoded = Checkpoint::decode_for(good, "hpc", super::refit::refit_seed(SEED), &p.schedule()).expect("a second-chain checkpoint");
    let resumed = fit(&corpus, case, 2, Some(good));
    assert_eq!(resumed.resumed, vec![Resume::From(*at)]);
    assert_eq!(resumed.model.encode(), full.model.encode());
    let with_state = |state: Vec<u8>| Checkpoint { state, ..decoded.clone() }.encode();
    let state = &decoded.state;
    let tail_len = u32::from_le_bytes(state[state.len() - 4..].try_into().unwrap()) as usize;
    let calibration_at = state.len() - 4 - tail_len;
    // The temperature is the calibration's first field (8 bytes): make it NaN.
    let mut nan_temperature = state.clone();
    nan_temperature[calibration_at..calibration_at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    let mut long_tail = state.clone();
    let n = long_tail.len();
    long_tail[n - 4..].copy_from_slice(&(state.len() as u32).to_le_bytes());
    for (what, bad) in
        [("NaN temperature", with_state(nan_temperature)), ("tail too long", with_state(long_tail)), ("no tail", with_state(state[..calibration_at].to_vec()))]
    {
        let run = fit(&corpus, case, 1, Some(&bad));
        assert!(matches!(&run.resumed[..], [Resume::Rejected(_)]), "{what}: {:?}", run.resumed);
        assert_eq!(run.model.encode(), full.model.encode(), "{what}");
        assert_eq!(run.progress.len(), 2 * p.iterations, "{what}: both chains run again");
    }
}

/// Several chains: HPC with a refit runs two chains in each stage (4 × `iterations`
/// counted), PCM two chains matched topic to topic; chain 0 of each first stage is the
/// one-chain fit, so a pooled table lies between chain 0's and chain 1's. A job
/// stopped anywhere (inside a chain, at the boundary between chains, at the first
/// stage's end, inside the second stage) and resumed on 2 threads ends with the bytes
/// of the uninterrupted one.
#[test]
fn several_chains_pool_and_resume_to_the_same_bytes() {
    for (base, one_stage) in [(cases().remove(0), false), (cases().remove(3), true)] {
        let mut params = base.params.clone();
        params["chains"] = json!(2);
        let case = Case { params, ..base };
        let corpus = small_corpus(case.supervision, case.tagged);
        let p = params_of(&case);
        let full = fit(&corpus, &case, 1, None);
        let m = &full.model;
        let n = p.iterations;
        let stages = if refits(&case) { 2 } else { 1 };
        assert_eq!(stages == 1, one_stage, "{}", case.name);
        assert_eq!((m.chains, m.params.chains), (2, 2));
        assert_eq!(full.progress.last().map(|pr| (pr.iteration, pr.total)), Some(((2 * stages * n) as u64, (2 * stages * n) as u64)), "{}", case.name);
        let report = m.convergence.as_ref().expect("a convergence report");
        assert_eq!(report.chains, 2);
        assert_eq!(m.summary.kept_scans, 2 * report.draws_per_chain, "{}", case.name);
        assert_eq!(m.alignments.len(), usize::from(case.supervision == Supervision::Unsupervised), "{}: only PCM's topics are matched", case.name);
        assert!((m.shares.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{}", case.name);
        let decoded = HpcModel::decode(&m.encode()).unwrap();
        assert_eq!((decoded.chains, decoded.params.chains, decoded.alignments.clone()), (2, 2, m.alignments.clone()));
        if one_stage {
            // PCM (every document trains, so the seed draws no split): chain c is the
            // one-chain fit from chain c's seed, and each pooled log rate is the mean of
            // chain 0's and chain 1's matched one (to f32 rounding); the root's column
            // is not permuted.
            let one = HpcParams { chains: 1, ..p.clone() };
            let chain = |c: usize| {
                FitContext::silent(|ctx| fit_hpc(&corpus, &one, Supervision::Unsupervised, crate::models::chains::chain_seed(SEED, c), ctx)).unwrap()
            };
            let (c0, c1) = (chain(0), chain(1));
            let k = m.labels.len();
            let to = &m.alignments[0].permutation;
            for ((pooled, a), b) in m.mu.chunks(k + 1).zip(c0.mu.chunks(k + 1)).zip(c1.mu.chunks(k + 1)) {
                assert!((pooled[0] - (a[0] + b[0]) / 2.0).abs() < 1e-5, "root: {} vs {} and {}", pooled[0], a[0], b[0]);
                for (t, &u) in to.iter().enumerate() {
                    assert!((pooled[u + 1] - (a[u + 1] + b[t + 1]) / 2.0).abs() < 1e-5, "topic {u}");
                }
            }
            assert_eq!(c0.summary.final_loglik_per_token + c1.summary.final_loglik_per_token, 2.0 * m.summary.final_loglik_per_token);
        }
        // Checkpoints: one per scan but the last in each chain, each chain's boundary,
        // and with a refit the first stage's end.
        let bytes = m.encode();
        let boundaries: Vec<usize> = full.checkpoints.iter().enumerate().filter(|(_, c)| (c.0 as usize).is_multiple_of(n)).map(|(i, _)| i).collect();
        let mut at: Vec<usize> = vec![2, full.checkpoints.len() - 2];
        at.extend(boundaries.iter().flat_map(|&b| [b, b + 2]).filter(|&i| i < full.checkpoints.len()));
        for i in at {
            let (it, checkpoint) = &full.checkpoints[i];
            let resumed = fit(&corpus, &case, 2, Some(checkpoint));
            assert_eq!(resumed.resumed, vec![Resume::From(*it)], "{}: checkpoint {i}", case.name);
            assert_eq!(resumed.model.encode(), bytes, "{}: resumed from checkpoint {i} (iteration {it})", case.name);
        }
    }
}

/// Covariates: HPC with a refit keeps θ draws of the documents its rates learned from
/// (training and validation) with their design rows, and the draws are part of every
/// checkpoint, so a fit resumed after some of them ends with the same bytes; its
/// effects answer by composition.
#[test]
fn covariate_draws_are_kept_and_resumed() {
    let base = cases().remove(0);
    assert!(refits(&base));
    let mut raw = small_documents(Supervision::Labelled, false);
    for (d, doc) in raw.iter_mut().enumerate() {
        doc.covariates = Some([("group".to_string(), json!(["x", "y", "z"][d % 3])), ("year".to_string(), json!(2000 + d % 20))].into_iter().collect());
    }
    let corpus = build(raw);
    let mut params = base.params.clone();
    params["covariates"] = json!(["group", "year"]);
    params["keep_draws"] = json!(4);
    let case = Case { params, ..base };
    let p = params_of(&case);
    let full = fit(&corpus, &case, 1, None);
    let m = &full.model;
    let learned = case.split.0 + case.split.1;
    let width = m.design.as_ref().expect("a design").width();
    assert_eq!((width, m.design_rows.len(), m.theta_draws.len()), (4, learned * width, 4), "intercept, two indicators, year");
    for draw in &m.theta_draws {
        for row in draw.chunks(m.labels.len()) {
            assert!((row.iter().map(|&x| x as f64).sum::<f64>() - 1.0).abs() < 1e-5, "θ rows are distributions");
        }
    }
    assert_eq!(HpcModel::decode(&m.encode()).unwrap().encode(), m.encode());
    let bytes = m.encode();
    // Inside the second chain after its first draw (its kept scans start after burn-in).
    let i = p.iterations + p.burn_in + 3;
    let (it, checkpoint) = &full.checkpoints[i];
    let resumed = fit(&corpus, &case, 2, Some(checkpoint));
    assert_eq!(resumed.resumed, vec![Resume::From(*it)]);
    assert_eq!(resumed.model.encode(), bytes, "resumed after scan {it}");
    let query = crate::models::effects::EffectQuery {
        covariate: "group".into(),
        grid: 25,
        contrast: Some(("x".into(), "z".into())),
        level: 0.9,
        topics: None,
        seed: 1,
        chains: Default::default(),
    };
    let e = m.effects(&query).unwrap().expect("effects by composition");
    assert_eq!((e.method, e.draws, e.topics.len()), ("composition", 4, m.labels.len()));
}
