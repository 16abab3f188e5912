//! A plain HTTP/1.1 request read in one pass: the lean HTTP server's common case, without httptools'
//! per-field callbacks. The rules (which requests are plain, what is read of them) are the core
//! contract's `plain_request` (`docs/core-contract.md`); anything else is `None`, and the server hands
//! the bytes to httptools, which parses (or refuses) everything.

/// The longest head read here (half the lean server's bound on a head, whose count is not a byte count).
pub const MAX_PLAIN_HEAD: usize = 32 * 1024;

/// The most digits of a plain Content-Length (llhttp's own overflow check is left to it beyond).
const MAX_LENGTH_DIGITS: usize = 15;

/// A plain request found in a buffer: byte ranges into it (a header's name is lowercased by its reader).
#[derive(Debug, PartialEq, Eq)]
pub struct PlainRequest {
    /// `GET`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The request target (origin form).
    pub target: (usize, usize),
    /// Each header's name's range (as sent: the contract's name is it lowercased) and its value's range
    /// (leading blanks dropped, the rest kept). Ranges, not lowercased copies: a `Vec` per name allocated
    /// and freed cost more than the rest of the head's parse.
    pub headers: Vec<((usize, usize), (usize, usize))>,
    /// The body (Content-Length bytes; empty without one).
    pub body: (usize, usize),
    /// Where the next request starts.
    pub next: usize,
}

const TOKEN: u8 = 1;
const URL: u8 = 2;
/// A byte of a head line: HTAB, visible ASCII, SP or obs-text (no CR, LF or other control).
const TEXT: u8 = 4;

const fn class_of(byte: u8) -> u8 {
    let token = matches!(byte, b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z')
        || matches!(
            byte,
            b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        )
        || matches!(byte, b'^' | b'_' | b'`' | b'|' | b'~');
    let url = matches!(byte, b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z')
        || matches!(
            byte,
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')'
        )
        || matches!(
            byte,
            b'*' | b'+' | b',' | b';' | b'=' | b':' | b'@' | b'/' | b'?' | b'%'
        );
    let text = matches!(byte, b'\t' | b' '..=b'~' | 0x80..=0xff);
    (if token { TOKEN } else { 0 }) | (if url { URL } else { 0 }) | (if text { TEXT } else { 0 })
}

/// Each byte's classes (one table lookup per byte on the hot path).
static CLASS: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = class_of(byte as u8);
        byte += 1;
    }
    table
};

fn all(bytes: &[u8], class: u8) -> bool {
    bytes.iter().all(|&b| CLASS[usize::from(b)] & class != 0)
}

/// The head's lines after `from` (CRLF-ended, of `TEXT` bytes) up to the empty line that ends it, as
/// ranges into `window`, and where the head's end (the empty line's CRLF) ends; `None` if a line holds
/// another byte, a CR or LF alone, or the head does not end within `window`.
fn head_lines(window: &[u8], lines: &mut Vec<(usize, usize)>) -> Option<usize> {
    let mut at = 0;
    loop {
        let rest = window.get(at..)?;
        let eol = at + memchr::memchr2(b'\r', b'\n', rest)?;
        if window[eol] != b'\r'
            || window.get(eol + 1) != Some(&b'\n')
            || !all(&window[at..eol], TEXT)
        {
            return None;
        }
        if eol == at {
            return if lines.is_empty() {
                None
            } else {
                Some(eol + 2)
            };
        }
        lines.push((at, eol));
        at = eol + 2;
    }
}

/// Headers that change how a request is framed or kept (`Connection` is plain as `keep-alive` only).
const NOT_PLAIN: [&[u8]; 4] = [
    b"transfer-encoding",
    b"expect",
    b"upgrade",
    b"proxy-connection",
];

/// The plain request whose first byte is `data[start]`, or `None` (see the module doc).
pub fn plain_request(data: &[u8], start: usize) -> Option<PlainRequest> {
    let limit = data.len().min(start.saturating_add(MAX_PLAIN_HEAD));
    let window = data.get(start..limit)?;
    let mut lines = Vec::with_capacity(16);
    let head_end = start + head_lines(window, &mut lines)?;
    let (line_start, line_end) = lines[0];
    let mut parts = window[line_start..line_end].split(|&b| b == b' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || version != b"HTTP/1.1" {
        return None;
    }
    let method = match method {
        b"GET" => "GET",
        b"POST" => "POST",
        b"DELETE" => "DELETE",
        _ => return None,
    };
    if target.first() != Some(&b'/') || !all(target, URL) {
        return None;
    }
    let target_start = start + method.len() + 1;
    let target = (target_start, target_start + target.len());
    let mut headers = Vec::with_capacity(lines.len() - 1);
    let mut length: Option<usize> = None;
    for &(from, to) in &lines[1..] {
        let line = &window[from..to];
        let colon = memchr::memchr(b':', line)?;
        let name = &line[..colon];
        if name.is_empty() || !all(name, TOKEN) {
            return None;
        }
        let blanks = line[colon + 1..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        let value = &line[colon + 1 + blanks..];
        if name.eq_ignore_ascii_case(b"content-length") {
            let digits_ok = !value.is_empty()
                && value.len() <= MAX_LENGTH_DIGITS
                && value.iter().all(u8::is_ascii_digit);
            if length.is_some() || !digits_ok {
                return None;
            }
            // at most 15 digits: no overflow on a 64-bit usize
            length = Some(value.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0')));
        } else if name.eq_ignore_ascii_case(b"connection") {
            if !value.eq_ignore_ascii_case(b"keep-alive") {
                return None;
            }
        } else if NOT_PLAIN
            .iter()
            .any(|other| name.eq_ignore_ascii_case(other))
        {
            return None;
        }
        let value_from = start + from + colon + 1 + blanks;
        headers.push((
            (start + from, start + from + colon),
            (value_from, start + to),
        ));
    }
    let length = length.unwrap_or(0);
    if data.len() - head_end < length {
        return None;
    }
    Some(PlainRequest {
        method,
        target,
        headers,
        body: (head_end, head_end + length),
        next: head_end + length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request read, as owned parts: method, target, headers, body, next.
    type Read = (String, Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>, Vec<u8>, usize);

    fn read(data: &[u8]) -> Option<Read> {
        let got = plain_request(data, 0)?;
        let slice = |(a, b): (usize, usize)| data[a..b].to_vec();
        let headers = got
            .headers
            .iter()
            .map(|(n, v)| (slice(*n).to_ascii_lowercase(), slice(*v)))
            .collect();
        Some((
            got.method.to_string(),
            slice(got.target),
            headers,
            slice(got.body),
            got.next,
        ))
    }

    #[test]
    fn reads_a_plain_post_with_its_body() {
        let data = b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}GET";
        let (method, target, headers, body, next) = read(data).unwrap();
        assert_eq!((method.as_str(), target.as_slice()), ("POST", &b"/mcp"[..]));
        assert_eq!(
            headers,
            vec![
                (b"host".to_vec(), b"a".to_vec()),
                (b"content-length".to_vec(), b"2".to_vec())
            ]
        );
        assert_eq!((body.as_slice(), next), (&b"{}"[..], data.len() - 3));
    }

    #[test]
    fn keeps_blanks_as_llhttp_does() {
        let data = b"GET / HTTP/1.1\r\nA: x \r\nB:\r\nC:  \r\nD:\ta\tb\t\r\n\r\n";
        let (_, _, headers, _, _) = read(data).unwrap();
        let values: Vec<&[u8]> = headers.iter().map(|(_, v)| v.as_slice()).collect();
        assert_eq!(values, vec![&b"x "[..], b"", b"", b"a\tb\t"]);
    }

    #[test]
    fn reads_a_request_at_an_offset() {
        let data = b"xxGET /a HTTP/1.1\r\n\r\n";
        let got = plain_request(data, 2).unwrap();
        assert_eq!((got.target, got.next), ((6, 8), data.len()));
        assert!(plain_request(data, 40).is_none());
    }

    #[test]
    fn leaves_what_is_not_plain() {
        let cases: &[&[u8]] = &[
            b"POST /mcp HTTP/1.0\r\n\r\n",
            b"PUT /mcp HTTP/1.1\r\n\r\n",
            b"POST  /mcp HTTP/1.1\r\n\r\n",
            b"POST /a\"b HTTP/1.1\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
            b"POST /mcp HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}",
            b"POST /mcp HTTP/1.1\r\nContent-Length: 2 \r\n\r\n{}",
            b"POST /mcp HTTP/1.1\r\nContent-Length: 1234567890123456\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}",
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nConnection: close\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nA: x\r\n b\r\n\r\n",
            b"POST /mcp HTTP/1.1\nA: x\n\n",
            b"POST /mcp HTTP/1.1\r\nA: x\rb\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nA: \x7f\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nA : x\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\n: x\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nA x\r\n\r\n",
            b"POST /mcp HTTP/1.1\r\nA: x\r\n",
            b"\r\n\r\n",
            b"",
        ];
        for case in cases {
            assert!(
                plain_request(case, 0).is_none(),
                "{:?}",
                String::from_utf8_lossy(case)
            );
        }
    }

    #[test]
    fn bounds_the_head() {
        let mut data = b"GET / HTTP/1.1\r\nA: ".to_vec();
        data.resize(MAX_PLAIN_HEAD, b'x');
        data.extend_from_slice(b"\r\n\r\n");
        assert!(plain_request(&data, 0).is_none());
        data.drain(20..40);
        assert!(plain_request(&data, 0).is_some());
    }
}
