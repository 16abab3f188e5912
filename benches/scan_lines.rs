//! The pure Rust envelope scan (`envelope::validate`, the walk a lazy decode does for every line,
//! payloads skipped and validated) timed per line, with no Python around it: best of N passes over
//! each NDJSON file given, in ns per message. Run under `valgrind --tool=callgrind
//! --toggle-collect='scan_lines::run'` it counts the scan alone.
//!
//! `--shapes` adds synthetic corpora made here: two that differ only in the order of their payload
//! values: every line carries the same eight values (strings short and long, integer, fraction,
//! `true`, `null`, an array, an object), in one fixed order on every line or shuffled per line.
//! Same bytes, same instructions (within 1 %): what separates their times is the branch
//! predictor, on this machine's CPU. (callgrind's simulated predictor, `--branch-sim=yes`, says
//! little about that: see benches/README.md, issue 14's sixth round.) And two of one payload
//! shape each: a long plain string, and many small values (see [`payloads`]).
//!
//!     cargo bench --bench scan_lines -- [--shapes] [--reps N] [FILE ...]

use std::time::Instant;

use _core::envelope::{validate, Item};

/// One pass over `lines`: the number of items (one per line that is not a batch).
#[inline(never)]
fn run(lines: &[&[u8]], out: &mut Vec<Item>) -> usize {
    let mut n = 0;
    for line in lines {
        out.clear();
        validate(line, true, out);
        n += out.len();
    }
    n
}

/// The best of `reps` passes, in ns per line, and the items of one pass.
fn best(lines: &[&[u8]], reps: usize) -> (f64, usize) {
    let mut out = Vec::new();
    let mut fastest = f64::MAX;
    let mut items = 0;
    for _ in 0..reps {
        let start = Instant::now();
        items = run(lines, &mut out);
        fastest = fastest.min(start.elapsed().as_nanos() as f64 / lines.len().max(1) as f64);
    }
    (fastest, items)
}

/// The eight payload values of every `--shapes` line.
const VALUES: [&str; 8] = [
    r#""abcdefgh""#,
    "12345",
    "true",
    r#"[1,"x"]"#,
    r#"{"x":1}"#,
    "null",
    r#""a longer string value here""#,
    "-7.5",
];

/// 20,000 request lines with [`VALUES`] as params, in order or shuffled per line (xorshift, fixed
/// seed: the same bytes on every run).
fn shapes(shuffled: bool) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut text = Vec::new();
    for id in 0..20_000 {
        let mut order: Vec<usize> = (0..VALUES.len()).collect();
        if shuffled {
            for k in (1..order.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                order.swap(k, (state % (k as u64 + 1)) as usize);
            }
        }
        let members: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(k, &v)| format!("\"{}\":{}", char::from(b'a' + k as u8), VALUES[v]))
            .collect();
        text.extend_from_slice(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{{}}}}}\n",
                members.join(",")
            )
            .as_bytes(),
        );
    }
    text
}

/// 5,000 result lines of one payload shape each: `text`, one 1,500-byte string of plain ASCII (what
/// a string search crosses 32 bytes at a time), or not, twenty small objects of integers,
/// literals, short strings and arrays of numbers (~1 KB of tokens, a value every few bytes).
/// Fixed seed: the same bytes on every run. (A structural pre-pass by 64-byte blocks was slower on
/// both, and on the corpora: benches/README.md, issue 14's tenth round.)
fn payloads(text: bool) -> Vec<u8> {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut out = Vec::new();
    for id in 0..5_000 {
        let result = if text {
            let words = ["alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "];
            let mut s = String::new();
            while s.len() < 1_500 {
                s.push_str(words[next(6) as usize]);
            }
            format!("{{\"content\":[{{\"type\":\"text\",\"text\":\"{s}\"}}]}}")
        } else {
            let scalars = ["true", "false", "null", "\"x\"", "\"yz\""];
            let rows: Vec<String> = (0..20)
                .map(|_| {
                    let digits = next(7) as u32;
                    let a = next(10u64.pow(digits));
                    let b = scalars[next(5) as usize];
                    let c: Vec<String> = (0..next(4))
                        .map(|_| format!("0.{}", next(1_000_000)))
                        .collect();
                    format!("{{\"a\":{a},\"b\":{b},\"c\":[{}]}}", c.join(","))
                })
                .collect();
            format!("{{\"rows\":[{}]}}", rows.join(","))
        };
        out.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n").as_bytes(),
        );
    }
    out
}

fn report(name: &str, data: &[u8], reps: usize) {
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let (ns, items) = best(&lines, reps);
    println!(
        "{name}: {} lines, {items} items, best of {reps}: {ns:.1} ns/line",
        lines.len()
    );
}

fn main() {
    let mut reps = 50;
    let mut with_shapes = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--shapes" => with_shapes = true,
            "--reps" => reps = args.next().and_then(|n| n.parse().ok()).expect("--reps N"),
            // `cargo bench` passes `--bench` to every bench binary
            "--bench" => {}
            _ => files.push(arg),
        }
    }
    if with_shapes {
        report("shapes, fixed order", &shapes(false), reps);
        report("shapes, shuffled", &shapes(true), reps);
        report("payloads, long text", &payloads(true), reps);
        report("payloads, dense values", &payloads(false), reps);
    }
    for file in files {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        report(&file, &data, reps);
    }
}
