//! Cost of the model rules on the 100k-event benchmark workload, compared
//! with the cost of parsing the events: the rules must stay a small
//! fraction of a load (SPEC §10). Timings are printed; the assertion is a
//! loose ratio so the test holds in debug builds on a shared machine.

mod support;

use std::time::Instant;

use dsh_persist::model::event::Event;
use dsh_persist::model::legacy::convert_legacy;
use dsh_persist::model::repair::closers;
use dsh_persist::model::surface::derive_messages;
use dsh_persist::model::validate::validate_session;
use dsh_persist::model::vocabulary::Vocabulary;

#[test]
fn rules_cost_a_fraction_of_parsing() {
    let path = support::bench_dir().join("workload-100k.jsonl.zst");
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(zstd::decode_all(&bytes[..]).unwrap()).unwrap();
    let t = Instant::now();
    let mut events: Vec<Event> = text.lines().map(|l| Event::parse(l).unwrap()).collect();
    let parse = t.elapsed();
    assert_eq!(events.len(), 100_205);

    let t = Instant::now();
    convert_legacy("bench", &mut events).unwrap();
    validate_session("bench", None, &Vocabulary::default(), false, &events).unwrap();
    let c = closers(&events);
    let rules = t.elapsed();

    let t = Instant::now();
    validate_session("bench", None, &Vocabulary::default(), true, &events).unwrap();
    let strict = t.elapsed();

    let t = Instant::now();
    let msgs = derive_messages(&events);
    let derive = t.elapsed();

    eprintln!(
        "parse {parse:?}; convert+validate+closers {rules:?}; strict validate {strict:?}; derive_messages {derive:?} ({} messages, {} closers)",
        msgs.len(),
        c.len()
    );
    assert!(rules < parse, "rules {rules:?} vs parse {parse:?}");
    assert!(strict < parse * 2, "strict {strict:?} vs parse {parse:?}");
}
