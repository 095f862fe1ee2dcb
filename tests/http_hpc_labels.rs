//! HPC label prediction in the label space the user uploaded (issue 13): a corpus whose
//! documents carry a category *and* its parent must get both predicted, and the
//! evaluation must score against those uploaded sets, parents included.
//!
//! The fixture: two parents (sports, music), each with two children whose documents
//! use the child's own words plus the parent's. Every document is uploaded with the
//! paths [parent] and [parent, child], so its label set is {parent, child}; training strips the
//! parent (`strip_ancestors`, the default), and prediction must put it back.

mod common;

use common::{assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// (parent, child, the child's words); each parent adds its own words.
const CHILDREN: [(&str, &str, [&str; 4]); 4] = [
    ("Sports", "Football", ["goal", "striker", "pitch", "referee"]),
    ("Sports", "Swimming", ["pool", "lane", "stroke", "dive"]),
    ("Music", "Piano", ["keys", "pedal", "chord", "sonata"]),
    ("Music", "Guitar", ["strings", "fret", "riff", "amplifier"]),
];

fn parent_words(parent: &str) -> [&'static str; 3] {
    if parent == "Sports" {
        ["team", "match", "athlete"]
    } else {
        ["melody", "concert", "rhythm"]
    }
}

/// Document `i` of child `c`: six of the child's words and three of the parent's, in an
/// order that varies with `i` (deterministic, no randomness needed).
fn text(c: usize, i: usize) -> String {
    let (parent, _, words) = CHILDREN[c];
    let p = parent_words(parent);
    let mut out: Vec<&str> = (0..6).map(|j| words[(i + j * (1 + i % 3)) % 4]).collect();
    out.extend((0..3).map(|j| p[(i + j) % 3]));
    out.join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploaded_parents_are_predicted_and_scored() {
    let s = TestServer::start().await;
    let mut docs = Vec::new();
    for i in 0..40 {
        for (c, (parent, child, _)) in CHILDREN.iter().enumerate() {
            docs.push(json!({"id": format!("{child}-{i}"), "text": text(c, i), "paths": [[parent], [parent, child]]}));
        }
    }
    let corpus = s.upload(json!({"name": "parents", "documents": docs})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();

    // Unknown predictor or closure values are 422s naming the field.
    for (params, field) in [(json!({"predictor": "svm"}), "params.predictor"), (json!({"label_closure": "parents"}), "params.label_closure")] {
        let (st, problem) = s.post("/v1/jobs", &json!({"corpus_id": cid, "model": "hpc", "params": params})).await;
        assert_problem(st, &problem, 422, Some(field));
    }

    let params = json!({"iterations": 30, "validation_fraction": 0.25, "test_fraction": 0.25, "threads": 2});
    let job = s.submit(&cid, "hpc", params, 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let mid = done["model_id"].as_str().unwrap().to_string();
    let (_, model) = s.get(&format!("/v1/models/{mid}")).await;
    // Every uploaded child came with its parent, so predicted sets include ancestors.
    let prediction = &model["diagnostics"]["prediction"];
    assert_eq!(prediction["ancestors"], true, "{prediction}");
    assert_eq!(prediction["predictor"], "label_sets");

    // The evaluation scores against the uploaded sets: the parents are in the truth
    // (each test document has one) and, predicted, they are found.
    let eval = &model["diagnostics"]["evaluation"]["model"];
    let per_label = eval["per_label"].as_array().unwrap();
    let test_docs = eval["documents"].as_u64().unwrap();
    let parent_docs: u64 = per_label.iter().filter(|l| l["label"] == "Sports" || l["label"] == "Music").map(|l| l["documents"].as_u64().unwrap()).sum();
    assert_eq!(parent_docs, test_docs, "every test document carries one parent: {eval}");
    // The words separate the children completely; a predictor that left the parents
    // out would have recall at most 1/2.
    assert!(eval["micro"]["recall"].as_f64().unwrap() > 0.9, "{eval}");
    assert!(eval["micro"]["f1"].as_f64().unwrap() > 0.9, "{eval}");

    // A new document about the piano gets Piano and Music, and a parent is never less
    // probable than its child.
    let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &json!({"documents": [{"text": "chord keys sonata pedal concert melody"}]})).await;
    assert_eq!(st, 200, "{pred}");
    let p = &pred["predictions"][0];
    let predicted: Vec<&str> = p["predicted_labels"].as_array().unwrap().iter().map(|v: &Value| v.as_str().unwrap()).collect();
    assert!(predicted.contains(&"Piano") && predicted.contains(&"Music"), "{predicted:?}");
    assert!(!predicted.contains(&"Sports"), "{predicted:?}");
    let prob = |name: &str| p["labels"].as_array().unwrap().iter().find(|l| l["label"] == name).unwrap()["probability"].as_f64().unwrap();
    for (parent, child, _) in CHILDREN {
        assert!(prob(parent) >= prob(child), "P({parent}) {} < P({child}) {}", prob(parent), prob(child));
    }

    // With `label_closure: none` sets are not closed, but the evaluation still scores
    // against the uploaded sets (parents in the truth).
    let job =
        s.submit(&cid, "hpc", json!({"iterations": 30, "validation_fraction": 0.25, "test_fraction": 0.25, "threads": 2, "label_closure": "none"}), 3).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, open) = s.get(&format!("/v1/models/{}", done["model_id"].as_str().unwrap())).await;
    assert_eq!(open["diagnostics"]["prediction"]["ancestors"], false);
    let per_label = open["diagnostics"]["evaluation"]["model"]["per_label"].as_array().unwrap().clone();
    let parent_docs: u64 = per_label.iter().filter(|l| l["label"] == "Sports" || l["label"] == "Music").map(|l| l["documents"].as_u64().unwrap()).sum();
    assert_eq!(parent_docs, test_docs);
}

/// Documents can carry labels of two branches at once (on AppStream a third of the
/// training sets do, e.g. Education with Science's Math). The default label-set
/// predictor explains a new document by a whole set seen in training, so a document
/// using both Football's and Piano's words gets both, with their parents, while a
/// document of one child still gets that child's branch only. A single-label
/// explanation would have to split the probability between the two children.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_of_two_branches_are_predicted_together() {
    let s = TestServer::start().await;
    let mut docs = Vec::new();
    for i in 0..30 {
        for (c, (parent, child, _)) in CHILDREN.iter().enumerate() {
            docs.push(json!({"id": format!("{child}-{i}"), "text": text(c, i), "paths": [[parent], [parent, child]]}));
        }
        // Football and Piano together: both children's words and both parents'.
        let both = format!("{} {}", text(0, i), text(2, i + 1));
        docs.push(json!({"id": format!("both-{i}"), "text": both, "paths": [["Sports", "Football"], ["Music", "Piano"]]}));
    }
    let corpus = s.upload(json!({"name": "crossover", "documents": docs})).await;
    let cid = corpus["id"].as_str().unwrap().to_string();
    let params = json!({"iterations": 30, "validation_fraction": 0.25, "test_fraction": 0.2, "threads": 2});
    let job = s.submit(&cid, "hpc", params, 5).await;
    let done = s.wait(job["id"].as_str().unwrap(), Duration::from_secs(120)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let mid = done["model_id"].as_str().unwrap().to_string();
    let (_, model) = s.get(&format!("/v1/models/{mid}")).await;
    let prediction = &model["diagnostics"]["prediction"];
    assert_eq!(prediction["predictor"], "label_sets", "{prediction}");
    // Six labels as singletons and {Football, Piano}: the only multi-branch set.
    assert_eq!(prediction["label_sets"], 7, "{prediction}");

    let body = json!({"documents": [
        {"text": "goal striker pitch referee team match chord keys sonata pedal melody concert"},
        {"text": "strings fret riff amplifier melody rhythm fret riff"},
    ]});
    let (st, pred) = s.post(&format!("/v1/models/{mid}/predict"), &body).await;
    assert_eq!(st, 200, "{pred}");
    let labels = |i: usize| -> Vec<String> {
        let mut v: Vec<String> = pred["predictions"][i]["predicted_labels"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(labels(0), ["Football", "Music", "Piano", "Sports"], "{pred}");
    assert_eq!(labels(1), ["Guitar", "Music"], "{pred}");
    // Both children are near certain together, which no single-label explanation can
    // say: there the two leaves' probabilities share one unit.
    let prob = |i: usize, name: &str| {
        pred["predictions"][i]["labels"].as_array().unwrap().iter().find(|l| l["label"] == name).unwrap()["probability"].as_f64().unwrap()
    };
    assert!(prob(0, "Football") + prob(0, "Piano") > 1.5, "{pred}");
    assert!(prob(1, "Football") + prob(1, "Piano") < 0.5, "{pred}");
}
