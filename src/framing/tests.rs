//! Unit tests of the framer.

use super::*;

/// An owned copy of an event, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    F(u64, Vec<u8>),
    O(u64, Vec<u8>),
}

fn own(e: Event<'_>) -> Ev {
    match e {
        Event::Frame { offset, bytes } => Ev::F(offset, bytes.to_vec()),
        Event::Assembled { offset, bytes, .. } => Ev::F(offset, bytes),
        Event::Oversize { offset, preview } => Ev::O(offset, preview.to_vec()),
    }
}

fn run(max: usize, chunks: &[&[u8]]) -> Vec<Ev> {
    let mut f = Framer::new(max);
    let mut out = Vec::new();
    for c in chunks {
        f.feed(c, |e| out.push(own(e))).unwrap();
        assert!(f.buffered() <= max + 1);
    }
    f.close(|e| out.push(own(e))).unwrap();
    out
}

fn f(off: u64, b: &[u8]) -> Ev {
    Ev::F(off, b.to_vec())
}

#[test]
fn lf_crlf_blank_and_offsets() {
    let out = run(100, &[b"{\"a\":1}\n\r\n  \t\n{\"b\":2}\r\nx\ry\n"]);
    assert_eq!(
        out,
        vec![f(0, b"{\"a\":1}"), f(14, b"{\"b\":2}"), f(23, b"x\ry")]
    );
}

#[test]
fn close_delivers_unterminated_frame_as_if_terminated() {
    assert_eq!(run(100, &[b"a\nbc\r"]), vec![f(0, b"a"), f(2, b"bc")]);
    assert_eq!(run(100, &[b"a\nb\rc"]), vec![f(0, b"a"), f(2, b"b\rc")]);
    assert_eq!(run(100, &[b"a\n  \r"]), vec![f(0, b"a")]);
}

#[test]
fn bom_dropped_at_the_start_of_the_stream_and_of_every_frame() {
    assert_eq!(
        run(100, &[b"\xEF\xBB\xBF{}\n\xEF\xBB\xBF{}\n"]),
        vec![f(3, b"{}"), f(9, b"{}")]
    );
    // assembled from pieces, cut inside the BOM; a second BOM is content; a BOM and blanks are blank
    assert_eq!(
        run(
            100,
            &[
                b"{}\n\xEF",
                b"\xBB\xBF{",
                b"}\n\xEF\xBB\xBF\xEF\xBB\xBF1\n\xEF\xBB\xBF \r\n2"
            ]
        ),
        vec![
            f(0, b"{}"),
            f(6, b"{}"),
            f(12, b"\xEF\xBB\xBF1"),
            f(23, b"2")
        ]
    );
    // counted in the frame's size: the same result however the stream is cut
    let line = b"\xEF\xBB\xBF12345\n";
    assert_eq!(
        run(5, &[b"{}\n", line]),
        run(5, &[b"{}\n", &line[..4], &line[4..]])
    );
    assert_eq!(run(8, &[b"{}\n", line]), vec![f(0, b"{}"), f(6, b"12345")]);
    assert_eq!(
        run(8, &[b"{}\n", &line[..2], &line[2..]]),
        vec![f(0, b"{}"), f(6, b"12345")]
    );
    assert_eq!(run(100, &[b"1\n\xEF\xBB\xBF"]), vec![f(0, b"1")]);
    // one BOM per frame: the stream's is the first frame's
    assert_eq!(
        run(100, &[b"\xEF\xBB\xBF\xEF\xBB\xBF1\n"]),
        vec![f(3, b"\xEF\xBB\xBF1")]
    );
    assert_eq!(
        run(100, &[b"\xEF\xBB", b"\xBF\xEF", b"\xBB\xBF1\n"]),
        vec![f(3, b"\xEF\xBB\xBF1")]
    );
    assert_eq!(
        run(100, &[b"\xEF", b"\xBB", b"\xBF", b"1\n"]),
        vec![f(3, b"1")]
    );
    assert_eq!(run(100, &[b"\xEF\xBB", b"x\n"]), vec![f(0, b"\xEF\xBBx")]);
    assert_eq!(run(100, &[b"\xEF\xBB"]), vec![f(0, b"\xEF\xBB")]);
    assert_eq!(run(100, &[b"\xEF\n"]), vec![f(0, b"\xEF")]);
    assert_eq!(run(100, &[b"\xEF\xBB\xBF"]), vec![]);
}

#[test]
fn oversize_reported_once_and_followers_intact() {
    let stream = b"12345\n123456789\nab\n";
    let out = run(5, &[stream]);
    assert_eq!(
        out,
        vec![f(0, b"12345"), Ev::O(6, b"123456".to_vec()), f(16, b"ab")]
    );
}

#[test]
fn oversize_reported_before_terminator_arrives() {
    let mut fr = Framer::new(4);
    let mut out = Vec::new();
    fr.feed(b"abcd", |e| out.push(own(e))).unwrap();
    assert!(out.is_empty());
    fr.feed(b"e", |e| out.push(own(e))).unwrap();
    assert_eq!(out, vec![Ev::O(0, b"abcde".to_vec())]);
    fr.feed(&[b'z'; 1000], |e| out.push(own(e))).unwrap();
    assert_eq!(fr.buffered(), 0);
    fr.close(|e| out.push(own(e))).unwrap();
    assert_eq!(out.len(), 1);
}

#[test]
fn crlf_at_the_limit_fits() {
    assert_eq!(run(4, &[b"abcd\r", b"\n"]), vec![f(0, b"abcd")]);
    assert_eq!(
        run(4, &[b"abcd\r", b"x\n"]),
        vec![Ev::O(0, b"abcd\r".to_vec())]
    );
    // at close the frame ends as if terminated, so the CR is half of a CRLF
    assert_eq!(run(4, &[b"abcd\r"]), vec![f(0, b"abcd")]);
}

#[test]
fn whitespace_frames_are_size_checked() {
    assert_eq!(
        run(3, &[b"      \n1\n"]),
        vec![Ev::O(0, b"    ".to_vec()), f(7, b"1")]
    );
}

#[test]
fn preview_is_capped() {
    let big = vec![b'x'; 1000];
    let out = run(500, &[&big, b"\n"]);
    assert_eq!(out, vec![Ev::O(0, vec![b'x'; PREVIEW_BYTES])]);
}

#[test]
fn closed_framer_refuses() {
    let mut fr = Framer::new(10);
    fr.close(|_| {}).unwrap();
    assert_eq!(fr.feed(b"x", |_| {}), Err(Closed));
    assert_eq!(fr.close(|_| {}), Err(Closed));
}

#[test]
fn every_split_point_gives_the_same_events() {
    let stream: &[u8] =
        b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \n0123456789abc\r\n{\"b\":[1,2]}\nxy\r\rz\n0123456789\r\nq";
    for max in [3, 9, 10, 11, 12, 100] {
        let whole = run(max, &[stream]);
        for i in 0..=stream.len() {
            assert_eq!(
                run(max, &[&stream[..i], &stream[i..]]),
                whole,
                "max {max} split {i}"
            );
            for j in i..=stream.len() {
                let parts = [&stream[..i], &stream[i..j], &stream[j..]];
                assert_eq!(run(max, &parts), whole, "max {max} splits {i} {j}");
            }
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(run(max, &bytewise), whole);
    }
}

#[test]
fn large_frame_in_small_chunks_is_linear_and_exact() {
    let mut stream = vec![b'7'; 1 << 20];
    stream.push(b'\n');
    let chunks: Vec<&[u8]> = stream.chunks(4096).collect();
    let out = run(2 << 20, &chunks);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0], Ev::F(0, vec![b'7'; 1 << 20]));
}

/// The `Checked` of every assembled frame of `stream` fed in pieces of `size` bytes.
fn checked(stream: &[u8], size: usize) -> Vec<Checked> {
    let mut f = Framer::new(1 << 20);
    let mut out = Vec::new();
    let mut sink = |e: Event<'_>| {
        if let Event::Assembled { checked, .. } = e {
            out.push(checked);
        }
    };
    for piece in stream.chunks(size) {
        f.feed(piece, &mut sink).unwrap();
    }
    f.close(&mut sink).unwrap();
    out
}

#[test]
fn assembled_frames_come_checked() {
    let good = "[{\"é\":\"日😀\"},[]]\r\n{\"a\":[[\"x\"]]}".as_bytes();
    for size in 1..8 {
        let want = vec![
            Checked {
                utf8: true,
                opening: 3,
            },
            Checked {
                utf8: true,
                opening: 3,
            },
        ];
        assert_eq!(checked(good, size), want, "pieces of {size}");
    }
    // a bad byte, a truncated character, a BOM-like start that is not a BOM
    for bad in [
        &b"[\"a\xffb\"]\n"[..],
        b"[\"\xe6\x97\"]\n",
        b"\xef\xbb[1]\n",
    ] {
        for size in 1..4 {
            let got = checked(bad, size);
            assert_eq!(got.len(), 1);
            assert!(!got[0].utf8, "{bad:?} in pieces of {size}");
            assert_eq!(got[0].opening, 1);
        }
    }
}

#[test]
fn newline_searchers_agree() {
    // the AVX2 searcher (where the CPU has it) and the generic one find the same newlines,
    // at every offset and length around the 32-byte vectors
    let mut text = Vec::new();
    for k in 0..300u32 {
        text.push(if k % 37 == 0 || k % 101 == 3 {
            b'\n'
        } else {
            b'a' + (k % 26) as u8
        });
    }
    let fast = Newlines::new();
    for start in 0..text.len() {
        for end in start..(start + 80).min(text.len()) {
            let hay = &text[start..end];
            assert_eq!(fast.find(hay), Newlines::Generic.find(hay));
            assert_eq!(fast.find(hay), hay.iter().position(|&b| b == b'\n'));
        }
    }
}

#[test]
fn assembled_frames_keep_no_room_held_for_their_rest() {
    // a short line written in two pieces: the held buffer had HELD_ROOM spare; the messages built on the
    // handed-over buffer keep it alive, so it must come back about its length
    let mut f = Framer::new(1 << 20);
    let mut spare = Vec::new();
    let mut sink = |e: Event<'_>| {
        if let Event::Assembled { bytes, .. } = e {
            spare.push(bytes.capacity() - bytes.len());
        }
    };
    for _ in 0..50 {
        f.feed(b"{\"jsonrpc\":\"2.0\",", &mut sink).unwrap();
        f.feed(b"\"method\":\"x\"}\n", &mut sink).unwrap();
    }
    // a long frame gathered over many small chunks (growth's slack is given back too)
    let long = vec![b'1'; 100_000];
    for piece in long.chunks(777) {
        f.feed(piece, &mut sink).unwrap();
    }
    f.feed(b"\n", &mut sink).unwrap();
    assert_eq!(spare.len(), 51);
    assert!(spare.iter().all(|&s| s <= HELD_ROOM / 2), "{spare:?}");
}
