//! `Schedule` validation: a schedule decoded from the input (a real lowering of a decoded graph,
//! then edits that break it in every way a buggy lowering could: operands out of their buffers,
//! unaligned or empty, wrong operand or params counts, workgroup counts past the limits,
//! dependencies pointing forward, buffers resized or missing) must be accepted or refused by
//! `ValidSchedule::new`, never panic.

use crate::pipeline;
use crate::reader::Reader;
use rlx_gpu::{BufferId, Dispatch, KernelKey, Operand, Schedule, ValidSchedule};
use std::sync::OnceLock;

/// Most edits one input applies.
const MAX_EDITS: usize = 32;

fn keys() -> &'static [KernelKey] {
    static KEYS: OnceLock<Vec<KernelKey>> = OnceLock::new();
    KEYS.get_or_init(rlx_gpu::keys)
}

fn empty(name: &str) -> Schedule {
    Schedule {
        name: name.to_string(),
        steps: Vec::new(),
        pools: Vec::new(),
        leaves: Vec::new(),
        scratch: Vec::new(),
        outputs: Vec::new(),
    }
}

/// A byte offset or size: small multiples of 4, the edges, or raw bits.
fn bytes(r: &mut Reader) -> u64 {
    match r.below(4) {
        0 => u64::from(r.u8()) * 4,
        1 => u64::from(r.u16()) * 16,
        2 => [0, 1, 15, 16, u64::MAX, u64::MAX - 15, 128 << 20, (128 << 20) + 16][r.below(8)],
        _ => r.u64(),
    }
}

fn buffer(r: &mut Reader) -> BufferId {
    let i = r.below(8);
    match r.below(3) {
        0 => BufferId::Pool(i),
        1 => BufferId::Leaf(i),
        _ => BufferId::Scratch(i),
    }
}

/// A step launching `key` with one operand per binding on pool 0 and zeroed params: valid
/// where pool 0 is large enough.
fn step(key: KernelKey) -> Dispatch {
    let v = rlx_gpu::variant(key);
    let operand = Operand { buffer: BufferId::Pool(0), offset: 0, size: 16 };
    Dispatch {
        key,
        label: format!("fuzz {}", v.name),
        operands: vec![operand; v.bindings.len()],
        params: vec![0; v.params_size as usize],
        workgroups: [1, 1, 1],
        waits_for: Vec::new(),
    }
}

/// Applies one edit decoded from `r` to `s`.
fn edit(r: &mut Reader, s: &mut Schedule) {
    let kind = r.below(12);
    let n = s.steps.len();
    let at = r.below(n.max(1));
    match kind {
        0 => {
            if let Some(key) = r.pick(keys()) {
                s.steps.push(step(key));
            }
        }
        1 => s.pools.push(bytes(r)),
        2 => s.scratch.push(bytes(r)),
        3..=5 => {
            let (j, value, buf) = (r.below(8), bytes(r), buffer(r));
            if let Some(op) = s.steps.get_mut(at).and_then(|st| {
                let len = st.operands.len();
                st.operands.get_mut(j % len.max(1))
            }) {
                match kind {
                    3 => op.offset = value,
                    4 => op.size = value,
                    _ => op.buffer = buf,
                }
            }
        }
        6 => {
            let (d, v) = (r.below(3), [0, 1, 65_535, 65_536, u32::MAX][r.below(5)]);
            if let Some(w) = s.steps.get_mut(at).and_then(|st| st.workgroups.get_mut(d)) {
                *w = v;
            }
        }
        7 => {
            let d = r.below(64);
            if let Some(st) = s.steps.get_mut(at) {
                st.waits_for.push(d);
            }
        }
        8 => {
            let len = r.below(160);
            if let Some(st) = s.steps.get_mut(at) {
                st.params.resize(len, 0);
            }
        }
        9 => {
            let (add, op) = (r.bool(), Operand { buffer: buffer(r), offset: bytes(r), size: bytes(r) });
            if let Some(st) = s.steps.get_mut(at) {
                if add {
                    st.operands.push(op);
                } else {
                    st.operands.pop();
                }
            }
        }
        10 => {
            let (i, v) = (r.below(8), bytes(r));
            if let Some(p) = s.pools.get_mut(i) {
                *p = v;
            } else if let Some(l) = s.leaves.get_mut(i) {
                l.bytes = v;
            }
        }
        _ => {
            if r.bool() && at < n {
                s.steps.remove(at);
            } else if let Some(st) = s.steps.get(at).cloned() {
                s.steps.push(st);
            }
        }
    }
}

/// Decodes and validates one schedule: byte 0 picks the device limits, byte 1 the number of
/// edits, then the edits, then the graph whose lowering is the starting schedule.
pub fn run(data: &[u8]) {
    let mut r = Reader::new(data);
    let limits = pipeline::limits(r.u8());
    let edits = r.below(MAX_EDITS + 1);
    let mut script = Vec::with_capacity(edits);
    for _ in 0..edits {
        // Each edit reads at most 24 bytes; record them so the graph starts after the edits.
        script.push(r.rest().get(..24).unwrap_or(r.rest()));
        for _ in 0..24 {
            r.u8();
        }
    }
    let mut s = pipeline::lowered(r.rest(), &limits).unwrap_or_else(|| empty("fuzz"));
    for e in script {
        edit(&mut Reader::new(e), &mut s);
    }
    let _ = s.validate(&limits);
    let _ = s.buffers();
    if let Ok(valid) = ValidSchedule::new(s, &limits) {
        let _ = valid.barriers();
        let _ = valid.total_bytes();
    }
}
