//! Chunkings derived from the input itself, so that a saved input replays exactly, and the seed
//! corpus (plain NDJSON files) needs no header: a hash of the bytes seeds a small generator that
//! picks the split points and the frame size limit.

/// splitmix64, seeded by the FNV-1a hash of the input: deterministic and cheap.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded by `data`'s bytes.
    pub fn for_input(data: &[u8]) -> Self {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Self(hash)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Up to eight sorted split points in `0..=len` (repeats allowed: an empty chunk is legal input).
pub fn split_points(rng: &mut Rng, len: usize) -> Vec<usize> {
    let count = rng.below(9);
    let mut points: Vec<usize> = (0..count).map(|_| rng.below(len + 1)).collect();
    points.sort_unstable();
    points
}

/// The chunkings every input is fed in: whole, two random ones, and byte by byte when short.
pub fn chunkings(rng: &mut Rng, len: usize) -> Vec<Vec<usize>> {
    let mut all = vec![Vec::new(), split_points(rng, len), split_points(rng, len)];
    if len <= 256 {
        all.push((1..len).collect());
    }
    all
}

/// Frame size limits to try: the default, and a small one that makes oversize frames common.
pub fn max_frames(rng: &mut Rng, len: usize) -> [usize; 2] {
    [
        mcpframe_core::framing::DEFAULT_MAX_FRAME,
        1 + rng.below(len.clamp(1, 200) + 1),
    ]
}
