//! The loop of `checkers/wgl.py`'s `PySearch`, compiled: Wing & Gong's search
//! with Lowe's memoisation over one partition's call and return entries.
//! It knows nothing of the model: states are ids that the Python side
//! interns, and a model step it has not seen yet, a (state, operation) pair,
//! is asked of the Python callback once and remembered; the string key-value
//! model (`use_kv`) steps here instead, its states interned on this side, so
//! that a history whose appends make many states calls no Python per step. The memo of visited
//! (linearized set, state) pairs is keyed by a Zobrist hash of the set, kept
//! up to date as operations are linearized and undone. A set is a bitset
//! over the operations in the order of their calls, but the memo keeps only
//! its words from the first call not linearized to the last one linearized:
//! every call before is linearized, none after, so those words tell sets
//! apart. A whole bitset per entry made a long history's memo quadratic.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NONE: usize = usize::MAX;

/// The tables' keys are mixed before they are stored (Zobrist hashes,
/// splitmix'd transition keys), so hashing one is taking it as it is.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 ^= v;
    }
}

type Fast = BuildHasherDefault<Mix>;

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `kv` model of `checkers/models.py`: get (legal where the state is
/// the value read), put, append (concatenation). A state is its string with
/// the string's polynomial hash modulo 2^61 - 1, so that an append's hash is
/// the state's and the argument's combined (`h(s + a) = h(s) * B^|a| + h(a)`)
/// without reading either string: a step hashes nothing, and compares or
/// copies bytes only where the hashes say a state may already exist (a
/// `memcmp`), or is new (one copy). Hashing every appended state anew made
/// a key's long state cost a pass over its bytes per step.
struct Kv {
    f: Vec<u8>,
    arg: Vec<String>,
    // Each argument's hash and B to the power of its length.
    arg_hash: Vec<(u64, u64)>,
    states: Vec<String>,
    state_hash: Vec<u64>,
    // hash -> newest state with it; `older` chains states of equal hash.
    ids: HashMap<u64, u32, Fast>,
    older: Vec<u32>,
}

const MERSENNE: u64 = (1 << 61) - 1;
const BASE: u64 = 0x1f3d_5b79_a2c4_e687 % MERSENNE;

fn mul_mod(a: u64, b: u64) -> u64 {
    let product = a as u128 * b as u128;
    let folded = (product & MERSENNE as u128) as u64 + (product >> 61) as u64;
    if folded >= MERSENNE { folded - MERSENNE } else { folded }
}

fn add_mod(a: u64, b: u64) -> u64 {
    let sum = a + b;
    if sum >= MERSENNE { sum - MERSENNE } else { sum }
}

/// (hash, B^len) of a string.
fn poly_hash(text: &str) -> (u64, u64) {
    text.bytes().fold((0, 1), |(hash, power), byte| {
        (add_mod(mul_mod(hash, BASE), byte as u64 + 1), mul_mod(power, BASE))
    })
}

impl Kv {
    fn new(init: String, f: Vec<u8>, arg: Vec<String>) -> Self {
        let arg_hash = arg.iter().map(|a| poly_hash(a)).collect();
        let (states, state_hash, ids, older) = (Vec::new(), Vec::new(), HashMap::default(), Vec::new());
        let mut kv = Kv { f, arg, arg_hash, states, state_hash, ids, older };
        let hash = poly_hash(&init).0;
        kv.find_or_add(hash, init.len(), |s| s == init, || init.clone());
        kv
    }

    /// The state of this hash and length whose bytes `same` accepts, or a
    /// new one made by `make`.
    fn find_or_add(&mut self, hash: u64, len: usize, same: impl Fn(&str) -> bool, make: impl FnOnce() -> String) -> u32 {
        let newest = self.ids.get(&splitmix(hash)).copied().unwrap_or(u32::MAX);
        let mut k = newest;
        while k != u32::MAX {
            let state = &self.states[k as usize];
            if state.len() == len && same(state) {
                return k;
            }
            k = self.older[k as usize];
        }
        let id = self.states.len() as u32;
        self.states.push(make());
        self.state_hash.push(hash);
        self.older.push(newest);
        self.ids.insert(splitmix(hash), id);
        id
    }

    fn step(&mut self, state: u32, op: u32) -> Option<u32> {
        let (f, (hash, power)) = (self.f[op as usize], self.arg_hash[op as usize]);
        let arg = std::mem::take(&mut self.arg[op as usize]);
        let next = match f {
            KV_GET => (self.state_hash[state as usize] == hash && self.states[state as usize] == arg).then_some(state),
            KV_PUT => Some(self.find_or_add(hash, arg.len(), |s| s == arg, || arg.clone())),
            _ => {
                let prefix = std::mem::take(&mut self.states[state as usize]);
                let combined = add_mod(mul_mod(self.state_hash[state as usize], power), hash);
                let next = self.find_or_add(combined, prefix.len() + arg.len(),
                    |s| s.starts_with(prefix.as_str()) && s.ends_with(arg.as_str()),
                    || [prefix.as_str(), arg.as_str()].concat());
                self.states[state as usize] = prefix;
                Some(next)
            }
        };
        self.arg[op as usize] = arg;
        next
    }
}

const KV_GET: u8 = 0;
const KV_PUT: u8 = 1;
const KV_APPEND: u8 = 2;

#[pyclass]
struct Search {
    kv: Option<Kv>,
    is_call: Vec<bool>,
    op: Vec<u32>,
    n: usize,
    nxt: Vec<usize>,
    prv: Vec<usize>,
    ret_pos: Vec<usize>,
    head: usize,
    p: usize,
    state: u32,
    // Each operation's rank among the calls, the linearized set by rank, and
    // one past the highest rank linearized.
    rank: Vec<u32>,
    bits: Vec<u64>,
    frontier: u32,
    hash: u64,
    zobrist: Vec<u64>,
    // The memo: hash -> newest entry; entries chain to older ones with the
    // same hash. An entry is (state, the first word kept, where its words
    // start and end in `words`, the older entry).
    seen: HashMap<u64, u32, Fast>,
    entries: Vec<(u32, u32, u32, u32, u32)>,
    words: Vec<u64>,
    transitions: HashMap<u64, (bool, u32), Fast>,
    // (call entry, operation, state and frontier before it).
    stack: Vec<(usize, u32, u32, u32)>,
    prefix: Vec<u32>,
    stuck: Option<u32>,
    result: Option<bool>,
}

impl Search {
    fn transition(&mut self, state: u32, op: u32, step: &Bound<'_, PyAny>) -> PyResult<(bool, u32)> {
        let key = splitmix(((state as u64) << 32) | op as u64);
        if let Some(known) = self.transitions.get(&key) {
            return Ok(*known);
        }
        let answer = match self.kv.as_mut() {
            Some(kv) => kv.step(state, op).map_or((false, 0), |next| (true, next)),
            None => {
                let next: i64 = step.call1((state, op))?.extract()?;
                if next < 0 { (false, 0) } else { (true, next as u32) }
            }
        };
        self.transitions.insert(key, answer);
        Ok(answer)
    }

    fn flip(&mut self, op: u32) {
        let r = self.rank[op as usize];
        self.bits[(r / 64) as usize] ^= 1u64 << (r % 64);
        self.hash ^= self.zobrist[op as usize];
    }

    /// True when (linearized set, state) is new, and now remembered. Called
    /// with the set's operations lifted out of the entry list, so its head is
    /// the call of the first operation not linearized.
    fn remember(&mut self, state: u32) -> bool {
        let key = self.hash ^ splitmix(state as u64 + 1);
        let width = self.bits.len();
        let lo = if self.head < self.n { (self.rank[self.op[self.head] as usize] / 64) as usize } else { width };
        let hi = (self.frontier as usize).div_ceil(64).max(lo);
        let kept = &self.bits[lo..hi];
        let newest = self.seen.get(&key).copied();
        let mut k = newest.unwrap_or(u32::MAX);
        while k != u32::MAX {
            let (s, first, start, end, older) = self.entries[k as usize];
            if s == state && first as usize == lo && self.words[start as usize..end as usize] == *kept {
                return false;
            }
            k = older;
        }
        let start = self.words.len() as u32;
        self.words.extend_from_slice(kept);
        self.seen.insert(key, self.entries.len() as u32);
        self.entries.push((state, lo as u32, start, self.words.len() as u32, newest.unwrap_or(u32::MAX)));
        true
    }

    fn lift(&mut self, call: usize, op: u32) {
        for q in [call, self.ret_pos[op as usize]] {
            let (a, b) = (self.prv[q], self.nxt[q]);
            if a != NONE {
                self.nxt[a] = b;
            } else {
                self.head = b;
            }
            if b < self.n {
                self.prv[b] = a;
            }
        }
    }

    fn unlift(&mut self, call: usize, op: u32) {
        for q in [self.ret_pos[op as usize], call] {
            let (a, b) = (self.prv[q], self.nxt[q]);
            if a != NONE {
                self.nxt[a] = q;
            } else {
                self.head = q;
            }
            if b < self.n {
                self.prv[b] = q;
            }
        }
    }
}

#[pymethods]
impl Search {
    /// `kinds[p]`: 1 for a call entry, 0 for a return; `ops[p]`: its operation.
    #[new]
    fn new(kinds: Vec<u8>, ops: Vec<u32>, n_ops: usize) -> PyResult<Self> {
        let n = kinds.len();
        if ops.len() != n || n != 2 * n_ops {
            return Err(PyValueError::new_err("kinds and ops must hold a call and a return entry per operation"));
        }
        let mut ret_pos = vec![NONE; n_ops];
        let mut rank = vec![u32::MAX; n_ops];
        let mut calls = 0;
        for p in 0..n {
            let i = ops[p] as usize;
            if i >= n_ops {
                return Err(PyValueError::new_err(format!("entry {p}: operation {i} out of range")));
            }
            if kinds[p] == 1 {
                rank[i] = calls;
                calls += 1;
            } else if rank[i] == u32::MAX || ret_pos[i] != NONE {
                return Err(PyValueError::new_err(format!("entry {p}: return of operation {i} without one call before it")));
            } else {
                ret_pos[i] = p;
            }
        }
        Ok(Search {
            kv: None,
            is_call: kinds.iter().map(|k| *k == 1).collect(),
            op: ops,
            n,
            nxt: (1..=n).collect(),
            prv: (0..n).map(|p| if p == 0 { NONE } else { p - 1 }).collect(),
            ret_pos,
            head: 0,
            p: 0,
            state: 0,
            rank,
            bits: vec![0; n_ops.div_ceil(64)],
            frontier: 0,
            hash: 0,
            zobrist: (0..n_ops as u64).map(splitmix).collect(),
            seen: HashMap::default(),
            entries: Vec::new(),
            words: Vec::new(),
            transitions: HashMap::default(),
            stack: Vec::new(),
            prefix: Vec::new(),
            stuck: None,
            result: if n_ops == 0 { Some(true) } else { None },
        })
    }

    /// Step the `kv` model here: `f[op]` is 0 (get: `arg` the value read),
    /// 1 (put) or 2 (append: `arg` the value written); `init` is state 0.
    fn use_kv(&mut self, init: String, f: Vec<u8>, arg: Vec<String>) -> PyResult<()> {
        if f.len() != self.rank.len() || arg.len() != f.len() || f.iter().any(|k| *k > KV_APPEND) {
            return Err(PyValueError::new_err("use_kv: one function (0, 1 or 2) and one argument per operation"));
        }
        self.kv = Some(Kv::new(init, f, arg));
        Ok(())
    }

    /// Search up to `max_steps` steps: True, False, or None when not done.
    /// `step(state_id, op) -> new_state_id`, or -1 when illegal, is the model.
    fn run(&mut self, max_steps: u64, step: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        if self.result.is_some() {
            return Ok(self.result);
        }
        for _ in 0..max_steps {
            if self.head >= self.n {
                self.result = Some(true);
                break;
            }
            let p = self.p;
            let i = self.op[p];
            if self.is_call[p] {
                let (legal, new_state) = self.transition(self.state, i, step)?;
                if legal {
                    let frontier = self.frontier;
                    self.frontier = frontier.max(self.rank[i as usize] + 1);
                    self.flip(i);
                    self.lift(p, i);
                    if self.remember(new_state) {
                        self.stack.push((p, i, self.state, frontier));
                        self.state = new_state;
                        self.p = self.head;
                        continue;
                    }
                    self.unlift(p, i);
                    self.flip(i);
                    self.frontier = frontier;
                }
                self.p = self.nxt[p];
                continue;
            }
            // A return whose call is not linearized yet: backtrack.
            if self.stuck.is_none() || self.stack.len() > self.prefix.len() {
                self.prefix = self.stack.iter().map(|(_, j, _, _)| *j).collect();
                self.stuck = Some(i);
            }
            match self.stack.pop() {
                None => {
                    self.result = Some(false);
                    break;
                }
                Some((call, j, before, frontier)) => {
                    self.state = before;
                    self.frontier = frontier;
                    self.flip(j);
                    self.unlift(call, j);
                    self.p = self.nxt[call];
                }
            }
        }
        Ok(self.result)
    }

    /// The deepest linearization found, as operation positions in order.
    fn prefix(&self) -> Vec<u32> {
        self.prefix.clone()
    }

    /// The operation whose return that linearization could not get past.
    fn stuck(&self) -> Option<u32> {
        self.stuck
    }
}

#[pymodule]
fn splitbrain_wgl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Search>()
}
