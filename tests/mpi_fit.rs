//! `mpirun -n R topicd fit --out FILE` (feature `mpi`): one fit over R Open MPI ranks on
//! this machine writes the very bytes the single-process fit writes, for R = 1..4 (LDA,
//! HPC, and HDP but for its passes' wall-clock seconds), a fit that loses a rank resumes
//! from its checkpoint over another rank count to the same bytes, and a bad input ends
//! every rank with the line named.
//!
//! Run with `cargo test --features mpi --test mpi_fit` where Open MPI is installed
//! (`.ci/run` does). CI runs as root, which Open MPI refuses unless told otherwise: the
//! allow-run-as-root variables are set on each `mpirun` command here, not globally.
#![cfg(feature = "mpi")]

use std::path::Path;
use std::process::{Command, Output};

/// 2 000 documents of 300 tokens over 600 words (600 000 tokens, a 4 × 4 grid of
/// blocks), as `counts` lines: word w of document d drawn from a fixed generator, topic
/// blocks of words favoured by document.
fn corpus() -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut lines = String::new();
    for d in 0..2_000 {
        let mut counts = std::collections::BTreeMap::new();
        let favoured = d % 6;
        for _ in 0..300 {
            let r = next();
            let w = if r % 10 < 8 { favoured * 100 + (r >> 8) as usize % 100 } else { (r >> 8) as usize % 600 };
            *counts.entry(format!("w{w}")).or_insert(0u32) += 1;
        }
        lines.push_str(&serde_json::json!({"id": format!("d{d}"), "counts": counts}).to_string());
        lines.push('\n');
    }
    lines
}

const FIT: [&str; 14] =
    ["--model", "lda", "--topics", "8", "--iterations", "6", "--stopwords", "none", "--param", "optimize_interval=2", "--param", "chains=2", "--seed", "3"];

/// `mpirun --oversubscribe -n RANKS topicd fit --input INPUT`, with Open MPI's
/// allow-run-as-root variables on this command only.
fn world_fit(ranks: usize, input: &Path) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_topicd"))
        .arg("fit")
        .arg("--input")
        .arg(input)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

fn mpirun(ranks: usize, input: &Path, out: &Path) -> Output {
    world_fit(ranks, input).args(FIT).arg("--out").arg(out).output().expect("mpirun runs (Open MPI installed)")
}

#[test]
fn every_rank_count_writes_the_single_process_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    std::fs::write(&input, corpus()).unwrap();
    let single = dir.path().join("single.bin");
    let out = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(&input).args(FIT).arg("--out").arg(&single).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = std::fs::read(&single).unwrap();
    for ranks in 1..=4 {
        let path = dir.path().join(format!("ranks{ranks}.bin"));
        let out = mpirun(ranks, &input, &path);
        assert!(out.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&out.stderr));
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(line["ranks"], ranks, "{line}");
        assert_eq!(line["per_rank"].as_array().map(Vec::len), Some(ranks), "{line}");
        if ranks > 1 {
            assert!(line["per_rank"].as_array().unwrap().iter().all(|r| r["bytes_sent"].as_u64() > Some(0)), "every rank sends: {line}");
        }
        assert!(std::fs::read(&path).unwrap() == expected, "{ranks} ranks wrote other bytes than one process");
    }
}

/// The processes whose parent is `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: the command may hold spaces, so read after ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            children.push(child);
        }
    }
    children
}

/// Start `fit_args` over 3 ranks keeping a checkpoint in `checkpoint` after every
/// sweep or pass, SIGKILL the last rank once the first checkpoint is there, and check
/// that the world ends with an error.
fn kill_a_rank_after_a_checkpoint(input: &Path, fit_args: &[&str], checkpoint: &Path) {
    let mut world = world_fit(3, input)
        .args(fit_args)
        .arg("--checkpoint")
        .arg(checkpoint)
        .args(["--checkpoint-every-s", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mpirun starts");
    let started = std::time::Instant::now();
    while !checkpoint.exists() {
        assert!(started.elapsed().as_secs() < 120, "no checkpoint within two minutes");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ranks = children_of(world.id());
    assert_eq!(ranks.len(), 3, "mpirun's children are the three ranks: {ranks:?}");
    let victim = *ranks.iter().max().unwrap();
    assert!(Command::new("kill").args(["-KILL", &victim.to_string()]).status().unwrap().success());
    assert!(!world.wait().unwrap().success(), "the world ends when a rank dies");
}

/// A fit over 3 ranks that keeps a checkpoint after every sweep loses a rank to
/// SIGKILL part-way: the world ends with an error. Resumed from its checkpoint over 2
/// ranks, and in one process, it writes the uninterrupted fit's bytes.
#[test]
fn a_killed_rank_then_a_resume_over_other_rank_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    std::fs::write(&input, corpus()).unwrap();
    let long = ["--model", "lda", "--topics", "8", "--iterations", "150", "--stopwords", "none", "--seed", "5"];
    let run_single = |extra: &[&std::ffi::OsStr]| {
        let out = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(&input).args(long).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let expected_path = dir.path().join("expected.bin");
    run_single(&["--out".as_ref(), expected_path.as_os_str()]);
    let expected = std::fs::read(&expected_path).unwrap();

    let checkpoint = dir.path().join("fit.ckpt");
    kill_a_rank_after_a_checkpoint(&input, &long, &checkpoint);
    let saved = std::fs::read(&checkpoint).unwrap();

    // Over 2 ranks.
    let resumed_path = dir.path().join("resumed2.bin");
    let out = world_fit(2, &input).args(long).arg("--resume").arg(&checkpoint).arg("--out").arg(&resumed_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(line["resumed"].as_str().is_some_and(|r| r.starts_with("from iteration")), "{line}");
    assert!(std::fs::read(&resumed_path).unwrap() == expected, "resumed over 2 ranks: other bytes");

    // In one process, from the same checkpoint.
    std::fs::write(&checkpoint, &saved).unwrap();
    let single_path = dir.path().join("resumed1.bin");
    let line = run_single(&["--resume".as_ref(), checkpoint.as_os_str(), "--out".as_ref(), single_path.as_os_str()]);
    assert!(line["resumed"].as_str().is_some_and(|r| r.starts_with("from iteration")), "{line}");
    assert!(std::fs::read(&single_path).unwrap() == expected, "resumed in one process: other bytes");
}

/// HDP with merges and deletes and a test split scored by document completion.
const HDP_FIT: [&str; 18] = [
    "--model",
    "hdp",
    "--topics",
    "10",
    "--stopwords",
    "none",
    "--seed",
    "3",
    "--param",
    "passes=5",
    "--param",
    "batches=2",
    "--param",
    "merge_every=2",
    "--param",
    "delete_every=2",
    "--param",
    "test_fraction=0.05",
];

#[test]
fn hdp_over_every_rank_count_writes_the_single_process_model() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    std::fs::write(&input, corpus()).unwrap();
    let single = dir.path().join("single.bin");
    let out = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(&input).args(HDP_FIT).arg("--out").arg(&single).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = std::fs::read(&single).unwrap();
    for ranks in 1..=4 {
        let path = dir.path().join(format!("hdp{ranks}.bin"));
        let out = world_fit(ranks, &input).args(HDP_FIT).arg("--out").arg(&path).output().expect("mpirun runs");
        assert!(out.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&out.stderr));
        let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(line["ranks"], ranks, "{line}");
        assert!(std::fs::read(&path).unwrap() == expected, "{ranks} ranks wrote another HDP model than one process");
    }
}

/// HDP over 3 ranks, checkpointing after every pass, loses a rank to SIGKILL; resumed
/// over 2 ranks it writes the uninterrupted model.
#[test]
fn hdp_with_a_killed_rank_resumes_over_two_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    std::fs::write(&input, corpus()).unwrap();
    // Enough passes that the kill lands part-way (no early stop).
    let long = ["--model", "hdp", "--topics", "8", "--stopwords", "none", "--seed", "4", "--param", "passes=120", "--param", "convergence_tolerance=0"];
    let expected_path = dir.path().join("expected.bin");
    let out = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(&input).args(long).arg("--out").arg(&expected_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let checkpoint = dir.path().join("hdp.ckpt");
    kill_a_rank_after_a_checkpoint(&input, &long, &checkpoint);
    let resumed_path = dir.path().join("resumed.bin");
    let out = world_fit(2, &input).args(long).arg("--resume").arg(&checkpoint).arg("--out").arg(&resumed_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(line["resumed"].as_str().is_some_and(|r| r.starts_with("from iteration")), "{line}");
    assert!(std::fs::read(&resumed_path).unwrap() == std::fs::read(&expected_path).unwrap(), "resumed over 2 ranks: another model");
}

/// A labelled corpus drawn from HPC's generative process by `topicd simulate-hpc`:
/// 600 documents over 300 words, 3 top labels with 3 children each.
fn hpc_corpus(path: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_topicd"))
        .args(["simulate-hpc", "--documents", "600", "--words", "300", "--fanout", "3,3", "--psi", "-3", "--eta", "-2", "--mean-length", "60", "--seed", "2"])
        .arg("--out")
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// HPC with validation and test splits (a calibration, a second chain on the training
/// and validation documents, a test evaluation).
const HPC_FIT: [&str; 14] = [
    "--model",
    "hpc",
    "--stopwords",
    "none",
    "--seed",
    "3",
    "--iterations",
    "6",
    "--param",
    "burn_in=2",
    "--param",
    "hessian_every=2",
    "--param",
    "test_fraction=0.15",
];

fn single_fit(input: &Path, args: &[&str], out: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_topicd")).arg("fit").arg("--input").arg(input).args(args).arg("--out").arg(out).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
}

#[test]
fn hpc_over_every_rank_count_writes_the_single_process_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("labelled.jsonl");
    hpc_corpus(&input);
    let single = dir.path().join("single.bin");
    single_fit(&input, &HPC_FIT, &single);
    let expected = std::fs::read(&single).unwrap();
    for ranks in 1..=4 {
        let path = dir.path().join(format!("hpc{ranks}.bin"));
        let out = world_fit(ranks, &input).args(HPC_FIT).arg("--out").arg(&path).output().expect("mpirun runs");
        assert!(out.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&out.stderr));
        assert!(std::fs::read(&path).unwrap() == expected, "{ranks} ranks wrote another HPC model than one process");
    }
}

/// HPC over 3 ranks, checkpointing after every scan, loses a rank to SIGKILL; resumed
/// over 2 ranks and in one process it writes the uninterrupted model.
#[test]
fn hpc_with_a_killed_rank_resumes_over_other_rank_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("labelled.jsonl");
    hpc_corpus(&input);
    let long = ["--model", "hpc", "--stopwords", "none", "--seed", "4", "--iterations", "200", "--param", "burn_in=20"];
    let expected_path = dir.path().join("expected.bin");
    single_fit(&input, &long, &expected_path);
    let expected = std::fs::read(&expected_path).unwrap();
    let checkpoint = dir.path().join("hpc.ckpt");
    kill_a_rank_after_a_checkpoint(&input, &long, &checkpoint);
    let resumed_path = dir.path().join("resumed.bin");
    let out = world_fit(2, &input).args(long).arg("--resume").arg(&checkpoint).arg("--out").arg(&resumed_path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(line["resumed"].as_str().is_some_and(|r| r.starts_with("from iteration")), "{line}");
    assert!(std::fs::read(&resumed_path).unwrap() == expected, "resumed over 2 ranks: another model");
    let one = dir.path().join("one.bin");
    let resume = [&long[..], &["--resume", checkpoint.to_str().unwrap()]].concat();
    single_fit(&input, &resume, &one);
    assert!(std::fs::read(&one).unwrap() == expected, "resumed in one process: another model");
}

#[test]
fn a_bad_line_ends_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.jsonl");
    std::fs::write(&input, "{\"text\": \"apple pear\"}\n{\"text\": \"pear plum\", \"lables\": [\"x\"]}\n").unwrap();
    let out = mpirun(3, &input, &dir.path().join("never.bin"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Every rank reports rank 0's error and exits; none waits for a shard.
    assert!(stderr.matches("line 2").count() >= 3, "{stderr}");
    assert!(!dir.path().join("never.bin").exists());
}
