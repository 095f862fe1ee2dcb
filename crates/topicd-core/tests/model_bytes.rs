//! Every family's stored model bytes for one seed, against digests recorded earlier.
//!
//! Why it exists: refactors that should not change a fit's result (moving modules
//! between crates, typing parameters, reordering a family's files) must give the very
//! same model bytes for the same seed and input. Each family is fitted briefly on a
//! corpus (or graph) simulated from a fixed seed, on one thread and on two (the result
//! may not depend on the thread count), and the SHA-256 of `Fitted::encode` is compared
//! with the digest recorded before the workspace split (commit 6095f7b's samplers).
//! A second run of the same fit must give the same bytes in every family (HDP's
//! passes' wall-clock seconds, which once differed from run to run, left its model in
//! version 4 and stay in the job's diagnostics).
//!
//! Since then one change was meant to change the bytes and not the fit: the job's
//! `threads` left every family's stored parameters (always 0 by then, one zero byte;
//! each family's encoding version went up by one). The digests recorded before the
//! split are kept and checked against the current bytes with that byte put back and the
//! version set back ([`as_before_threads_left`]), so the fits are still shown to be the
//! very ones of before the split; the current bytes' digests are checked as well.
//! DCNT's and SCNT's layout changed again when their φ_d could come from covariates (a
//! `design` and kept draws in their parameters and model), and every MCMC family's
//! (LDA, HPC, PCM, DCNT, SCNT) when its model gained a convergence report (and LDA's
//! parameters `chains`): their rows keep no pre-split digest. Their equivalence with
//! the pre-split bytes was shown here at commits 55fcc06 (DCNT, SCNT) and 024ac97 (LDA,
//! HPC, PCM), and their resume pins (`lda::fit::resume_tests`, `hpc::resume_tests`,
//! `dcnt::resume_tests`, recorded before the chain driver) still hold in the old
//! layout: the fits are the same, only the stored report is new.
//! DCNT's and SCNT's bytes changed once more, by design and not their chain: their
//! parameters gained `warm_start` (0, as before) and their kept draws of the loadings
//! now come from every scan after burn-in, not only the thinned ones (decision 0047);
//! `dcnt::resume_tests` still pins the chain itself. And again when they could run
//! several chains: `chains` (1) joined their parameters and two empty lists (the chains'
//! alignments, the draws per chain) their model's end; the same resume pins hold.
//! HDP's when its model could keep covariates for effects (version 3): four empty
//! fields at its end (its pre-split digest had gone already).
//! HDP's again when its passes' wall-clock seconds left the model (version 4, issue 56):
//! its row keeps the version 3 digest, taken with every pass' seconds 0 as the check
//! used to zero them, and checks it against the current bytes put back in version 3's
//! layout ([`hdp_as_version3`]): nothing but the seconds left. And when `birth_every`
//! (0 here) joined its parameters (version 5, decision 0057): the same check, with the
//! parameters put back without it. When the default `delete_every` became 1 (decision
//! 0070, a delete in the third pass) the row began to ask for the former default, 2,
//! which proposes no delete in its three passes as before: the same fit, the same bytes.
//! HPC's and PCM's likewise, for the same reason: their model's version (7) and its end
//! (the chain count 1, no alignments, no covariate design, rows or θ draws) changed,
//! nothing before it (`hpc::fit_tests` decodes the version 6 bytes to the same model,
//! and `hpc::resume_tests` pins hold); HPC's again when its convergence report began
//! to trace each label's share (the report only: the pins still hold).
//!
//! HPC's and PCM's when PCM's seeds joined their model's end (version 8, issue 59): the
//! empty seeds (PCM's with its own default strength) and no left-out words; their rows keep the version 7 digests
//! and check them against the current bytes put back in version 7's layout
//! ([`hpc::model::as_version7`]): an unseeded fit is the very fit of before.
//!
//! DCNT's and SCNT's when an edited model's slots joined their model's end (version 9,
//! issue 59; none here, one zero byte): their rows keep the version 7 digests, and
//! [`dcnt_as_version7`] takes that byte out too. And when the reference chain joined
//! their end (version 10, decision 0071; chain 0 for these one-chain fits, one zero
//! byte): the same, one byte more.
//!
//! LDA's when seeded topics joined its parameters (three fields at their end) and the
//! seed words left out its model's end (version 7, issue 59): its row keeps the version
//! 6 digest and checks it against the current bytes put back in version 6's layout
//! ([`lda_as_version6`]): an unseeded fit is the very fit of before. And when the
//! reference chain joined its end (version 8, decision 0072; chain 0 for this one-chain
//! fit, one zero byte): the same, one byte more.
//!
//! Every vectorised kernel gives bit-identical results on every instruction set
//! (`isa`), so the digests hold on AVX-512, AVX2 and portable machines alike. A change
//! that is meant to change a family's result (a sampler fix, a new default) records the
//! new digest here in the same commit, saying why in its message.

use sha2::{Digest, Sha256};
use topicd_core::corpus::{build_corpus, PreprocessOptions, StopWords};
use topicd_core::graph::build_graph;
use topicd_core::models::dcnt::model::DcntModel;
use topicd_core::models::hdp::model::HdpModel;
use topicd_core::models::hdp::passes::PassRecord;
use topicd_core::models::hpc::simulate::{simulate, SimulationConfig};
use topicd_core::models::lda::LdaModel;
use topicd_core::models::registry::{self, FitSource};
use topicd_core::models::FitContext;

/// What a family's current bytes are checked against besides their own digest.
// Each variant names what left the layout (and so what is put back): the common
// postfix is the point, not a stutter.
#[allow(clippy::enum_variant_names)]
enum Before {
    /// The digest before the workspace split, with `threads` among the parameters
    /// ([`as_before_threads_left`]).
    ThreadsLeft(&'static str),
    /// HDP's digest in its version 3 layout, every pass' seconds 0 ([`hdp_as_version3`]).
    SecondsLeft(&'static str),
    /// LDA's digest in its version 6 layout, before seeded topics ([`lda_as_version6`]).
    SeedsLeft(&'static str),
    /// DCNT's or SCNT's digest in its version 7 layout, before seeded topics
    /// ([`dcnt_as_version7`]).
    DcntSeedsLeft(&'static str),
    /// HPC's or PCM's digest in its version 7 layout, before PCM's seeded topics
    /// ([`hpc::model::as_version7`]).
    HpcSeedsLeft(&'static str),
}

/// Each family's brief fit, the digest its bytes had before a layout change, and the
/// digest of its current bytes.
const EXPECTED: &[(&str, &str, Before, &str)] = &[
    (
        "lda",
        r#"{"topics": 8, "iterations": 6, "burn_in": 3}"#,
        Before::SeedsLeft("1d1acaf5fcf0c20949ccbcb614e45832593311f88c4ae7b52f2f9dd6042ab036"),
        "23d783907c7728b7402c0785f3e2fcdb9f52766031b6f7aa3911a5a027562eee",
    ),
    (
        "hpc",
        r#"{"iterations": 4, "burn_in": 2, "test_fraction": 0.2}"#,
        Before::HpcSeedsLeft("f996511c1a26dfdcb3524c14f891fae2cab1772bc02077d60d2ca882e655a2b9"),
        "9858fde8a2f15468c4f434edd6381bbe6d117372982e5d1370a4a38fd1d77636",
    ),
    (
        "pcm",
        r#"{"topics": 6, "iterations": 4, "burn_in": 2}"#,
        Before::HpcSeedsLeft("7a2289792d2e9990637b7624a19839a3adb5e419e079f515e6b1f840e9411165"),
        "4c1dd520b610c963f32da88333ec1c734a35d5e95c70402de1f6d306384df669",
    ),
    (
        "dcnt",
        r#"{"topics": 6, "iterations": 6, "burn_in": 3}"#,
        Before::DcntSeedsLeft("35ed3583de9c73028a8a528782b4523a0a2a22adc9149ab10f2a3a946a0b9333"),
        "fd25edb6efe9d46b7f7c1feaab70240695dcfe76173c90eb260556d17a1fd042",
    ),
    (
        "scnt",
        r#"{"topics": 6, "iterations": 6, "burn_in": 3}"#,
        Before::DcntSeedsLeft("802a07b90f0bb8b8d1336b655abbf4e22d16607714c114b9be1ca4712c77eade"),
        "ef68b445c6249bf19ce12d0913bcc6dd75192eb51c1ecd8ca4b2c1e72756d473",
    ),
    // HDP's numbers moved by rounding when its batch sums became split-independent
    // (decision 0050), so it has no digest from before the split any more.
    (
        "hdp",
        r#"{"topics": 8, "passes": 3, "delete_every": 2}"#,
        Before::SecondsLeft("5e05f1fcfaf8fe4ea9bf495fe064efaa7527beda8f71cdfd4a8d1ec40e3b368d"),
        "2d3c9a0f3ffa1a274d7e9604213fc0c1bf6dbb341d1f863d9d45dec2bb1ba763",
    ),
    (
        "hdp_ammsb",
        r#"{"communities": 6, "passes": 3}"#,
        Before::ThreadsLeft("395f6cc0050954bd14fa51ca090ee7baae18fdf7630bfdcdf1ca679a7ac566a5"),
        "073316dd6eafe2b98b154246c0830a71488f5b5c56a552e9ee9f2f33cf90ce3e",
    ),
];

/// How far into a blob the parameters end: the header and every family's parameters
/// take fewer bytes than this.
const PARAMS_END_BOUND: usize = 256;

/// Whether `bytes`, with its version byte set one lower and a zero byte (`threads: 0`)
/// put back at some place among its first [`PARAMS_END_BOUND`] bytes, has the digest
/// `before`. The version is one byte for every family (a postcard varint below 128).
/// A match at some place shows the blob is the old one but for that byte, since a
/// SHA-256 match by chance is out of the question.
fn as_before_threads_left(bytes: &[u8], before: &str) -> bool {
    assert!(bytes[0] > 1 && bytes[0] < 128, "a one-byte version above 1");
    (1..=bytes.len().min(PARAMS_END_BOUND)).any(|at| {
        let mut old = Vec::with_capacity(bytes.len() + 1);
        old.push(bytes[0] - 1);
        old.extend_from_slice(&bytes[1..at]);
        old.push(0);
        old.extend_from_slice(&bytes[at..]);
        digest(&old) == before
    })
}

/// HDP's current bytes in its version 3 layout: the parameters without `birth_every`
/// (0 in the fit checked), each pass with its wall-clock seconds (0, as the check used
/// to zero them) after its other fields; every other field as it is, in the model's order.
fn hdp_as_version3(bytes: &[u8]) -> Vec<u8> {
    let m = HdpModel::decode(bytes).expect("an HDP model decodes");
    let timed: Vec<PassRecord> = m.passes.iter().map(|summary| PassRecord { summary: summary.clone(), seconds: 0.0 }).collect();
    let p = &m.params;
    assert_eq!(p.birth_every, 0, "the checked fit proposes no births");
    let params = (
        (p.topics, p.alpha, p.gamma, p.lambda, p.batches, p.passes, p.local_tolerance),
        (p.local_iterations, p.merge_every, p.merge_pairs, p.delete_every, p.convergence_tolerance, p.test_fraction),
    );
    let head = (3u32, params, m.num_terms, m.num_topics, &m.topic_word, &m.stick, &m.topic_tokens, &timed);
    let tail = (m.stick_fallbacks, m.documents, m.tokens, m.test_documents, &m.heldout, &m.design, &m.design_rows, &m.doc_dirichlet, m.effect_draws);
    let mut out = postcard::to_allocvec(&head).expect("plain data encodes");
    out.extend(postcard::to_allocvec(&tail).expect("plain data encodes"));
    out
}

/// LDA's current (unseeded, one-chain) bytes in its version 6 layout: version 6, the
/// parameters without the three seed fields at their end (an empty list, an f64 and an
/// enum tag: 10 bytes), the model without its empty list of left-out seed words and its
/// reference chain (0) at its end.
fn lda_as_version6(bytes: &[u8]) -> Vec<u8> {
    let m = LdaModel::decode(bytes).expect("an LDA model decodes");
    assert!(m.params.seed_words.is_empty() && m.missing_seed_words.is_empty(), "the checked fit has no seeds");
    assert_eq!(m.reference_chain, 0, "one chain");
    let params_end = postcard::to_allocvec(&(m.version, &m.params)).expect("plain data encodes").len();
    let mut out = vec![6u8];
    out.extend_from_slice(&bytes[1..params_end - 10]);
    out.extend_from_slice(&bytes[params_end..bytes.len() - 2]);
    out
}

/// A current unseeded, unedited one-chain DCNT/SCNT blob in version 7's layout: the
/// header's version 7, the seeds' 10 bytes at the parameters' end (an empty list,
/// `seed_strength`, the `missing_seed_words` choice) and the last three bytes (the
/// empty list of missing seed words, no slots, reference chain 0) taken out.
fn dcnt_as_version7(bytes: &[u8]) -> Vec<u8> {
    let m = DcntModel::decode(bytes).expect("a DCNT model decodes");
    assert!(m.params.seeds.is_empty() && m.missing_seed_words.is_empty() && m.slots.is_none(), "the checked fit has no seeds and no edit");
    assert_eq!(m.reference_chain, 0, "one chain");
    let params_end = postcard::to_allocvec(&(m.version, m.covariance, &m.params)).expect("plain data encodes").len();
    let mut out = vec![7u8];
    out.extend_from_slice(&bytes[1..params_end - 10]);
    out.extend_from_slice(&bytes[params_end..bytes.len() - 3]);
    out
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_family_gives_the_recorded_model_bytes_on_one_and_two_threads() {
    let config = SimulationConfig::small(120, 300, vec![3, 2], 40.0);
    let corpus = build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], simulate(&config, 11).to_raw_documents())
        .expect("corpus builds");
    // A planted partition: 40 nodes in 4 blocks, every node linked to the next two of
    // its block and every fifth node to one outside it.
    let nodes: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
    let mut edges = Vec::new();
    for i in 0..40usize {
        for step in [4, 8] {
            edges.push((nodes[i].clone(), nodes[(i + step) % 40].clone()));
        }
        if i % 5 == 0 {
            edges.push((nodes[i].clone(), nodes[(i + 1) % 40].clone()));
        }
    }
    let (graph, _) = build_graph(nodes, &edges, false).expect("graph builds");

    assert_eq!(EXPECTED.len(), registry::REGISTRY.len(), "every registered family has a recorded digest");
    let mut report = Vec::new();
    let mut mismatched = Vec::new();
    for (name, params, before, expected) in EXPECTED {
        let family = registry::lookup(name).unwrap_or_else(|| panic!("{name} is registered"));
        let params = family.parse_params(&serde_json::from_str(params).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut blobs = Vec::new();
        // One thread, two, and one again: a second run must give the first's bytes.
        for threads in [1, 2, 1] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let source = match family.input() {
                topicd_core::models::capabilities::Input::Corpus => FitSource::Corpus(&corpus),
                topicd_core::models::capabilities::Input::Graph => FitSource::Graph(&graph),
            };
            let fitted = pool.install(|| FitContext::silent(|ctx| family.fit(source, &params, 7, ctx))).unwrap_or_else(|e| panic!("{name} fits: {e}"));
            blobs.push(fitted.encode());
        }
        let digests: Vec<String> = blobs.iter().map(|b| digest(b)).collect();
        assert_eq!(digests[0], digests[1], "{name}: one thread and two give different model bytes");
        assert_eq!(digests[0], digests[2], "{name}: a second run of the same seed gives other model bytes");
        let as_before = match before {
            Before::ThreadsLeft(old) => as_before_threads_left(&blobs[0], old),
            Before::SecondsLeft(old) => digest(&hdp_as_version3(&blobs[0])) == *old,
            Before::SeedsLeft(old) => digest(&lda_as_version6(&blobs[0])) == *old,
            Before::DcntSeedsLeft(old) => digest(&dcnt_as_version7(&blobs[0])) == *old,
            Before::HpcSeedsLeft(old) => digest(&topicd_core::models::hpc::model::as_version7(&blobs[0])) == *old,
        };
        report.push(format!("{name}: {} (the bytes of before their layout changed: {as_before})", digests[0]));
        if digests[0] != *expected || !as_before {
            mismatched.push(*name);
        }
    }
    assert!(mismatched.is_empty(), "model bytes changed for {mismatched:?}; every digest now:\n{}", report.join("\n"));
}
