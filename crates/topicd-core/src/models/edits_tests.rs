use super::*;
use serde_json::json;

fn ops(v: Value) -> Vec<EditOp> {
    parse_operations(&v).unwrap()
}

fn refused(v: Value, k: usize, retired: &RetiredTopics) -> ParamError {
    match parse_operations(&v) {
        Err(e) => e,
        Ok(o) => plan(o, k, retired).unwrap_err(),
    }
}

/// The example on six topics: untouched topics keep their ids, a merge keeps
/// its first topic's, a split's extra part takes the next new id, deleted and merged
/// away topics are retired in place.
#[test]
fn a_plan_keeps_untouched_ids_and_appends_new_parts() {
    let o = ops(json!([{"op": "merge", "topics": [1, 2]}, {"op": "split", "topic": 4, "into": 3}, {"op": "delete", "topic": 3}]));
    let p = plan(o, 6, &RetiredTopics::new()).unwrap();
    assert_eq!(p.child_topics(), 8);
    assert_eq!(p.origins[0], Origin::Kept);
    assert_eq!(p.origins[5], Origin::Kept);
    assert_eq!(p.origins[1], Origin::Merged { topics: vec![1, 2] });
    assert_eq!(p.origins[2], Origin::Retired { reason: "merged into 1".into() });
    assert_eq!(p.origins[3], Origin::Retired { reason: "deleted".into() });
    assert_eq!(p.origins[4], Origin::Split { topic: 4, part: 0 });
    assert_eq!(p.origins[6], Origin::Split { topic: 4, part: 1 });
    assert_eq!(p.origins[7], Origin::Split { topic: 4, part: 2 });
    assert_eq!(p.fates[4], Fate::Split { operation: 1, parts: vec![4, 6, 7] });
    assert_eq!((p.destination(0), p.destination(1), p.destination(2), p.destination(3), p.destination(4)), (Some(0), Some(1), Some(1), None, None));
    assert_eq!(p.retired().keys().copied().collect::<Vec<_>>(), vec![2, 3]);
}

#[test]
fn names_follow_ids_and_seeds_name_split_parts() {
    let parent: BTreeMap<usize, String> = [(0, "zero"), (1, "one"), (2, "two"), (3, "three")].into_iter().map(|(k, n)| (k, n.to_string())).collect();
    let o = ops(
        json!([{"op": "merge", "topics": [2, 1]}, {"op": "split", "topic": 3, "into": 2, "seed_words": [{"name": "a", "words": ["x"]}, {"name": "b", "words": ["y"]}]}]),
    );
    let p = plan(o, 4, &RetiredTopics::new()).unwrap();
    assert_eq!(p.child_names(&parent), vec![(0, "zero".into()), (2, "two".into()), (3, "a".into()), (4, "b".into())]);
    let unseeded = plan(ops(json!([{"op": "split", "topic": 0, "into": 2}])), 4, &RetiredTopics::new()).unwrap();
    assert_eq!(unseeded.child_names(&parent)[0], (0, "zero".into()), "the first part keeps the name without seeds");
    assert!(!unseeded.child_names(&parent).iter().any(|(k, _)| *k == 4), "the new part has no name");
}

/// Every refusal names the operation (and key) at fault.
#[test]
fn refusals_name_the_operation() {
    let none = RetiredTopics::new();
    let cases = [
        (json!([{"op": "merge", "topics": [1, 1]}]), "operations[0].topics[1]", "with itself"),
        (json!([{"op": "merge", "topics": [1]}]), "operations[0].topics", "at least two"),
        (json!([{"op": "split", "topic": 2, "into": 1}]), "operations[0].into", "2 to"),
        (json!([{"op": "delete", "topic": 9}]), "operations[0].topic", "does not exist"),
        (json!([{"op": "delete", "topic": 1}, {"op": "merge", "topics": [0, 1]}]), "operations[1].topics[1]", "already changed by operations[0]"),
        (json!([{"op": "explode", "topic": 1}]), "operations[0].op", "not an operation"),
        (json!([{"op": "delete", "topic": 1, "into": 2}]), "operations[0].into", "unknown key"),
        (json!([{"op": "split", "topic": 1, "into": 2, "seed_words": [{"name": "a", "words": ["x"]}]}]), "operations[0].seed_words", "one seed per part"),
        (
            json!([{"op": "split", "topic": 1, "into": 2, "seed_words": [{"name": "", "words": ["x"]}, {"name": "b", "words": ["y"]}]}]),
            "operations[0].seed_words[0].name",
            "non-empty",
        ),
        (json!([]), "operations", "1 to"),
        (
            json!([{"op": "delete", "topic": 0}, {"op": "delete", "topic": 1}, {"op": "delete", "topic": 2}, {"op": "delete", "topic": 3}]),
            "operations",
            "no topic",
        ),
    ];
    for (v, field, words) in cases {
        let e = refused(v.clone(), 4, &none);
        assert_eq!(e.field, field, "{v}: {e:?}");
        assert!(e.message.contains(words), "{v}: {e:?}");
    }
    let retired: RetiredTopics = [(2, "merged into 1".to_string())].into();
    let e = refused(json!([{"op": "delete", "topic": 2}]), 4, &retired);
    assert_eq!((e.field.as_str(), e.message.contains("merged into 1")), ("operations[0].topic", true), "{e:?}");
}

/// A child's record carries its retired topics into the next edit, and ops survive JSON.
#[test]
fn records_round_trip_and_carry_retired_topics() {
    let p = plan(ops(json!([{"op": "delete", "topic": 1}])), 3, &[(0, "merged into 2".to_string())].into()).unwrap();
    let record = EditRecord::of(&p, 1);
    let back: EditRecord = serde_json::from_value(serde_json::to_value(&record).unwrap()).unwrap();
    assert_eq!(back, record);
    assert_eq!(back.retired(), [(0, "merged into 2".to_string()), (1, "deleted".to_string())].into());
    assert_eq!(serde_json::to_value(&record.operations).unwrap(), json!([{"op": "delete", "topic": 1}]));
}
