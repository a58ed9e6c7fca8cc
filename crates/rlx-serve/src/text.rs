//! [`StopFilter`]: streamed text with OpenAI's `stop` strings applied.
//!
//! Text arrives in pieces (one per token, as the tokenizer's decode stream gives them). A stop
//! string may straddle pieces, so the filter holds back the last `longest stop − 1` bytes until
//! the next piece shows whether they begin a stop. When a stop string appears, the text before
//! it is the last to go out and the generation ends; the stop string itself is never sent.

/// See the module doc.
#[derive(Debug, Default)]
pub struct StopFilter {
    stops: Vec<String>,
    text: String,
    sent: usize,
    stopped: bool,
}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl StopFilter {
    /// A filter for `stops` (empty strings are dropped: they would match everywhere).
    pub fn new(stops: Vec<String>) -> StopFilter {
        StopFilter { stops: stops.into_iter().filter(|s| !s.is_empty()).collect(), ..Default::default() }
    }

    /// Whether a stop string has been seen.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// All text received so far (including what is held back).
    pub fn received(&self) -> &str {
        &self.text
    }

    /// Adds `piece` and returns the text that may go out now (possibly empty). After a stop
    /// string, returns what preceded it and then nothing more.
    pub fn push(&mut self, piece: &str) -> String {
        if self.stopped {
            return String::new();
        }
        self.text.push_str(piece);
        let first_stop = self.stops.iter().filter_map(|s| self.text[self.sent..].find(s.as_str())).min();
        if let Some(at) = first_stop {
            let end = self.sent + at;
            let out = self.text[self.sent..end].to_string();
            self.sent = end;
            self.stopped = true;
            return out;
        }
        let hold = self.stops.iter().map(|s| s.len().saturating_sub(1)).max().unwrap_or(0);
        let safe = floor_boundary(&self.text, self.text.len().saturating_sub(hold)).max(self.sent);
        let out = self.text[self.sent..safe].to_string();
        self.sent = safe;
        out
    }

    /// The generation ended: everything still held back goes out (no stop string can complete
    /// any more).
    pub fn finish(&mut self) -> String {
        if self.stopped {
            return String::new();
        }
        let out = self.text[self.sent..].to_string();
        self.sent = self.text.len();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool) {
        let mut f = StopFilter::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out: Vec<String> = pieces.iter().map(|p| f.push(p)).collect();
        out.push(f.finish());
        (out, f.stopped())
    }

    #[test]
    fn without_stops_every_piece_goes_out_at_once() {
        assert_eq!(run(&[], &["a", "bc"]).0, ["a", "bc", ""]);
    }

    #[test]
    fn a_stop_across_pieces_is_cut_and_never_sent() {
        let (out, stopped) = run(&["END"], &["hello E", "N", "D more"]);
        assert!(stopped);
        assert_eq!(out.concat(), "hello ");
        // "E" was held back until the next pieces showed it begins the stop.
        assert_eq!(out[0], "hello");
    }

    #[test]
    fn a_held_back_prefix_that_is_no_stop_goes_out_later() {
        let (out, stopped) = run(&["xyz"], &["ax", "y", "b"]);
        assert!(!stopped);
        assert_eq!(out.concat(), "axyb");
    }

    #[test]
    fn the_earliest_of_several_stops_wins_and_multibyte_text_is_not_split() {
        let (out, _) = run(&["é!", "zz"], &["aé", "zz"]);
        assert_eq!(out.concat(), "aé");
        let (out, stopped) = run(&["b", "ab"], &["xab"]);
        assert!(stopped);
        assert_eq!(out.concat(), "x");
    }
}
