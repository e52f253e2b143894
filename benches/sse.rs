//! Decoding a model stream whose `data:` line is 10 MB (a model writing a large file in
//! one tool-call fragment), as it arrives in 16 KiB network reads, beside a stream of
//! the same size in ordinary small events. The two should take about the same time:
//! a decoder that rescans a partial line on each read is quadratic on the first.
//! Run with `cargo bench --bench sse`; numbers are printed, never asserted.

use std::time::Instant;

use bb7::llm::sse::SseDecoder;

const SIZE: usize = 10 * 1024 * 1024;
const READ: usize = 16 * 1024;

fn decode(body: &[u8]) -> (usize, std::time::Duration) {
    let started = Instant::now();
    let mut decoder = SseDecoder::default();
    let mut events = 0;
    for piece in body.chunks(READ) {
        events += decoder.push(piece).map_or(0, |e| e.len());
    }
    (events, started.elapsed())
}

fn main() {
    let mut long = b"data: ".to_vec();
    long.resize(SIZE, b'x');
    long.extend_from_slice(b"\r\n\r\n");
    let small_event = format!("data: {}\r\n\r\n", "y".repeat(200));
    let small = small_event.repeat(SIZE / small_event.len());
    for (name, body) in [
        ("one 10 MB line", long),
        ("small events", small.into_bytes()),
    ] {
        let (events, took) = decode(&body);
        println!("{name:>16}: {events:>6} events in {took:?}");
    }
}
