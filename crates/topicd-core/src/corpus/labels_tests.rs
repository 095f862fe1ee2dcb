//! Unit tests of `corpus::labels`.

use super::*;

fn entry(label: &str, parent: Option<&str>) -> TreeEntry {
    TreeEntry { label: label.into(), parent: parent.map(Into::into) }
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn add(b: &mut LabelTreeBuilder, labels: &[&str]) -> Result<Vec<u32>, CorpusError> {
    b.add_document_labels(&s(labels), &[], 0)
}

#[test]
fn empty_tree() {
    let t = LabelTreeBuilder::new(&[], Some("/")).unwrap().finish();
    assert!(t.is_empty());
    assert_eq!(t.depth(), 0);
    assert_eq!(t.roots(), Vec::<u32>::new());
    assert_eq!(t, LabelTree::default());
}

#[test]
fn flat_labels() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    assert_eq!(add(&mut b, &["sports", "news", "sports"]).unwrap(), vec![0, 1]);
    assert_eq!(add(&mut b, &["weather", "news"]).unwrap(), vec![1, 2]);
    let t = b.finish();
    assert_eq!(t.names, s(&["sports", "news", "weather"]));
    assert_eq!(t.parent, vec![None, None, None]);
    assert_eq!(t.depth(), 1);
    assert_eq!(t.roots(), vec![0, 1, 2]);
    assert_eq!(t.id("news"), Some(1));
    assert_eq!(t.id("nope"), None);
    assert_eq!(t.depth_of(2), 1);
}

#[test]
fn label_paths() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    assert_eq!(add(&mut b, &["a/b/c"]).unwrap(), vec![2]);
    assert_eq!(b.add_document_labels(&s(&["a/d"]), &[s(&["a", "b"]), s(&["e"])], 1).unwrap(), vec![1, 3, 4]);
    let t = b.finish();
    assert_eq!(t.names, s(&["a", "b", "c", "d", "e"]));
    assert_eq!(t.parent, vec![None, Some(0), Some(1), Some(0), None]);
    assert_eq!(t.depth(), 3);
    assert_eq!(t.depth_of(2), 3);
    assert_eq!(t.ancestors(2), vec![1, 0]);
    assert_eq!(t.path(2), vec![0, 1, 2]);
    assert_eq!(t.children(0), vec![1, 3]);
    assert_eq!(t.child_lists()[1], vec![2]);
    assert_eq!(t.roots(), vec![0, 4]);
    assert!(t.is_leaf(2) && !t.is_leaf(0));
    assert_eq!(t.name(3), "d");
    assert_eq!(t.parent(3), Some(0));
}

#[test]
fn real_data_paths() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    let paths = vec![s(&["Development"]), s(&["Development", "RevisionControl"])];
    assert_eq!(b.add_document_labels(&[], &paths, 0).unwrap(), vec![0, 1]);
    let t = b.finish();
    assert_eq!(t.parent(1), Some(0));
}

#[test]
fn separator_disabled_or_custom() {
    let mut b = LabelTreeBuilder::new(&[], None).unwrap();
    assert_eq!(add(&mut b, &["TCP/IP"]).unwrap(), vec![0]);
    assert_eq!(b.finish().names, s(&["TCP/IP"]));
    let mut b = LabelTreeBuilder::new(&[], Some("::")).unwrap();
    add(&mut b, &["a::b", "c/d"]).unwrap();
    let t = b.finish();
    assert_eq!(t.names, s(&["a", "b", "c/d"]));
    assert_eq!(t.parent(1), Some(0));
}

#[test]
fn plain_label_later_gets_parent_from_path() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["b"]).unwrap();
    add(&mut b, &["a/b"]).unwrap();
    add(&mut b, &["b"]).unwrap(); // plain mention asserts nothing
    let t = b.finish();
    assert_eq!(t.names, s(&["b", "a"]));
    assert_eq!(t.parent(0), Some(1));
}

#[test]
fn two_parents_via_paths_rejected() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["x/b"]).unwrap();
    let e = b.add_document_labels(&s(&["y/b"]), &[], 4).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("b"));
    assert_eq!(e.field.as_deref(), Some("documents[4].labels"));
    assert!(e.message.contains("two different parents: 'x' and 'y'"), "{}", e.message);
    // Top-level vs nested also conflicts.
    let e = b.add_document_labels(&[], &[s(&["b"])], 5).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[5].paths"));
    assert!(e.message.contains("'x' and (top level)"), "{}", e.message);
}

#[test]
fn path_cycles_impossible() {
    // doc1 "a/b", doc2 "b/a": a is top-level, so b cannot be a's parent.
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["a/b"]).unwrap();
    let e = add(&mut b, &["b/a"]).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("b"));
    // Same label twice in one path.
    let e = add(&mut b, &["c/c"]).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("c"));
    // A longer loop.
    add(&mut b, &["p/q/r"]).unwrap();
    assert!(add(&mut b, &["r/p"]).is_err());
    assert!(add(&mut b, &["q/r/p"]).is_err());
    let t = b.finish();
    assert!(find_cycle(&t.parent).is_none());
    assert_eq!(t.names, s(&["a", "b", "p", "q", "r"]));
    assert_eq!(t.depth(), 3);
}

#[test]
fn failed_document_leaves_no_trace() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["a/b", "z"]).unwrap();
    assert!(add(&mut b, &["n1/n2", "m/z", "b"]).is_ok());
    let before = b.clone().finish();
    // New nodes k, l, q are rolled back when "q/z" conflicts with "m/z".
    assert!(add(&mut b, &["k/l", "q/z", "b/a"]).is_err());
    assert_eq!(b.clone().finish(), before);
    let mut b2 = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b2, &["z"]).unwrap();
    assert!(add(&mut b2, &["m/z", "m/m"]).is_err());
    let t = b2.finish();
    assert_eq!(t.names, s(&["z"]));
    assert_eq!(t.parent, vec![None]);
}

#[test]
fn empty_labels_and_segments_rejected() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    let e = add(&mut b, &[""]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[0].labels"));
    assert!(add(&mut b, &["a//b"]).is_err());
    assert!(add(&mut b, &["/a"]).is_err());
    assert!(add(&mut b, &["a/"]).is_err());
    assert!(b.add_document_labels(&[], &[vec![]], 0).is_err());
    let e = b.add_document_labels(&[], &[s(&["a", ""])], 2).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[2].paths"));
    assert!(b.is_empty());
}

#[test]
fn explicit_tree_forest() {
    let tree = [
        entry("science", None),
        entry("physics", Some("science")),
        entry("quantum", Some("physics")),
        entry("arts", None),
        entry("music", Some("arts")),
        entry("physics", Some("science")), // repeated identically: fine
    ];
    let mut b = LabelTreeBuilder::new(&tree, Some("/")).unwrap();
    assert_eq!(b.len(), 5);
    assert_eq!(add(&mut b, &["music", "quantum"]).unwrap(), vec![2, 4]);
    assert_eq!(add(&mut b, &["science/physics"]).unwrap(), vec![1]);
    let t = b.finish();
    assert_eq!(t.names, s(&["science", "physics", "quantum", "arts", "music"]));
    assert_eq!(t.parent, vec![None, Some(0), Some(1), None, Some(3)]);
    assert_eq!(t.roots(), vec![0, 3]);
    assert_eq!(t.depth(), 3);
}

#[test]
fn explicit_parent_listed_after_child() {
    let tree = [entry("b", Some("a")), entry("a", None)];
    let t = LabelTreeBuilder::new(&tree, Some("/")).unwrap().finish();
    assert_eq!(t.names, s(&["b", "a"]));
    assert_eq!(t.parent, vec![Some(1), None]);
}

#[test]
fn explicit_tree_errors() {
    let e = LabelTreeBuilder::new(&[entry("a", Some("zzz"))], Some("/")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[0].parent"));
    assert_eq!(e.label.as_deref(), Some("a"));
    assert!(e.message.contains("unknown parent"));

    let e = LabelTreeBuilder::new(&[entry("a", None), entry("b", None), entry("c", Some("a")), entry("c", Some("b"))], Some("/")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[3].parent"));
    assert_eq!(e.label.as_deref(), Some("c"));
    assert!(e.message.contains("two different parents"));

    let e = LabelTreeBuilder::new(&[entry("a", None), entry("a", Some("a"))], Some("/")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[1].parent"));

    let e = LabelTreeBuilder::new(&[entry("", None)], Some("/")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[0].label"));

    let e = LabelTreeBuilder::new(&[entry("a/b", None)], Some("/")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[0].label"));
    assert!(LabelTreeBuilder::new(&[entry("a/b", None)], None).is_ok());
}

#[test]
fn explicit_tree_cycle_rejected() {
    let tree = [entry("root", None), entry("x", Some("z")), entry("y", Some("x")), entry("z", Some("y"))];
    let e = LabelTreeBuilder::new(&tree, Some("/")).unwrap_err();
    let label = e.label.clone().unwrap();
    assert!(["x", "y", "z"].contains(&label.as_str()), "{e:?}");
    assert!(e.message.contains("cycle"));
    let e = LabelTreeBuilder::new(&[entry("s", Some("s"))], Some("/")).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("s"));
    assert!(e.message.contains("cycle"));
}

#[test]
fn doc_labels_must_be_in_explicit_tree() {
    let tree = [entry("a", None), entry("b", Some("a"))];
    let mut b = LabelTreeBuilder::new(&tree, Some("/")).unwrap();
    let e = b.add_document_labels(&s(&["c"]), &[], 7).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[7].labels"));
    assert_eq!(e.label.as_deref(), Some("c"));
    let e = b.add_document_labels(&s(&["a/c"]), &[], 7).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("c"));
    let e = b.add_document_labels(&[], &[s(&["a", "c"])], 8).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("documents[8].paths"));
    // A path contradicting the explicit tree.
    let e = b.add_document_labels(&s(&["b"]), &[s(&["b"])], 9).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("b"));
    assert!(e.message.contains("two different parents"));
    assert_eq!(b.len(), 2);
}

#[test]
fn serde_roundtrip_rebuilds_index() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["a/b", "c"]).unwrap();
    let t = b.finish();
    let back: LabelTree = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(back, t);
    assert_eq!(back.id("b"), Some(1));
    assert_eq!(back.id("c"), Some(2));
}

#[test]
fn deserialize_validates() {
    let bad = [
        r#"{"names":["a","b"],"parent":[null]}"#,
        r#"{"names":["a","a"],"parent":[null,null]}"#,
        r#"{"names":["a"],"parent":[3]}"#,
        r#"{"names":["a","b"],"parent":[1,0]}"#,
        r#"{"names":[""],"parent":[null]}"#,
    ];
    for j in bad {
        assert!(serde_json::from_str::<LabelTree>(j).is_err(), "{j}");
    }
    assert!(LabelTree::new(s(&["a", "b"]), vec![None, Some(0)]).is_ok());
}

fn by_path(tree: &[TreeEntry]) -> LabelTreeBuilder {
    LabelTreeBuilder::with_identity(tree, Some("/"), LabelIdentity::Path).unwrap()
}

/// A directory-like taxonomy repeats leaf names under different parents: one label
/// with two parents by name (today's 422), two labels by path, named by their paths.
#[test]
fn repeated_leaf_names_by_name_and_by_path() {
    let mut b = LabelTreeBuilder::new(&[], Some("/")).unwrap();
    add(&mut b, &["a/b/arm"]).unwrap();
    let e = add(&mut b, &["c/arm"]).unwrap_err();
    assert_eq!((e.field.as_deref(), e.label.as_deref()), (Some("documents[0].labels"), Some("arm")), "{e:?}");
    assert!(e.message.contains("two different parents"), "{e:?}");

    let mut b = by_path(&[]);
    assert_eq!(add(&mut b, &["a/b/arm"]).unwrap(), vec![2]);
    assert_eq!(add(&mut b, &["c/arm", "a/b"]).unwrap(), vec![1, 4]);
    let t = b.finish();
    assert_eq!(t.names, s(&["a", "a/b", "a/b/arm", "c", "c/arm"]));
    assert_eq!(t.parent, vec![None, Some(0), Some(1), None, Some(3)]);
    assert_eq!(t.id("a/b/arm"), Some(2));
    assert_eq!(t.id("arm"), None);
    assert_eq!(t.depth(), 3);
}

/// By path, a plain label is the top-level label of that name (never a later path's
/// leaf), and a `paths` array is the label named by its joined path.
#[test]
fn by_path_plain_labels_and_path_arrays() {
    let mut b = by_path(&[]);
    assert_eq!(b.add_document_labels(&s(&["arm", "a/arm"]), &[s(&["a", "b"])], 0).unwrap(), vec![0, 2, 3]);
    assert_eq!(add(&mut b, &["a"]).unwrap(), vec![1], "the plain label a is the path a");
    let t = b.finish();
    assert_eq!(t.names, s(&["arm", "a", "a/arm", "a/b"]));
    assert_eq!(t.parent, vec![None, None, Some(1), Some(1)]);

    // A segment holding the separator would make two paths one name: an error naming it.
    let mut b = by_path(&[]);
    let e = b.add_document_labels(&[], &[s(&["a", "b/c"])], 3).unwrap_err();
    assert_eq!((e.field.as_deref(), e.label.as_deref()), (Some("documents[3].paths"), Some("b/c")), "{e:?}");
    assert!(b.is_empty(), "a failing document leaves no trace");
    let e = add(&mut b, &["a//c"]).unwrap_err();
    assert!(e.message.contains("empty segment"), "{e:?}");
}

/// By path, an explicit tree names labels by their paths (whole, or the parent's path
/// and a name); the labels on the way belong to the tree, and documents may use only
/// the tree's labels.
#[test]
fn by_path_explicit_tree() {
    let tree = [entry("a/b/arm", None), entry("arm", Some("c")), entry("c", None), entry("x86", Some("a/b"))];
    let mut b = by_path(&tree);
    let t0 = b.clone().finish();
    assert_eq!(t0.names, s(&["a", "a/b", "a/b/arm", "c", "c/arm", "a/b/x86"]));
    assert_eq!(t0.parent, vec![None, Some(0), Some(1), None, Some(3), Some(1)]);
    assert_eq!(add(&mut b, &["c/arm", "a/b/x86"]).unwrap(), vec![4, 5]);
    assert_eq!(b.add_document_labels(&[], &[s(&["a", "b", "arm"])], 1).unwrap(), vec![2]);
    let e = add(&mut b, &["c/x86"]).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("c/x86"), "{e:?}");
    assert!(e.message.contains("not in the label tree"), "{e:?}");
    let e = add(&mut b, &["arm"]).unwrap_err();
    assert_eq!(e.label.as_deref(), Some("arm"), "the plain arm is the top-level one, not in the tree: {e:?}");
    assert_eq!(b.finish(), t0);

    let e = LabelTreeBuilder::with_identity(&[entry("a", None), entry("b", Some("a//x"))], Some("/"), LabelIdentity::Path).unwrap_err();
    assert_eq!((e.field.as_deref(), e.label.as_deref()), (Some("tree[1].parent"), Some("b")), "{e:?}");
    let e = LabelTreeBuilder::with_identity(&[entry("a/", None)], Some("/"), LabelIdentity::Path).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tree[0].label"), "{e:?}");
    // Path identity needs a separator to name labels by.
    let e = LabelTreeBuilder::with_identity(&[], None, LabelIdentity::Path).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("preprocess.label_identity"), "{e:?}");
}

/// Name identity is unchanged: a plain label seen first may still get a parent from a
/// later path, and both spellings are one label.
#[test]
fn by_name_is_unchanged() {
    let mut b = LabelTreeBuilder::with_identity(&[], Some("/"), LabelIdentity::Name).unwrap();
    assert_eq!(add(&mut b, &["arm"]).unwrap(), vec![0]);
    assert_eq!(add(&mut b, &["a/b/arm"]).unwrap(), vec![0]);
    let t = b.finish();
    assert_eq!(t.names, s(&["arm", "a", "b"]));
    assert_eq!(t.parent, vec![Some(2), None, Some(1)]);
}
