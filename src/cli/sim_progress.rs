//! The `simulate` progress display: per driven port, steps out of the step cap,
//! the energy decay reached against its target, and an ETA from the decay trend
//! (or from the step rate against the cap, whichever comes first). Bars on a
//! terminal; a plain line every few seconds otherwise, so logs show it too.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::StepWatch;

/// What the display knows of one simulation before it runs.
#[derive(Debug, Clone)]
pub struct JobInfo {
    pub label: String,
    /// The step cap as the design gives it (the engine's own, once it reports it).
    pub max_steps: usize,
    pub target_db: f64,
}

/// Seconds of samples the trends are taken over.
const WINDOW: Duration = Duration::from_secs(8);
/// Without bars, a line this often.
const LINE_EVERY: Duration = Duration::from_secs(10);

/// The display of one `simulate` call.
pub struct SimProgress {
    jobs: Vec<JobInfo>,
    samples: Vec<VecDeque<(Instant, usize, f64)>>,
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
    last_line: Instant,
    started: Instant,
}

impl SimProgress {
    /// Bars when stdout is a terminal, lines otherwise.
    pub fn new(jobs: Vec<JobInfo>) -> SimProgress {
        let bars = std::io::stdout().is_terminal().then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
            let style = ProgressStyle::with_template("{prefix:>14} [{bar:30.cyan/blue}] {pos}/{len} steps {msg}")
                .expect("static template")
                .progress_chars("=> ");
            let bars = jobs
                .iter()
                .map(|j| {
                    let b = multi.add(ProgressBar::new(j.max_steps as u64));
                    b.set_style(style.clone());
                    b.set_prefix(j.label.clone());
                    b
                })
                .collect();
            (multi, bars)
        });
        let n = jobs.len();
        SimProgress { jobs, samples: vec![VecDeque::new(); n], bars, last_line: Instant::now(), started: Instant::now() }
    }

    /// Read the watches and redraw (bars) or print a line when one is due.
    pub fn update(&mut self, watch: &[StepWatch]) {
        let now = Instant::now();
        let mut texts = Vec::with_capacity(self.jobs.len());
        for (k, job) in self.jobs.iter_mut().enumerate() {
            let (steps, db) = watch.get(k).map_or((0, 0.0), StepWatch::get);
            // The engine knows the cap once the time step is known (a cap in simulated time).
            if let Some(cap) = watch.get(k).and_then(StepWatch::cap).filter(|&c| c != job.max_steps) {
                job.max_steps = cap;
                if let Some((_, bars)) = &self.bars {
                    bars[k].set_length(cap as u64);
                }
            }
            let s = &mut self.samples[k];
            if s.back().is_none_or(|b| b.1 != steps) {
                s.push_back((now, steps, db));
            }
            while s.len() > 2 && s.front().is_some_and(|f| now - f.0 > WINDOW) {
                s.pop_front();
            }
            let text = if steps == 0 {
                // Nothing reported yet (or a backend that reports no steps, CUDA).
                format!("running for {}", clock((now - self.started).as_secs_f64()))
            } else {
                format!("energy {db:.1} dB (target {:.1} dB){}", job.target_db, eta_text(s, job))
            };
            if let Some((_, bars)) = &self.bars {
                bars[k].set_position(steps as u64);
                bars[k].set_message(text.clone());
            }
            texts.push((steps, text));
        }
        if self.bars.is_none() && now - self.last_line >= LINE_EVERY {
            self.last_line = now;
            let mut out = std::io::stdout().lock();
            for (job, (steps, text)) in self.jobs.iter().zip(texts) {
                let _ = writeln!(out, "{}: {steps}/{} steps, {text}", job.label, job.max_steps);
            }
        }
    }

    /// Take the bars off the screen (the results are printed next).
    pub fn finish(self) {
        if let Some((_, bars)) = self.bars {
            for b in bars {
                b.finish_and_clear();
            }
        }
    }
}

/// ", eta ~1m05s" from the decay trend, or ", eta <= 3m00s (step cap)" when the
/// energy is not falling yet; empty until there is a rate to go on.
fn eta_text(samples: &VecDeque<(Instant, usize, f64)>, job: &JobInfo) -> String {
    let (Some(first), Some(last)) = (samples.front(), samples.back()) else { return String::new() };
    let dt = (last.0 - first.0).as_secs_f64();
    let dn = last.1.saturating_sub(first.1) as f64;
    if dt <= 0.0 || dn <= 0.0 {
        return String::new();
    }
    let rate = dn / dt;
    let to_cap = job.max_steps.saturating_sub(last.1) as f64;
    let slope = (last.2 - first.2) / dn;
    let to_target = (slope < 0.0 && last.2 > job.target_db).then(|| (job.target_db - last.2) / slope);
    match to_target {
        Some(n) if n < to_cap => format!(", eta ~{}", clock(n / rate)),
        _ => format!(", eta <= {} (step cap)", clock(to_cap / rate)),
    }
}

fn clock(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_follows_the_decay_trend_and_falls_back_to_the_cap() {
        let job = JobInfo { label: "drive in".into(), max_steps: 30_000, target_db: -50.0 };
        let t0 = Instant::now();
        // 1000 steps per second, 1 dB per 100 steps: 20 dB to go at -30 dB is 2000 steps, 2 s.
        let s: VecDeque<_> = [(t0, 1000, -20.0), (t0 + Duration::from_secs(1), 2000, -30.0)].into();
        assert_eq!(eta_text(&s, &job), ", eta ~0m02s");
        // Rising energy: only the cap bounds it, 28,000 steps at 1000 per second.
        let s: VecDeque<_> = [(t0, 1000, -20.0), (t0 + Duration::from_secs(1), 2000, -10.0)].into();
        assert_eq!(eta_text(&s, &job), ", eta <= 0m28s (step cap)");
        // One sample: no rate yet.
        let s: VecDeque<_> = [(t0, 1000, -20.0)].into();
        assert_eq!(eta_text(&s, &job), "");
        assert_eq!(clock(3725.0), "1h02m");
    }
}
