//! Each family's `memory_bytes` against the allocator itself.
//!
//! Why it exists: the server's model cache keeps decoded models within a byte budget
//! (`--model-cache-mb`) by the sizes the models report. A size that undercounts lets
//! the cache hold more than the operator allowed; one that overcounts evicts for
//! nothing. This binary counts every byte allocated and freed (a global allocator
//! wrapping the system's) while a fitted model of each family is decoded, and while its
//! topic table is ranked, and compares the bytes still held with what the model says.
//! It is the only test in its binary, so nothing else allocates while it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use serde_json::json;
use topicd_core::corpus::{build_corpus, PreprocessOptions, StopWords};
use topicd_core::models::hpc::simulate::{simulate, SimulationConfig};
use topicd_core::models::registry::{self, Fitted};
use topicd_core::models::{FitContext, TableOptions};
use topicd_core::summaries::RankedTable;

/// Bytes allocated and not yet freed, in the whole process, and the blocks holding them.
static LIVE: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

/// What `heap_size` charges every block for the allocator's own header and rounding
/// (see `topicd_core::heap_size`); charged here per live block too, so that the comparison
/// checks which blocks a model holds and how large they are.
const BLOCK_OVERHEAD: isize = 16;

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        BLOCKS.fetch_add(1, Ordering::SeqCst);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        BLOCKS.fetch_sub(1, Ordering::SeqCst);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::SeqCst);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes held on the heap by what `make` returns: the live bytes and block overheads
/// after it, less before.
fn held_by<T>(make: impl FnOnce() -> T) -> (T, isize) {
    let held = || LIVE.load(Ordering::SeqCst) + BLOCK_OVERHEAD * BLOCKS.load(Ordering::SeqCst);
    let before = held();
    let value = make();
    (value, held() - before)
}

/// Each family fitted briefly, enough for its model's vectors to dominate its size.
fn params(family: &str) -> serde_json::Value {
    match family {
        "lda" => json!({"topics": 20, "iterations": 3}),
        "hpc" => json!({"iterations": 3, "burn_in": 1, "test_fraction": 0.2}),
        "pcm" => json!({"topics": 12, "iterations": 3, "burn_in": 1}),
        "dcnt" | "scnt" => json!({"topics": 12, "iterations": 4, "burn_in": 2}),
        "hdp" => json!({"topics": 12, "passes": 2}),
        other => panic!("no parameters for the family {other}: add them here"),
    }
}

#[test]
fn every_family_reports_the_bytes_its_decoded_model_holds() {
    let config = SimulationConfig::small(300, 800, vec![3, 3], 60.0);
    let corpus = build_corpus(PreprocessOptions { stopwords: StopWords::None, ..PreprocessOptions::default() }, &[], simulate(&config, 3).to_raw_documents())
        .expect("corpus builds");
    // One thread: rayon's workers would otherwise allocate beside the measured code.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let mut report = Vec::new();
    for family in topicd_core::models::registry::topic_families() {
        let name = family.name();
        let fitted = pool
            .install(|| FitContext::silent(|ctx| family.fit(&corpus, &family.parse_params(&params(name)).unwrap(), 1, ctx)))
            .unwrap_or_else(|e| panic!("{name} fits: {e}"));
        let bytes = fitted.encode();
        drop(fitted);
        let (model, held) = held_by(|| match registry::lookup(name).unwrap().decode(&bytes).unwrap() {
            Fitted::Topics(m) => m,
            Fitted::Communities(_) => unreachable!("a topic family"),
        });
        let reported = model.memory_bytes() as isize;
        // The tolerance: heap_size leaves out a few small heap fields (names in the
        // parameters, a fit summary's strings) and a vector's unused capacity may differ
        // from what was allocated; 15 % covers those on models of tens of kilobytes and
        // up, while a forgotten K × V or D × K table is off by 50 % or more.
        let ratio = reported as f64 / held as f64;
        report.push(format!("{name}: decoded {held} B, reported {reported} B ({ratio:.3})"));
        assert!((0.85..=1.15).contains(&ratio), "{name}: memory_bytes {reported} against {held} bytes held after decoding\n{report:#?}");

        // The ranked table a topic read keeps beside the model.
        let (table, held) = held_by(|| pool.install(|| RankedTable::new(model.topic_table(&TableOptions::default()))));
        let ratio = table.memory_bytes() as f64 / held as f64;
        report.push(format!("{name} table: held {held} B, reported {} B ({ratio:.3})", table.memory_bytes()));
        assert!((0.85..=1.15).contains(&ratio), "{name}: the ranked table's memory_bytes against the allocator\n{report:#?}");
    }
    // The vocabulary every topic model carries.
    let encoded = postcard::to_allocvec(&corpus.lexicon).unwrap();
    let (lexicon, held) = held_by(|| postcard::from_bytes::<topicd_core::corpus::Lexicon>(&encoded).unwrap());
    let ratio = lexicon.memory_bytes() as f64 / held as f64;
    report.push(format!("lexicon: held {held} B, reported {} B ({ratio:.3})", lexicon.memory_bytes()));
    eprintln!("{report:#?}");
    assert!((0.85..=1.15).contains(&ratio), "lexicon: {} reported against {held} held", lexicon.memory_bytes());
}
