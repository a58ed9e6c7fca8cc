//! The dependency analysis: which earlier steps each step must wait for. Computed once, when
//! lowering; both drivers order their work from it (rlx-vulkan places its barriers with
//! [`crate::Schedule::barriers`]; wgpu's own tracker sees the same per-buffer facts, because
//! values have their own pool buffers).
//!
//! A step waits for an earlier step when it reads a range that step wrote (read after write),
//! or writes a range that step read or wrote (write after read, write after write). Ranges are
//! byte ranges of one buffer; disjoint ranges of one buffer are independent.

use crate::schedule::{BufferId, Dispatch, Operand};
use crate::Access;
use std::collections::HashMap;

/// One access of a buffer range by a step.
#[derive(Clone, Copy, Debug)]
struct Use {
    range: Operand,
    step: usize,
    write: bool,
}

/// Fills `waits_for` of every step (sorted, without repeats).
pub fn analyze(steps: &mut [Dispatch]) {
    let mut uses: HashMap<BufferId, Vec<Use>> = HashMap::new();
    for (i, step) in steps.iter_mut().enumerate() {
        let access = step.variant().bindings;
        let mut waits = Vec::new();
        let mut mine = Vec::with_capacity(step.operands.len());
        for (op, a) in step.operands.iter().zip(access) {
            let write = *a == Access::ReadWrite;
            for u in uses.get(&op.buffer).into_iter().flatten() {
                if (write || u.write) && u.range.overlaps(op) {
                    waits.push(u.step);
                }
            }
            mine.push(Use { range: *op, step: i, write });
        }
        for u in mine {
            let list = uses.entry(u.range.buffer).or_default();
            if u.write {
                // A write covering an earlier use supersedes it: whoever touches the range later
                // waits for this step, which waited for that use.
                list.retain(|old| !u.range.covers(&old.range));
            }
            list.push(u);
        }
        waits.sort_unstable();
        waits.dedup();
        step.waits_for = waits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelKey, Schedule, UnaryParams};
    use rlx_ir::UnaryOp;

    fn op(buffer: BufferId, offset: u64, size: u64) -> Operand {
        Operand { buffer, offset, size }
    }

    /// A unary step (one read binding, one written) from `src` to `dst`.
    fn step(src: Operand, dst: Operand) -> Dispatch {
        let (p, grid) = UnaryParams::new(4).unwrap();
        Dispatch::new(KernelKey::unary_f32(UnaryOp::Neg), "s", vec![src, dst], &p, grid)
    }

    fn schedule(steps: Vec<Dispatch>) -> Schedule {
        Schedule { name: "t".into(), steps, pools: vec![], leaves: vec![], scratch: vec![], outputs: vec![] }
    }

    #[test]
    fn raw_war_and_waw_are_found_and_independent_steps_are_not() {
        let (x, a, b, c) = (
            op(BufferId::Leaf(0), 0, 16),
            op(BufferId::Pool(0), 0, 16),
            op(BufferId::Pool(1), 0, 16),
            op(BufferId::Pool(2), 0, 16),
        );
        let mut steps = vec![
            step(x, a),                             // 0
            step(x, b),                             // 1: independent of 0 (both only read x)
            step(a, c),                             // 2: reads a (RAW on 0)
            step(b, a), // 3: writes a, which 2 read (WAR) and 0 wrote (WAW); reads b (RAW on 1)
            step(x, op(BufferId::Pool(1), 16, 16)), // 4: another range of pool 1: nothing
        ];
        analyze(&mut steps);
        let waits: Vec<_> = steps.iter().map(|s| s.waits_for.clone()).collect();
        assert_eq!(waits, vec![vec![], vec![], vec![0], vec![0, 1, 2], vec![]]);
        let s = schedule(steps);
        // Barriers: before 2 (0 and 1 run together), before 3 (2 is after that barrier).
        assert_eq!(s.barriers(), vec![false, false, true, true, false]);
    }

    #[test]
    fn a_covering_write_supersedes_older_uses() {
        let (x, a, c) =
            (op(BufferId::Leaf(0), 0, 32), op(BufferId::Pool(0), 0, 32), op(BufferId::Pool(1), 0, 32));
        let mut steps = vec![step(x, a), step(x, a), step(a, c)];
        analyze(&mut steps);
        // Step 2 reads what step 1 wrote; step 0's write was overwritten by step 1.
        assert_eq!(steps[1].waits_for, vec![0]);
        assert_eq!(steps[2].waits_for, vec![1]);
    }
}
