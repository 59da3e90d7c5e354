//! Progress of the long COLMAP stages, read from the lines COLMAP prints as it goes (`Processed
//! file [3/50]`, `Matching block [1/5, 2/5]`, `Matching image [7/50]`, `Registering image #12
//! (5)`), reported as a count and an estimate of the time left, at most every few seconds.

use std::time::{Duration, Instant};

/// How often a stage reports its progress at most.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);

/// The fraction of a COLMAP stage done that `line` reports, as (done, total) units, if it
/// reports one. `images` is the number of images (the mapper's total).
pub fn parse_progress(line: &str, images: usize) -> Option<(u64, u64)> {
    let line = line.trim();
    if let Some(rest) = after(line, "Processed file [").or_else(|| after(line, "Matching image ["))
    {
        return pair(rest);
    }
    if let Some(rest) = after(line, "Matching block [") {
        // `[i/n, j/m]`: block (i, j) of n × m, row by row; or `[i/n]` (sequential blocks).
        let (first, second) = match rest.split_once(',') {
            Some((first, second)) => (first, Some(second)),
            None => (rest, None),
        };
        let (i, n) = pair(first)?;
        return match second.and_then(|s| pair(s.trim_start())) {
            Some((j, m)) => Some(((i - 1) * m + j, n * m)),
            None => Some((i, n)),
        };
    }
    if let Some(rest) = after(line, "Registering image #") {
        // `#ID (K)`: the K-th image registered in this model.
        let k = rest.split_once('(')?.1.split_once(')')?.0.trim();
        let k: u64 = k.parse().ok()?;
        return Some((k.min(images as u64), images as u64));
    }
    None
}

fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|at| &line[at + marker.len()..])
}

/// `A/B` at the start of `text` (up to `]` or `,`), with 1 ≤ A ≤ B.
fn pair(text: &str) -> Option<(u64, u64)> {
    let end = text.find([']', ',']).unwrap_or(text.len());
    let (a, b) = text[..end].split_once('/')?;
    let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a >= 1 && a <= b).then_some((a, b))
}

/// A stage's progress reporter: feed it COLMAP's lines; it calls `report` with
/// `STAGE: DONE/TOTAL UNIT, about T left` at most every [`REPORT_EVERY`].
pub struct StageProgress<'a> {
    stage: &'a str,
    unit: &'a str,
    images: usize,
    start: Instant,
    last: Option<Instant>,
    say: &'a (dyn Fn(&str) + Sync),
}

impl<'a> StageProgress<'a> {
    /// A reporter for `stage`, counting `unit` (e.g. "images", "blocks").
    pub fn new(
        stage: &'a str,
        unit: &'a str,
        images: usize,
        report: &'a (dyn Fn(&str) + Sync),
    ) -> StageProgress<'a> {
        StageProgress {
            stage,
            unit,
            images,
            start: Instant::now(),
            last: None,
            say: report,
        }
    }

    /// Reads one line of the program's output.
    pub fn observe(&mut self, line: &str) {
        if let Some((done, total)) = parse_progress(line, self.images) {
            self.report(done, total);
        }
    }

    /// Reports `done` of `total` units, unless the last report (or the start) was less than
    /// [`REPORT_EVERY`] ago; the last unit is always reported.
    pub fn report(&mut self, done: u64, total: u64) {
        let now = Instant::now();
        let since = now - self.last.unwrap_or(self.start);
        if since < REPORT_EVERY && done < total {
            return;
        }
        self.last = Some(now);
        let elapsed = (now - self.start).as_secs_f64();
        let left = elapsed * (total - done) as f64 / done.max(1) as f64;
        (self.say)(&format!(
            "{}: {done}/{total} {}, {} elapsed, about {} left",
            self.stage,
            self.unit,
            duration_text(elapsed),
            duration_text(left)
        ));
    }
}

/// `42 s`, `3 min 05 s`, `1 h 02 min`.
pub fn duration_text(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colmap_lines_give_the_fraction_done() {
        assert_eq!(parse_progress("Processed file [3/50]", 50), Some((3, 50)));
        assert_eq!(
            parse_progress("I1202 10:00:00 Matching block [2/5, 3/5] in 1.2s", 50),
            Some((8, 25))
        );
        assert_eq!(parse_progress("Matching block [4/9]", 50), Some((4, 9)));
        assert_eq!(
            parse_progress("Matching image [7/50] in 0.3s", 50),
            Some((7, 50))
        );
        assert_eq!(
            parse_progress("Registering image #12 (5)", 50),
            Some((5, 50))
        );
        assert_eq!(parse_progress("Processed file [0/50]", 50), None);
        assert_eq!(parse_progress("Elapsed time: 0.1 [minutes]", 50), None);
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(duration_text(42.4), "42 s");
        assert_eq!(duration_text(185.0), "3 min 05 s");
        assert_eq!(duration_text(3720.0), "1 h 02 min");
    }
}
