/* config.c - the daemon's settings from command-line flags, ATTND_* variables,
 * a JSON config file and built-in defaults (docs/contract.md section 1,
 * "Running"; docs/configuration.md).
 *
 * One table, CONFIG_SETTINGS, lists every setting; the defaults, the three
 * parsers, the range checks and --help are all driven by it.  Values are
 * checked where they are read, so a message names the source and the
 * setting: "--port: 'abc' is not an integer", "ATTND_MAX_BATCH: 0 is outside
 * 1..1048576", "config file f.json: model.d_model: \"512\" is not an integer".
 * Like core/, this module never prints or exits. */
#include "config/config.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* How a setting's value is written and checked. */
typedef enum cfg_type {
    CFG_INT,      /* int: decimal, in lo..hi */
    CFG_SIZE,     /* size_t: decimal, in lo..hi */
    CFG_LONG,     /* long: decimal, in lo..hi */
    CFG_U64,      /* uint64_t: decimal, in lo..hi */
    CFG_FLOAT,    /* float: a positive finite number */
    CFG_BOOL,     /* bool: true/false, 1/0, yes/no, on/off */
    CFG_STRING,   /* char *: owned, non-empty */
    CFG_NSTRING,  /* char *: owned, or NULL (JSON null or an empty string) */
    CFG_NAME,     /* char *: owned, 1..64 of [A-Za-z0-9._-], not "." or ".." */
    CFG_ACT,      /* enc_activation: relu | gelu | gelu_tanh */
    CFG_DOUBLE,   /* double: a positive finite number */
    CFG_POS,      /* enc_position: none | rope | alibi */
    CFG_ROPE,     /* enc_rope_style: neox | gptj */
    CFG_FFN,      /* enc_ffn: mlp | geglu | swiglu */
    CFG_NORM,     /* enc_norm: layernorm | layernorm_nobias | layernorm_bias | rmsnorm */
    CFG_POOL,     /* enc_pooling: auto | cls | mean | max | last */
    CFG_AUTOBOOL, /* int: -1 auto, 0 false, 1 true (a boolean, or "auto") */
    CFG_DTYPE,    /* enc_dtype: float32 | bfloat16 | int8 | auto */
} cfg_type;

#define CFG_NAME_MAX 64

/* The one table of settings.
 *
 * X(key, flag, variable, type, field, metavar, default, lo, hi, description)
 *
 * key is the JSON "section.key"; field is the member of attnd_config it
 * sets; metavar names the value in --help; default is written as a flag's
 * value would be (NULL = null), or "=section.key" for "the value of that
 * setting unless this one is set somewhere"; lo..hi bound integers. */
/* clang-format off */
#define CONFIG_SETTINGS(X)                                                                         \
    X("server.host", "--host", "ATTND_HOST", CFG_STRING, server.host, "ADDR",                      \
      "0.0.0.0", 0, 0, "address to listen on (IPv4, IPv6 or a host name)")                         \
    X("server.port", "--port", "ATTND_PORT", CFG_INT, server.port, "N",                            \
      "8080", 0, 65535, "TCP port to listen on; 0 = any free port")                                \
    X("server.threads", "--threads", "ATTND_THREADS", CFG_INT, server.threads, "N",                \
      "2", 1, 64, "HTTP threads")                                                                  \
    X("server.tokenize_threads", "--tokenize-threads", "ATTND_TOKENIZE_THREADS", CFG_INT,          \
      server.tokenize_threads, "N", "1", 0, 64,                                                    \
      "threads that parse and tokenize request bodies of 16 KiB and more, off the HTTP "           \
      "threads; 0 = on the HTTP threads")                                                          \
    X("server.tokenize_idle", "--tokenize-idle", "ATTND_TOKENIZE_IDLE", CFG_BOOL,                  \
      server.tokenize_idle, "BOOL", "false", 0, 0,                                                 \
      "run the tokenize threads at SCHED_IDLE: a small request never waits for a long text, "      \
      "but any busy process of the host holds long texts back; false = nice 10")                   \
    X("server.max_body_bytes", "--max-body-bytes", "ATTND_MAX_BODY_BYTES", CFG_SIZE,               \
      server.max_body_bytes, "BYTES", "67108864", 1024, 1099511627776ull,                          \
      "largest request body; a larger one gets 413")                                               \
    X("server.api_key", "--api-key", "ATTND_API_KEY", CFG_NSTRING, server.api_key, "KEY",          \
      NULL, 0, 0, "require 'Authorization: Bearer KEY' on every route but /health, "                \
      "/v2/health/live, /v2/health/ready and the page at /; null = no authentication")              \
    X("server.cors_origin", "--cors-origin", "ATTND_CORS_ORIGIN", CFG_NSTRING,                     \
      server.cors_origin, "ORIGIN", NULL, 0, 0,                                                    \
      "Access-Control-Allow-Origin to send; null = no CORS headers")                               \
    X("server.max_connections", "--max-connections", "ATTND_MAX_CONNECTIONS", CFG_INT,             \
      server.max_connections, "N", "2048", 1, 100000,                                              \
      "open connections at most, idle and slow ones included")                                     \
    X("server.max_connections_per_ip", "--max-connections-per-ip",                                 \
      "ATTND_MAX_CONNECTIONS_PER_IP", CFG_INT, server.max_connections_per_ip, "N", "0", 0, 100000, \
      "open connections from one client address at most; 0 = no limit")                           \
    X("server.connection_timeout", "--connection-timeout", "ATTND_CONNECTION_TIMEOUT", CFG_INT,    \
      server.connection_timeout, "SECONDS", "30", 1, 3600,                                         \
      "seconds an idle connection stays open")                                                     \
    X("server.drain_seconds", "--drain-seconds", "ATTND_DRAIN_SECONDS", CFG_INT,                   \
      server.drain_seconds, "SECONDS", "0", 0, 3600,                                               \
      "on SIGTERM or SIGINT, keep serving this long with readiness down, then stop accepting")     \
    X("server.access_log", "--access-log", "ATTND_ACCESS_LOG", CFG_BOOL, server.access_log,        \
      "BOOL", "true", 0, 0, "log one line per request to stderr")                                  \
    X("server.auto_truncate", "--auto-truncate", "ATTND_AUTO_TRUNCATE", CFG_BOOL,                  \
      server.auto_truncate, "BOOL", "false", 0, 0,                                                 \
      "cut a text over the model's token limit where a request does not say \"truncate\"; "       \
      "false = refuse it (413)")                                                                   \
    X("compute.workers", "--workers", "ATTND_WORKERS", CFG_INT, compute.workers, "N",              \
      "1", 1, 64, "forward passes running at once")                                                \
    X("compute.forward_threads", "--forward-threads", "ATTND_FORWARD_THREADS", CFG_INT,           \
      compute.forward_threads, "N", "2", 1, 256,                                                   \
      "threads each forward uses (it splits every op among them)")                                 \
    X("compute.queue_size", "--queue-size", "ATTND_QUEUE_SIZE", CFG_INT, compute.queue_size,       \
      "N", "64", 1, 1000000, "requests waiting for a worker; one more gets 429")                   \
    X("compute.batch_tokens", "--batch-tokens", "ATTND_BATCH_TOKENS", CFG_INT,                     \
      compute.batch_tokens, "N", "8192", 1, 1048576,                                               \
      "dynamic batching: waiting requests run as one forward up to this many tokens")              \
    X("compute.batch_delay_ms", "--batch-delay-ms", "ATTND_BATCH_DELAY_MS", CFG_INT,               \
      compute.batch_delay_ms, "MS", "0", 0, 10000,                                                 \
      "dynamic batching: how long a forward may wait for more requests to join it")                \
    X("compute.short_tokens", "--short-tokens", "ATTND_SHORT_TOKENS", CFG_INT,                     \
      compute.short_tokens, "N", "64", 0, 1048576,                                                 \
      "a request of at most this many tokens runs ahead of longer ones, between the phases of "    \
      "a forward under way; 0 = arrival order")                                                    \
    X("compute.spin_us", "--spin-us", "ATTND_SPIN_US", CFG_INT, compute.spin_us, "US", "2000", 0,  \
      1000000,                                                                                     \
      "keep idle CPUs spinning (SCHED_IDLE) this long after each hand-off of a request; 0 = off")  \
    X("limits.max_batch", "--max-batch", "ATTND_MAX_BATCH", CFG_INT, limits.max_batch, "N",        \
      "64", 1, 1048576, "sequences in one request at most")                                        \
    X("limits.max_seq_len", "--max-seq-len", "ATTND_MAX_SEQ_LEN", CFG_INT, limits.max_seq_len,     \
      "N", "4096", 1, 1048576, "tokens in one sequence at most")                                   \
    X("limits.max_batch_tokens", "--max-batch-tokens", "ATTND_MAX_BATCH_TOKENS", CFG_LONG,         \
      limits.max_batch_tokens, "N", "65536", 1, 2147483647, "B * L of one request at most")        \
    X("limits.max_attention_bytes", "--max-attention-bytes", "ATTND_MAX_ATTENTION_BYTES",          \
      CFG_SIZE, limits.max_attention_bytes, "BYTES", "268435456", 0, 1099511627776ull,             \
      "bytes of attention weights (float32) one response may return; 0 = none")                                \
    X("limits.max_logits_bytes", "--max-logits-bytes", "ATTND_MAX_LOGITS_BYTES", CFG_SIZE,          \
      limits.max_logits_bytes, "BYTES", "268435456", 0, 1099511627776ull,                          \
      "bytes of a task head's logits (float32) one response may return; 0 = none")                 \
    X("model.name", "--model-name", "ATTND_MODEL_NAME", CFG_NAME, model.name, "NAME",              \
      "encoder", 0, 0, "model name in URLs and responses: 1..64 of A-Z a-z 0-9 . _ -")             \
    X("model.d_model", "--d-model", "ATTND_D_MODEL", CFG_INT, model.hp.d_model, "N",               \
      "512", 1, ENC_MAX_DIM, "embedding size D")                                                   \
    X("model.n_heads", "--n-heads", "ATTND_N_HEADS", CFG_INT, model.hp.n_heads, "N",               \
      "8", 1, ENC_MAX_DIM, "attention heads H; must divide d_model")                               \
    X("model.n_kv_heads", "--n-kv-heads", "ATTND_N_KV_HEADS", CFG_INT, model.hp.n_kv_heads,        \
      "N", "=model.n_heads", 1, ENC_MAX_DIM,                                                       \
      "key/value heads (grouped-query attention); must divide n_heads")                            \
    X("model.d_ff", "--d-ff", "ATTND_D_FF", CFG_INT, model.hp.d_ff, "N",                           \
      "2048", 1, 4 * ENC_MAX_DIM, "feed-forward hidden size")                                      \
    X("model.n_layers", "--n-layers", "ATTND_N_LAYERS", CFG_INT, model.hp.n_layers, "N",           \
      "1", 1, ENC_MAX_LAYERS, "encoder blocks in the stack")                                       \
    X("model.activation", "--activation", "ATTND_ACTIVATION", CFG_ACT, model.hp.activation,        \
      "NAME", "relu", 0, 0, "feed-forward activation: relu, gelu (erf) or gelu_tanh")              \
    X("model.norm_first", "--norm-first", "ATTND_NORM_FIRST", CFG_BOOL, model.hp.norm_first,       \
      "BOOL", "false", 0, 0, "true = pre-norm; false = post-norm (the paper)")                     \
    X("model.layer_norm_eps", "--layer-norm-eps", "ATTND_LAYER_NORM_EPS", CFG_FLOAT,               \
      model.hp.layer_norm_eps, "X", "1e-5", 0, 0, "LayerNorm epsilon, a positive number")          \
    X("model.bias", "--bias", "ATTND_BIAS", CFG_BOOL, model.hp.bias, "BOOL",                       \
      "true", 0, 0, "biases in every Linear and LayerNorm (the norms: see model.norm)")             \
    X("model.ffn", "--ffn", "ATTND_FFN", CFG_FFN, model.hp.ffn, "KIND", "mlp", 0, 0,               \
      "feed-forward: mlp | geglu (GELU-gated) | swiglu (SiLU-gated); gated ones have 2 d_ff rows "  \
      "in linear1, input then gate")                                                               \
    X("model.norm", "--norm", "ATTND_NORM", CFG_NORM, model.hp.norm, "KIND", "layernorm", 0, 0,   \
      "the block's norms: layernorm | layernorm_nobias (a weight and no bias, as ModernBERT's) | " \
      "layernorm_bias (a bias even with model.bias false, as NomicBERT's) | rmsnorm (a weight, "    \
      "no centring, no bias: Qwen3's)")                                                             \
    X("model.final_norm", "--final-norm", "ATTND_FINAL_NORM", CFG_BOOL, model.hp.final_norm,       \
      "BOOL", "false", 0, 0, "a norm after the last layer (tensors norm.weight, norm.bias)")      \
    X("model.first_attn_norm", "--first-attn-norm", "ATTND_FIRST_ATTN_NORM", CFG_BOOL,            \
      model.first_attn_norm, "BOOL", "true", 0, 0,                                                 \
      "false = layer 0's attention norm is the identity, as ModernBERT's (pre-norm only; no "     \
      "layers.0.norm1 tensors)")                                                                   \
    X("model.global_every", "--global-every", "ATTND_GLOBAL_EVERY", CFG_INT,                      \
      model.hp.global_every, "N", "1", 1, ENC_MAX_LAYERS,                                          \
      "layer l attends globally when l mod N = 0, otherwise in its local window; 1 = every "      \
      "layer global")                                                                              \
    X("model.local_window", "--local-window", "ATTND_LOCAL_WINDOW", CFG_INT,                      \
      model.hp.local_window, "W", "0", 0, ENC_MAX_POSITION,                                        \
      "a local layer's query i sees keys j with |i - j| <= W, within the request's mask "         \
      "(ModernBERT: 64); needs global_every >= 2")                                                 \
    X("model.position", "--position", "ATTND_POSITION", CFG_POS, model.hp.position, "KIND",        \
      "none", 0, 0, "positions inside attention: none | rope | alibi")                             \
    X("model.rope_theta", "--rope-theta", "ATTND_ROPE_THETA", CFG_DOUBLE, model.hp.rope_theta,     \
      "THETA", "10000", 0, 0, "RoPE's base: angles pos * theta^(-2k / rope_dim)")                  \
    X("model.rope_dim", "--rope-dim", "ATTND_ROPE_DIM", CFG_INT, model.hp.rope_dim, "N", "0", 0,   \
      ENC_MAX_DIM, "dimensions of each head RoPE rotates (even); 0 = all (the head dimension)")     \
    X("model.rope_style", "--rope-style", "ATTND_ROPE_STYLE", CFG_ROPE, model.hp.rope_style,       \
      "STYLE", "neox", 0, 0, "RoPE's pairs: neox (halves) | gptj (interleaved)")                  \
    X("model.rope_theta_local", "--rope-theta-local", "ATTND_ROPE_THETA_LOCAL", CFG_DOUBLE,       \
      model.hp.rope_theta_local, "THETA", "=model.rope_theta", 0, 0,                              \
      "RoPE's base on local layers (ModernBERT: 10000, global layers 160000)")                    \
    X("model.rope_ntk", "--rope-ntk", "ATTND_ROPE_NTK", CFG_DOUBLE, model.hp.rope_ntk, "F", "1", \
      0, 0,                                                                                        \
      "RoPE's NTK-aware scaling (GTE's rope_scaling ntk): base theta f, each frequency over "      \
      "f^(2 / rope_dim); 1 = none")                                                                \
    X("model.weights", "--weights", "ATTND_WEIGHTS", CFG_NSTRING, model.weights, "FILE",           \
      NULL, 0, 0, "safetensors weights file; null = build the weights from seed")                  \
    X("model.dir", "--model-dir", "ATTND_MODEL_DIR", CFG_NSTRING, model.dir, "DIR", NULL, 0, 0,    \
      "Hugging Face encoder directory (config.json + model.safetensors); its config.json gives "   \
      "the hyperparameters")                                                                       \
    X("model.tokenizer", "--tokenizer", "ATTND_TOKENIZER", CFG_NSTRING, model.tokenizer, "FILE",   \
      NULL, 0, 0, "Hugging Face tokenizer.json for text input; null = model.dir's tokenizer.json "  \
      "when it has one, the built-in model's without model.dir and model.weights")                 \
    X("model.score_tokens", "--score-tokens", "ATTND_SCORE_TOKENS", CFG_NSTRING,                   \
      model.score_tokens, "TOKENS", NULL, 0, 0,                                                    \
      "a causal LM directory (Qwen3ForCausalLM) served as a reranker: \"yes,no\" scores a "        \
      "sequence lm_head's logit of yes less no's at its last token (one token: its logit); null "  \
      "= model.dir's LogitScore module, else none")                                               \
    X("model.rerank_template", "--rerank-template", "ATTND_RERANK_TEMPLATE", CFG_NSTRING,          \
      model.rerank_template, "TEXT", NULL, 0, 0,                                                   \
      "each [query, document] pair made one text, {query} and {document} in it replaced: a "       \
      "template, qwen3-reranker (Qwen3-Reranker's prompt) or none (the tokenizer's pair); null = " \
      "qwen3-reranker for a causal LM's reranker, else none")                                      \
    X("model.pooling", "--pooling", "ATTND_POOLING", CFG_POOL, model.pooling, "MODE", "auto", 0,   \
      0, "sentence embeddings (/v1/embeddings): cls | mean | max | last; auto = model.dir's "      \
      "sentence-transformers Pooling module, else mean")                                           \
    X("model.normalize", "--normalize", "ATTND_NORMALIZE", CFG_AUTOBOOL, model.normalize, "BOOL",  \
      "auto", 0, 0, "sentence embeddings to unit length; auto = whether model.dir's "              \
      "sentence-transformers modules end in Normalize, else true")                                 \
    X("model.dtype", "--dtype", "ATTND_DTYPE", CFG_DTYPE, model.dtype, "TYPE", "float32", 0, 0,    \
      "the Linears' weights and products: float32 | bfloat16 (half the weights' memory, each "     \
      "Linear's input rounded, as torch.autocast) | int8 (a quarter of the weights' memory, "      \
      "quantised per channel, inputs per token, as PyTorch's quantize_dynamic) | auto "            \
      "(model.dir's torch_dtype)")                                                                 \
    X("model.seed", "--seed", "ATTND_SEED", CFG_U64, model.seed, "N",                              \
      "0", 0, UINT64_MAX, "seed of the built-in weights and embeddings when there is no weights "  \
      "file")
/* clang-format on */

typedef struct cfg_setting {
    const char *key;  /* "server.port" */
    const char *flag; /* "--port" */
    const char *env;  /* "ATTND_PORT" */
    cfg_type type;
    size_t offset;       /* of the field in attnd_config */
    const char *metavar; /* "N" */
    const char *dflt;    /* as a flag's value; NULL = null; "=key" = that setting's value */
    uint64_t lo, hi;     /* integer range */
    const char *desc;
} cfg_setting;

static const cfg_setting settings[] = {
#define CFG_ROW(key, flag, env, type, field, metavar, dflt, lo, hi, desc)                          \
    {key, flag, env, type, offsetof(attnd_config, field), metavar, dflt, lo, hi, desc},
    CONFIG_SETTINGS(CFG_ROW)
#undef CFG_ROW
};

#define N_SETTINGS (sizeof settings / sizeof *settings)

/* A value read from text or JSON, before its checks. */
typedef struct cfg_value {
    uint64_t u;        /* integers */
    bool out_of_range; /* an integer below 0 or above UINT64_MAX */
    double f;          /* CFG_FLOAT */
    bool b;            /* CFG_BOOL */
    const char *s;     /* strings, borrowed; NULL = null */
} cfg_value;

/* ---- small helpers -------------------------------------------------------- */

static void *field_of(attnd_config *cfg, const cfg_setting *s)
{
    return (char *)cfg + s->offset;
}

static const cfg_setting *setting_by_key(const char *key)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strcmp(settings[i].key, key) == 0)
            return &settings[i];
    return NULL;
}

/* The setting whose flag is "--" + the n bytes at name, or NULL. */
static const cfg_setting *setting_by_flag(const char *name, size_t n)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strncmp(settings[i].flag + 2, name, n) == 0 && settings[i].flag[2 + n] == '\0')
            return &settings[i];
    return NULL;
}

/* Copies text into out (cap bytes) for a one-line message: control
 * characters become '?', and a long text is cut with "...". */
static const char *shown(const char *text, char *out, size_t cap)
{
    size_t n = 0, len = strlen(text);
    for (; n < len && n + 4 < cap; n++)
        out[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
    if (n < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

/* Parses a decimal integer: an optional '-', then digits, nothing else.
 * Sets *out_of_range for a negative value or one above UINT64_MAX.
 * Returns 0, or -1 when text is not an integer. */
static int parse_uint(const char *text, uint64_t *out, bool *out_of_range)
{
    const char *p = text + (text[0] == '-');
    if (*p == '\0' || strspn(p, "0123456789") != strlen(p))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(p, NULL, 10);
    *out_of_range = errno == ERANGE || (text[0] == '-' && v != 0);
    *out = v;
    return 0;
}

/* Parses a decimal or exponent number with strtod, all of text and no
 * leading space; out-of-range values are left to the caller's checks.
 * Returns 0, or -1 when text is not a number. */
static int parse_double(const char *text, double *out)
{
    char *end;
    if (text[0] == '\0' || strchr(" \t\n\v\f\r", text[0]))
        return -1;
    errno = 0;
    *out = strtod(text, &end);
    return *end == '\0' ? 0 : -1;
}

/* true/false, 1/0, yes/no, on/off, in any case.  Returns 0 or -1. */
static int parse_bool(const char *text, bool *out)
{
    static const char *const words[][2] = {
        {"true", "false"}, {"1", "0"}, {"yes", "no"}, {"on", "off"}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        for (int v = 0; v < 2; v++)
            if (strcasecmp(text, words[i][v]) == 0) {
                *out = v == 0;
                return 0;
            }
    return -1;
}

/* Why s is not a valid model name, or NULL if it is one. */
static const char *name_problem(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return "must not be empty";
    if (n > CFG_NAME_MAX)
        return "is longer than 64 characters";
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return "may contain only letters, digits, '.', '_' and '-'";
    }
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return "must not be '.' or '..'";
    return NULL;
}

/* Replaces the owned string at *slot with a copy of s (NULL for null). */
static int set_string(char **slot, const char *s, enc_error *err)
{
    char *copy = NULL;
    if (s && !(copy = strdup(s)))
        return enc_error_set(err, ENC_ENOMEM, "out of memory");
    free(*slot);
    *slot = copy;
    return ENC_OK;
}

/* ---- checking and storing a value ---------------------------------------- */

/* Checks v against s's type and range and stores it in cfg.  src names the
 * source and setting ("--port", "config file f: server.port"); text is the
 * value as the message shows it.  Returns 0 or ENC_EINVAL/ENC_ENOMEM. */
static int store(attnd_config *cfg, const cfg_setting *s, const cfg_value *v, const char *src,
                 const char *text, enc_error *err)
{
    void *p = field_of(cfg, s);
    const char *problem;
    switch (s->type) {
    case CFG_INT:
    case CFG_SIZE:
    case CFG_LONG:
    case CFG_U64:
        if (v->out_of_range || v->u < s->lo || v->u > s->hi)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is outside %llu..%llu", src, text,
                                 (unsigned long long)s->lo, (unsigned long long)s->hi);
        if (s->type == CFG_INT)
            *(int *)p = (int)v->u;
        else if (s->type == CFG_SIZE)
            *(size_t *)p = (size_t)v->u;
        else if (s->type == CFG_LONG)
            *(long *)p = (long)v->u;
        else
            *(uint64_t *)p = v->u;
        return ENC_OK;
    case CFG_FLOAT:
        if (!isfinite(v->f) || !(v->f > 0.0))
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not a positive number", src, text);
        if (v->f > FLT_MAX)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is too large for float32", src, text);
        if ((float)v->f == 0.0f)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is too small for float32", src, text);
        *(float *)p = (float)v->f;
        return ENC_OK;
    case CFG_BOOL:
        *(bool *)p = v->b;
        return ENC_OK;
    case CFG_ACT:
        if (enc_activation_parse(v->s, (enc_activation *)p) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not one of relu, gelu, gelu_tanh", src,
                                 text);
        return ENC_OK;
    case CFG_DOUBLE:
        if (!isfinite(v->f) || !(v->f > 0.0))
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not a positive number", src, text);
        *(double *)p = v->f;
        return ENC_OK;
    case CFG_POS:
        if (enc_position_parse(v->s, (enc_position *)p) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not one of none, rope, alibi", src,
                                 text);
        return ENC_OK;
    case CFG_ROPE:
        if (enc_rope_style_parse(v->s, (enc_rope_style *)p) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not one of neox, gptj", src, text);
        return ENC_OK;
    case CFG_FFN:
        if (enc_ffn_parse(v->s, (enc_ffn *)p) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not one of mlp, geglu, swiglu", src,
                                 text);
        return ENC_OK;
    case CFG_NORM:
        if (enc_norm_parse(v->s, (enc_norm *)p) < 0)
            return enc_error_set(
                err, ENC_EINVAL,
                "%s: %s is not one of layernorm, layernorm_nobias, layernorm_bias, "
                "rmsnorm",
                src, text);
        return ENC_OK;
    case CFG_POOL:
        if (enc_pooling_parse(v->s, (enc_pooling *)p) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not one of auto, cls, mean, max, last",
                                 src, text);
        return ENC_OK;
    case CFG_AUTOBOOL:
        *(int *)p = v->s ? -1 : v->b;
        return ENC_OK;
    case CFG_DTYPE:
        if (enc_dtype_parse(v->s, (enc_dtype *)p) < 0)
            return enc_error_set(err, ENC_EINVAL,
                                 "%s: %s is not one of float32, bfloat16, int8, auto", src, text);
        return ENC_OK;
    case CFG_STRING:
        if (!v->s || v->s[0] == '\0')
            return enc_error_set(err, ENC_EINVAL, "%s: %s must not be empty", src, text);
        return set_string(p, v->s, err);
    case CFG_NSTRING:
        return set_string(p, v->s && v->s[0] ? v->s : NULL, err);
    case CFG_NAME:
        if ((problem = name_problem(v->s)))
            return enc_error_set(err, ENC_EINVAL, "%s: %s %s", src, text, problem);
        return set_string(p, v->s, err);
    }
    return enc_error_set(err, ENC_EINVAL, "%s: unsupported setting type", src);
}

/* Sets s from text, a flag's or variable's value (or a default); src names
 * it ("--port", "ATTND_PORT").  Returns 0 or ENC_EINVAL/ENC_ENOMEM. */
static int set_from_text(attnd_config *cfg, const cfg_setting *s, const char *text, const char *src,
                         enc_error *err)
{
    char buf[72], quoted[76];
    cfg_value v = {0};
    shown(text, buf, sizeof buf);
    snprintf(quoted, sizeof quoted, "'%s'", buf);
    switch (s->type) {
    case CFG_INT:
    case CFG_SIZE:
    case CFG_LONG:
    case CFG_U64:
        if (parse_uint(text, &v.u, &v.out_of_range) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not an integer", src, quoted);
        return store(cfg, s, &v, src, buf, err);
    case CFG_FLOAT:
    case CFG_DOUBLE:
        if (parse_double(text, &v.f) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not a number", src, quoted);
        return store(cfg, s, &v, src, buf, err);
    case CFG_BOOL:
        if (parse_bool(text, &v.b) < 0)
            return enc_error_set(err, ENC_EINVAL,
                                 "%s: %s is not a boolean (true/false, 1/0, yes/no, on/off)", src,
                                 quoted);
        return store(cfg, s, &v, src, buf, err);
    case CFG_AUTOBOOL:
        if (strcmp(text, "auto") == 0)
            v.s = text;
        else if (parse_bool(text, &v.b) < 0)
            return enc_error_set(err, ENC_EINVAL, "%s: %s is not auto or a boolean", src, quoted);
        return store(cfg, s, &v, src, buf, err);
    default:
        v.s = text;
        return store(cfg, s, &v, src, quoted, err);
    }
}

/* Sets s from a JSON value of the config file; src is "config file F:
 * section.key".  Returns 0 or ENC_EINVAL/ENC_ENOMEM. */
static int set_from_json(attnd_config *cfg, const cfg_setting *s, const json_t *j, const char *src,
                         enc_error *err)
{
    char buf[72];
    char *dump = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    shown(dump ? dump : "(value)", buf, sizeof buf);
    free(dump);
    cfg_value v = {0};
    const char *want = NULL;
    switch (s->type) {
    case CFG_INT:
    case CFG_SIZE:
    case CFG_LONG:
    case CFG_U64:
        if (json_is_integer(j)) {
            json_int_t n = json_integer_value(j);
            v.out_of_range = n < 0;
            v.u = (uint64_t)n;
        } else if (json_is_real(j) && floor(json_real_value(j)) == json_real_value(j)) {
            double d = json_real_value(j);
            v.out_of_range = d < 0.0 || d >= 18446744073709551616.0;
            v.u = v.out_of_range ? 0 : (uint64_t)d;
        } else if (s->type == CFG_U64 && json_is_string(j)) {
            /* JSON integers stop at 2^63 - 1; a larger seed comes as a string. */
            if (parse_uint(json_string_value(j), &v.u, &v.out_of_range) < 0)
                want = "an integer";
        } else {
            want = "an integer";
        }
        break;
    case CFG_FLOAT:
    case CFG_DOUBLE:
        if (json_is_number(j))
            v.f = json_number_value(j);
        else
            want = "a number";
        break;
    case CFG_BOOL:
        if (json_is_boolean(j))
            v.b = json_is_true(j);
        else
            want = "a boolean (true or false)";
        break;
    case CFG_AUTOBOOL:
        if (json_is_boolean(j))
            v.b = json_is_true(j);
        else if (json_is_string(j) && strcmp(json_string_value(j), "auto") == 0)
            v.s = "auto";
        else
            want = "true, false or \"auto\"";
        break;
    case CFG_NSTRING:
        if (json_is_string(j) || json_is_null(j))
            v.s = json_string_value(j);
        else
            want = "a string or null";
        break;
    default:
        if (json_is_string(j))
            v.s = json_string_value(j);
        else
            want = "a string";
        break;
    }
    if (want)
        return enc_error_set(err, ENC_EINVAL, "%s: %s is not %s", src, buf, want);
    return store(cfg, s, &v, src, buf, err);
}

/* ---- the sources -------------------------------------------------------- */

/* Sets every setting to its default; "=key" defaults are resolved later. */
static int apply_defaults(attnd_config *cfg, enc_error *err)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const cfg_setting *s = &settings[i];
        int rc;
        if (!s->dflt || s->dflt[0] == '=')
            continue;
        if ((rc = set_from_text(cfg, s, s->dflt, "default", err)) < 0)
            return rc;
    }
    return ENC_OK;
}

/* Settings left at an "=key" default take that setting's value. */
static void resolve_followers(attnd_config *cfg, const bool *set)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const cfg_setting *s = &settings[i], *from;
        if (set[i] || !s->dflt || s->dflt[0] != '=' || !(from = setting_by_key(s->dflt + 1)))
            continue;
        /* n_kv_heads follows n_heads, rope_theta_local rope_theta. */
        if (s->type == CFG_INT && from->type == CFG_INT)
            *(int *)field_of(cfg, s) = *(int *)field_of(cfg, from);
        if (s->type == CFG_DOUBLE && from->type == CFG_DOUBLE)
            *(double *)field_of(cfg, s) = *(double *)field_of(cfg, from);
    }
}

/* The value of variable name in envp, or NULL when it is missing or empty. */
static const char *env_value(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return (*e)[n + 1] ? *e + n + 1 : NULL;
    return NULL;
}

/* Reads the JSON config file at path into cfg, marking the settings it sets.
 * Returns 0, or ENC_EIO / ENC_EFORMAT / ENC_EINVAL naming the file. */
static int load_file(attnd_config *cfg, const char *path, bool *set, enc_error *err)
{
    char file[128];
    shown(path, file, sizeof file);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return enc_error_set(err, ENC_EIO, "config file %s: %s", file, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        return enc_error_set(err, ENC_EIO, "config file %s: %s", file, strerror(EISDIR));
    }
    json_error_t jerr;
    json_t *root = json_loadf(fp, JSON_REJECT_DUPLICATES, &jerr);
    fclose(fp);
    if (!root) {
        if (jerr.line > 0)
            return enc_error_set(err, ENC_EFORMAT, "config file %s: line %d, column %d: %s", file,
                                 jerr.line, jerr.column, jerr.text);
        return enc_error_set(err, ENC_EFORMAT, "config file %s: %s", file, jerr.text);
    }

    int rc = ENC_OK;
    const char *section, *key;
    json_t *sobj, *value;
    char name[72], src[256];
    if (!json_is_object(root)) {
        rc = enc_error_set(err, ENC_EINVAL, "config file %s: the top level is not an object", file);
        goto done;
    }
    json_object_foreach(root, section, sobj)
    {
        size_t slen = strlen(section);
        bool known = false;
        for (size_t i = 0; i < N_SETTINGS && !known; i++)
            known = strncmp(settings[i].key, section, slen) == 0 && settings[i].key[slen] == '.';
        if (!known) {
            rc = enc_error_set(err, ENC_EINVAL, "config file %s: unknown section '%s'", file,
                               shown(section, name, sizeof name));
            goto done;
        }
        if (!json_is_object(sobj)) {
            rc = enc_error_set(err, ENC_EINVAL, "config file %s: section '%s' is not an object",
                               file, section);
            goto done;
        }
        json_object_foreach(sobj, key, value)
        {
            char full[160];
            snprintf(full, sizeof full, "%s.%s", section, key);
            const cfg_setting *s = setting_by_key(full);
            if (!s) {
                rc = enc_error_set(err, ENC_EINVAL, "config file %s: unknown key '%s'", file,
                                   shown(full, name, sizeof name));
                goto done;
            }
            snprintf(src, sizeof src, "config file %s: %s", file, s->key);
            if ((rc = set_from_json(cfg, s, value, src, err)) < 0)
                goto done;
            set[s - settings] = true;
        }
    }
done:
    json_decref(root);
    return rc;
}

/* ---- flags ---------------------------------------------------------------- */

typedef enum flag_kind { FLAG_SETTING, FLAG_CONFIG, FLAG_HELP, FLAG_VERSION, FLAG_CHECK } flag_kind;

typedef struct flag_arg {
    flag_kind kind;
    const cfg_setting *setting; /* FLAG_SETTING */
    const char *value;          /* FLAG_SETTING, FLAG_CONFIG: borrowed from argv or static */
} flag_arg;

/* A value-taking flag's separate value: argv[*i + 1], unless it is missing or
 * looks like a flag ("--x"; such a value needs --flag=VALUE). */
static const char *next_value(int argc, char **argv, int *i)
{
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v || (v[0] == '-' && v[1] == '-' && v[2] != '\0'))
        return NULL;
    ++*i;
    return v;
}

/* Reads the flag at argv[*i] and its value, and moves *i past them.
 * Returns 0, or ENC_EINVAL for an unknown flag, a missing or unexpected
 * value, or a positional argument. */
static int read_flag(int argc, char **argv, int *i, flag_arg *out, enc_error *err)
{
    const char *arg = argv[*i];
    char buf[72];
    *out = (flag_arg){0};
    if (strcmp(arg, "-h") == 0) {
        out->kind = FLAG_HELP;
        ++*i;
        return ENC_OK;
    }
    if (arg[0] != '-')
        return enc_error_set(err, ENC_EINVAL, "unexpected argument '%s'",
                             shown(arg, buf, sizeof buf));
    if (arg[1] != '-' || arg[2] == '\0')
        return enc_error_set(err, ENC_EINVAL, "unknown flag '%s'", shown(arg, buf, sizeof buf));

    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    /* The flag without its value, for messages (the value may be a secret);
     * control characters shown as '?', so the message stays one line. */
    char flag[72], cut[64];
    snprintf(cut, sizeof cut, "%.*s", (int)(n < 60 ? n : 60), name);
    snprintf(flag, sizeof flag, "--%s", shown(cut, buf, sizeof buf));

    static const struct {
        const char *name;
        flag_kind kind;
    } actions[] = {{"help", FLAG_HELP}, {"version", FLAG_VERSION}, {"check-config", FLAG_CHECK}};
    for (size_t k = 0; k < sizeof actions / sizeof *actions; k++) {
        if (strlen(actions[k].name) == n && strncmp(name, actions[k].name, n) == 0) {
            if (eq)
                return enc_error_set(err, ENC_EINVAL, "%s takes no value", flag);
            out->kind = actions[k].kind;
            ++*i;
            return ENC_OK;
        }
    }

    const cfg_setting *s = setting_by_flag(name, n);
    bool is_config = n == 6 && strncmp(name, "config", 6) == 0;
    if (!s && !is_config) {
        /* --no-FLAG for a boolean. */
        if (n > 3 && strncmp(name, "no-", 3) == 0 && (s = setting_by_flag(name + 3, n - 3)) &&
            s->type == CFG_BOOL) {
            if (eq)
                return enc_error_set(err, ENC_EINVAL, "%s takes no value", flag);
            *out = (flag_arg){FLAG_SETTING, s, "false"};
            ++*i;
            return ENC_OK;
        }
        return enc_error_set(err, ENC_EINVAL, "unknown flag '%s'", flag);
    }

    out->kind = is_config ? FLAG_CONFIG : FLAG_SETTING;
    out->setting = s;
    if (eq) {
        out->value = eq + 1;
    } else if (s && s->type == CFG_BOOL) {
        /* A bare boolean is true; a following boolean word is its value. */
        bool b;
        out->value = "true";
        if (*i + 1 < argc && parse_bool(argv[*i + 1], &b) == 0)
            out->value = argv[++*i];
    } else if (!(out->value = next_value(argc, argv, i))) {
        return enc_error_set(err, ENC_EINVAL, "%s: missing value", flag);
    }
    ++*i;
    return ENC_OK;
}

/* ---- model.dir ---------------------------------------------------------- */

/* Writes a setting's value as its flag would take it. */
static void value_text(const attnd_config *cfg, const cfg_setting *s, char *buf, size_t size)
{
    const void *f = (const char *)cfg + s->offset;
    switch (s->type) {
    case CFG_INT:
        snprintf(buf, size, "%d", *(const int *)f);
        break;
    case CFG_FLOAT:
        snprintf(buf, size, "%g", (double)*(const float *)f);
        break;
    case CFG_BOOL:
        snprintf(buf, size, "%s", *(const bool *)f ? "true" : "false");
        break;
    case CFG_ACT:
        snprintf(buf, size, "%s", enc_activation_name(*(const enc_activation *)f));
        break;
    case CFG_DOUBLE:
        snprintf(buf, size, "%g", *(const double *)f);
        break;
    case CFG_POS:
        snprintf(buf, size, "%s", enc_position_name(*(const enc_position *)f));
        break;
    case CFG_ROPE:
        snprintf(buf, size, "%s", enc_rope_style_name(*(const enc_rope_style *)f));
        break;
    case CFG_FFN:
        snprintf(buf, size, "%s", enc_ffn_name(*(const enc_ffn *)f));
        break;
    case CFG_NORM:
        snprintf(buf, size, "%s", enc_norm_name(*(const enc_norm *)f));
        break;
    case CFG_POOL:
        snprintf(buf, size, "%s", enc_pooling_name(*(const enc_pooling *)f));
        break;
    case CFG_AUTOBOOL:
        snprintf(buf, size, "%s",
                 *(const int *)f < 0 ? "auto" : *(const int *)f ? "true" : "false");
        break;
    case CFG_DTYPE:
        snprintf(buf, size, "%s", enc_dtype_name(*(const enc_dtype *)f));
        break;
    default:
        snprintf(buf, size, "?");
    }
}

/* model.dir: the hyperparameters come from its config.json; a setting given
 * explicitly must say the same, or the configuration is refused naming both
 * values.  model.weights cannot be given as well. */
static int from_checkpoint(attnd_config *cfg, const bool *set, const char *const *given,
                           enc_error *err)
{
    const cfg_setting *weights = setting_by_key("model.weights");
    if (cfg->model.weights)
        return enc_error_set(err, ENC_EINVAL,
                             "model.dir and model.weights (%s) are both given: a directory "
                             "carries its own weights",
                             given[weights - settings] ? given[weights - settings] : "?");
    enc_hf_config c;
    enc_error cerr = {0};
    if (enc_hf_config_read(cfg->model.dir, &c, &cerr) < 0)
        return enc_error_set(err, cerr.status, "model.dir '%s': %s", cfg->model.dir, cerr.message);
    attnd_config from = *cfg;
    from.model.hp = c.hp;
    from.model.first_attn_norm = !c.hp.first_norm_identity;
    static const struct {
        const char *key;
        size_t off; /* of the enc_hf_config key naming its field */
    } checked[] = {
        {"model.d_model", offsetof(enc_hf_config, key_d_model)},
        {"model.n_heads", offsetof(enc_hf_config, key_n_heads)},
        {"model.n_kv_heads", offsetof(enc_hf_config, key_n_heads)},
        {"model.d_ff", offsetof(enc_hf_config, key_d_ff)},
        {"model.n_layers", offsetof(enc_hf_config, key_n_layers)},
        {"model.activation", offsetof(enc_hf_config, key_activation)},
        {"model.layer_norm_eps", offsetof(enc_hf_config, key_eps)},
        {"model.norm_first", 0},
        {"model.bias", 0},
        {"model.ffn", 0},
        {"model.position", 0},
        {"model.rope_theta", offsetof(enc_hf_config, key_rope_theta)},
        {"model.rope_dim", 0},
        {"model.rope_style", 0},
        {"model.norm", offsetof(enc_hf_config, key_norm)},
        {"model.final_norm", 0},
        {"model.first_attn_norm", 0},
        {"model.global_every", offsetof(enc_hf_config, key_global_every)},
        {"model.local_window", offsetof(enc_hf_config, key_local_window)},
        {"model.rope_theta_local", offsetof(enc_hf_config, key_rope_theta_local)},
        {"model.rope_ntk", offsetof(enc_hf_config, key_rope_ntk)},
    };
    for (size_t i = 0; i < sizeof checked / sizeof *checked; i++) {
        const cfg_setting *s = setting_by_key(checked[i].key);
        const size_t k = (size_t)(s - settings);
        char ours[64], theirs[64], field[256];
        value_text(cfg, s, ours, sizeof ours);
        value_text(&from, s, theirs, sizeof theirs);
        if (!set[k] || strcmp(ours, theirs) == 0)
            continue;
        const char *key =
            checked[i].off ? *(const char *const *)((const char *)&c + checked[i].off) : NULL;
        if (strcmp(checked[i].key, "model.n_kv_heads") == 0)
            snprintf(field, sizeof field, "%s (no grouped-query attention) is %s", key, theirs);
        else if (strcmp(checked[i].key, "model.norm") == 0 && key)
            snprintf(field, sizeof field, "%s is %s (%s)", key,
                     c.hp.norm == ENC_NORM_LAYERNORM ? "true" : "false", theirs);
        else if (strcmp(checked[i].key, "model.global_every") == 0 && key &&
                 strcmp(key, "layer_types") == 0)
            snprintf(field, sizeof field,
                     "layer_types makes every layer l with l mod %s = %d global", theirs,
                     c.hp.global_offset);
        else if (strcmp(checked[i].key, "model.activation") == 0)
            snprintf(field, sizeof field, "%s is %s (%s)", key, c.activation, theirs);
        else if (key)
            snprintf(field, sizeof field, "%s is %s", key, theirs);
        else if (strcmp(checked[i].key, "model.layer_norm_eps") == 0)
            snprintf(field, sizeof field, "%s fixes layer_norm_eps at %s", c.model_type, theirs);
        else if (strcmp(checked[i].key, "model.position") == 0)
            snprintf(field, sizeof field, "position_embedding_type gives position %s", theirs);
        else if (strcmp(checked[i].key, "model.rope_dim") == 0)
            snprintf(field, sizeof field, "partial_rotary_factor gives rope_dim %s", theirs);
        else
            snprintf(field, sizeof field, "a %s model has %s %s", c.model_type, s->key + 6, theirs);
        return enc_error_set(err, ENC_EINVAL, "%s: %s gives %s, but %s/config.json: %s", s->key,
                             given[k] ? given[k] : "a setting", ours, cfg->model.dir, field);
    }
    cfg->model.hp = c.hp;
    cfg->model.hp.dtype = cfg->model.dtype == ENC_DTYPE_AUTO ? c.dtype : cfg->model.dtype;
    return ENC_OK;
}

/* The per-layer attention settings that mean nothing alone: local layers
 * need their window, and a window or a local RoPE base needs local layers. */
static int check_layer_kinds(const attnd_config *cfg, const bool *set, const char *const *given,
                             enc_error *err)
{
    const enc_hparams *hp = &cfg->model.hp;
    const size_t every = (size_t)(setting_by_key("model.global_every") - settings);
    const size_t window = (size_t)(setting_by_key("model.local_window") - settings);
    const size_t theta = (size_t)(setting_by_key("model.rope_theta_local") - settings);
    if (hp->global_every > 1 && !set[window])
        return enc_error_set(err, ENC_EINVAL,
                             "model.global_every: %s gives %d, which makes local layers: give "
                             "model.local_window too (the keys each side a local layer sees; "
                             "ModernBERT 64)",
                             given[every] ? given[every] : "a setting", hp->global_every);
    if (set[window] && hp->global_every < 2)
        return enc_error_set(err, ENC_EINVAL,
                             "model.local_window: %s gives %d, but every layer is global: set "
                             "model.global_every to 2 or more",
                             given[window] ? given[window] : "a setting", hp->local_window);
    if (set[theta] && (hp->global_every < 2 || hp->position != ENC_POS_ROPE))
        return enc_error_set(err, ENC_EINVAL,
                             "model.rope_theta_local: %s gives %g, but it is RoPE's base on local "
                             "layers: it needs model.position rope and model.global_every of 2 "
                             "or more",
                             given[theta] ? given[theta] : "a setting", hp->rope_theta_local);
    return ENC_OK;
}

/* ---- the public functions ------------------------------------------------ */

int config_load(attnd_config *cfg, int argc, char **argv, char **envp, enc_error *err)
{
    bool set[N_SETTINGS] = {false};         /* set by the file, a variable or a flag */
    const char *given[N_SETTINGS] = {NULL}; /* by which, for messages */
    const char *path = NULL;
    bool path_flag = false;
    flag_arg f;
    int rc;

    memset(cfg, 0, sizeof *cfg);
    if ((rc = apply_defaults(cfg, err)) < 0)
        goto fail;

    /* First pass over the flags: their form, --config and the actions. */
    for (int i = 1; i < argc;) {
        if ((rc = read_flag(argc, argv, &i, &f, err)) < 0)
            goto fail;
        if (f.kind == FLAG_CONFIG) {
            path = f.value;
            path_flag = true;
        }
        cfg->help |= f.kind == FLAG_HELP;
        cfg->version |= f.kind == FLAG_VERSION;
        cfg->check_config |= f.kind == FLAG_CHECK;
    }
    /* --help and --version work whatever the rest of the configuration says. */
    if (cfg->help || cfg->version) {
        resolve_followers(cfg, set);
        return ENC_OK;
    }

    if (!path_flag)
        path = env_value(envp, "ATTND_CONFIG");
    if (path && path[0]) {
        if ((rc = set_string(&cfg->config_path, path, err)) < 0 ||
            (rc = load_file(cfg, path, set, err)) < 0)
            goto fail;
        for (size_t k = 0; k < N_SETTINGS; k++)
            given[k] = set[k] ? "the config file" : NULL;
    }

    for (size_t k = 0; k < N_SETTINGS; k++) {
        const char *text = env_value(envp, settings[k].env);
        if (!text)
            continue;
        if ((rc = set_from_text(cfg, &settings[k], text, settings[k].env, err)) < 0)
            goto fail;
        set[k] = true;
        given[k] = settings[k].env;
    }

    /* Second pass: the settings' flags, left to right (the last one wins). */
    for (int i = 1; i < argc;) {
        if ((rc = read_flag(argc, argv, &i, &f, err)) < 0)
            goto fail;
        if (f.kind != FLAG_SETTING)
            continue;
        if ((rc = set_from_text(cfg, f.setting, f.value, f.setting->flag, err)) < 0)
            goto fail;
        set[f.setting - settings] = true;
        given[f.setting - settings] = f.setting->flag;
    }

    resolve_followers(cfg, set);
    cfg->model.hp.first_norm_identity = !cfg->model.first_attn_norm;
    /* auto: the checkpoint's (from_checkpoint), float32 for a weights file or seed */
    cfg->model.hp.dtype =
        cfg->model.dtype == ENC_DTYPE_AUTO ? ENC_DTYPE_FLOAT32 : cfg->model.dtype;
    if (cfg->model.dir ? (rc = from_checkpoint(cfg, set, given, err)) < 0
                       : (rc = check_layer_kinds(cfg, set, given, err)) < 0)
        goto fail;

    enc_error hp_err = {0};
    if (enc_hparams_validate(&cfg->model.hp, &hp_err) < 0) {
        rc = enc_error_set(err, hp_err.status, "model: %s", hp_err.message);
        goto fail;
    }
    return ENC_OK;

fail:
    config_free(cfg);
    return rc;
}

void config_free(attnd_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        cfg_type t = settings[i].type;
        if (t == CFG_STRING || t == CFG_NSTRING || t == CFG_NAME) {
            char **slot = field_of(cfg, &settings[i]);
            free(*slot);
            *slot = NULL;
        }
    }
    free(cfg->config_path);
    cfg->config_path = NULL;
}

/* Writes one setting's entry of --help. */
static void help_setting(FILE *out, const cfg_setting *s)
{
    char flag[96];
    if (s->type == CFG_BOOL)
        snprintf(flag, sizeof flag, "%s, --no-%s", s->flag, s->flag + 2);
    else
        snprintf(flag, sizeof flag, "%s %s", s->flag, s->metavar);
    fprintf(out, "  %-32s %s\n      %s\n      %s; default ", flag, s->env, s->desc, s->key);
    if (!s->dflt)
        fputs("null", out);
    else if (s->dflt[0] == '=')
        fprintf(out, "the value of %s", s->dflt + 1);
    else
        fputs(s->dflt, out);
    if (s->type == CFG_INT || s->type == CFG_SIZE || s->type == CFG_LONG || s->type == CFG_U64)
        fprintf(out, "; %llu..%llu", (unsigned long long)s->lo, (unsigned long long)s->hi);
    fputc('\n', out);
}

/* The settings that take null (CFG_NSTRING, default null), from the table,
 * as " server.api_key, ..., model.dir" wrapped before column 80. */
static void help_null_list(FILE *out)
{
    int col = (int)strlen("null (in the file) or an empty value (from any source) as null:");
    bool first = true;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        if (settings[i].type != CFG_NSTRING)
            continue;
        const int n = (int)strlen(settings[i].key) + 2; /* " key," */
        if (!first)
            fputc(',', out);
        if (col + n > 79) {
            fputc('\n', out);
            col = 0;
        } else {
            fputc(' ', out);
            col++;
        }
        fputs(settings[i].key, out);
        col += n - 1;
        first = false;
    }
}

char *config_help_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    fputs("Usage: attnd [--config FILE] [--check-config] [--SETTING VALUE]...\n"
          "       attnd --help | --version\n"
          "\n"
          "Serves a transformer encoder over HTTP.  Every setting can be given as a\n"
          "flag, as an ATTND_* environment variable or as a key of the JSON config file:\n"
          "a flag overrides a variable, a variable overrides the file, and the file\n"
          "overrides the default.  Write --flag VALUE or --flag=VALUE (a value that\n"
          "starts with -- needs the = form).  On/off settings also take a bare --flag\n"
          "(true) or --no-flag (false); their values are true/false, 1/0, yes/no, on/off.\n"
          "An empty variable counts as unset.  A setting whose default is null takes\n"
          "null (in the file) or an empty value (from any source) as null:",
          out);
    help_null_list(out);
    fputs(".  An invalid value stops\n"
          "attnd with a message naming the setting.\n"
          "\n"
          "  --config FILE                    ATTND_CONFIG\n"
          "      JSON config file: {\"server\": {...}, \"compute\": {...}, \"limits\": {...},\n"
          "      \"model\": {...}}; an unknown key is an error; default none\n"
          "  --check-config\n"
          "      check the configuration and load the weights, then exit (0 = valid)\n"
          "  -h, --help\n"
          "      print this help and exit\n"
          "  --version\n"
          "      print the version and exit\n",
          out);
    const char *section = "";
    size_t section_len = 0;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const cfg_setting *s = &settings[i];
        size_t n = (size_t)(strchr(s->key, '.') - s->key);
        if (n != section_len || strncmp(s->key, section, n) != 0) {
            fprintf(out, "\n%.*s:\n", (int)n, s->key);
            section = s->key;
            section_len = n;
        }
        help_setting(out, s);
    }
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
