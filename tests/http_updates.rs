//! Updates through HTTP (issue 60): new documents uploaded `?like=` a corpus keep its
//! word ids; `POST /v1/models/{id}/update` answers 202 with a job whose model holds the
//! parent's documents and the new ones, keeps the parent's topic ids and names, adds
//! `new_topics`, and lists its corpora; the lineage lists every version; bad uploads and
//! updates are 4xx naming the field and leave nothing behind. DCNT, SCNT and HDP update
//! too.

mod common;

use common::{appstream_docs, assert_problem, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(300);

/// Wait for a job and return its model's id and JSON.
async fn model_of(s: &TestServer, job: &Value) -> (String, Value) {
    s.model_of(job, LIMIT).await
}

async fn upload_like(s: &TestServer, like: &str, name: &str, documents: &[Value]) -> Value {
    let (st, corpus) = s.post(&format!("/v1/corpora?like={like}"), &json!({"name": name, "documents": documents})).await;
    assert_eq!(st, 201, "{corpus}");
    corpus
}

async fn count(s: &TestServer, path: &str) -> u64 {
    let (_, list) = s.get(path).await;
    list["total"].as_u64().unwrap()
}

/// Fit on 200 AppStream documents, rename topic 2, update with 60 more (one new
/// topic), then update the update with 40 more: each child names its parent and its
/// corpora, holds every document so far, keeps topic 2's name and the parent's ids
/// (the comparison pairs most topics with themselves), and the lineage lists the three
/// versions in order from any of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_keep_ids_and_names_and_list_their_lineage() {
    let s = TestServer::start().await;
    // Without their menu categories: a corpus made like another takes its label tree,
    // and later documents bring categories the first 200 lack.
    let docs: Vec<Value> = appstream_docs(300)
        .into_iter()
        .map(|mut d| {
            d.as_object_mut().unwrap().remove("labels");
            d
        })
        .collect();
    let old = s.upload(json!({"name": "old", "documents": &docs[..200]})).await;
    let old_id = old["id"].as_str().unwrap().to_string();
    let job = s.submit(&old_id, "lda", json!({"topics": 5, "iterations": 60}), 2).await;
    let (parent_id, parent) = model_of(&s, &job).await;
    assert_eq!((&parent["corpus_ids"], &parent["num_documents"]), (&json!([old_id]), &old["num_documents"]), "{parent}");
    let (st, renamed) = s.patch(&format!("/v1/models/{parent_id}/topics/2"), &json!({"name": "two"})).await;
    assert_eq!(st, 200, "{renamed}");

    let new = upload_like(&s, &old_id, "new", &docs[200..260]).await;
    let new_id = new["id"].as_str().unwrap().to_string();
    assert_eq!(new["like"], json!(old_id), "{new}");
    assert!(new["num_terms"].as_u64() >= old["num_terms"].as_u64(), "the lexicon only grows: {new}");
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/update"), &json!({"corpus_id": new_id, "iterations": 30, "seed": 3, "new_topics": 1})).await;
    assert_eq!(st, 202, "{job}");
    assert_eq!(job["update"]["parent_model_id"], json!(parent_id), "{job}");
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!(child["parent_model_id"], json!(parent_id));
    assert_eq!(child["corpus_ids"], json!([old_id, new_id]));
    let held = old["num_documents"].as_u64().unwrap() + new["num_documents"].as_u64().unwrap();
    assert_eq!(child["num_documents"], json!(held));
    assert_eq!((&child["num_topics"], &child["update"]["new_topics"]), (&json!(6), &json!([5])), "{child}");
    assert!(child["edit"].is_null(), "{child}");
    let (_, joined) = s.get(&format!("/v1/corpora/{}", child["corpus_id"].as_str().unwrap())).await;
    assert_eq!(joined["parts"], json!([old_id, new_id]), "{joined}");
    let (_, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=5")).await;
    assert_eq!(topics["topics"][2]["name"], "two", "{topics}");
    let (st, cmp) = s.get(&format!("/v1/models/{parent_id}/compare/{child_id}")).await;
    assert_eq!(st, 200, "{cmp}");
    let same = cmp["pairs"].as_array().unwrap().iter().filter(|p| p["matched"] == true && p["a"]["id"] == p["b"]["id"]).count();
    assert!(same >= 3, "most of the parent's 5 topics pair with their own id: {cmp}");

    let last = upload_like(&s, &old_id, "last", &docs[260..300]).await;
    let last_id = last["id"].as_str().unwrap().to_string();
    let (st, job) = s.post(&format!("/v1/models/{child_id}/update"), &json!({"corpus_id": last_id, "iterations": 10, "seed": 4})).await;
    assert_eq!(st, 202, "{job}");
    let (grandchild_id, grandchild) = model_of(&s, &job).await;
    assert_eq!(grandchild["corpus_ids"], json!([old_id, new_id, last_id]));
    assert_eq!(grandchild["num_documents"], json!(held + last["num_documents"].as_u64().unwrap()));
    for from in [&parent_id, &child_id, &grandchild_id] {
        let (st, lineage) = s.get(&format!("/v1/models/{from}/lineage")).await;
        assert_eq!(st, 200, "{lineage}");
        let versions = lineage["versions"].as_array().unwrap();
        let ids: Vec<&str> = versions.iter().map(|v| v["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [parent_id.as_str(), child_id.as_str(), grandchild_id.as_str()], "{lineage}");
        let how: Vec<&Value> = versions.iter().map(|v| &v["how"]).collect();
        assert_eq!(how, [&json!("fit"), &json!("update"), &json!("update")]);
        let me = versions.iter().find(|v| v["relation"] == "self").unwrap();
        assert_eq!(me["id"], json!(from));
    }
    let (st, _) = s.get("/v1/models/nope/lineage").await;
    assert_eq!(st, 404);
}

/// A `like` naming no corpus, a like-upload that brings its own preprocessing or a
/// label the tree lacks (unless `unknown=drop`, which drops it and says so), a bad
/// `unknown`, and updates with a missing corpus, one preprocessed otherwise,
/// documents the model already holds, or too many new topics: each a 422 naming the
/// field, with no job queued and no corpus left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_uploads_and_updates_are_refused_and_leave_nothing() {
    let s = TestServer::start().await;
    let labelled = |id: &str, text: &str, label: &str| json!({"id": id, "text": text, "labels": [label]});
    let old = s
        .upload(json!({"name": "old", "documents": [labelled("a", "apple banana cherry", "fruit"), labelled("b", "banana cherry apple", "food"), labelled("c", "cherry apple banana", "fruit")], "preprocess": {"stopwords": "none", "min_df": 1}}))
        .await;
    let old_id = old["id"].as_str().unwrap().to_string();
    let (st, body) = s.post("/v1/corpora?like=nope", &json!({"documents": [{"text": "apple"}]})).await;
    assert_problem(st, &body, 422, Some("query.like"));
    let (st, body) = s.post(&format!("/v1/corpora?like={old_id}"), &json!({"documents": [{"text": "apple"}], "preprocess": {"stem": true}})).await;
    assert_problem(st, &body, 422, Some("preprocess"));
    let (st, body) =
        s.post(&format!("/v1/corpora?like={old_id}"), &json!({"documents": [labelled("d", "apple", "fruit"), labelled("e", "kiwi", "drink")]})).await;
    assert_problem(st, &body, 422, Some("documents[1].labels"));
    assert!(body["detail"].as_str().unwrap().contains("drink"), "{body}");
    // Asked to, the upload drops the label instead, keeps the document and says so.
    let (st, dropped) = s
        .post(&format!("/v1/corpora?like={old_id}&unknown=drop"), &json!({"documents": [labelled("d", "apple", "fruit"), labelled("e", "kiwi", "drink")]}))
        .await;
    assert_eq!(st, 201, "{dropped}");
    assert_eq!((&dropped["num_documents"], &dropped["unknown_dropped"]["labels"]), (&json!(2), &json!({"drink": 1})), "{dropped}");
    assert_eq!(dropped["labels"], old["labels"], "the tree is the base's");
    let (st, body) = s.post(&format!("/v1/corpora?like={old_id}&unknown=maybe"), &json!({"documents": [{"text": "apple"}]})).await;
    assert_problem(st, &body, 422, Some("query.unknown"));
    let (st, body) = s.post("/v1/corpora?unknown=drop", &json!({"documents": [{"text": "apple"}]})).await;
    assert_problem(st, &body, 422, Some("query.unknown"));

    let job = s.submit(&old_id, "lda", json!({"topics": 2, "iterations": 10}), 1).await;
    let (model_id, _) = model_of(&s, &job).await;
    let (jobs, corpora) = (count(&s, "/v1/jobs").await, count(&s, "/v1/corpora").await);
    let update = |corpus_id: &str, extra: Value| {
        let mut body = json!({"corpus_id": corpus_id, "iterations": 5});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    let path = format!("/v1/models/{model_id}/update");
    let (st, body) = s.post(&path, &update("nope", json!({}))).await;
    assert_problem(st, &body, 422, Some("corpus_id"));
    let stemmed = s.upload(json!({"documents": [{"id": "z", "text": "apples"}], "preprocess": {"stem": true, "stopwords": "none", "min_df": 1}})).await;
    let (st, body) = s.post(&path, &update(stemmed["id"].as_str().unwrap(), json!({}))).await;
    assert_problem(st, &body, 422, Some("corpus_id"));
    let again = upload_like(&s, &old_id, "again", &[labelled("a", "apple", "fruit")]).await;
    let (st, body) = s.post(&path, &update(again["id"].as_str().unwrap(), json!({}))).await;
    assert_problem(st, &body, 422, Some("corpus_id"));
    assert!(body["detail"].as_str().unwrap().contains("'a'"), "{body}");
    let fresh = upload_like(&s, &old_id, "fresh", &[labelled("f", "apple kiwi", "fruit")]).await;
    let (st, body) = s.post(&path, &update(fresh["id"].as_str().unwrap(), json!({"new_topics": 1000}))).await;
    assert_problem(st, &body, 422, Some("new_topics"));
    let (st, body) = s.post("/v1/models/nope/update", &update(fresh["id"].as_str().unwrap(), json!({}))).await;
    assert_problem(st, &body, 404, None);
    assert_eq!(count(&s, "/v1/jobs").await, jobs, "nothing queued");
    assert_eq!(count(&s, "/v1/corpora").await, corpora + 3, "only the three uploads were stored");
}

/// DCNT and SCNT read their φ_d from covariates: an SCNT model fitted on 90 documents
/// with a categorical covariate is updated with 30 more carrying it (one new topic):
/// the child keeps the parent's design and topic names, holds every document and
/// serves effects over every level. New documents without the covariate are refused
/// with a 422 naming it, and nothing is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_scnt_model_with_covariates_is_updated() {
    let s = TestServer::start().await;
    let docs: Vec<Value> = appstream_docs(120)
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            d.as_object_mut().unwrap().remove("labels");
            let party = ["a", "b", "c"][i % 3];
            d["covariates"] = json!({"party": party});
            d
        })
        .collect();
    let old = s.upload(json!({"name": "old", "documents": &docs[..90]})).await;
    let old_id = old["id"].as_str().unwrap().to_string();
    let params = json!({"topics": 4, "iterations": 16, "burn_in": 8, "chains": 1, "covariates": ["party"]});
    let job = s.submit(&old_id, "scnt", params, 2).await;
    let (parent_id, _) = model_of(&s, &job).await;
    let (st, _) = s.patch(&format!("/v1/models/{parent_id}/topics/1"), &json!({"name": "one"})).await;
    assert_eq!(st, 200);
    let new = upload_like(&s, &old_id, "new", &docs[90..]).await;
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/update"), &json!({"corpus_id": new["id"], "iterations": 8, "seed": 3, "new_topics": 1})).await;
    assert_eq!(st, 202, "{job}");
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["model"], &child["num_topics"], &child["num_documents"]), (&json!("scnt"), &json!(5), &json!(120)), "{child}");
    assert_eq!(child["params"]["covariates"], json!(["party"]), "{child}");
    let (_, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=3")).await;
    assert_eq!(topics["topics"][1]["name"], "one", "{topics}");
    let (st, effects) = s.get(&format!("/v1/models/{child_id}/effects?covariate=party&contrast=a,c&seed=2")).await;
    assert_eq!(st, 200, "{effects}");

    let (jobs, bare) = (
        count(&s, "/v1/jobs").await,
        docs[90..100].iter().map(|d| json!({"id": format!("bare{}", d["id"].as_str().unwrap()), "text": d["text"]})).collect::<Vec<_>>(),
    );
    let bare = upload_like(&s, &old_id, "bare", &bare).await;
    let (st, body) = s.post(&format!("/v1/models/{parent_id}/update"), &json!({"corpus_id": bare["id"], "iterations": 8})).await;
    assert_eq!(st, 422, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("party"), "{body}");
    assert_eq!(count(&s, "/v1/jobs").await, jobs, "nothing queued");
}

/// HDP's update runs the memoized passes from the parent's topics with the new
/// documents as more batches: an HDP model fitted on 150 AppStream documents (births
/// and merges on) is updated with 50 more and one empty topic. The child holds every
/// document, keeps the parent's topics under their ids and names (the comparison pairs
/// each with itself), and its record lists every topic the update added (the empty one
/// and any born), which are the ids after the parent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hdp_model_is_updated_and_keeps_its_topics() {
    let s = TestServer::start().await;
    let docs: Vec<Value> = appstream_docs(200)
        .into_iter()
        .map(|mut d| {
            d.as_object_mut().unwrap().remove("labels");
            d
        })
        .collect();
    let old = s.upload(json!({"name": "old", "documents": &docs[..150]})).await;
    let old_id = old["id"].as_str().unwrap().to_string();
    let params = json!({"topics": 8, "passes": 12, "batches": 2, "merge_every": 1, "birth_every": 2});
    let job = s.submit(&old_id, "hdp", params, 2).await;
    let (parent_id, parent) = model_of(&s, &job).await;
    let kp = parent["num_topics"].as_u64().unwrap();
    let (st, _) = s.patch(&format!("/v1/models/{parent_id}/topics/0"), &json!({"name": "zero"})).await;
    assert_eq!(st, 200);
    let new = upload_like(&s, &old_id, "new", &docs[150..]).await;
    let (st, job) = s.post(&format!("/v1/models/{parent_id}/update"), &json!({"corpus_id": new["id"], "iterations": 6, "seed": 3, "new_topics": 1})).await;
    assert_eq!(st, 202, "{job}");
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["model"], &child["num_documents"], &child["parent_model_id"]), (&json!("hdp"), &json!(200), &json!(parent_id)), "{child}");
    let k = child["num_topics"].as_u64().unwrap();
    assert!(k > kp, "the empty topic was added: {k} of {kp}");
    assert_eq!(child["update"]["new_topics"], json!((kp..k).collect::<Vec<_>>()), "{child}");
    let (_, topics) = s.get(&format!("/v1/models/{child_id}/topics?n=3")).await;
    assert_eq!(topics["topics"][0]["name"], "zero", "{topics}");
    let (st, cmp) = s.get(&format!("/v1/models/{parent_id}/compare/{child_id}")).await;
    assert_eq!(st, 200, "{cmp}");
    let same = cmp["pairs"].as_array().unwrap().iter().filter(|p| p["matched"] == true && p["a"]["id"] == p["b"]["id"]).count() as u64;
    assert_eq!(same, kp, "every parent topic pairs with its own id: {cmp}");
}

/// HPC's topics are its labels: an HPC model fitted on 150 labelled AppStream documents
/// is updated with 50 more (labels the tree lacks dropped on upload), keeps its labels
/// as its topics in order and still predicts them; asking it for new topics is a 422
/// naming `new_topics`. A PCM model takes a new topic like LDA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hpc_and_pcm_models_are_updated() {
    let s = TestServer::start().await;
    let docs = appstream_docs(200);
    let old = s.upload(json!({"name": "old", "documents": &docs[..150]})).await;
    let old_id = old["id"].as_str().unwrap().to_string();
    let (st, new) = s.post(&format!("/v1/corpora?like={old_id}&unknown=drop"), &json!({"name": "new", "documents": &docs[150..]})).await;
    assert_eq!(st, 201, "{new}");
    let job = s.submit(&old_id, "hpc", json!({"iterations": 6, "burn_in": 3}), 2).await;
    let (hpc_id, hpc) = model_of(&s, &job).await;
    let (st, body) = s.post(&format!("/v1/models/{hpc_id}/update"), &json!({"corpus_id": new["id"], "iterations": 4, "new_topics": 1})).await;
    assert_problem(st, &body, 422, Some("new_topics"));
    let (st, job) = s.post(&format!("/v1/models/{hpc_id}/update"), &json!({"corpus_id": new["id"], "iterations": 4, "seed": 3})).await;
    assert_eq!(st, 202, "{job}");
    let (child_id, child) = model_of(&s, &job).await;
    assert_eq!((&child["model"], &child["num_topics"], &child["num_documents"]), (&json!("hpc"), &hpc["num_topics"], &json!(200)), "{child}");
    let names = |t: &Value| t["topics"].as_array().unwrap().iter().map(|x| x["name"].clone()).collect::<Vec<_>>();
    let (_, before) = s.get(&format!("/v1/models/{hpc_id}/topics?n=1")).await;
    let (_, after) = s.get(&format!("/v1/models/{child_id}/topics?n=1")).await;
    assert_eq!(names(&after), names(&before), "the labels stay the topics, in order");
    let (st, predicted) = s.post(&format!("/v1/models/{child_id}/predict"), &json!({"documents": [{"text": docs[0]["text"]}]})).await;
    assert_eq!(st, 200, "{predicted}");

    let job = s.submit(&old_id, "pcm", json!({"topics": 3, "iterations": 6, "burn_in": 3}), 2).await;
    let (pcm_id, _) = model_of(&s, &job).await;
    let (st, job) = s.post(&format!("/v1/models/{pcm_id}/update"), &json!({"corpus_id": new["id"], "iterations": 4, "new_topics": 1})).await;
    assert_eq!(st, 202, "{job}");
    let (_, child) = model_of(&s, &job).await;
    assert_eq!((&child["num_topics"], &child["update"]["new_topics"]), (&json!(4), &json!([3])), "{child}");
}
