//! Seeded (keyword-assisted) topics: the `seed_words` a fit takes, their check against
//! the corpus, and the prior they become.
//!
//! Why it exists: users bring words they care about ("games: game, play, player") and
//! expect a topic built around them that keeps them for the whole fit, not a start that
//! the sampler forgets (GuidedLDA's seeds act only at initialisation). Here each seed
//! word w of seeded topic k carries c_kw = ⌈strength · n_w⌉ pseudo-counts (n_w: the
//! word's tokens in the training documents) for the whole fit; a fresh chain starts a
//! seed word's tokens in its seeded topic where the document speaks of the seed
//! ([`SeededStart`]) and reaches the full pseudo-counts over its first sweeps
//! ([`SeedRamp`]).
//!
//! The model (decision 0059): p(w, z) ∝ p(z | α) · Π_k [Π_w Γ(n_kw + c_kw + β) /
//! Γ(c_kw + β)] · Γ(Vβ)/Γ(n_k + Vβ). It is LDA whose topic k has the asymmetric prior
//! Dirichlet(β + c_k), times a term Γ(n_k + Vβ + P_k)/Γ(n_k + Vβ) in each seeded
//! topic's size (P_k = Σ_w c_kw) that exactly offsets what the pseudo-counts would
//! otherwise charge the topic's other words: a token's weight for topic k is
//! (n_dk + α_k)(n_kw + c_kw + β)/(n_k + Vβ), so a seed word gains and no other word
//! loses. With the plain Dirichlet(β + c_k) (denominator n_k + Vβ + P_k) a seeded topic
//! pushed its non-seed words out and the rest of the fit into worse modes (the
//! bench/seeded_topics.py runs in the decision). The pseudo-counts steer assignments
//! only: the served topic-word distributions are the data's, (n_kw + β)/(n_k + Vβ) of
//! the tokens assigned, so a seed word the corpus does not use with the topic's other
//! words does not rise by fiat.
//!
//! Families whose topics are Dirichlet-multinomial over words with integer counts (LDA,
//! DCNT, SCNT) add [`SeedPrior`] to those counts. PCM's topics are Poisson rates with
//! no counts per topic: it adds c_kw μ_kw to each seeded log rate's conditional, the
//! likelihood of c_kw tokens of w in topic k with no exposure, the same "free"
//! pseudo-counts in a Poisson model ([`crate::models::hpc`]'s `data`). The seeds here
//! are family-free.

use super::params::{ParamError, ParamReader};
use crate::corpus::lexicon::Lexicon;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Most seeded topics a fit takes, and most words per seeded topic.
pub const MAX_SEED_TOPICS: usize = 1_000;
pub const MAX_WORDS_PER_SEED: usize = 100;
/// Longest seed name in bytes: a topic name's bound (the rename endpoint's).
pub const MAX_NAME_BYTES: usize = 200;
/// Default `seed_strength`: of 0.3, 1 and 3 on corpora drawn from LDA with seed words
/// shared between topics, 0.3 recovered the seeded topics best and left the other
/// topics as unseeded LDA finds them (decision 0059); stronger seeds pull a shared
/// word's tokens into the seeded topic beyond its share.
pub const DEFAULT_STRENGTH: f64 = 0.3;
/// Largest `seed_strength` accepted.
pub const MAX_STRENGTH: f64 = 100.0;

/// One seeded topic as the request names it: topic i of the fit is the i-th seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedTopic {
    pub name: String,
    pub words: Vec<String>,
}

/// What a seed word the corpus' vocabulary lacks does to the fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MissingSeedWords {
    #[default]
    /// The job is refused (422 naming the word).
    Reject,
    /// The word is left out and reported in the model's diagnostics.
    Ignore,
}

impl MissingSeedWords {
    fn wire(self) -> &'static str {
        match self {
            MissingSeedWords::Reject => "reject",
            MissingSeedWords::Ignore => "ignore",
        }
    }
}

/// A fit's seeds: empty when the fit has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedWords {
    pub topics: Vec<SeedTopic>,
    pub strength: f64,
    pub missing: MissingSeedWords,
}

impl Default for SeedWords {
    fn default() -> Self {
        SeedWords { topics: Vec::new(), strength: DEFAULT_STRENGTH, missing: MissingSeedWords::Reject }
    }
}

/// The schema of `seed_words`.
fn seed_words_schema() -> Value {
    json!({
        "type": "array",
        "maxItems": MAX_SEED_TOPICS,
        "items": {
            "type": "object",
            "required": ["name", "words"],
            "additionalProperties": false,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES},
                "words": {"type": "array", "minItems": 1, "maxItems": MAX_WORDS_PER_SEED, "items": {"type": "string", "minLength": 1}}
            }
        },
        "default": []
    })
}

impl SeedWords {
    /// Read `seed_words`, `seed_strength` and `missing_seed_words` for a fit of
    /// `num_topics` topics; errors name the key and item (`seed_words[1].words[0]`).
    pub fn read(r: &mut ParamReader, num_topics: usize) -> Result<Self, ParamError> {
        Self::read_with_default_strength(r, num_topics, DEFAULT_STRENGTH)
    }

    /// [`Self::read`] for a family whose `seed_strength` defaults to `default_strength`
    /// (PCM's, where the same pseudo-counts act on Poisson rates).
    pub fn read_with_default_strength(r: &mut ParamReader, num_topics: usize, default_strength: f64) -> Result<Self, ParamError> {
        let raw = r.raw("seed_words", seed_words_schema());
        let strength = r.number_in_or("seed_strength", 0.0, MAX_STRENGTH, default_strength);
        let missing = r.choice_or("missing_seed_words", &["reject", "ignore"], "reject");
        let topics = match raw {
            None => Vec::new(),
            Some(v) => parse_topics(&v)?,
        };
        let (strength, missing) = (strength?, missing?);
        if topics.len() > num_topics {
            return Err(ParamError::new("seed_words", format!("{} seeded topics for {num_topics} topics: at most one seed per topic", topics.len())));
        }
        let missing = if missing == "ignore" { MissingSeedWords::Ignore } else { MissingSeedWords::Reject };
        Ok(SeedWords { topics, strength, missing })
    }

    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }

    /// The stored form of the three keys (read back by [`Self::read`]).
    pub fn write_json(&self, out: &mut serde_json::Map<String, Value>) {
        out.insert("seed_words".into(), json!(self.topics));
        out.insert("seed_strength".into(), json!(self.strength));
        out.insert("missing_seed_words".into(), json!(self.missing.wire()));
    }

    /// The names the seeded topics are served with: topic i is the i-th seed.
    pub fn names(&self) -> Vec<(usize, String)> {
        self.topics.iter().enumerate().map(|(i, t)| (i, t.name.clone())).collect()
    }

    /// Each seed's words as term ids of `lexicon` (normalised as the corpus' words were:
    /// case, stemming), and the words it lacks. A lacking word is an error naming it
    /// unless `missing_seed_words` is `ignore`; so is a seed left with no word at all.
    pub fn resolve(&self, lexicon: &Lexicon) -> Result<ResolvedSeeds, ParamError> {
        let pipeline = lexicon.pipeline();
        let mut resolved = ResolvedSeeds::default();
        for (i, topic) in self.topics.iter().enumerate() {
            let mut ids = Vec::new();
            for (j, word) in topic.words.iter().enumerate() {
                match pipeline.normalize_term(word).and_then(|t| lexicon.id(&t)) {
                    Some(id) if !ids.contains(&id) => ids.push(id),
                    Some(_) => {}
                    None if self.missing == MissingSeedWords::Ignore => resolved.missing.push(MissingWord { topic: i, word: word.clone() }),
                    None => {
                        return Err(ParamError::new(
                            format!("seed_words[{i}].words[{j}]"),
                            format!("{word:?} is not in the corpus' vocabulary (after its preprocessing); give \"missing_seed_words\": \"ignore\" to leave such words out"),
                        ))
                    }
                }
            }
            if ids.is_empty() {
                return Err(ParamError::new(format!("seed_words[{i}].words"), format!("none of seed {:?}'s words is in the corpus' vocabulary", topic.name)));
            }
            resolved.words.push(ids);
        }
        Ok(resolved)
    }
}

/// Read a `seed_words` list; every error names its item (`seed_words[1].name`).
pub(crate) fn parse_topics(v: &Value) -> Result<Vec<SeedTopic>, ParamError> {
    let items = v.as_array().ok_or_else(|| ParamError::new("seed_words", format!("must be a list of {{\"name\", \"words\"}} objects, got {v}")))?;
    if items.len() > MAX_SEED_TOPICS {
        return Err(ParamError::new("seed_words", format!("at most {MAX_SEED_TOPICS} seeded topics, got {}", items.len())));
    }
    let mut topics: Vec<SeedTopic> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |key: &str| format!("seed_words[{i}]{key}");
        let obj = item.as_object().ok_or_else(|| ParamError::new(at(""), format!("must be an object with \"name\" and \"words\", got {item}")))?;
        if let Some(k) = obj.keys().find(|k| *k != "name" && *k != "words") {
            return Err(ParamError::new(at(&format!(".{k}")), "unknown key: a seed has \"name\" and \"words\""));
        }
        let name = match obj.get("name").and_then(Value::as_str).map(str::trim) {
            Some(n) if !n.is_empty() && n.len() <= MAX_NAME_BYTES && !n.chars().any(char::is_control) => n.to_string(),
            _ => {
                return Err(ParamError::new(
                    at(".name"),
                    format!("must be a non-empty name of at most {MAX_NAME_BYTES} bytes (UTF-8) without control characters, as a topic's name"),
                ))
            }
        };
        if topics.iter().any(|t| t.name == name) {
            return Err(ParamError::new(at(".name"), format!("{name:?} names two seeds")));
        }
        let words = obj.get("words").and_then(Value::as_array).ok_or_else(|| ParamError::new(at(".words"), "must be a list of words"))?;
        if words.is_empty() || words.len() > MAX_WORDS_PER_SEED {
            return Err(ParamError::new(at(".words"), format!("must hold 1 to {MAX_WORDS_PER_SEED} words, got {}", words.len())));
        }
        let words = words
            .iter()
            .enumerate()
            .map(|(j, w)| match w.as_str() {
                Some(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
                _ => Err(ParamError::new(at(&format!(".words[{j}]")), format!("must be a non-empty string, got {w}"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        topics.push(SeedTopic { name, words });
    }
    Ok(topics)
}

/// A seed word the vocabulary lacks, left out (`missing_seed_words: ignore`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingWord {
    pub topic: usize,
    pub word: String,
}

/// Seeds as term ids: `words[i]` are seeded topic i's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedSeeds {
    pub words: Vec<Vec<u32>>,
    pub missing: Vec<MissingWord>,
}

/// What a seeded model's diagnostics say of its seeds (`diagnostics.seeds`): each
/// seeded topic's name and the words it was seeded with, and the words left out.
pub fn seeds_diagnostics(seeds: &SeedWords, missing: &[MissingWord]) -> Value {
    let topics: Vec<Value> = seeds
        .topics
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let kept: Vec<&String> = t.words.iter().filter(|w| !missing.iter().any(|m| m.topic == i && &m.word == *w)).collect();
            json!({"topic": i, "name": t.name, "words": kept})
        })
        .collect();
    json!({"strength": seeds.strength, "topics": topics, "missing_words": missing})
}

/// The seeds' pseudo-counts, `(word, topic, count)`: what a family adds to its
/// topic-word counts n_kw (and not to the topic totals n_k) for the whole fit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeedPrior {
    entries: Vec<(u32, u32, u32)>,
}

impl SeedPrior {
    /// The prior of `seeds` for `num_topics` topics, with `word_counts[w]` the training
    /// tokens of word w: ⌈strength · n_w⌉ for each seed word (at least 1).
    pub fn new(seeds: &ResolvedSeeds, strength: f64, word_counts: &[u64], num_topics: usize) -> Self {
        let mut entries = Vec::new();
        for (k, words) in seeds.words.iter().enumerate().take(num_topics) {
            for &w in words {
                let count = (strength * word_counts[w as usize] as f64).ceil().clamp(1.0, u32::MAX as f64 / 4.0) as u32;
                entries.push((w, k as u32, count));
            }
        }
        SeedPrior { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `(word, topic, pseudo-count)` entries, for a family that adds them to
    /// something other than integer counts (PCM's log rates).
    pub fn entries(&self) -> &[(u32, u32, u32)] {
        &self.entries
    }

    /// How many leading topics are seeded (0 without seeds).
    pub fn num_topics(&self) -> usize {
        self.entries.iter().map(|&(_, t, _)| t as usize + 1).max().unwrap_or(0)
    }

    /// The prior at `fraction` of its pseudo-counts (⌈fraction · c⌉ each).
    fn scaled(&self, fraction: f64) -> Self {
        SeedPrior { entries: self.entries.iter().map(|&(w, t, c)| (w, t, (fraction * c as f64).ceil() as u32)).collect() }
    }

    /// Add the pseudo-counts to word-major counts `n_kw[w · K + k]` of `k` topics.
    pub fn add_to(&self, n_kw: &mut [u32], k: usize) {
        for &(w, t, c) in &self.entries {
            n_kw[w as usize * k + t as usize] += c;
        }
    }

    /// Take them out again: the data's own counts.
    pub fn remove_from(&self, n_kw: &mut [u32], k: usize) {
        for &(w, t, c) in &self.entries {
            n_kw[w as usize * k + t as usize] -= c;
        }
    }

    /// Where a fresh chain starts the seed words' tokens: [`SeededStart`].
    pub fn start(&self, num_terms: usize) -> SeededStart {
        let mut seeds_of_word = vec![Vec::new(); num_terms];
        let mut words_of_seed = vec![0usize; self.num_topics()];
        for &(w, t, _) in &self.entries {
            seeds_of_word[w as usize].push(t);
            words_of_seed[t as usize] += 1;
        }
        SeededStart { seeds_of_word, words_of_seed }
    }

    /// The seeded model's log p(w | z) (module docs) minus what the symmetric-β formula
    /// gives for topic-word counts that include the pseudo-counts and topic totals that
    /// do not: −Σ [ln Γ(c_kw + β) − ln Γ(β)], a constant of the fit (for a fixed β),
    /// added so the traced log joint is the seeded model's.
    pub fn log_joint_correction(&self, beta: f64) -> f64 {
        use statrs::function::gamma::ln_gamma;
        -self.entries.iter().map(|&(_, _, c)| ln_gamma(beta + c as f64) - ln_gamma(beta)).sum::<f64>()
    }
}

/// A fresh chain's seeds rising from none to full strength over its first sweeps: at
/// sweep i (1-based) of a ramp of R sweeps each pseudo-count is ⌈(i/R) · c⌉, from
/// sweep R on the prior is the seeded model's. At full strength from the first sweep,
/// a seed word that another topic also uses heavily drew that topic's documents into
/// the seeded topic while the other topics were still noise, and the seeded topic took
/// its neighbour whole; with the ramp (and [`SeededStart`]) the topics form first and
/// the seeds then hold theirs (bench/seeded_topics.py; decision 0068). A chain that
/// starts from a fitted state (an edit's, an update's) has formed topics: no ramp.
#[derive(Debug, Clone, Default)]
pub struct SeedRamp {
    full: SeedPrior,
    sweeps: usize,
}

/// The ramp's length as a share of the burn-in: a third, so the chain runs two thirds
/// of its burn-in under the full prior before it keeps a sample.
const RAMP_SHARE_OF_BURN_IN: usize = 3;

impl SeedRamp {
    /// The ramp of a fresh chain of `burn_in` burn-in sweeps to `full`.
    pub fn fresh(full: SeedPrior, burn_in: usize) -> Self {
        SeedRamp { full, sweeps: burn_in / RAMP_SHARE_OF_BURN_IN }
    }

    /// No ramp: `full` from the first sweep.
    pub fn none(full: SeedPrior) -> Self {
        SeedRamp { full, sweeps: 0 }
    }

    /// The prior in force once sweep `iteration` (1-based; 0: none yet) has run: what a
    /// chain starts with, or resumes with after that sweep.
    pub fn after(&self, iteration: usize) -> SeedPrior {
        match self.at(iteration) {
            Some(prior) => prior,
            None if self.sweeps > 0 && iteration == 0 => self.full.scaled(0.0),
            None => self.full.clone(),
        }
    }

    /// The prior sweep `iteration` (1-based) runs under, when it differs from the
    /// previous sweep's (within the ramp); `None` past it.
    pub fn at(&self, iteration: usize) -> Option<SeedPrior> {
        (self.sweeps > 0 && iteration <= self.sweeps && !self.full.is_empty()).then(|| self.full.scaled(iteration as f64 / self.sweeps as f64))
    }
}

/// A fresh chain's seeded start: which seeded topic a document's tokens of a seed word
/// start in. A token starts in seed k's topic when its document holds at least two of
/// k's words (all of them for a one-word seed), so the document speaks of k; otherwise
/// it starts where the random start drew it. Starting every token of a seed word in its
/// topic, as GuidedLDA does, also moves the tokens of a seed word that another topic
/// uses heavily, in that topic's documents, and the seeded topic then took that
/// neighbour whole (bench/seeded_topics.py; decision 0068).
#[derive(Debug, Clone)]
pub struct SeededStart {
    seeds_of_word: Vec<Vec<u32>>,
    words_of_seed: Vec<usize>,
}

impl SeededStart {
    /// For one document's distinct words (`terms`), the topic each starts in, aligned
    /// with `terms`: the first seed listing the word whose words the document holds
    /// enough of, `None` for the others.
    pub fn in_document(&self, terms: &[u32]) -> Vec<Option<u32>> {
        let mut held = vec![0usize; self.words_of_seed.len()];
        for &w in terms {
            for &t in &self.seeds_of_word[w as usize] {
                held[t as usize] += 1;
            }
        }
        let speaks_of = |t: u32| held[t as usize] >= self.words_of_seed[t as usize].min(2);
        terms.iter().map(|&w| self.seeds_of_word[w as usize].iter().copied().find(|&t| speaks_of(t))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::preprocess::PreprocessOptions;

    fn read(v: Value, k: usize) -> Result<SeedWords, ParamError> {
        let mut r = ParamReader::new(&v).unwrap();
        let s = SeedWords::read(&mut r, k)?;
        r.finish()?;
        Ok(s)
    }

    #[test]
    fn bad_seeds_name_their_item() {
        for (body, field) in [
            (json!({"seed_words": {"a": 1}}), "seed_words"),
            (json!({"seed_words": [{"name": "a"}]}), "seed_words[0].words"),
            (json!({"seed_words": [{"name": "", "words": ["x"]}]}), "seed_words[0].name"),
            (json!({"seed_words": [{"name": "two\nlines", "words": ["x"]}]}), "seed_words[0].name"),
            (json!({"seed_words": [{"name": "é".repeat(101), "words": ["x"]}]}), "seed_words[0].name"),
            (json!({"seed_words": [{"name": "a", "words": ["x"]}, {"name": "a", "words": ["y"]}]}), "seed_words[1].name"),
            (json!({"seed_words": [{"name": "a", "words": ["x", 3]}]}), "seed_words[0].words[1]"),
            (json!({"seed_words": [{"name": "a", "words": []}]}), "seed_words[0].words"),
            (json!({"seed_words": [{"name": "a", "words": ["x"], "weight": 2}]}), "seed_words[0].weight"),
            (json!({"seed_words": [{"name": "a", "words": ["x"]}, {"name": "b", "words": ["y"]}, {"name": "c", "words": ["z"]}]}), "seed_words"),
            (json!({"seed_strength": -1}), "seed_strength"),
            (json!({"missing_seed_words": "drop"}), "missing_seed_words"),
        ] {
            assert_eq!(read(body.clone(), 2).unwrap_err().field, field, "{body}");
        }
        let ok = read(json!({"seed_words": [{"name": " games ", "words": ["Game", "play"]}]}), 2).unwrap();
        assert_eq!(ok.topics[0].name, "games");
        assert_eq!(ok.names(), vec![(0, "games".to_string())]);
    }

    #[test]
    fn words_resolve_as_the_corpus_normalised_them_and_missing_ones_are_named_or_reported() {
        let lexicon = Lexicon::new(vec!["game".into(), "play".into(), "music".into()], PreprocessOptions::default());
        let seeds = read(json!({"seed_words": [{"name": "g", "words": ["Game", "play", "GAME"]}, {"name": "m", "words": ["music", "guitar"]}]}), 3).unwrap();
        let err = seeds.resolve(&lexicon).unwrap_err();
        assert_eq!(err.field, "seed_words[1].words[1]");
        assert!(err.message.contains("guitar"), "{err}");
        let ignoring = SeedWords { missing: MissingSeedWords::Ignore, ..seeds };
        let r = ignoring.resolve(&lexicon).unwrap();
        assert_eq!(r.words, vec![vec![0, 1], vec![2]], "Game and GAME are one word");
        assert_eq!(r.missing, vec![MissingWord { topic: 1, word: "guitar".into() }]);
        let none = SeedWords { topics: vec![SeedTopic { name: "x".into(), words: vec!["nothing".into()] }], ..ignoring };
        assert_eq!(none.resolve(&lexicon).unwrap_err().field, "seed_words[0].words");
    }

    /// The pseudo-counts go in and come out exactly (topic totals untouched), and the
    /// log-joint correction equals the difference between the seeded model's word term
    /// and the symmetric formula applied to the inflated counts, term by term.
    #[test]
    fn the_prior_adds_and_removes_exactly_and_its_correction_is_the_formulas_difference() {
        use crate::inference::collapsed_loglik::log_p_words_given_topics;
        use statrs::function::gamma::ln_gamma;
        let seeds = ResolvedSeeds { words: vec![vec![0, 2]], missing: vec![] };
        let prior = SeedPrior::new(&seeds, 0.5, &[5, 1, 3], 2);
        assert_eq!(prior.entries, vec![(0, 0, 3), (2, 0, 2)], "⌈0.5 · 5⌉ and ⌈0.5 · 3⌉");
        let (mut n_kw, n_k) = (vec![2u32, 3, 0, 1, 1, 2], vec![3u64, 6]);
        let data_kw = n_kw.clone();
        prior.add_to(&mut n_kw, 2);
        assert_eq!(n_kw, vec![5, 3, 0, 1, 3, 2]);
        let beta = 0.3;
        // The seeded model's word term: Π_w Γ(n + c + β)/Γ(c + β) · Γ(Vβ)/Γ(n_k + Vβ).
        let mut exact = 0.0;
        for t in 0..2 {
            let pseudo = |w: usize| [(0, 0, 3.0), (2, 0, 2.0)].iter().find(|e| e.0 == w && e.1 == t).map_or(0.0, |e| e.2);
            exact += ln_gamma(3.0 * beta) - ln_gamma(3.0 * beta + n_k[t] as f64);
            for w in 0..3 {
                exact += ln_gamma(pseudo(w) + beta + data_kw[w * 2 + t] as f64) - ln_gamma(pseudo(w) + beta);
            }
        }
        let via = log_p_words_given_topics(&n_kw, &n_k, 3, beta) + prior.log_joint_correction(beta);
        assert!((via - exact).abs() < 1e-9, "{via} vs {exact}");
        prior.remove_from(&mut n_kw, 2);
        assert_eq!(n_kw, data_kw);
    }
}
