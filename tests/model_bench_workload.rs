//! The model rules over the 100k-event benchmark workload (the log the
//! original was measured on): it parses, converts, passes the lenient and
//! the strict validation, is balanced (no closers), and derives one
//! model-visible message per surface event. Speed is measured by
//! `dsh-persist bench`, not here.

mod support;

use dsh_persist::model::event::Event;
use dsh_persist::model::surface::derive_messages;
use dsh_persist::model::validate::session_view;
use dsh_persist::model::vocabulary::Vocabulary;

#[test]
fn the_benchmark_log_passes_every_rule() {
    let path = support::bench_dir().join("workload-100k.jsonl.zst");
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(zstd::decode_all(&bytes[..]).unwrap()).unwrap();
    let mut events: Vec<Event> = text.lines().map(|l| Event::parse(l).unwrap()).collect();
    assert_eq!(events.len(), 100_205);
    let vocab = Vocabulary::default();
    // strict: the lenient rules and the turn/step trace
    let closers = session_view("bench", None, &vocab, true, &mut events).unwrap();
    assert!(closers.is_empty(), "the workload ends with a closed turn");
    let surface = events
        .iter()
        .filter(|e| {
            matches!(
                e.type_str(),
                "user/message" | "tool/result" | "assistant/message"
            )
        })
        .count();
    let messages = derive_messages(&events);
    assert!(
        !messages.is_empty() && messages.len() <= surface,
        "{} messages of {surface} surface events",
        messages.len()
    );
    assert_eq!(
        events.iter().filter(|e| e.type_str() == "turn/end").count(),
        188
    );
}
