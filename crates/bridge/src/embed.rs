//! A small sentence-embedding model run in process, for `retrieve_tools`' meaning-based half.
//!
//! The model is a BERT-family sentence encoder in the sentence-transformers layout (a directory
//! with `config.json`, `model.safetensors` and `tokenizer.json`, such as all-MiniLM-L6-v2), run
//! on the CPU with candle's matrix products (the encoder around them is written here, see
//! [`Encoder`]), and a query's few token rows with 8-bit weights ([`skinny`]): the bridge stays
//! one binary that downloads nothing, neither at build time nor at run time. A text's vector is the mean of its token states, L2-normalised,
//! so a dot product of two vectors is their cosine similarity.
//!
//! [`Embedder`] adds a cache keyed by text: the catalogue's vectors are computed once, however
//! many indexes (hosted sessions, a page's tools coming and going) ask for them again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{LayerNorm, Linear};
use serde::Deserialize;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

/// Tokens a document is cut to: a tool's name and the first sentences of its description say
/// what it does; the long tail of a CDP description would only cost time.
const MAX_TOKENS: usize = 96;
/// Texts embedded in one forward pass (padded to the longest of them).
const BATCH: usize = 32;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("{path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not a BERT config: {error}")]
    Config {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{path}: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("the model: {0}")]
    Model(#[from] candle_core::Error),
    #[error("the model has no tensor {0} (is it a BERT sentence encoder?)")]
    Missing(String),
    #[error("the model's hidden_act is {0:?}; only gelu is supported")]
    Activation(String),
    #[error("tokenizing: {0}")]
    Tokenize(String),
    #[error("no thread for the model: {0}")]
    Threads(String),
}

/// The part of `config.json` the encoder needs.
#[derive(Debug, Deserialize)]
struct BertConfig {
    hidden_size: usize,
    num_attention_heads: usize,
    num_hidden_layers: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
}

fn default_eps() -> f64 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

/// One transformer layer of BERT (post-norm).
struct Layer {
    /// Query, key and value projections as one matrix (3 × hidden rows): one product, not three.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    up: Dense,
    down: Dense,
    out_norm: LayerNorm,
}

/// A linear layer twice: as candle's (for the catalogue's batches) and with 8-bit weights for
/// a query's few rows ([`skinny`]), the latter only where queries take that path.
struct Dense {
    full: Linear,
    small: Option<skinny::Quantized>,
}

impl Dense {
    fn new(full: Linear, skinny: bool) -> candle_core::Result<Dense> {
        let small = skinny.then(|| skinny::Quantized::new(&full)).transpose()?;
        Ok(Dense { full, small })
    }

    /// `xs` through the layer: a few rows (a query) by the 8-bit weights where there are
    /// some, anything else by candle's product.
    fn forward(&self, xs: &Tensor, rows: usize) -> candle_core::Result<Tensor> {
        match &self.small {
            Some(small) if rows <= SKINNY_ROWS => small.forward(xs),
            _ => self.full.forward(xs),
        }
    }
}

/// A BERT encoder (post-norm, GELU, absolute positions), written here rather than taken from
/// candle-transformers, which would compile a few hundred models to use this one; its vectors
/// are the same (the retrieval figures of both were identical to the last digit when this was
/// written).
struct Encoder {
    word: Tensor,
    position: Tensor,
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

/// Up to this many token rows (a query, a short batch) a linear layer is [`skinny::Quantized`];
/// above it (the catalogue's batches) candle's general product, which packs the weights once
/// for many rows.
const SKINNY_ROWS: usize = 64;

impl Encoder {
    fn load(
        tensors: &mut HashMap<String, Tensor>,
        config: &BertConfig,
    ) -> Result<Encoder, EmbedError> {
        if config.hidden_act != "gelu" {
            return Err(EmbedError::Activation(config.hidden_act.clone()));
        }
        // Some exports prefix every name with the architecture ("bert.embeddings…").
        let prefix = if tensors.contains_key("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else {
            ""
        };
        let mut take = |name: &str| -> Result<Tensor, EmbedError> {
            let name = format!("{prefix}{name}");
            let tensor = tensors.remove(&name).ok_or(EmbedError::Missing(name))?;
            Ok(tensor.to_dtype(DType::F32)?)
        };
        let embedding_norm = layer_norm(&mut take, "embeddings.LayerNorm", config.layer_norm_eps)?;
        // A query's products take the 8-bit weights ([`skinny`]), except in a debug build
        // (unoptimised, the loop is slower than candle's product, which the workspace compiles
        // optimised even then) and to measure them against candle's
        // (`MCP_RELAY_EMBED_GENERIC_PRODUCTS=1`); the weights are made only where they are used.
        let skinny = !cfg!(debug_assertions)
            && std::env::var_os("MCP_RELAY_EMBED_GENERIC_PRODUCTS").is_none();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = format!("encoder.layer.{i}");
            let eps = config.layer_norm_eps;
            let mut linear = |names: &[&str]| -> Result<Linear, EmbedError> {
                let mut weights = Vec::new();
                let mut biases = Vec::new();
                for name in names {
                    weights.push(take(&format!("{at}.{name}.weight"))?);
                    biases.push(take(&format!("{at}.{name}.bias"))?);
                }
                Ok(Linear::new(
                    Tensor::cat(&weights, 0)?,
                    Some(Tensor::cat(&biases, 0)?),
                ))
            };
            let qkv = linear(&[
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
            ])?;
            let attention_out = linear(&["attention.output.dense"])?;
            let up = linear(&["intermediate.dense"])?;
            let down = linear(&["output.dense"])?;
            layers.push(Layer {
                qkv: Dense::new(qkv, skinny)?,
                attention_out: Dense::new(attention_out, skinny)?,
                up: Dense::new(up, skinny)?,
                down: Dense::new(down, skinny)?,
                attention_norm: layer_norm(
                    &mut take,
                    &format!("{at}.attention.output.LayerNorm"),
                    eps,
                )?,
                out_norm: layer_norm(&mut take, &format!("{at}.output.LayerNorm"), eps)?,
            });
        }
        Ok(Encoder {
            word: take("embeddings.word_embeddings.weight")?,
            position: take("embeddings.position_embeddings.weight")?,
            token_type: take("embeddings.token_type_embeddings.weight")?,
            embedding_norm,
            layers,
            heads: config.num_attention_heads,
        })
    }

    /// Token states `(batch, tokens, hidden)` of `ids` and `types` `(batch, tokens)`; `mask`
    /// is 1 for real tokens, 0 for padding.
    fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, tokens) = ids.dims2()?;
        let hidden = self.word.dim(1)?;
        let head = hidden / self.heads;
        let words = self.word.index_select(&ids.flatten_all()?, 0)?;
        let types = self.token_type.index_select(&types.flatten_all()?, 0)?;
        let words = words.reshape((batch, tokens, hidden))?;
        let types = types.reshape((batch, tokens, hidden))?;
        let positions = self.position.narrow(0, 0, tokens)?.unsqueeze(0)?;
        let mut xs = self
            .embedding_norm
            .forward(&(words + types)?.broadcast_add(&positions)?)?;
        // 0 where attended, a large negative number on padding, for every head and query.
        let mask = ((mask.to_dtype(DType::F32)? - 1.0)? * 1e4)?.reshape((batch, 1, 1, tokens))?;
        let scale = 1.0 / (head as f64).sqrt();
        let split = |t: Tensor| -> candle_core::Result<Tensor> {
            t.reshape((batch, tokens, self.heads, head))?
                .transpose(1, 2)?
                .contiguous()
        };
        let rows = batch * tokens;
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&xs, rows)?;
            let q = split(qkv.narrow(D::Minus1, 0, hidden)?)?;
            let k = split(qkv.narrow(D::Minus1, hidden, hidden)?)?;
            let v = split(qkv.narrow(D::Minus1, 2 * hidden, hidden)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&mask)?;
            let weights = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = weights
                .matmul(&v)?
                .transpose(1, 2)?
                .reshape((batch, tokens, hidden))?;
            let attended = layer.attention_out.forward(&context, rows)?;
            xs = layer.attention_norm.forward(&(attended + &xs)?)?;
            let inner = layer.up.forward(&xs, rows)?.gelu_erf()?;
            let out = layer.down.forward(&inner, rows)?;
            xs = layer.out_norm.forward(&(out + &xs)?)?;
        }
        Ok(xs)
    }
}

/// A layer norm from `{name}.weight` and `{name}.bias`.
fn layer_norm(
    take: &mut impl FnMut(&str) -> Result<Tensor, EmbedError>,
    name: &str,
    eps: f64,
) -> Result<LayerNorm, EmbedError> {
    Ok(LayerNorm::new(
        take(&format!("{name}.weight"))?,
        take(&format!("{name}.bias"))?,
        eps,
    ))
}

/// The model and its tokenizer.
pub struct EmbeddingModel {
    encoder: Encoder,
    tokenizer: Tokenizer,
    /// Width of a vector (384 for MiniLM-L6).
    dimension: usize,
    /// Where it was loaded from, for messages.
    path: PathBuf,
    /// How long loading took (read, parse, quantize), measured once.
    load_time: Duration,
    /// One thread for the model's work: a query is a few small matrix products, which more
    /// threads only slowed down (measured on the 2-core machine of docs/BENCHMARKS.md: 10.6 ms
    /// with one, 22.5 ms with two), and a bridge must not take every core of the host it runs
    /// beside.
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for EmbeddingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingModel")
            .field("path", &self.path)
            .field("dimension", &self.dimension)
            .field("load_time", &self.load_time)
            .finish()
    }
}

impl EmbeddingModel {
    /// Loads the model from a sentence-transformers directory, or from the path of its
    /// `model.safetensors` (the other files are then looked for beside it).
    pub fn load(path: &Path) -> Result<EmbeddingModel, EmbedError> {
        let started = Instant::now();
        let dir = if path.is_file() {
            path.parent().unwrap_or(Path::new(".")).to_path_buf()
        } else {
            path.to_path_buf()
        };
        let read = |name: &str| {
            let file = dir.join(name);
            std::fs::read(&file).map_err(|error| EmbedError::Read { path: file, error })
        };
        let config_path = dir.join("config.json");
        let config: BertConfig =
            serde_json::from_slice(&read("config.json")?).map_err(|error| EmbedError::Config {
                path: config_path,
                error,
            })?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path.clone(),
                message: e.to_string(),
            })?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path,
                message: e.to_string(),
            })?;
        let weights = read("model.safetensors")?;
        let mut tensors = candle_core::safetensors::load_buffer(&weights, &Device::Cpu)?;
        drop(weights);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "embedding-model".into())
            .build()
            .map_err(|e| EmbedError::Threads(e.to_string()))?;
        let encoder = Encoder::load(&mut tensors, &config)?;
        Ok(EmbeddingModel {
            encoder,
            tokenizer,
            dimension: config.hidden_size,
            path: dir,
            load_time: started.elapsed(),
            pool,
        })
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One unit vector per text, in order. Texts are batched by length so padding stays short.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = self.pool.install(|| self.embed_batch(&batch))?;
            for (&i, vector) in chunk.iter().zip(vectors) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Result<Tensor, EmbedError> {
            let rows = encodings
                .iter()
                .map(|e| Tensor::new(f(e), &Device::Cpu))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Tensor::stack(&rows, 0)?)
        };
        let ids = rows(&|e| e.get_ids())?;
        let types = rows(&|e| e.get_type_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let states = self.encoder.forward(&ids, &types, &mask)?;
        // Mean of the real tokens' states (padding masked out), then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = states.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

/// A model shared by every index that uses it, with the vectors it has computed, by text.
#[derive(Debug)]
pub struct Embedder {
    model: EmbeddingModel,
    /// Document vectors by document text: a tool that leaves and comes back, or the same
    /// catalogue in another session, is not embedded again.
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
    /// Held while documents are embedded, so two indexes built at once (two sessions of the
    /// relay) do not both embed the catalogue; queries do not wait for it.
    computing: Mutex<()>,
}

impl Embedder {
    pub fn new(model: EmbeddingModel) -> Embedder {
        Embedder {
            model,
            cache: Mutex::new(HashMap::new()),
            computing: Mutex::new(()),
        }
    }

    /// Loads the model at `path` (see [`EmbeddingModel::load`]).
    pub fn load(path: &Path) -> Result<Embedder, EmbedError> {
        EmbeddingModel::load(path).map(Embedder::new)
    }

    pub fn model(&self) -> &EmbeddingModel {
        &self.model
    }

    /// The vectors of `texts`, computing only those not cached yet.
    pub fn documents(&self, texts: &[String]) -> Result<Vec<Arc<[f32]>>, EmbedError> {
        let _computing = self.computing.lock().unwrap();
        let missing: Vec<&str> = {
            let cache = self.cache.lock().unwrap();
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .map(String::as_str)
                .filter(|t| !cache.contains_key(*t) && seen.insert(*t))
                .collect()
        };
        // Computed without the cache's lock: another index may read cached vectors meanwhile.
        let computed = self.model.embed(&missing)?;
        let mut cache = self.cache.lock().unwrap();
        for (text, vector) in missing.iter().zip(computed) {
            cache.insert((*text).to_owned(), vector.into());
        }
        Ok(texts.iter().map(|t| Arc::clone(&cache[t])).collect())
    }

    /// A query's vector (never cached: queries rarely repeat).
    pub fn query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.model.embed(&[text])?.remove(0))
    }

    /// How many document vectors are cached.
    pub fn cached(&self) -> usize {
        self.cache.lock().unwrap().len()
    }
}

/// A linear layer for a few rows at a time, the shape of a query, with 8-bit weights.
///
/// Why: a query is a handful of token rows against 42 MB of 32-bit weights, and its cost is
/// reading those weights from memory (12 ms of CPU with one word or with ten: measured, see
/// docs/BENCHMARKS.md), not the arithmetic. Each weight row is kept here as 8-bit integers with
/// one scale (its largest magnitude / 127), 10.5 MB in all, read once per query and multiplied
/// into every token row while it is in the first-level cache; the rows themselves stay 32-bit,
/// so only the weights are rounded. With AVX2 and FMA (detected at run time, so the shipped
/// binary still runs on any x86-64), eight lanes per instruction; elsewhere the same loop.
///
/// Where the CPU has AVX-512 VNNI (detected at run time), the token rows are rounded to 8 bits
/// too, each with its own scale, and the products are whole numbers: `vpdpbusd` multiplies 64
/// byte pairs and adds them in fours into sixteen 32-bit sums per instruction, against eight
/// multiply-adds per 32-bit instruction above. Rounding the rows moves the vectors a little
/// more than rounding the weights alone; docs/BENCHMARKS.md has the recall of both.
mod skinny {
    use candle_core::{Device, Tensor};
    use candle_nn::Linear;

    /// Lanes summed side by side per token row: independent sums the compiler keeps in vector
    /// registers, added together at the end (so no floating-point reassociation is asked of it).
    const BLOCK: usize = 16;
    /// Token rows multiplied together, each against the same piece of a weight row.
    const GROUP: usize = 4;

    /// A weight matrix `n × k` as 8-bit rows with a scale each, and its bias.
    pub(super) struct Quantized {
        n: usize,
        k: usize,
        weights: Vec<i8>,
        scales: Vec<f32>,
        bias: Vec<f32>,
        /// Each 8-bit weight row's sum: the integer product takes the rows as unsigned bytes
        /// (value + 128), and `128 × sum` takes the offset back out.
        sums: Vec<i32>,
    }

    impl Quantized {
        pub(super) fn new(layer: &Linear) -> candle_core::Result<Quantized> {
            let (n, k) = layer.weight().dims2()?;
            let full = layer.weight().to_vec2::<f32>()?;
            let mut weights = Vec::with_capacity(n * k);
            let mut scales = Vec::with_capacity(n);
            for row in &full {
                let largest = row.iter().fold(0.0f32, |m, w| m.max(w.abs()));
                let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
                scales.push(scale);
                weights.extend(
                    row.iter()
                        .map(|w| (w / scale).round().clamp(-127.0, 127.0) as i8),
                );
            }
            let bias = match layer.bias() {
                Some(bias) => bias.to_vec1::<f32>()?,
                None => vec![0.0; n],
            };
            let sums = weights
                .chunks(k)
                .map(|row| row.iter().map(|w| i32::from(*w)).sum())
                .collect();
            Ok(Quantized {
                n,
                k,
                weights,
                scales,
                bias,
                sums,
            })
        }

        pub(super) fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
            let mut shape = xs.dims().to_vec();
            let rows = xs.elem_count() / self.k;
            let input = xs.flatten_all()?.to_vec1::<f32>()?;
            let mut out = vec![0.0f32; rows * self.n];
            self.product(&input, rows, &mut out);
            *shape
                .last_mut()
                .expect("a linear layer's input has a last dimension") = self.n;
            Tensor::from_vec(out, shape, &Device::Cpu)
        }

        /// `out[i][o] = bias[o] + scale[o] · (x[i] · w[o])` for `rows` rows.
        pub(super) fn product(&self, x: &[f32], rows: usize, out: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            if self.k.is_multiple_of(VNNI_LANES) && has_vnni() {
                // SAFETY: the CPU was just found to have the features the function is built for.
                unsafe { self.product_vnni(x, rows, out) };
                return;
            }
            self.product_f32(x, rows, out);
        }

        /// The product with 32-bit token rows (the weights' rounding only).
        fn product_f32(&self, x: &[f32], rows: usize, out: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                // SAFETY: the CPU was just found to have both features the function is built for.
                unsafe { self.product_avx2(x, rows, out) };
                return;
            }
            self.product_portable(x, rows, out);
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn product_avx2(&self, x: &[f32], rows: usize, out: &mut [f32]) {
            product_body!(self, x, rows, out, |a: f32, b: f32, c: f32| a.mul_add(b, c));
        }

        /// The integer product: each token row rounded to 8 bits with its own scale (its
        /// largest magnitude / 127) and offset by 128 to the unsigned bytes `vpdpbusd` takes,
        /// four token rows at a time against each weight row, as above.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
        unsafe fn product_vnni(&self, x: &[f32], rows: usize, out: &mut [f32]) {
            use std::arch::x86_64::{
                __m512i, _mm512_dpbusd_epi32, _mm512_loadu_si512, _mm512_reduce_add_epi32,
                _mm512_setzero_si512,
            };
            let (n, k) = (self.n, self.k);
            let (bytes, row_scales) = rows_as_bytes(x, rows, k);
            for o in 0..n {
                let weights = &self.weights[o * k..(o + 1) * k];
                let mut i = 0;
                while i < rows {
                    let group = (rows - i).min(GROUP);
                    let mut sums = [_mm512_setzero_si512(); GROUP];
                    let mut at = 0;
                    while at < k {
                        // SAFETY: `at + 64 <= k` (k is a multiple of 64), inside both rows.
                        let w = unsafe {
                            _mm512_loadu_si512(weights.as_ptr().add(at).cast::<__m512i>())
                        };
                        for (r, sum) in sums.iter_mut().enumerate().take(group) {
                            let from = (i + r) * k + at;
                            // SAFETY: as above, inside token row `i + r`.
                            let a = unsafe {
                                _mm512_loadu_si512(bytes.as_ptr().add(from).cast::<__m512i>())
                            };
                            *sum = _mm512_dpbusd_epi32(*sum, a, w);
                        }
                        at += VNNI_LANES;
                    }
                    for (r, sum) in sums.iter().enumerate().take(group) {
                        let dot = _mm512_reduce_add_epi32(*sum) - 128 * self.sums[o];
                        out[(i + r) * n + o] =
                            dot as f32 * row_scales[i + r] * self.scales[o] + self.bias[o];
                    }
                    i += group;
                }
            }
        }

        fn product_portable(&self, x: &[f32], rows: usize, out: &mut [f32]) {
            // Not mul_add: without FMA in hardware it is a slow library call.
            product_body!(self, x, rows, out, |a: f32, b: f32, c: f32| a * b + c);
        }
    }

    /// Bytes per `vpdpbusd`: the integer product takes rows whose length is a multiple.
    const VNNI_LANES: usize = 64;

    #[cfg(target_arch = "x86_64")]
    fn has_vnni() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }

    /// `rows` token rows of `k` values as unsigned bytes (each value / its row's scale,
    /// rounded, + 128) and the rows' scales.
    fn rows_as_bytes(x: &[f32], rows: usize, k: usize) -> (Vec<u8>, Vec<f32>) {
        let mut bytes = Vec::with_capacity(rows * k);
        let mut scales = Vec::with_capacity(rows);
        for row in x.chunks(k).take(rows) {
            let largest = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            scales.push(scale);
            bytes.extend(
                row.iter()
                    .map(|v| ((v / scale).round().clamp(-127.0, 127.0) as i32 + 128) as u8),
            );
        }
        (bytes, scales)
    }

    macro_rules! product_body {
        ($q:ident, $x:ident, $rows:ident, $out:ident, $fma:expr) => {
            let (n, k) = ($q.n, $q.k);
            // One weight row widened to 32 bits, once, then multiplied into the token rows
            // from the first-level cache, four token rows at a time: each piece of the weight
            // row is loaded once for four products (loads, not multiplications, bound this).
            let mut row = vec![0.0f32; k];
            let whole = k - k % BLOCK;
            for o in 0..n {
                for (wide, narrow) in row.iter_mut().zip(&$q.weights[o * k..(o + 1) * k]) {
                    *wide = f32::from(*narrow);
                }
                let mut i = 0;
                while i < $rows {
                    let group = ($rows - i).min(GROUP);
                    let mut lanes = [[0.0f32; BLOCK]; GROUP];
                    let mut at = 0;
                    while at < whole {
                        let b = &row[at..at + BLOCK];
                        for r in 0..GROUP {
                            // Rows past the group's end repeat its first; their sums are unused.
                            let from = (i + if r < group { r } else { 0 }) * k + at;
                            let a = &$x[from..from + BLOCK];
                            for j in 0..BLOCK {
                                lanes[r][j] = $fma(a[j], b[j], lanes[r][j]);
                            }
                        }
                        at += BLOCK;
                    }
                    for r in 0..group {
                        let input = &$x[(i + r) * k..(i + r + 1) * k];
                        let mut sum: f32 = lanes[r].iter().sum();
                        for j in whole..k {
                            sum += input[j] * row[j];
                        }
                        $out[(i + r) * n + o] = sum * $q.scales[o] + $q.bias[o];
                    }
                    i += group;
                }
            }
        };
    }
    use product_body;

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A layer of `n` weight rows of length `k` and `rows` token rows, with values spread
        /// over ±0.5, and what the plain product of token row `i` and weight row `o` is.
        struct Case {
            x: Vec<f32>,
            w: Vec<f32>,
            q: Quantized,
            exact: Vec<f64>,
        }

        fn case(rows: usize, k: usize, n: usize) -> Case {
            let x: Vec<f32> = (0..rows * k)
                .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5)
                .collect();
            let bias: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
            let layer = Linear::new(
                Tensor::from_vec(w.clone(), (n, k), &Device::Cpu).unwrap(),
                Some(Tensor::from_vec(bias.clone(), n, &Device::Cpu).unwrap()),
            );
            let exact = (0..rows * n)
                .map(|at| {
                    let (i, o) = (at / n, at % n);
                    (0..k)
                        .map(|j| f64::from(x[i * k + j]) * f64::from(w[o * k + j]))
                        .sum::<f64>()
                        + f64::from(bias[o])
                })
                .collect();
            let q = Quantized::new(&layer).unwrap();
            Case { x, w, q, exact }
        }

        /// Both kernels give what the plain 32-bit product gives, within the rounding of the
        /// weights to 8 bits, on shapes with and without a remainder past the lanes.
        #[test]
        fn eight_bit_products_stay_within_the_weights_rounding_of_the_plain_product() {
            for (rows, k, n) in [(1, 384, 7), (5, 37, 3), (9, 1536, 11), (3, 64, 1)] {
                let Case { x, q, exact, .. } = case(rows, k, n);
                let mut fast = vec![0.0f32; rows * n];
                q.product_f32(&x, rows, &mut fast);
                let mut portable = vec![0.0f32; rows * n];
                q.product_portable(&x, rows, &mut portable);
                for i in 0..rows {
                    for o in 0..n {
                        // Each weight is off by at most half a step of its row's scale.
                        let bound: f64 = (0..k)
                            .map(|j| f64::from(x[i * k + j]).abs() * f64::from(q.scales[o]) / 2.0)
                            .sum::<f64>()
                            + 1e-4;
                        let (f, p) = (f64::from(fast[i * n + o]), f64::from(portable[i * n + o]));
                        let exact = exact[i * n + o];
                        assert!((exact - f).abs() <= bound, "{exact} {f} {bound}");
                        assert!((f - p).abs() <= 1e-3, "{f} {p}");
                    }
                }
            }
        }

        /// The integer product gives the plain product within the rounding of both the weights
        /// and the token rows to 8 bits (each off by at most half a step of its scale).
        #[cfg(target_arch = "x86_64")]
        #[test]
        fn integer_products_stay_within_the_rounding_of_weights_and_rows() {
            if !has_vnni() {
                eprintln!("this CPU has no AVX-512 VNNI: the integer product is not used here");
                return;
            }
            for (rows, k, n) in [(1, 384, 7), (5, 64, 3), (9, 1536, 11), (4, 128, 1)] {
                let Case { x, w, q, exact } = case(rows, k, n);
                let mut integer = vec![0.0f32; rows * n];
                q.product(&x, rows, &mut integer);
                let (_, row_scales) = rows_as_bytes(&x, rows, k);
                for i in 0..rows {
                    for o in 0..n {
                        let (sw, sx) = (f64::from(q.scales[o]), f64::from(row_scales[i]));
                        let bound: f64 = (0..k)
                            .map(|j| {
                                f64::from(x[i * k + j]).abs() * sw / 2.0
                                    + f64::from(w[o * k + j]).abs() * sx / 2.0
                                    + sw * sx / 4.0
                            })
                            .sum::<f64>()
                            + 1e-3;
                        let (exact, got) = (exact[i * n + o], f64::from(integer[i * n + o]));
                        assert!((exact - got).abs() <= bound, "{exact} {got} {bound}");
                    }
                }
            }
        }
    }
}
