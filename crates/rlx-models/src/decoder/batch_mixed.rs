//! Prefill chunks mixed into the batched step: [`BatchDecoder::enqueue`] admits a sequence
//! without running anything, and while some slot still has prompt tokens outside its cache,
//! [`BatchDecoder::step`] runs the mixed step of [`super::batched`] instead of the one-token
//! one. Every slot then feeds [`super::batch::MIX_ROWS`] rows (at most): the next tokens of its
//! prompt, or its last token and padding. A sequence's first token comes out of the step that
//! takes its prompt's last rows, with the same key, history and position as
//! [`BatchDecoder::add`] gives it, so its tokens are those of a sequence added alone.
//!
//! Why: `add` prefills one prompt between two steps, so sequences that arrive together wait for
//! each other's prefills, and the decoding ones wait for all of them (a server's time to first
//! token). Enqueued prompts go into the cache together, a chunk each per step, in the runs that
//! decode the others.

use super::batch::{BatchDecoder, Seq, SeqId, SeqParams, SeqToken};
use super::batched::{OFFSETS, PICKS};
use super::cached::POSITIONS;
use super::graph::INPUT_IDS;
use crate::error::{ModelError, Result};
use rlx_runtime::HostData;

impl BatchDecoder {
    /// Admits a sequence and returns its id at once, running nothing: its prompt goes into its
    /// slot's cache a chunk per [`BatchDecoder::step`], beside the other sequences' decode (see
    /// the module doc), and its first token is one of the events of the step that takes the
    /// prompt's last chunk. The same errors as [`BatchDecoder::add`], with nothing admitted.
    pub fn enqueue(&mut self, prompt: &[i32], params: SeqParams) -> Result<SeqId> {
        let (slot, id) = self.admit(prompt, &params)?;
        let mut history = Vec::new();
        if params.sampled() {
            history = vec![-1; self.capacity()];
            history[..prompt.len()].copy_from_slice(prompt);
        }
        let seq = Seq { id, last: 0, pos: 0, produced: 0, params, history, pending: prompt.to_vec() };
        self.slots[slot] = Some(seq);
        Ok(id)
    }

    /// Prompt tokens of enqueued sequences not yet in their caches.
    pub fn pending_tokens(&self) -> usize {
        self.slots.iter().flatten().map(|q| q.pending.len()).sum()
    }

    /// The mixed step: every slot's rows in one run (see the module doc).
    pub(super) fn step_mixed(&mut self) -> Result<Vec<SeqToken>> {
        let (n, t) = (self.slots.len(), self.mix);
        let i32_of =
            |v: usize| i32::try_from(v).map_err(|_| ModelError::invalid(format!("position {v} is past i32")));
        let mut ids = vec![0i32; n * t];
        let mut pos = vec![0i32; n * t];
        let mut offsets = vec![0i32; n];
        let mut picks = vec![0i32; n];
        // Prompt tokens each slot feeds this step.
        let mut took = vec![0usize; n];
        for (s, seq) in self.slots.iter().enumerate() {
            let base = s * t;
            let start = seq.as_ref().map_or(0, |q| q.pos);
            let mut pick = base;
            match seq {
                Some(q) if !q.pending.is_empty() => {
                    let k = q.pending.len().min(t);
                    ids[base..base + k].copy_from_slice(&q.pending[..k]);
                    took[s] = k;
                    pick = base + k - 1;
                }
                Some(q) => ids[base] = q.last,
                // A free slot computes token 0 from position 0: finite, ignored, and its rows
                // lie past the valid length of whichever sequence takes the slot next.
                None => {}
            }
            offsets[s] = i32_of(start)?;
            picks[s] = i32_of(pick)?;
            for r in 0..t {
                pos[base + r] = i32_of(start + r)?;
            }
        }
        let inputs: [(&str, &dyn HostData); 4] =
            [(INPUT_IDS, &ids), (POSITIONS, &pos), (OFFSETS, &offsets), (PICKS, &picks)];
        let any_sampled = self.slots.iter().flatten().any(|q| q.params.sampled());
        let out = match any_sampled {
            true => self.mixed_logits.run(&inputs)?,
            false => self.mixed.run(&inputs)?,
        };
        let (tokens, logits) = self.step_outputs(&out, any_sampled)?;
        // Slots whose prompt is now all in the cache produce their first token; the others
        // still have prompt to go and produce nothing.
        let mut produces = vec![false; n];
        for (s, slot) in self.slots.iter_mut().enumerate() {
            let Some(q) = slot else { continue };
            if took[s] == 0 {
                produces[s] = true;
                continue;
            }
            q.pending.drain(..took[s]);
            q.pos += took[s];
            if q.pending.is_empty() {
                // The run fed the prompt's last token: it is the one the next token follows.
                q.pos -= 1;
                produces[s] = true;
            }
        }
        Ok(self.advance(tokens, &logits, &produces))
    }
}
