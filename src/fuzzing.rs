//! Entry points of the fuzz targets: one function per target, each taking arbitrary
//! bytes and returning `Ok` or the error the parser gave. Errors are fine; a panic, a
//! hang or a huge allocation is a bug in the parser.
//!
//! Why it exists: the `cargo fuzz` targets (`fuzz/`) and the regression and property
//! tests (`tests/fuzz_regressions.rs`) must call the same code, so each target is one
//! function here and [`TARGETS`] lists them by name. [`valid_inputs`] gives well-formed
//! inputs of each target (encoded blobs, JSON bodies) for mutation.

use crate::corpus::labels::LabelTreeBuilder;
use crate::corpus::preprocess::LabelIdentity;
use crate::corpus::{build_corpus, Corpus, Lexicon, PreprocessOptions, RawDocument, StopWords, TextPipeline, TreeEntry};
use crate::graph::Graph;
use crate::models::chain::{Checkpoint, Schedule};
use crate::models::heldout::{HeldoutDoc, ScoredSoFar};
use crate::models::passes::PassCheckpoint;
use crate::models::registry::{FitSource, REGISTRY};
use crate::models::state_bytes::{StateReader, StateWriter};
use crate::models::{CancelToken, Checkpointing, FitContext};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// What an entry returns: whether the input parsed (errors are expected, panics are not).
pub type Outcome = Result<(), String>;

/// A target's entry: bytes in, whether they parsed out.
pub type Entry = fn(&[u8]) -> Outcome;

/// Every target by name (the `fuzz/fuzz_targets/<name>.rs` files and the regression
/// corpus folders `tests/data/fuzz_regressions/<name>/` use these names).
pub const TARGETS: &[(&str, Entry)] = &[
    ("corpus_json", corpus_json),
    ("corpus_ndjson", corpus_ndjson),
    ("label_tree", label_tree),
    ("tokenize", tokenize),
    ("graph_json", graph_json),
    ("corpus_blob", corpus_blob),
    ("graph_blob", graph_blob),
    ("lexicon_blob", lexicon_blob),
    ("model_blob", model_blob),
    ("heldout_docs_blob", heldout_docs_blob),
    ("chain_checkpoint", chain_checkpoint),
    ("pass_checkpoint", pass_checkpoint),
    ("state_sections", state_sections),
    ("checkpoint_resume", checkpoint_resume),
];

/// The entry of the target called `name`.
pub fn target(name: &str) -> Option<fn(&[u8]) -> Outcome> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A `POST /v1/corpora` JSON body, through the handler's own parser and builder.
pub fn corpus_json(data: &[u8]) -> Outcome {
    let caps = crate::config::ServeConfig::for_tests(std::path::PathBuf::new()).limits().upload_tokens();
    let (_, corpus, _) = crate::api::corpora::build_from_json(data, caps).map_err(|e| e.detail.clone())?;
    roundtrip_corpus(&corpus)
}

/// A `POST /v1/corpora` NDJSON body (or a `topicd fit --input` file: the same reader),
/// in chunks of uneven size (so lines straddle chunks as they do on the wire). The first
/// byte picks the preprocessing variant.
pub fn corpus_ndjson(data: &[u8]) -> Outcome {
    let Some((&first, body)) = data.split_first() else { return Err("empty".into()) };
    let mut reader = crate::corpus::ndjson::NdjsonReader::new(options_from(first));
    let mut rest = body;
    let mut size = 1 + first as usize % 7;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        reader.push(chunk).map_err(|e| e.to_string())?;
        rest = tail;
        size = size * 3 % 17 + 1;
    }
    let corpus = reader.finish().map_err(|e| e.to_string())?;
    roundtrip_corpus(&corpus)
}

fn roundtrip_corpus(corpus: &Corpus) -> Outcome {
    let back = Corpus::decode(&corpus.encode()).map_err(|e| e.to_string())?;
    assert_eq!(back.counts, corpus.counts, "a built corpus decodes to itself");
    assert_eq!(back.doc_meta, corpus.doc_meta, "documents' meta decodes to itself");
    assert_eq!(back.doc_excerpts, corpus.doc_excerpts, "documents' excerpts decode to themselves");
    // Missing covariate numbers are NaN, which `==` never equals: compared as text.
    assert_eq!(format!("{:?}", back.covariates), format!("{:?}", corpus.covariates), "covariates decode to themselves");
    Ok(())
}

/// Preprocessing options from one byte: lowercase, stemming, stop words, numbers,
/// minimum token length, label separator and identity.
fn options_from(b: u8) -> PreprocessOptions {
    PreprocessOptions {
        lowercase: b & 1 == 0,
        stem: b & 2 != 0,
        stopwords: if b & 4 != 0 { StopWords::None } else { StopWords::English },
        keep_numbers: b & 8 != 0,
        min_token_length: 1 + ((b >> 4) as usize & 3),
        label_separator: if b & 64 != 0 { None } else { Some("/".into()) },
        label_identity: if b & 128 != 0 { LabelIdentity::Path } else { LabelIdentity::Name },
        ..PreprocessOptions::default()
    }
}

/// The label-tree builder: an explicit tree, then documents' labels and paths.
///
/// Input lines (UTF-8, lossy): the first is the separator (empty: none); then
/// `T<label>\t<parent>` (a tree entry; no tab: top level), `L<a>\t<b>...` (a
/// document's labels), `P<a>|<b>\t<c>|<d>...` (a document's paths). A first line
/// starting with `@` asks for path identity.
pub fn label_tree(data: &[u8]) -> Outcome {
    let text = text(data);
    let mut lines = text.split('\n');
    let head = lines.next().unwrap_or("");
    let (identity, separator) = match head.strip_prefix('@') {
        Some(s) => (LabelIdentity::Path, s),
        None => (LabelIdentity::Name, head),
    };
    let mut tree = Vec::new();
    let mut docs: Vec<(Vec<String>, Vec<Vec<String>>)> = Vec::new();
    for line in lines {
        let mut chars = line.chars();
        let kind = chars.next();
        let rest = chars.as_str();
        match kind {
            Some('T') => {
                let (label, parent) = match rest.split_once('\t') {
                    Some((l, p)) => (l, Some(p.to_string())),
                    None => (rest, None),
                };
                tree.push(TreeEntry { label: label.to_string(), parent });
            }
            Some('L') => docs.push((rest.split('\t').map(str::to_string).collect(), Vec::new())),
            Some('P') => docs.push((Vec::new(), rest.split('\t').map(|p| p.split('|').map(str::to_string).collect()).collect())),
            _ => {}
        }
    }
    let mut builder = LabelTreeBuilder::with_identity(&tree, Some(separator), identity).map_err(|e| e.to_string())?;
    for (i, (labels, paths)) in docs.iter().enumerate() {
        let ids = builder.add_document_labels(labels, paths, i).map_err(|e| e.to_string())?;
        assert!(ids.iter().all(|&id| (id as usize) < builder.len()), "label ids are in range");
    }
    let tree = builder.finish();
    for id in 0..tree.len() as u32 {
        assert!(tree.depth_of(id) <= tree.len(), "no cycles");
        let _ = tree.path(id);
    }
    Ok(())
}

/// The tokeniser: the first byte picks the options, the rest is the text.
pub fn tokenize(data: &[u8]) -> Outcome {
    let Some((&first, body)) = data.split_first() else { return Err("empty".into()) };
    let options = options_from(first);
    let text = text(body);
    let pipeline = TextPipeline::new(&options);
    let tokens = pipeline.tokens(&text);
    for t in &tokens {
        assert!(!t.is_empty(), "no empty token");
    }
    for piece in TextPipeline::pieces(&text) {
        let _ = pipeline.normalize_piece(piece);
        let _ = pipeline.normalize_term(piece);
    }
    Ok(())
}

/// A `POST /v1/graphs` JSON body, through the handler's parser and the graph builder,
/// and the stored encoding back.
pub fn graph_json(data: &[u8]) -> Outcome {
    let upload: crate::api::graphs::GraphUpload = crate::api::extract::parse_json(data).map_err(|e| e.detail.clone())?;
    let (graph, _) = crate::graph::build_graph(upload.nodes, &upload.edges, upload.directed).map_err(|e| e.to_string())?;
    assert_eq!(Graph::decode(&graph.encode()).as_ref(), Ok(&graph), "a built graph decodes to itself");
    Ok(())
}

/// A stored corpus blob, with and without its token order.
pub fn corpus_blob(data: &[u8]) -> Outcome {
    let with = Corpus::decode(data).map_err(|e| e.to_string());
    let without = Corpus::decode_without_order(data).map_err(|e| e.to_string());
    with.and(without).map(|_| ())
}

/// A stored graph blob.
pub fn graph_blob(data: &[u8]) -> Outcome {
    Graph::decode(data).map(|_| ())
}

/// A stored model's lexicon blob (and a document encoded with it).
pub fn lexicon_blob(data: &[u8]) -> Outcome {
    let lexicon: Lexicon = postcard::from_bytes(data).map_err(|e| e.to_string())?;
    let pipeline = lexicon.pipeline();
    let _ = lexicon.encode_text(&pipeline, "the quick brown fox jumps over the lazy dog 2024");
    Ok(())
}

/// A stored model blob: the first byte picks the family (in registry order).
pub fn model_blob(data: &[u8]) -> Outcome {
    let Some((&first, blob)) = data.split_first() else { return Err("empty".into()) };
    let family = REGISTRY[first as usize % REGISTRY.len()];
    let fitted = family.decode(blob).map_err(|e| e.to_string())?;
    let _ = fitted.num_components();
    Ok(())
}

/// A held-out job's stored documents.
pub fn heldout_docs_blob(data: &[u8]) -> Outcome {
    postcard::from_bytes::<Vec<HeldoutDoc>>(data).map(|_| ()).map_err(|e| e.to_string())
}

/// The family an envelope of the `chain_checkpoint` target names (the envelope's checks
/// compare it with the reader's; any name does).
const ENVELOPE_FAMILY: &str = "envelope";

/// The chain driver's checkpoint envelope (trailer and position checks).
pub fn chain_checkpoint(data: &[u8]) -> Outcome {
    let schedule = Schedule { iterations: 10, burn_in: 2, thin: 2, loglik_every: 1 };
    Checkpoint::decode_for(data, ENVELOPE_FAMILY, 1, &schedule).map(|_| ()).map_err(|e| e.to_string())
}

/// The pass driver's checkpoint envelope and the held-out scorer's: `Ok` when either
/// decodes (both are tried on every input).
pub fn pass_checkpoint(data: &[u8]) -> Outcome {
    let pass = postcard::from_bytes::<PassCheckpoint>(data).map(|_| ()).map_err(|e| e.to_string());
    let scored = postcard::from_bytes::<ScoredSoFar>(data).map(|_| ()).map_err(|e| e.to_string());
    pass.or(scored)
}

/// Raw little-endian sections ([`StateReader`]): each byte of a small program picks
/// the next read (header, numbers or a ragged array) until one fails.
pub fn state_sections(data: &[u8]) -> Outcome {
    let Some((&program, bytes)) = data.split_first() else { return Err("empty".into()) };
    let read = || {
        let mut r = StateReader::new(bytes);
        for step in 0..4 {
            match (program >> (2 * step)) & 3 {
                0 => drop(r.header::<(u32, Vec<u64>)>()?),
                1 => drop(r.f64s()?),
                2 => drop(r.ragged()?),
                _ => break,
            }
        }
        r.finish()
    };
    read().map_err(|e| e.to_string())
}

/// A family's checkpoint resumed by a small fit: the first byte picks the family (in
/// registry order), the rest is the checkpoint. A rejected checkpoint restarts the fit,
/// so this is `Ok` unless the fit itself fails.
pub fn checkpoint_resume(data: &[u8]) -> Outcome {
    let Some((&first, checkpoint)) = data.split_first() else { return Err("empty".into()) };
    let index = first as usize % REGISTRY.len();
    let cancel = crate::models::CancelToken::new();
    let ctx = FitContext {
        progress: &|_| {},
        cancel: &cancel,
        sample: &|_, _| {},
        checkpoint: Checkpointing { every: None, save: &|_, _| {}, resume_from: Some(checkpoint), resumed: &|_| {}, ready: crate::models::ALWAYS_READY },
    };
    fit_small(index, &ctx).map(|_| ())
}

/// A small corpus with labels and features (every topic family fits it) and a small
/// graph.
fn fixture() -> &'static (Corpus, Graph) {
    static FIXTURE: OnceLock<(Corpus, Graph)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let words = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "olive", "peach", "plum"];
        let docs = (0..12).map(|d| {
            let text: Vec<&str> = (0..8).map(|t| words[(d * 3 + t * (d % 3 + 1)) % words.len()]).collect();
            RawDocument {
                id: Some(format!("d{d}")),
                text: Some(text.join(" ")),
                labels: Some(vec![if d % 2 == 0 { "fruit/red".into() } else { "fruit/green".into() }]),
                features: Some(BTreeMap::from([("x".to_string(), d as f64 / 12.0)])),
                ..RawDocument::default()
            }
        });
        let options = PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() };
        let corpus = build_corpus(options, &[], docs).expect("the fixture corpus builds");
        let nodes: Vec<String> = (0..8).map(|i| format!("n{i}")).collect();
        let edges: Vec<(String, String)> =
            (0..8).flat_map(|i| [(format!("n{i}"), format!("n{}", (i + 1) % 8)), (format!("n{i}"), format!("n{}", (i + 3) % 8))]).collect();
        let (graph, _) = crate::graph::build_graph(nodes, &edges, false).expect("the fixture graph builds");
        (corpus, graph)
    })
}

fn fit_small(index: usize, ctx: &FitContext) -> Result<crate::models::registry::Fitted, String> {
    let family = REGISTRY[index];
    let (corpus, graph) = fixture();
    let source = match family.input() {
        crate::models::capabilities::Input::Graph => FitSource::Graph(graph),
        _ => FitSource::Corpus(corpus),
    };
    let params = family.quick_params();
    family.fit(source, &params, 3, ctx).map_err(|e| e.to_string())
}

/// Well-formed inputs of the target `name` (for mutation): bodies, encoded blobs and
/// checkpoints of small fits. Each has the shape its entry expects (family byte first
/// where it picks one).
pub fn valid_inputs(name: &str) -> Vec<Vec<u8>> {
    let (corpus, graph) = fixture();
    let family_byte = |i: usize, bytes: &[u8]| [&[i as u8], bytes].concat();
    match name {
        "corpus_json" => vec![
            br#"{"name":"t","documents":[{"id":1,"text":"Apples and pears, 2024!","labels":["a/c","c"],"features":{"x":1.5},"split":"train","meta":{"title":"Apples","tags":["a",1]}},{"id":"two","counts":{"apple":2,"pear":1},"paths":[["a","c"]]}],"tree":[{"label":"a"},{"label":"c","parent":"a"}],"preprocess":{"stem":true,"min_df":1}}"#.to_vec(),
            br#"{"synthetic":{"kind":"bars","documents":5,"tokens":10,"seed":1}}"#.to_vec(),
        ],
        "corpus_ndjson" => vec![
            [&[0u8][..], b"{\"tree\":[{\"label\":\"a\"},{\"label\":\"b\",\"parent\":\"a\"}]}\n{\"id\":1,\"text\":\"red apples\",\"labels\":[\"b\"]}\n{\"id\":\"x\",\"bow\":{\"pear\":3},\"split\":\"test\",\"meta\":{\"url\":\"u\"}}\n"].concat(),
            [&[0x4du8][..], b"{\"text\":\"Caf\xc3\xa9 na\xc3\xafve 42 running runs\",\"paths\":[[\"x\",\"y\"]]}\n\n{\"text\":\"more text here\"}"].concat(),
        ],
        "label_tree" => vec![b"/\nTa\nTb\ta\nLb\ta\nPa|b\n".to_vec(), b"/\nLb\tc/d\nPa|e\tx|y|z\n".to_vec(), b"@/\nLa/b/c\tq/arm\nPr|arm\n".to_vec()],
        "tokenize" => vec![[&[0u8][..], "The Café's naïve runners ran 2024 times — ǅemal İstanbul ﬃ".as_bytes()].concat(), [&[0x3fu8][..], b"Running RUNS ran a b cc"].concat()],
        "graph_json" => vec![br#"{"name":"g","nodes":["a","b","c"],"edges":[["a","b"],["b","c"],["c","c"],["b","a"]],"directed":true}"#.to_vec()],
        "corpus_blob" => {
            let (_, with_order, _) = crate::api::corpora::build_from_json(br#"{"documents":[{"text":"apple pear apple"},{"text":"pear plum"}]}"#, crate::corpus::TokenLimits::NONE).expect("builds");
            let (_, with_meta, _) =
                crate::api::corpora::build_from_json(br#"{"documents":[{"text":"apple pear apple","meta":{"t":"A"}},{"text":"pear plum"}]}"#, crate::corpus::TokenLimits::NONE).expect("builds");
            let (_, bow_meta, _) = crate::api::corpora::build_from_json(br#"{"documents":[{"counts":{"apple":2},"meta":{"t":"B"}}]}"#, crate::corpus::TokenLimits::NONE).expect("builds");
            let (_, with_covariates, _) = crate::api::corpora::build_from_json(
                br#"{"documents":[{"text":"apple pear","covariates":{"year":2001,"party":"a","day":"2001-02-03"},"meta":{"t":"C"}},{"text":"plum","covariates":{"party":null}}]}"#,
                crate::corpus::TokenLimits::NONE,
            )
            .expect("builds");
            vec![corpus.encode(), with_order.encode(), with_meta.encode(), bow_meta.encode(), with_covariates.encode()]
        }
        "graph_blob" => vec![graph.encode()],
        "lexicon_blob" => vec![postcard::to_allocvec(&corpus.lexicon).expect("encodes")],
        "model_blob" => (0..REGISTRY.len())
            .map(|i| {
                let m = FitContext::silent(|ctx| fit_small(i, ctx)).unwrap_or_else(|e| panic!("a small {} fit fails: {e}", REGISTRY[i].name()));
                family_byte(i, &encode_fitted(&m))
            })
            .collect(),
        "heldout_docs_blob" => {
            let pipeline = corpus.lexicon.pipeline();
            let doc = corpus.lexicon.encode_text(&pipeline, "apple banana kiwi");
            vec![postcard::to_allocvec(&vec![HeldoutDoc { id: "a".into(), doc, features: vec![0.5] }]).expect("encodes")]
        }
        "chain_checkpoint" => {
            let schedule = Schedule { iterations: 10, burn_in: 2, thin: 2, loglik_every: 1 };
            let position = crate::models::chain::Position { iteration: 4, kept: 1, last_loglik: -1.5 };
            vec![Checkpoint::wrap(vec![1, 2, 3], ENVELOPE_FAMILY, 1, &schedule, position)]
        }
        "pass_checkpoint" | "checkpoint_resume" => {
            let all: Vec<(usize, Vec<u8>)> = (0..REGISTRY.len()).flat_map(|i| small_checkpoints(i).into_iter().map(move |c| (i, c))).collect();
            if name == "checkpoint_resume" {
                all.into_iter().map(|(i, c)| family_byte(i, &c)).collect()
            } else {
                // The pass driver's checkpoints: those its envelope decodes.
                all.into_iter().map(|(_, c)| c).filter(|c| postcard::from_bytes::<PassCheckpoint>(c).is_ok()).collect()
            }
        }
        "state_sections" => {
            let mut w = StateWriter::with_capacity(64);
            w.header(&(7u32, vec![1u64, 2]));
            w.f64s(&[1.0, 2.0]);
            w.ragged(&[vec![1.0], vec![], vec![2.0, 3.0]]);
            vec![[&[0b11_10_01_00u8][..], &w.finish()].concat()]
        }
        _ => Vec::new(),
    }
}

fn encode_fitted(m: &crate::models::registry::Fitted) -> Vec<u8> {
    match m {
        crate::models::registry::Fitted::Topics(t) => t.encode(),
        crate::models::registry::Fitted::Communities(c) => c.encode(),
    }
}

/// The checkpoints a small fit of the family at `index` hands over, asked for one after
/// every iteration.
fn small_checkpoints(index: usize) -> Vec<Vec<u8>> {
    let saved = std::sync::Mutex::new(Vec::new());
    let cancel = CancelToken::new();
    let ctx = FitContext {
        progress: &|_| {},
        cancel: &cancel,
        sample: &|_, _| {},
        checkpoint: Checkpointing { every: Some(std::time::Duration::ZERO), save: &|_, bytes| saved.lock().unwrap().push(bytes), ..Checkpointing::OFF },
    };
    let _ = fit_small(index, &ctx);
    let mut all: Vec<Vec<u8>> = saved.into_inner().unwrap();
    // A few per family: the first, one in the middle and the last.
    if all.len() > 3 {
        let (first, mid, last) = (all[0].clone(), all[all.len() / 2].clone(), all[all.len() - 1].clone());
        all = vec![first, mid, last];
    }
    all
}
