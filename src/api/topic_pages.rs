//! Topic reads already answered, kept with the loaded model.
//!
//! Why it exists: a model is immutable once stored, and a topic table depends only on
//! the model, the query and the topic names; but ranking every topic's words and
//! writing the JSON costs milliseconds, and the topic names are a database read. Under
//! many clients reading the same topics (a dashboard, a console page left open) that
//! work bounded throughput, so each loaded model keeps its names and the bodies it has
//! answered, and a rename throws both away.
//!
//! Invariant: a page is kept only if no rename happened between reading the names it
//! was built with and keeping it (the `generation` check), so a page never shows a
//! name older than the last rename this server made.

use crate::store::{Store, StoreResult};
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Topic names by topic index.
pub type Names = HashMap<usize, String>;

/// At most this many pages are kept per model; the next one clears them (queries
/// beyond a dashboard's few are rare, and a clear is cheap to refill).
const MAX_PAGES: usize = 256;

/// The names as read at some generation.
#[derive(Clone)]
pub struct NamesAt {
    pub names: Arc<Names>,
    generation: u64,
}

/// An answered body and its media type.
#[derive(Clone)]
pub struct PageBody {
    content_type: &'static str,
    body: Bytes,
}

impl PageBody {
    pub fn new(content_type: &'static str, body: impl Into<Bytes>) -> Self {
        PageBody { content_type, body: body.into() }
    }
}

impl IntoResponse for PageBody {
    fn into_response(self) -> Response {
        ([(CONTENT_TYPE, self.content_type)], self.body).into_response()
    }
}

#[derive(Default)]
struct Kept {
    /// Bumped by every rename.
    generation: u64,
    names: Option<Arc<Names>>,
    pages: HashMap<String, PageBody>,
    /// Heap bytes of the names and pages kept (the model cache's budget counts them).
    bytes: usize,
}

/// Heap bytes of one kept page: its key, its body and its slot in the map.
fn page_bytes(key: &str, page: &PageBody) -> usize {
    use crate::heap_size::{block, string};
    string(key) + block(page.body.len()) + std::mem::size_of::<(String, PageBody)>()
}

/// Heap bytes of a names map.
fn names_bytes(names: &Names) -> usize {
    crate::heap_size::hash_map(names, |_, name| crate::heap_size::string(name))
}

/// One model's names and answered topic pages.
#[derive(Default)]
pub struct TopicPages {
    kept: Mutex<Kept>,
}

impl TopicPages {
    /// The model's topic names, from memory or (once per rename) the store.
    pub async fn names(&self, store: &Store, model_id: &str) -> StoreResult<NamesAt> {
        let generation = {
            let kept = self.kept.lock().expect("topic pages lock");
            if let Some(names) = &kept.names {
                return Ok(NamesAt { names: names.clone(), generation: kept.generation });
            }
            kept.generation
        };
        let names = Arc::new(store.topic_names(model_id).await?);
        let mut kept = self.kept.lock().expect("topic pages lock");
        if kept.generation == generation && kept.names.is_none() {
            kept.bytes += names_bytes(&names);
            kept.names = Some(names.clone());
        }
        Ok(NamesAt { names, generation })
    }

    /// The page answered for `key` with these names, if kept.
    pub fn page(&self, names: &NamesAt, key: &str) -> Option<PageBody> {
        let kept = self.kept.lock().expect("topic pages lock");
        if kept.generation != names.generation {
            return None;
        }
        kept.pages.get(key).cloned()
    }

    /// Keep a page built with `names` (unless a rename came in between).
    pub fn keep(&self, names: &NamesAt, key: String, page: PageBody) {
        let mut kept = self.kept.lock().expect("topic pages lock");
        if kept.generation != names.generation {
            return;
        }
        if kept.pages.len() >= MAX_PAGES {
            let cleared: usize = kept.pages.iter().map(|(k, p)| page_bytes(k, p)).sum();
            kept.bytes -= cleared;
            kept.pages.clear();
        }
        let added = page_bytes(&key, &page);
        if let Some(old) = kept.pages.insert(key.clone(), page) {
            kept.bytes -= page_bytes(&key, &old);
        }
        kept.bytes += added;
    }

    /// A topic was renamed: forget the names and every page.
    pub fn names_changed(&self) {
        let mut kept = self.kept.lock().expect("topic pages lock");
        kept.generation += 1;
        kept.names = None;
        kept.pages.clear();
        kept.bytes = 0;
    }

    /// Heap bytes of the names and pages kept.
    pub fn memory_bytes(&self) -> usize {
        self.kept.lock().expect("topic pages lock").bytes
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.lock().expect("topic pages lock").pages.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_at(pages: &TopicPages) -> NamesAt {
        let kept = pages.kept.lock().unwrap();
        NamesAt { names: Arc::new(Names::new()), generation: kept.generation }
    }

    #[test]
    fn a_rename_drops_every_page_and_refuses_pages_built_before_it() {
        let pages = TopicPages::default();
        let before = names_at(&pages);
        pages.keep(&before, "a".into(), PageBody::new("application/json", "{}"));
        assert!(pages.page(&before, "a").is_some());
        assert!(pages.page(&before, "b").is_none());
        pages.names_changed();
        assert!(pages.is_empty());
        // A page built with the names read before the rename is neither served nor kept.
        assert!(pages.page(&before, "a").is_none());
        pages.keep(&before, "a".into(), PageBody::new("application/json", "{}"));
        assert!(pages.is_empty());
        let after = names_at(&pages);
        pages.keep(&after, "a".into(), PageBody::new("application/json", "{}"));
        assert!(pages.page(&after, "a").is_some());
    }

    #[test]
    fn pages_are_bounded() {
        let pages = TopicPages::default();
        let at = names_at(&pages);
        for i in 0..MAX_PAGES + 10 {
            pages.keep(&at, i.to_string(), PageBody::new("text/csv", ""));
            assert!(pages.len() <= MAX_PAGES);
        }
    }

    #[test]
    fn kept_bytes_follow_the_pages() {
        let pages = TopicPages::default();
        let at = names_at(&pages);
        assert_eq!(pages.memory_bytes(), 0);
        pages.keep(&at, "a".into(), PageBody::new("application/json", vec![b'x'; 1000]));
        let one = pages.memory_bytes();
        assert!((1000..1200).contains(&one), "{one}");
        // The same key again replaces the page instead of adding to it.
        pages.keep(&at, "a".into(), PageBody::new("application/json", vec![b'x'; 1000]));
        assert_eq!(pages.memory_bytes(), one);
        pages.keep(&at, "b".into(), PageBody::new("application/json", vec![b'x'; 500]));
        assert!(pages.memory_bytes() > one + 500);
        // Filling past the bound clears the pages and their bytes.
        for i in 0..MAX_PAGES {
            pages.keep(&at, i.to_string(), PageBody::new("text/csv", ""));
        }
        let counted: usize = pages.kept.lock().unwrap().pages.iter().map(|(k, p)| page_bytes(k, p)).sum();
        assert_eq!(pages.memory_bytes(), counted);
        pages.names_changed();
        assert_eq!(pages.memory_bytes(), 0);
    }
}
