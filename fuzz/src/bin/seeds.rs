//! Writes the well-formed inputs of each fuzz target (`topicd::fuzzing::valid_inputs`)
//! into `<dir>/<target>/seed-<i>`, so libFuzzer starts from valid bodies and blobs.
//!
//! Usage: `seeds DIR [TARGET...]` (no target: all of them).

use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: seeds DIR [TARGET...]");
        std::process::exit(2);
    };
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = topicd::fuzzing::TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    }
    for name in &names {
        if topicd::fuzzing::target(name).is_none() {
            eprintln!("no fuzz target is called {name}");
            std::process::exit(2);
        }
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).expect("the corpus folder can be created");
        let inputs = topicd::fuzzing::valid_inputs(name);
        for (i, input) in inputs.iter().enumerate() {
            std::fs::write(folder.join(format!("seed-{i}")), input).expect("a seed can be written");
        }
        println!("{name}: {} seeds", inputs.len());
    }
}
