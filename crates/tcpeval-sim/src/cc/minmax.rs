//! Kathleen Nichols' windowed max filter as Linux keeps it (lib/minmax.c,
//! used by BBR v1 for its bandwidth estimate): three samples, the best, the
//! second best of a later sub-window and the third best of a still later one,
//! so a maximum that leaves the window is replaced by a recent one without a
//! history of every sample. Time is whatever the caller counts (BBR: round
//! trips). The window is checked only when a sample arrives: a filter fed
//! nothing keeps its value, which is why BBR marks PROBE_RTT's samples
//! application-limited rather than letting them in.

/// One sample: (time, value).
type Sample = (u64, f64);

#[derive(Clone, Copy, Debug, Default)]
pub struct WindowedMax {
    s: [Sample; 3],
}

impl WindowedMax {
    /// The current maximum estimate.
    pub fn get(&self) -> f64 {
        self.s[0].1
    }

    /// Forget everything but `sample`.
    pub fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [(t, v); 3];
        v
    }

    /// Take the measurement `v` at time `t` into a window of `win`; returns
    /// the new maximum (Linux `minmax_running_max`).
    pub fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[2] = (t, v);
            self.s[1] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        self.age(win, (t, v))
    }

    /// Promote the later samples once the best is older than the window, and
    /// refresh the second and third within the first quarter and half of it
    /// (Linux `minmax_subwin_update`).
    fn age(&mut self, win: u64, val: Sample) -> f64 {
        let dt = val.0.saturating_sub(self.s[0].0);
        if dt > win {
            self.s = [self.s[1], self.s[2], val];
            if val.0.saturating_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_higher_sample_takes_over_at_once() {
        let mut f = WindowedMax::default();
        f.update(10, 0, 5.0);
        assert_eq!(f.update(10, 1, 7.0), 7.0);
        assert_eq!(f.update(10, 2, 6.0), 7.0);
    }

    #[test]
    fn a_maximum_leaves_the_window_for_the_later_best() {
        // 9 at t = 0, then 4 each round: within the first quarter (t <= 2)
        // the second and third samples stay 9's; at t = 3 they become 4, and
        // once t - 0 > 10 the 4 is promoted.
        let mut f = WindowedMax::default();
        f.update(10, 0, 9.0);
        for t in 1..=10 {
            assert_eq!(f.update(10, t, 4.0), 9.0, "t = {t}");
        }
        assert_eq!(f.update(10, 11, 4.0), 4.0);
    }

    #[test]
    fn no_samples_no_expiry() {
        // Nothing fed between t = 0 and t = 50: the value holds, and the
        // first sample after the gap replaces it, whatever its size.
        let mut f = WindowedMax::default();
        f.update(10, 0, 9.0);
        assert_eq!(f.get(), 9.0);
        assert_eq!(f.update(10, 50, 3.0), 3.0);
    }
}
