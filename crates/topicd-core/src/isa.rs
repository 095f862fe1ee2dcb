//! Which SIMD instruction set a vectorised kernel runs with.
//!
//! Why it exists: release builds target baseline x86-64 (SSE2), so a hot loop gets wider
//! vectors only when it is compiled a second and third time under `#[target_feature]`
//! and the processor's best is picked at run time. Machines here have AVX-512 or only
//! AVX2, and CI may be either. Every kernel that does this (LDA's dense token draw,
//! HPC's prediction word pass) gives bit-identical results on every path (each checks
//! it in a test), so the choice changes speed only; an environment variable per kernel
//! can ask for a slower path, to measure it on a machine that has a faster one.

/// The instruction sets kernels are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    /// The best instruction set this processor supports.
    pub(crate) fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            let popcnt = std::is_x86_feature_detected!("popcnt");
            if popcnt && std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vl") {
                return Isa::Avx512;
            }
            if popcnt && std::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// [`Isa::detect`]'s choice, unless the environment variable `var` names another
    /// this processor supports (`avx512`, `avx2` or `portable`). An unknown or
    /// unsupported name is ignored with a warning. Callers read it once per process.
    pub(crate) fn from_env(var: &str) -> Isa {
        let best = Isa::detect();
        let Ok(wanted) = std::env::var(var) else {
            return best;
        };
        let chosen = match (wanted.as_str(), best) {
            ("portable", _) => Some(Isa::Portable),
            #[cfg(target_arch = "x86_64")]
            ("avx2", Isa::Avx2 | Isa::Avx512) => Some(Isa::Avx2),
            #[cfg(target_arch = "x86_64")]
            ("avx512", Isa::Avx512) => Some(Isa::Avx512),
            _ => None,
        };
        match chosen {
            Some(isa) => {
                tracing::info!(?isa, "{var}={wanted}");
                isa
            }
            None => {
                tracing::warn!(?best, "{var}={wanted:?} is unknown or not supported here; using the best path");
                best
            }
        }
    }

    /// Every instruction set this processor supports (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Isa> {
        let mut out = vec![Isa::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
                out.push(Isa::Avx2);
            }
            if Isa::detect() == Isa::Avx512 {
                out.push(Isa::Avx512);
            }
        }
        out
    }
}
