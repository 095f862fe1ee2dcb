//! Unknown keys in uploaded JSON: the nearest known key, and one wording for the error.
//!
//! Why it exists: every body topicd reads refuses keys it does not know (a typo such as
//! `"lables"` would otherwise be dropped silently and change the model), and the refusal
//! is only useful if it says what was probably meant. Documents, label trees, fit
//! `params`, graph, predict and evaluation bodies all answer through
//! [`unknown_key_message`], so the wording and the closeness rule are the same
//! everywhere. serde's `deny_unknown_fields` error is read back with
//! [`parse_serde_unknown_field`], so the known keys are always serde's own list and
//! never a second copy to keep in step. Nothing here knows about HTTP.

/// Edit distance with adjacent transpositions (optimal string alignment): the number of
/// insertions, deletions, substitutions and swaps of neighbouring characters that turn
/// `a` into `b`. `lables` → `labels` is 1.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    // Three rows of the dynamic programme (row i is `rows[i % 3]`): i-2, i-1 and i.
    let mut rows = vec![vec![0usize; width]; 3];
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        let (cur, prev, prev2) = (i % 3, (i + 2) % 3, (i + 1) % 3);
        rows[cur][0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[prev][j] + 1).min(rows[cur][j - 1] + 1).min(rows[prev][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[prev2][j - 2] + 1);
            }
            rows[cur][j] = d;
        }
    }
    rows[a.len() % 3][b.len()]
}

/// The known key nearest to `key`, when it is close enough to be a typo: at most two
/// edits, at most a third of the key's length (at least one), and fewer edits than the
/// key has characters, so that `x` is taken for neither `id` nor `n`. Ties go to the
/// earlier key in `known`.
pub fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let len = key.chars().count();
    let limit = (len / 3).clamp(1, 2);
    known.iter().map(|k| (edit_distance(key, k), *k)).filter(|(d, _)| *d <= limit && *d < len).min_by_key(|(d, _)| *d).map(|(_, k)| k)
}

/// `unknown key "lables" in document 3 (line 4); did you mean "labels"?`, or, with no
/// close key, the known keys listed (and, where `meta` is one, a pointer to it). `place` says where the key was (`in document 3`),
/// empty for the top of a body.
pub fn unknown_key_message(key: &str, place: &str, known: &[&str]) -> String {
    let place = if place.is_empty() { String::new() } else { format!(" {place}") };
    match nearest(key, known) {
        Some(k) => format!("unknown key {key:?}{place}; did you mean {k:?}?"),
        None if known.is_empty() => format!("unknown key {key:?}{place}; no keys are accepted here"),
        // Where a free-form `meta` object is accepted (documents), that is where the
        // rest goes.
        None if known.contains(&"meta") => format!("unknown key {key:?}{place}; known keys: {}; keep other data under \"meta\"", known.join(", ")),
        None => format!("unknown key {key:?}{place}; known keys: {}", known.join(", ")),
    }
}

/// Where a JSON path is, in words, for [`unknown_key_message`]: `documents[3]` is
/// `in document 3`, `tree[2]` `in tree entry 2`, the top of a body (`""` or `.`)
/// nothing, anything else `in <path>`.
pub fn place_of(path: &str) -> String {
    let index = |prefix: &str| path.strip_prefix(prefix).and_then(|r| r.strip_suffix(']')).filter(|i| i.bytes().all(|b| b.is_ascii_digit()));
    if path.is_empty() || path == "." {
        String::new()
    } else if let Some(i) = index("documents[") {
        format!("in document {i}")
    } else if let Some(i) = index("tree[") {
        format!("in tree entry {i}")
    } else {
        format!("in {path}")
    }
}

/// The path of the object holding `key`, given the error's path to the key itself
/// (serde_path_to_error ends it with the key): `documents[3].lables` → `documents[3]`,
/// `preproces` → `` (the top of the body).
pub fn parent_path<'a>(path: &'a str, key: &str) -> &'a str {
    match path.strip_suffix(key) {
        Some(parent) if parent.is_empty() || parent.ends_with('.') => parent.trim_end_matches('.'),
        _ if path == "." => "",
        _ => path,
    }
}

/// The unknown key and the expected keys of serde's `deny_unknown_fields` error
/// ("unknown field `x`, expected one of `a`, `b`", possibly followed by serde_json's
/// position); `None` for any other error.
pub fn parse_serde_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (key, expected) = match rest.find("`, expected ") {
        Some(at) => (&rest[..at], &rest[at + "`, expected ".len()..]),
        None => (rest.split_once("`, there are no fields")?.0, ""),
    };
    // The expected names are the back-quoted words; serde_json's " at line 1 column 9"
    // has none.
    let known = expected.split('`').skip(1).step_by(2).map(str::to_string).collect();
    Some((key.to_string(), known))
}

/// A serde data error at `path` (serde_path_to_error's, `.` for the top) as the field
/// it names and the message to show: an unknown key with the nearest known one and where
/// it is (`in tree entry 0 (line 3)`), any other error with its path (`None` at the
/// top). Shared by JSON bodies and NDJSON lines, so both word it the same way.
pub fn describe_data_error(path: &str, message: &str, line: Option<usize>) -> (Option<String>, String) {
    let path = if path == "." { "" } else { path };
    match parse_serde_unknown_field(message) {
        Some((key, known)) => {
            let parent = parent_path(path, &key);
            let mut place = place_of(parent);
            if let Some(l) = line {
                place.push_str(&if place.is_empty() { format!("on line {l}") } else { format!(" (line {l})") });
            }
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            let field = if parent.is_empty() { key.clone() } else { format!("{parent}.{key}") };
            (Some(field), unknown_key_message(&key, &place, &known))
        }
        None => ((!path.is_empty()).then(|| path.to_string()), message.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(edit_distance("labels", "labels"), 0);
        assert_eq!(edit_distance("lables", "labels"), 1, "a swap of neighbours is one edit");
        assert_eq!(edit_distance("topcs", "topics"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("naïve", "naive"), 1, "characters, not bytes");
    }

    #[test]
    fn nearest_suggests_only_close_keys() {
        let doc = ["id", "text", "counts", "bow", "labels", "paths", "features", "split", "meta"];
        assert_eq!(nearest("lables", &doc), Some("labels"));
        assert_eq!(nearest("txet", &doc), Some("text"));
        assert_eq!(nearest("feature", &doc), Some("features"));
        assert_eq!(nearest("Text", &doc), Some("text"));
        assert_eq!(nearest("package", &doc), None);
        assert_eq!(nearest("x", &doc), None, "one letter is not a typo of a two-letter key");
        assert_eq!(nearest("x", &["n", "name"]), None, "nor of another letter");
        assert_eq!(nearest("ib", &doc), Some("id"));
        assert_eq!(nearest("topcs", &["topics", "alpha", "beta"]), Some("topics"));
        assert_eq!(nearest("anything", &[]), None);
    }

    #[test]
    fn messages_suggest_or_list() {
        assert_eq!(
            unknown_key_message("lables", "in document 3 (line 4)", &["text", "labels"]),
            r#"unknown key "lables" in document 3 (line 4); did you mean "labels"?"#
        );
        assert_eq!(unknown_key_message("package", "", &["text", "labels"]), r#"unknown key "package"; known keys: text, labels"#);
        assert_eq!(unknown_key_message("a", "", &[]), r#"unknown key "a"; no keys are accepted here"#);
        assert_eq!(
            unknown_key_message("package", "in document 0", &["text", "meta"]),
            r#"unknown key "package" in document 0; known keys: text, meta; keep other data under "meta""#
        );
    }

    #[test]
    fn parents_of_key_paths() {
        assert_eq!(parent_path("documents[3].lables", "lables"), "documents[3]");
        assert_eq!(parent_path("preproces", "preproces"), "");
        assert_eq!(parent_path("tree[0].parnet", "parnet"), "tree[0]");
        assert_eq!(parent_path("documents[3]", "lables"), "documents[3]", "a path without the key is the parent");
        assert_eq!(parent_path(".", "x"), "");
        assert_eq!(parent_path("a.xlables", "lables"), "a.xlables");
    }

    #[test]
    fn places_in_words() {
        assert_eq!(place_of("documents[3]"), "in document 3");
        assert_eq!(place_of("tree[0]"), "in tree entry 0");
        assert_eq!(place_of("."), "");
        assert_eq!(place_of("preprocess"), "in preprocess");
        assert_eq!(place_of("documents[x]"), "in documents[x]");
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Three {
        alpha: Option<u32>,
        #[serde(alias = "b")]
        beta: Option<u32>,
        gamma: Option<u32>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Empty {}

    #[test]
    fn serde_errors_are_read_back() {
        // Through serde_json, which appends the position: the known keys are serde's.
        let e = serde_json::from_str::<Three>(r#"{"alpah": 1}"#).unwrap_err().to_string();
        let (key, known) = parse_serde_unknown_field(&e).unwrap_or_else(|| panic!("not read: {e}"));
        assert_eq!(key, "alpah");
        assert!(known.iter().any(|k| k == "alpha") && known.iter().any(|k| k == "gamma"), "{known:?}");
        let e = serde_json::from_str::<Empty>(r#"{"x": 1}"#).unwrap_err().to_string();
        assert_eq!(parse_serde_unknown_field(&e), Some(("x".to_string(), vec![])));
        assert_eq!(parse_serde_unknown_field("invalid type: string \"a\", expected u32"), None);
        assert_eq!(parse_serde_unknown_field("unknown field `a`, expected `b` or `c`"), Some(("a".into(), vec!["b".into(), "c".into()])));
    }
}
