//! The order runs take on a host (`order = "sequential" | "interleaved" |
//! "random"`) and the batches of clusters that run at once.
use super::*;

/// SplitMix64: a tiny generator whose output is fixed by its seed forever
/// (no crate version can change a recorded order).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0), without modulo bias.
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// FNV-1a of a host name: mixes the host into the seed, so that hosts of
/// one sweep get their own shuffles, the same ones on every re-run.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The run order of `lists` (each list's items in its own order).
/// Interleaved: round-robin, the i-th item of every list before the
/// (i+1)-th of any (A1 B1 A2 B2 …; an exhausted list is skipped).
/// Random: a seeded shuffle of the items in which every list keeps its
/// own order (a uniformly random interleaving).  Sequential: one list
/// after the other.
pub fn order_runs<T: Copy>(order: Order, seed: u64, lists: &[Vec<T>]) -> Vec<T> {
    let total: usize = lists.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    match order {
        Order::Sequential => lists.iter().for_each(|l| out.extend(l.iter().copied())),
        Order::Interleaved => {
            let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..longest {
                out.extend(lists.iter().filter_map(|l| l.get(i).copied()));
            }
        }
        Order::Random => {
            // Which list each run takes from: list i appears len(i) times,
            // shuffled (Fisher-Yates); the k-th appearance takes its k-th item.
            let mut labels: Vec<usize> = lists
                .iter()
                .enumerate()
                .flat_map(|(i, l)| std::iter::repeat_n(i, l.len()))
                .collect();
            let mut rng = SplitMix64(seed);
            for i in (1..labels.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                labels.swap(i, j);
            }
            let mut next = vec![0usize; lists.len()];
            for l in labels {
                out.push(lists[l][next[l]]);
                next[l] += 1;
            }
        }
    }
    out
}

/// A host's batches and the run order of its cells (indices into `cells`,
/// which come in plan order: variant, workload, clients, repeat).  Variants
/// are set up `devices.len()` at a time, variant k of a batch on device k
/// with port `pg_port + k`.  Within a batch the workloads come one after
/// the other (each is loaded on every variant of the batch first); the
/// runs of one workload are ordered by [`order_runs`] over one list per
/// variant (interleaved) or per variant and client count (random).
pub(super) fn schedule(
    order: Order,
    seed: u64,
    host: &Host,
    variants: &[Label],
    cells: &[Cell],
) -> (Vec<usize>, Vec<Batch>) {
    let width = host.devices.len().max(1);
    let mut rng_seed = seed ^ fnv1a(host.name.as_str());
    let mut out = Vec::with_capacity(cells.len());
    let mut batches = Vec::new();
    for chunk in variants.chunks(width) {
        let slots: Vec<Slot> = chunk
            .iter()
            .enumerate()
            .map(|(k, v)| Slot {
                index: k as u32,
                device: host.devices[k].clone(),
                port: host.pg_port.saturating_add(k as u16),
                variant: v.clone(),
            })
            .collect();
        let slot_of = |c: &Cell| chunk.iter().position(|v| v == &c.fs.name);
        // Workloads in plan order, as the first variant of the batch has them.
        let mut workloads: Vec<&Label> = Vec::new();
        for c in cells.iter().filter(|c| slot_of(c).is_some()) {
            if !workloads.contains(&&c.workload.name) {
                workloads.push(&c.workload.name);
            }
        }
        let mut runs = Vec::new();
        for w in workloads {
            let mut lists: Vec<Vec<usize>> = Vec::new();
            let mut keys: Vec<(usize, u32)> = Vec::new();
            for (i, c) in cells.iter().enumerate() {
                let Some(k) = slot_of(c).filter(|_| &c.workload.name == w) else {
                    continue;
                };
                let key = (k, if order == Order::Random { c.clients } else { 0 });
                match keys.iter().position(|x| *x == key) {
                    Some(j) => lists[j].push(i),
                    None => {
                        keys.push(key);
                        lists.push(vec![i]);
                    }
                }
            }
            // One stream of random numbers per host, consumed batch by batch.
            rng_seed = SplitMix64(rng_seed).next();
            for i in order_runs(order, rng_seed, &lists) {
                runs.push(slot_of(&cells[i]).unwrap_or(0) as u32);
                out.push(i);
            }
        }
        batches.push(Batch { slots, runs });
    }
    (out, batches)
}
