//! The label tree: label names numbered densely, with parent edges, below an implicit
//! root.
//!
//! Why it exists: supervised and hierarchical models (labelled LDA, hierarchical
//! label models) need labels as integers and the hierarchy as a parent array, while
//! users give labels as strings, as `a/b/c` paths, as path arrays, or as an explicit
//! tree. [`LabelTreeBuilder`] reconciles all of these, rejecting anything ambiguous
//! (a label with two parents, a cycle, a label missing from the given tree), so that a
//! [`LabelTree`] is always a forest hanging under the implicit root.
//!
//! Parent semantics for document labels: a path (`a/b/c` or `["a","b","c"]`) asserts
//! that `a` is top-level, `b`'s parent is `a` and `c`'s is `b`. A plain label asserts
//! nothing: if new it is created top-level, and a later path may still give it a
//! parent. Two different asserted parents for one label are an error. Because every
//! asserted chain is anchored at the root, no cycle can be formed.
//!
//! With [`LabelIdentity::Path`] a label is its path from the root instead of its name,
//! and is named by that path joined with the separator: `a/b/arm` and `c/arm` are two
//! labels (`a/b/arm`, whose parent is `a/b`, and `c/arm`, whose parent is `c`), so a
//! directory-like taxonomy with repeated leaf names builds. A plain label `arm` is the
//! top-level label `arm`; a `paths` array `["a", "b"]` is the label `a/b`. An explicit
//! tree entry names its label by its path too: `{label: "a/b/arm"}`, or
//! `{label: "arm", parent: "a/b"}` (the parent's path, then the label); the labels
//! on the way (`a`, `a/b`) are part of the tree. Parents follow from the paths, so no
//! label can have two.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::input::TreeEntry;
use super::preprocess::LabelIdentity;
use super::CorpusError;

/// A forest of labels below an implicit root; ids are indexes into `names`.
///
/// Invariants (enforced by [`LabelTreeBuilder`], [`LabelTree::new`] and
/// deserialization): names are distinct and non-empty, parents are valid ids, and
/// there are no cycles. The fields are public for reading; mutating them afterwards
/// invalidates the internal name index.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
#[serde(try_from = "LabelTreeData")]
pub struct LabelTree {
    /// Label names by id.
    pub names: Vec<String>,
    /// Parent of each label; `None` = child of the implicit root.
    pub parent: Vec<Option<u32>>,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl PartialEq for LabelTree {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names && self.parent == other.parent
    }
}

/// Serialized shape of a [`LabelTree`], validated on the way in.
#[derive(Deserialize)]
struct LabelTreeData {
    names: Vec<String>,
    parent: Vec<Option<u32>>,
}

impl TryFrom<LabelTreeData> for LabelTree {
    type Error = String;
    fn try_from(d: LabelTreeData) -> Result<Self, String> {
        LabelTree::new(d.names, d.parent)
    }
}

impl LabelTree {
    /// Builds a tree from parallel arrays, checking the invariants.
    pub fn new(names: Vec<String>, parent: Vec<Option<u32>>) -> Result<Self, String> {
        if names.len() != parent.len() {
            return Err(format!("label tree has {} names but {} parents", names.len(), parent.len()));
        }
        let mut index = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            if n.is_empty() {
                return Err(format!("label {i} has an empty name"));
            }
            if index.insert(n.clone(), i as u32).is_some() {
                return Err(format!("label '{n}' appears twice"));
            }
        }
        if let Some(p) = parent.iter().flatten().find(|&&p| p as usize >= names.len()) {
            return Err(format!("parent id {p} out of range"));
        }
        if let Some(node) = find_cycle(&parent) {
            return Err(format!("label tree has a cycle through '{}'", names[node]));
        }
        Ok(LabelTree { names, parent, index })
    }

    fn from_parts_unchecked(names: Vec<String>, parent: Vec<Option<u32>>) -> Self {
        let index = names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
        LabelTree { names, parent, index }
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The id of the label called `name`.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The name of label `id`. Panics if out of range.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// The parent of label `id` (`None` = top level). Panics if out of range.
    pub fn parent(&self, id: u32) -> Option<u32> {
        self.parent[id as usize]
    }

    /// The children of label `id`, in id order.
    pub fn children(&self, id: u32) -> Vec<u32> {
        (0..self.len() as u32).filter(|&c| self.parent[c as usize] == Some(id)).collect()
    }

    /// Children lists of every label at once (index = parent id), in id order.
    pub fn child_lists(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.len()];
        for (c, p) in self.parent.iter().enumerate() {
            if let Some(p) = p {
                out[*p as usize].push(c as u32);
            }
        }
        out
    }

    /// The top-level labels (children of the implicit root), in id order.
    pub fn roots(&self) -> Vec<u32> {
        (0..self.len() as u32).filter(|&c| self.parent[c as usize].is_none()).collect()
    }

    /// Whether label `id` has no children.
    pub fn is_leaf(&self, id: u32) -> bool {
        !self.parent.contains(&Some(id))
    }

    /// Level of label `id` below the implicit root: 1 for a top-level label.
    pub fn depth_of(&self, id: u32) -> usize {
        1 + self.ancestors(id).len()
    }

    /// Number of label levels below the implicit root: 0 when empty, 1 for a flat set.
    pub fn depth(&self) -> usize {
        let mut depth = vec![0usize; self.len()];
        let mut max = 0;
        for start in 0..self.len() {
            // Walk up until a node with known depth (or the root), then fill back down.
            let mut chain = Vec::new();
            let mut cur = Some(start as u32);
            let mut base = 0;
            while let Some(c) = cur {
                if depth[c as usize] != 0 {
                    base = depth[c as usize];
                    break;
                }
                chain.push(c);
                cur = self.parent[c as usize];
            }
            for (k, &c) in chain.iter().rev().enumerate() {
                depth[c as usize] = base + k + 1;
            }
            max = max.max(depth[start]);
        }
        max
    }

    /// Ancestors of `id`, nearest first (parent, grandparent, …), excluding `id`
    /// itself and the implicit root.
    pub fn ancestors(&self, id: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cur = self.parent[id as usize];
        while let Some(p) = cur {
            out.push(p);
            cur = self.parent[p as usize];
        }
        out
    }

    /// The path from the top level down to `id`, inclusive (`[root-level, …, id]`).
    pub fn path(&self, id: u32) -> Vec<u32> {
        let mut p = self.ancestors(id);
        p.reverse();
        p.push(id);
        p
    }
}

/// Returns a node on a cycle of the parent graph, if any (parents assumed in range).
fn find_cycle(parent: &[Option<u32>]) -> Option<usize> {
    // 0 = unvisited, 1 = on the current walk, 2 = known to reach the root.
    let mut state = vec![0u8; parent.len()];
    for start in 0..parent.len() {
        let mut walk = Vec::new();
        let mut cur = Some(start);
        while let Some(c) = cur {
            match state[c] {
                2 => break,
                1 => return Some(c),
                _ => {
                    state[c] = 1;
                    walk.push(c);
                    cur = parent[c].map(|p| p as usize);
                }
            }
        }
        for c in walk {
            state[c] = 2;
        }
    }
    None
}

/// One reversible change to the builder, so a failing document leaves no trace.
enum Undo {
    NewNode,
    Assert { id: u32, parent: Option<u32>, asserted: bool },
}

/// Builds a [`LabelTree`] from an optional explicit tree and documents' labels.
///
/// Ids: explicit tree entries first, in their order, then labels in order of first
/// appearance in documents (for a path, top-down).
#[derive(Debug, Clone)]
pub struct LabelTreeBuilder {
    names: Vec<String>,
    parent: Vec<Option<u32>>,
    /// Whether the parent was asserted (explicit tree or a path) rather than defaulted.
    asserted: Vec<bool>,
    index: HashMap<String, u32>,
    separator: Option<String>,
    explicit: bool,
    /// [`LabelIdentity::Path`]: node names are full paths joined with `separator`.
    by_path: bool,
}

fn parent_name(names: &[String], p: Option<u32>) -> String {
    match p {
        Some(p) => format!("'{}'", names[p as usize]),
        None => "(top level)".to_owned(),
    }
}

impl LabelTreeBuilder {
    /// A builder that starts from a finished tree, as if it were the explicit tree (every
    /// parent asserted): a corpus made like another ([`super::like`]) takes its tree, and
    /// its labels keep their ids.
    pub fn from_tree(tree: &LabelTree, separator: Option<&str>, identity: LabelIdentity) -> Self {
        LabelTreeBuilder {
            names: tree.names.clone(),
            parent: tree.parent.clone(),
            asserted: vec![true; tree.len()],
            index: tree.names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect(),
            separator: separator.filter(|s| !s.is_empty()).map(str::to_owned),
            explicit: !tree.is_empty(),
            by_path: identity == LabelIdentity::Path,
        }
    }

    /// This builder, taking labels its tree lacks (after the tree's, as a builder without
    /// an explicit tree does) instead of refusing them.
    pub fn accepting_new_labels(self) -> Self {
        LabelTreeBuilder { explicit: false, ..self }
    }

    /// Validates `explicit` (possibly empty = no explicit tree) and starts a builder.
    /// `separator` splits document labels into paths (`None` disables).
    ///
    /// Errors (field `tree[i].label` / `tree[i].parent`, with the label): an empty
    /// label, a label containing the separator, a label listed twice with different
    /// parents, an unknown parent, a cycle.
    pub fn new(explicit: &[TreeEntry], separator: Option<&str>) -> Result<Self, CorpusError> {
        Self::with_identity(explicit, separator, LabelIdentity::Name)
    }

    /// [`Self::new`] with labels identified by `identity` (see the module docs). With
    /// [`LabelIdentity::Path`] a separator is required (the error names
    /// `preprocess.label_identity`), and a tree entry's errors are an empty path segment
    /// (field `tree[i].label` or `tree[i].parent`).
    pub fn with_identity(explicit: &[TreeEntry], separator: Option<&str>, identity: LabelIdentity) -> Result<Self, CorpusError> {
        let mut b = LabelTreeBuilder {
            names: Vec::new(),
            parent: Vec::new(),
            asserted: Vec::new(),
            index: HashMap::new(),
            separator: separator.filter(|s| !s.is_empty()).map(str::to_owned),
            // By path, set once the tree's own labels are in.
            explicit: !explicit.is_empty() && identity == LabelIdentity::Name,
            by_path: identity == LabelIdentity::Path,
        };
        if b.by_path {
            b.add_tree_paths(explicit)?;
            b.explicit = !explicit.is_empty();
            return Ok(b);
        }
        let first = b.add_tree_names(explicit)?;
        b.link_tree_parents(explicit, &first)?;
        b.check_tree_acyclic(&first)?;
        Ok(b)
    }

    /// By path: adds each explicit tree entry as the path of its parent then its label,
    /// with every label on the way. Needs a separator to join the paths with; refuses an
    /// entry whose parent or label path has an empty segment.
    fn add_tree_paths(&mut self, explicit: &[TreeEntry]) -> Result<(), CorpusError> {
        let sep = self.separator.clone().ok_or_else(|| {
            CorpusError::field(
                "preprocess.label_identity",
                "label_identity path names each label by its path joined with label_separator: give a label_separator",
            )
        })?;
        for (i, e) in explicit.iter().enumerate() {
            if let Some(p) = &e.parent {
                if p.is_empty() || p.split(sep.as_str()).any(str::is_empty) {
                    return Err(tree_err(i, "parent", &e.label, format!("parent path '{p}' of label '{}' has an empty segment", e.label)));
                }
            }
            let full = match &e.parent {
                Some(p) => format!("{p}{sep}{}", e.label),
                None => e.label.clone(),
            };
            let segments: Vec<&str> = full.split(sep.as_str()).collect();
            if e.label.is_empty() || segments.iter().any(|s| s.is_empty()) {
                return Err(tree_err(i, "label", &e.label, format!("label path '{full}' has an empty segment")));
            }
            // Every asserted parent is the path's prefix: nothing can conflict.
            self.add_path(&segments, "tree", &mut Vec::new()).map_err(|e| tree_err(i, "label", &full, e.message))?;
        }
        Ok(())
    }

    /// By name: adds each explicit tree label once, top-level for now (parents are
    /// linked once every label is known), and returns the entry index of each label's
    /// first listing. Refuses an empty label, one containing the separator, and a label
    /// listed again with a different parent.
    fn add_tree_names(&mut self, explicit: &[TreeEntry]) -> Result<Vec<usize>, CorpusError> {
        let mut first: Vec<usize> = Vec::new();
        for (i, e) in explicit.iter().enumerate() {
            if e.label.is_empty() {
                return Err(tree_err(i, "label", "", "label names must not be empty".into()));
            }
            if let Some(sep) = self.separator.as_deref().filter(|s| e.label.contains(s)) {
                return Err(tree_err(
                    i,
                    "label",
                    &e.label,
                    format!(
                        "label '{}' contains the path separator '{sep}'; set \
                         preprocess.label_separator to null to use such names literally",
                        e.label
                    ),
                ));
            }
            match self.index.get(e.label.as_str()) {
                Some(&id) => {
                    let prev = &explicit[first[id as usize]];
                    if prev.parent != e.parent {
                        return Err(two_tree_parents(i, e, prev));
                    }
                }
                None => {
                    self.index.insert(e.label.clone(), self.names.len() as u32);
                    self.names.push(e.label.clone());
                    self.parent.push(None);
                    self.asserted.push(true);
                    first.push(i);
                }
            }
        }
        Ok(first)
    }

    /// By name: sets each explicit label's parent from its first listing (`first`, from
    /// [`Self::add_tree_names`]); refuses a parent that is not itself a listed label.
    fn link_tree_parents(&mut self, explicit: &[TreeEntry], first: &[usize]) -> Result<(), CorpusError> {
        for (id, &i) in first.iter().enumerate() {
            let e = &explicit[i];
            if let Some(p) = &e.parent {
                match self.index.get(p.as_str()) {
                    Some(&pid) => self.parent[id] = Some(pid),
                    None => {
                        return Err(tree_err(
                            i,
                            "parent",
                            &e.label,
                            format!(
                                "unknown parent '{p}' of label '{}': every parent must itself \
                                 be listed as a label",
                                e.label
                            ),
                        ))
                    }
                }
            }
        }
        Ok(())
    }

    /// By name: refuses an explicit tree whose parents form a cycle, naming the cycle
    /// (child → parent) at the first listing (`first`) of a label on it.
    fn check_tree_acyclic(&self, first: &[usize]) -> Result<(), CorpusError> {
        if let Some(node) = find_cycle(&self.parent) {
            let mut cycle = vec![self.names[node].as_str()];
            let mut cur = self.parent[node].expect("cycle node has a parent") as usize;
            while cur != node {
                cycle.push(&self.names[cur]);
                cur = self.parent[cur].expect("cycle node has a parent") as usize;
            }
            cycle.push(&self.names[node]);
            return Err(tree_err(first[node], "parent", &self.names[node], format!("label tree has a cycle: {} (child → parent)", cycle.join(" → "))));
        }
        Ok(())
    }

    /// Number of labels so far.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no labels yet.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Registers document `doc_index`'s labels and label paths and returns its label ids
    /// (sorted, deduplicated). On error nothing is changed. Errors name the field
    /// `documents[i].labels` or `documents[i].paths` and the label.
    pub fn add_document_labels(&mut self, labels: &[String], paths: &[Vec<String>], doc_index: usize) -> Result<Vec<u32>, CorpusError> {
        let mut undo = Vec::new();
        let result = self.add_inner(labels, paths, doc_index, &mut undo);
        if result.is_err() {
            self.rollback(undo);
        }
        result
    }

    fn add_inner(&mut self, labels: &[String], paths: &[Vec<String>], doc_index: usize, undo: &mut Vec<Undo>) -> Result<Vec<u32>, CorpusError> {
        let mut ids = Vec::with_capacity(labels.len() + paths.len());
        let labels_field = format!("documents[{doc_index}].labels");
        for label in labels {
            if label.is_empty() {
                return Err(doc_err(&labels_field, "", "labels must not be empty".into()));
            }
            let segments: Option<Vec<&str>> = self.separator.as_deref().filter(|sep| label.contains(sep)).map(|sep| label.split(sep).collect());
            match segments {
                Some(segments) => {
                    if segments.iter().any(|s| s.is_empty()) {
                        return Err(doc_err(&labels_field, label, format!("label path '{label}' has an empty segment")));
                    }
                    ids.push(self.add_path(&segments, &labels_field, undo)?);
                }
                // By path, a plain label is a path of one segment: the top-level label.
                None if self.by_path => ids.push(self.add_path(&[label.as_str()], &labels_field, undo)?),
                None => ids.push(self.add_plain(label, &labels_field, undo)?),
            }
        }
        let paths_field = format!("documents[{doc_index}].paths");
        for path in paths {
            if path.is_empty() {
                return Err(doc_err(&paths_field, "", "label paths must not be empty".into()));
            }
            if let Some(bad) = path.iter().find(|s| s.is_empty()) {
                return Err(doc_err(&paths_field, bad, format!("label path {path:?} has an empty segment")));
            }
            if self.by_path {
                let sep = self.separator.as_deref().expect("by_path has a separator");
                if let Some(bad) = path.iter().find(|s| s.contains(sep)) {
                    return Err(doc_err(
                        &paths_field,
                        bad,
                        format!("label path {path:?}: segment '{bad}' contains the separator '{sep}', which would make its path ambiguous under label_identity path"),
                    ));
                }
            }
            let segments: Vec<&str> = path.iter().map(String::as_str).collect();
            ids.push(self.add_path(&segments, &paths_field, undo)?);
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    fn missing(&self, label: &str, field: &str) -> CorpusError {
        doc_err(field, label, format!("label '{label}' is not in the label tree"))
    }

    fn new_node(&mut self, name: &str, parent: Option<u32>, asserted: bool, undo: &mut Vec<Undo>) -> u32 {
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.parent.push(parent);
        self.asserted.push(asserted);
        self.index.insert(name.to_owned(), id);
        undo.push(Undo::NewNode);
        id
    }

    fn add_plain(&mut self, label: &str, field: &str, undo: &mut Vec<Undo>) -> Result<u32, CorpusError> {
        match self.index.get(label) {
            Some(&id) => Ok(id),
            None if self.explicit => Err(self.missing(label, field)),
            None => Ok(self.new_node(label, None, false, undo)),
        }
    }

    /// The label at the end of `segments` (top-down), creating the ones missing (unless
    /// the tree was given) and asserting each one's parent. By path, each node is named
    /// by its path so far, so its parent is always its prefix.
    fn add_path(&mut self, segments: &[&str], field: &str, undo: &mut Vec<Undo>) -> Result<u32, CorpusError> {
        if self.by_path {
            let sep = self.separator.clone().expect("by_path has a separator");
            let mut full = String::new();
            let names: Vec<String> = segments
                .iter()
                .map(|s| {
                    if !full.is_empty() {
                        full.push_str(&sep);
                    }
                    full.push_str(s);
                    full.clone()
                })
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            return self.add_chain(&names, field, undo);
        }
        self.add_chain(segments, field, undo)
    }

    /// The label named last in `chain`, each name's parent the one before it.
    fn add_chain(&mut self, chain: &[&str], field: &str, undo: &mut Vec<Undo>) -> Result<u32, CorpusError> {
        let mut parent: Option<u32> = None;
        for &seg in chain {
            let id = match self.index.get(seg) {
                Some(&id) => {
                    let i = id as usize;
                    if self.asserted[i] {
                        if self.parent[i] != parent {
                            return Err(doc_err(
                                field,
                                seg,
                                format!(
                                    "label '{seg}' given two different parents: {} and {} (if labels are paths in a directory-like \
                                     tree, set preprocess.label_identity to path: then each path is a label of its own)",
                                    parent_name(&self.names, self.parent[i]),
                                    parent_name(&self.names, parent)
                                ),
                            ));
                        }
                    } else {
                        // A plain label (a childless top-level node) gets its parent now.
                        undo.push(Undo::Assert { id, parent: self.parent[i], asserted: false });
                        self.parent[i] = parent;
                        self.asserted[i] = true;
                    }
                    id
                }
                None if self.explicit => return Err(self.missing(seg, field)),
                None => self.new_node(seg, parent, true, undo),
            };
            parent = Some(id);
        }
        Ok(parent.expect("paths are non-empty"))
    }

    fn rollback(&mut self, undo: Vec<Undo>) {
        for u in undo.into_iter().rev() {
            match u {
                Undo::NewNode => {
                    let name = self.names.pop().expect("undo of a node that exists");
                    self.parent.pop();
                    self.asserted.pop();
                    self.index.remove(&name);
                }
                Undo::Assert { id, parent, asserted } => {
                    self.parent[id as usize] = parent;
                    self.asserted[id as usize] = asserted;
                }
            }
        }
    }

    /// The finished tree.
    pub fn finish(self) -> LabelTree {
        debug_assert!(find_cycle(&self.parent).is_none());
        LabelTree::from_parts_unchecked(self.names, self.parent)
    }
}

fn doc_err(field: &str, label: &str, message: String) -> CorpusError {
    CorpusError { field: Some(field.to_owned()), line: None, label: Some(label.to_owned()), message }
}

/// An error in explicit tree entry `i` (field `tree[i].what`), naming `label`.
fn tree_err(i: usize, what: &str, label: &str, message: String) -> CorpusError {
    CorpusError { field: Some(format!("tree[{i}].{what}")), line: None, label: Some(label.to_owned()), message }
}

/// The error for tree entry `i`, `entry`, listing its label again under a different
/// parent than its earlier listing `prev`.
fn two_tree_parents(i: usize, entry: &TreeEntry, prev: &TreeEntry) -> CorpusError {
    let show = |p: &Option<String>| match p {
        Some(p) => format!("'{p}'"),
        None => "(top level)".to_owned(),
    };
    tree_err(i, "parent", &entry.label, format!("label '{}' given two different parents: {} and {}", entry.label, show(&prev.parent), show(&entry.parent)))
}

#[cfg(test)]
#[path = "labels_tests.rs"]
mod tests;
