//! `topicd fit --input FILE`: the offline fitter reads its file as an NDJSON upload
//! does (one reader, `corpus::ndjson`): tree lines before the documents shape the label
//! tree, a document's unknown key is an error naming its line, and `--param threads=N`
//! is the runner's option, not a model parameter.

use std::process::Command;

fn fit(input: &str, args: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corpus.jsonl");
    std::fs::write(&path, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(&path).args(args).output().expect("topicd runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Twenty labelled documents under a two-level tree given by a tree line.
fn labelled_with_a_tree_line() -> String {
    let mut lines = vec![r#"{"tree": [{"label": "fruit"}, {"label": "apple", "parent": "fruit"}, {"label": "pear", "parent": "fruit"}]}"#.to_string()];
    for i in 0..20 {
        let (label, text) = if i % 2 == 0 { ("apple", "apple crisp apple red orchard") } else { ("pear", "pear soft pear green orchard") };
        lines.push(format!(r#"{{"id": "d{i}", "text": "{text} {i}", "labels": ["{label}"]}}"#));
    }
    lines.join("\n")
}

#[test]
fn a_tree_line_is_read_as_an_upload_reads_it() {
    let (ok, stdout, stderr) = fit(&labelled_with_a_tree_line(), &["--model", "hpc", "--iterations", "4", "--seed", "1", "--param", "threads=2"]);
    assert!(ok, "{stderr}");
    let line: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // HPC's topics are the tree's nodes: fruit, apple, pear (the tree line's inner node
    // included), and the fit ran on the threads `--param threads=2` asked for.
    assert_eq!(
        (line["model"].as_str(), line["documents"].as_u64(), line["topics"].as_u64(), line["threads"].as_u64()),
        (Some("hpc"), Some(20), Some(3), Some(2)),
        "{line}"
    );
}

#[test]
fn a_bad_line_is_named() {
    let input = "{\"text\": \"apple pear\"}\n{\"text\": \"pear plum\", \"lables\": [\"x\"]}\n";
    let (ok, _, stderr) = fit(input, &["--model", "lda", "--topics", "2", "--iterations", "2"]);
    assert!(!ok);
    assert!(stderr.contains("line 2") && stderr.contains("did you mean \"labels\""), "{stderr}");
    let (ok, _, stderr) = fit(
        "{\"text\": \"apple\"}\n{\"text\": \"pear\", \"labels\": [\"a\"]}\n{\"tree\": [{\"label\": \"a\"}]}\n",
        &["--model", "lda", "--topics", "2", "--iterations", "2"],
    );
    assert!(!ok);
    assert!(stderr.contains("line 3") && stderr.contains("tree lines must come before the first document"), "{stderr}");
}

/// `--out FILE` writes the model's bytes, the blob the service stores: they decode as
/// the family's model, and the same seed on another thread count writes the same bytes.
#[test]
fn out_writes_the_model_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    std::fs::write(&input, labelled_with_a_tree_line()).unwrap();
    let run = |threads: &str, out: &std::path::Path| {
        let status = Command::new(env!("CARGO_BIN_EXE_topicd"))
            .args(["fit", "--model", "lda", "--topics", "3", "--iterations", "5", "--seed", "4", "--threads", threads, "--input"])
            .arg(&input)
            .arg("--out")
            .arg(out)
            .output()
            .expect("topicd runs");
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
        std::fs::read(out).expect("the model file is written")
    };
    let one = run("1", &dir.path().join("one.bin"));
    let two = run("2", &dir.path().join("two.bin"));
    assert_eq!(one, two);
    let family = topicd::models::registry::lookup("lda").expect("lda is registered");
    let model = family.decode(&one).expect("the bytes are an LDA model");
    assert_eq!(model.num_components(), 3);
}
