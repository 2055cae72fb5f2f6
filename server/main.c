/* main.c - attnd: configuration, model, compute pool and HTTP server, until
 * SIGTERM or SIGINT.  The only place that prints start-up errors and exits. */
#include "config/builtin.h"
#include "config/config.h"
#include "base/file.h"
#include "tokenizer/tokenizer.h"
#include "runtime/pool.h"
#include "http/server.h"
#include "protocol/text.h"
#include "runtime/spin.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Qwen3-Reranker's prompt, as its model card builds it (the default
 * instruction; docs/api.md shows how to give another). */
static const char QWEN3_RERANKER[] =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
    "<|im_end|>\n<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant "
    "passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

/* Whether the model is the built-in one: no directory, no weights file;
 * its weights come from model.seed. */
static bool model_builtin(const attnd_config *cfg)
{
    return !cfg->model.dir && !cfg->model.weights;
}

/* The tokenizer.json text input uses: model.tokenizer, else model.dir's
 * when it has one; NULL when neither (path's room holds model.dir's). */
static const char *tokenizer_file(const attnd_config *cfg, char *path, size_t size)
{
    if (cfg->model.tokenizer || !cfg->model.dir)
        return cfg->model.tokenizer;
    snprintf(path, size, "%s/tokenizer.json", cfg->model.dir);
    return access(path, F_OK) == 0 ? path : NULL;
}

/* model.score_tokens ("yes,no", or one token): the ids the tokenizer's
 * vocabulary gives its tokens (as transformers' convert_tokens_to_ids: a
 * token's own string, not text to encode), into hp's score ids.  The model
 * needs them, so text input's tokenizer is loaded here, before it, into
 * *tok (tokenizer_from_config takes it on).  0 (*tok NULL without the
 * setting), or -1 with err naming the setting. */
static int score_tokens_from_config(const attnd_config *cfg, tok_tokenizer **tok, enc_hparams *hp,
                                    enc_error *err)
{
    *tok = NULL;
    const char *spec = cfg->model.score_tokens;
    if (!spec)
        return 0;
    char path[PATH_MAX];
    const char *file = tokenizer_file(cfg, path, sizeof path);
    if (!cfg->model.dir || !file)
        return enc_error_set(err, ENC_EINVAL,
                             "model.score_tokens needs a model.dir and a tokenizer (its "
                             "tokenizer.json, or model.tokenizer) to look its tokens up in");
    const char *comma = strchr(spec, ',');
    const size_t n1 = comma ? (size_t)(comma - spec) : strlen(spec);
    if (n1 == 0 || (comma && (!comma[1] || strchr(comma + 1, ','))))
        return enc_error_set(err, ENC_EINVAL,
                             "model.score_tokens: '%s' must be one token or two, comma-separated "
                             "(\"yes,no\": the score is yes's logit less no's)",
                             spec);
    if (!(*tok = tok_load(file, err)))
        return -1;
    const char *names[2] = {spec, comma ? comma + 1 : NULL};
    char first[256];
    snprintf(first, sizeof first, "%.*s", (int)(n1 < 255 ? n1 : 255), spec);
    names[0] = first;
    int rc = 0;
    hp->n_score_ids = comma ? 2 : 1;
    for (int i = 0; i < hp->n_score_ids && rc == 0; i++) {
        const int32_t id = tok_token_id(*tok, names[i]);
        if (id < 0)
            rc = enc_error_set(err, ENC_EINVAL,
                               "model.score_tokens: '%s' is not a token of %s (tokens are the "
                               "vocabulary's own strings, as its model.vocab writes them)",
                               names[i], file);
        hp->score_ids[i] = id;
    }
    return rc < 0 ? -1 : 0;
}

/* Loads the directory or the weights file, or builds the model from the
 * seed, with hp (the configuration's, score ids resolved). */
static enc_model *model_from_config(const attnd_config *cfg, const enc_hparams *hp, enc_error *err)
{
    if (cfg->model.dir)
        return enc_model_load_dir(cfg->model.dir, hp, err);
    if (cfg->model.weights)
        return enc_model_load(cfg->model.weights, hp, err);
    return enc_model_random(hp, cfg->model.seed, err);
}

/* The tokenizer_config.json beside tokenizer file, when there is one: the
 * special tokens' roles and decode's clean-up (fill-mask's mask token, the
 * words of entities). */
static int tokenizer_roles(tok_tokenizer *tok, const char *file, enc_error *err)
{
    char path[PATH_MAX];
    const char *slash = strrchr(file, '/');
    const int dir = slash ? (int)(slash - file) : 1;
    snprintf(path, sizeof path, "%.*s/tokenizer_config.json", dir, slash ? file : ".");
    if (access(path, F_OK) != 0)
        return 0;
    size_t len = 0;
    char *text = file_read_whole(path, &len, err);
    if (!text)
        return -1;
    const int rc = tok_read_config(tok, text, len, err);
    free(text);
    if (rc < 0) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        enc_error_set(err, rc, "model.tokenizer: %s (%s)", msg, path);
    }
    return rc < 0 ? -1 : 0;
}

/* The tokenizer of text input: model.tokenizer, or model.dir's
 * tokenizer.json when it has one, or the built-in model's (config/builtin.h),
 * which then gets an embedding module drawn from model.seed as wide as the
 * tokenizer's vocabulary (docs/model.md).  NULL with err clear: none (the
 * model takes embeddings or token ids only).  *source: the file, or
 * "built-in".  early: the file already loaded (score_tokens_from_config),
 * or NULL; taken on, freed on failure. */
static tok_tokenizer *tokenizer_from_config(const attnd_config *cfg, enc_model *model,
                                            tok_tokenizer *early, const char **source,
                                            enc_error *err)
{
    static char path[PATH_MAX];
    const char *file = tokenizer_file(cfg, path, sizeof path);
    *source = file ? file : "built-in";
    if (!file && !model_builtin(cfg))
        return NULL;
    if (!model_builtin(cfg) && !enc_model_embedding(model)) {
        enc_error_set(err, ENC_EINVAL,
                      "model.tokenizer: text needs a model that takes token ids (a model.dir "
                      "with its embeddings, or the built-in model); this model takes embeddings "
                      "only");
        tok_free(early);
        return NULL;
    }
    tok_tokenizer *tok = early  ? early
                         : file ? tok_load(file, err)
                                : tok_load_json((const char *)builtin_tokenizer_json,
                                                builtin_tokenizer_json_len, err);
    if (!tok)
        return NULL;
    if (model_builtin(cfg)) {
        const size_t v = tok_id_count(tok);
        if (v > INT_MAX || enc_model_seed_embedding(model, (int)v, cfg->limits.max_seq_len,
                                                    cfg->model.seed, err) < 0) {
            if (v > INT_MAX)
                enc_error_set(err, ENC_EINVAL, "model.tokenizer: %s has %zu token ids, too many",
                              *source, v);
            tok_free(tok);
            return NULL;
        }
        return tok;
    }
    const enc_embedding_info *emb = enc_model_embedding(model);
    if (tok_id_count(tok) > (size_t)emb->vocab_size) {
        enc_error_set(err, ENC_EINVAL,
                      "model.tokenizer: %s has %zu token ids, the model's vocab_size is %d", file,
                      tok_id_count(tok), emb->vocab_size);
        tok_free(tok);
        return NULL;
    }
    if (tokenizer_roles(tok, file, err) < 0) {
        tok_free(tok);
        return NULL;
    }
    return tok;
}

/* model.dir's sentence-transformers text settings (load/sentence.h:
 * max_seq_length, prompts) into *st; none without model.dir.  0, or -1
 * with err naming the file. */
static int sentence_from_config(const attnd_config *cfg, enc_st_text *st, enc_error *err)
{
    memset(st, 0, sizeof *st);
    if (!cfg->model.dir || enc_st_text_read(cfg->model.dir, st, err) == 0)
        return 0;
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err->message);
    enc_error_set(err, err->status, "model.dir: %s", msg);
    return -1;
}

#define POOLING_HINT                                                                               \
    "attnd: (set model.pooling and model.normalize to serve the directory without its "            \
    "sentence-transformers modules)\n"

/* Whether one of st's prompts puts text before an input. */
static bool some_prompt(const enc_st_text *st)
{
    for (size_t i = 0; st && i < st->n_prompts; i++)
        if (st->prompts[i].text[0])
            return true;
    return false;
}

/* How /v1/embeddings pools: model.pooling and model.normalize, or where
 * they say auto, model.dir's sentence-transformers modules (read into *st,
 * whose Dense modules t borrows, the first taking d_model features), else
 * mean and normalized.  0, or -1 with err set (a module attnd does not run,
 * or a Pooling module that leaves the prompts' tokens out: the caller adds
 * how to do without them). */
static int pooling_from_config(const attnd_config *cfg, const enc_model *m,
                               const enc_st_text *sentence, enc_st_config *st, server_text *t,
                               enc_error *err)
{
    const bool pool_auto = cfg->model.pooling == ENC_POOL_AUTO,
               norm_auto = cfg->model.normalize < 0;
    const enc_dense *project = enc_model_projection(m);
    const int width = project ? project->out : enc_model_hparams(m)->d_model;
    if (cfg->model.dir && (pool_auto || norm_auto) &&
        enc_st_config_read(cfg->model.dir, width, st, err) < 0)
        return -1;
    if (st->found && !st->include_prompt && some_prompt(sentence)) {
        enc_error_set(err, ENC_EINVAL,
                      "model.dir: the Pooling module's include_prompt false is not supported: "
                      "sentence-transformers leaves a prompt's tokens out of the pooling, attnd "
                      "pools them");
        return -1;
    }
    /* the settings over the directory's modules over the default */
    enc_embedder *e = &t->pooling;
    *e = (enc_embedder){.mode = ENC_POOL_MEAN,
                        .normalize = true,
                        .project = project,
                        .dense = st->dense,
                        .n_dense = st->n_dense,
                        .int8_tanh = st->int8_tanh};
    if (st->found)
        e->mode = st->pooling, e->normalize = st->normalize;
    if (!pool_auto)
        e->mode = cfg->model.pooling;
    if (!norm_auto)
        e->normalize = cfg->model.normalize != 0;
    t->pooling_from = !pool_auto ? "model.pooling" : st->found ? "modules.json" : "default";
    return 0;
}

/* compute.spin_us: spinners (spin.h) on as many CPUs as the daemon's
 * threads can keep busy at once, none under a CPU quota; *note says what
 * was done, for the ready line. */
static spinners *start_spinners(const attnd_config *cfg, char *note, size_t note_len)
{
    snprintf(note, note_len, "no spinning");
    if (cfg->compute.spin_us == 0)
        return NULL;
    char why[PATH_MAX + 200];
    if (spin_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup", why, sizeof why)) {
        fprintf(stderr, "attnd: compute.spin_us: off, a CPU quota applies (%s)\n", why);
        return NULL;
    }
    const long busy =
        (long)cfg->compute.workers * cfg->compute.forward_threads + cfg->server.threads;
    const int cpus = spin_cpus_allowed();
    const int n = busy < cpus ? (int)busy : cpus;
    spinners *sp = spinners_new(n, cfg->compute.spin_us);
    if (!sp)
        fprintf(stderr, "attnd: compute.spin_us: off, cannot start the spinners: %s\n",
                strerror(errno));
    else
        snprintf(note, note_len, "spinning %d us on %d CPU%s", cfg->compute.spin_us, n,
                 n == 1 ? "" : "s");
    return sp;
}

/* Makes room for server.max_connections sockets: raises the soft open-file
 * limit (often 1024) to max_connections + 64 when the hard limit allows, as
 * nginx's worker_rlimit_nofile does; warns when it cannot. */
static void raise_open_files(const attnd_config *cfg)
{
    struct rlimit rl;
    const rlim_t want = (rlim_t)cfg->server.max_connections + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
        rl.rlim_cur < want)
        fprintf(stderr,
                "attnd: warning: the open-file limit (%llu) is below server.max_connections + 64 "
                "(%llu): connections past it are refused\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

static void log_model(const attnd_config *cfg, const enc_model *m)
{
    const enc_hparams *hp = enc_model_hparams(m);
    fprintf(stderr,
            "attnd: model %s: d_model %d, %d heads (%d kv), d_ff %d, %d layer%s, %s, %s, "
            "%zu parameters from %s%s%s\n",
            cfg->model.name, hp->d_model, hp->n_heads, hp->n_kv_heads, hp->d_ff, hp->n_layers,
            hp->n_layers == 1 ? "" : "s",
            hp->ffn == ENC_FFN_MLP ? enc_activation_name(hp->activation) : enc_ffn_name(hp->ffn),
            hp->norm_first ? "pre-norm" : "post-norm", enc_model_param_count(m),
            enc_model_source(m), enc_model_sha256(m)[0] ? ", sha256 " : "", enc_model_sha256(m));
    if (hp->position == ENC_POS_ROPE) {
        char ntk[48] = "";
        if (hp->rope_ntk > 1.0)
            snprintf(ntk, sizeof ntk, ", ntk factor %.4g", hp->rope_ntk);
        fprintf(stderr, "attnd: positions: rope, %s, theta %g%s, %d of %d dimensions a head\n",
                enc_rope_style_name(hp->rope_style), hp->rope_theta, ntk,
                hp->rope_dim ? hp->rope_dim : enc_head_dim(hp), enc_head_dim(hp));
    } else if (hp->position == ENC_POS_ALIBI)
        fprintf(stderr, "attnd: positions: alibi, %d head slopes\n", hp->n_heads);
    else if (hp->dis.span)
        fprintf(stderr,
                "attnd: positions: relative (DeBERTa's %s%s%s), %d table rows, %d log buckets "
                "to %d\n",
                hp->dis.c2p ? "c2p" : "", hp->dis.c2p && hp->dis.p2c ? " and " : "",
                hp->dis.p2c ? "p2c" : "", 2 * hp->dis.span, hp->dis.buckets, hp->dis.max_position);
    if (hp->causal || hp->qk_norm)
        fprintf(stderr, "attnd: attention: %s%s%s, %d dimensions a head\n",
                hp->causal ? "causal (a decoder's: key j <= query i)" : "",
                hp->causal && hp->qk_norm ? ", " : "",
                !hp->qk_norm        ? ""
                : hp->qk_norm_whole ? "q and k normed whole"
                                    : "q and k normed per head",
                enc_head_dim(hp));
    int local = 0;
    for (int l = 0; l < hp->n_layers; l++)
        local += enc_layer_local(hp, l);
    if (local > 0) {
        char theta[48] = "";
        if (hp->position == ENC_POS_ROPE && hp->rope_theta_local > 0.0)
            snprintf(theta, sizeof theta, ", rope theta %g", hp->rope_theta_local);
        char seen[64];
        if (hp->causal)
            snprintf(seen, sizeof seen, "itself and the %d key%s before it", hp->local_window,
                     hp->local_window == 1 ? "" : "s");
        else
            snprintf(seen, sizeof seen, "the keys within %d of it", hp->local_window);
        fprintf(stderr, "attnd: layers: %d of %d local (each query seeing %s)%s\n", local,
                hp->n_layers, seen, theta);
    }
    if (hp->sublayer_norm)
        fprintf(stderr, "attnd: block: each sublayer's output normed before the residual add\n");
    if (hp->double_residual)
        fprintf(stderr, "attnd: block: attention's output and the residual normed, then the "
                        "residual added again\n");
    if ((hp->dtype == ENC_DTYPE_BFLOAT16 || hp->dtype == ENC_DTYPE_INT8) &&
        enc_model_dtype(m) != hp->dtype)
        fprintf(stderr,
                "attnd: warning: model.dtype %s: no memory to pack the weights in %s, so the "
                "Linears run in float32\n",
                enc_dtype_name(hp->dtype), enc_dtype_name(hp->dtype));
    const size_t n = enc_model_ignored_count(m);
    if (!enc_model_architecture(m)[0])
        return;
    const enc_head_info *h = enc_model_head(m);
    if (h)
        fprintf(stderr, "attnd: model.dir: %s, %s: %s head, %d output%s, %zu tensors\n",
                enc_model_architecture(m), h->architecture, enc_head_kind_name(h->kind),
                h->n_outputs, h->n_outputs == 1 ? "" : "s", h->n_tensors);
    else if (enc_model_head_unsupported(m))
        fprintf(stderr, "attnd: model.dir: %s, %s: %s%s; the encoder is served alone\n",
                enc_model_architecture(m), enc_model_head_unsupported(m),
                enc_model_head_note(m)[0] ? "the head is left out: "
                                          : "a head attnd does not compute",
                enc_model_head_note(m));
    fprintf(stderr, "attnd: model.dir: %s; %zu tensor%s outside the encoder stack ignored%s",
            enc_model_architecture(m), n, n == 1 ? "" : "s", n ? ":" : "");
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? "," : "", enc_model_ignored(m, i));
    fputc('\n', stderr);
}

/* Text input's token limit and where it comes from, what is done over it,
 * and the prompts (docs/model.md). */
static void log_text(const attnd_config *cfg, const enc_model *m, const server_text *t)
{
    if (!t->tokenizer)
        return;
    const api_ctx lim = {.max_seq_len = cfg->limits.max_seq_len,
                         .embedding = enc_model_embedding(m),
                         .tokenizer = t->tokenizer,
                         .sentence = t->sentence};
    const char *from;
    const size_t max = text_max_tokens(&lim, &from);
    char names[256];
    text_prompt_names(&lim, names, sizeof names);
    const char *def = t->sentence ? t->sentence->default_prompt_name : NULL;
    fprintf(stderr,
            "attnd: text: at most %zu tokens (%s); a text over it is %s (server.auto_truncate); "
            "prompts: %s%s%s%s\n",
            max, from, cfg->server.auto_truncate ? "cut" : "refused", names[0] ? names : "none",
            def ? " (default " : "", def ? def : "", def ? ")" : "");
    if (t->pair_template)
        fprintf(stderr, "attnd: text: a [query, document] pair is one text, %s (%s)\n",
                t->pair_template == QWEN3_RERANKER ? "Qwen3-Reranker's prompt"
                                                   : "model.rerank_template",
                t->pair_template_from);
}

/* How /v1/embeddings makes an embedding, and what decided it. */
static void log_embeddings(const enc_model *m, const server_text *t)
{
    const enc_embedder *e = &t->pooling;
    char project[64] = "", dense[256] = "";
    if (e->project)
        snprintf(project, sizeof project, "the model's projection %d -> %d, ", e->project->in,
                 e->project->out);
    size_t n = 0;
    for (int i = 0; i < e->n_dense && n < sizeof dense; i++)
        n += (size_t)snprintf(dense + n, sizeof dense - n, ", Dense %d -> %d%s", e->dense[i].in,
                              e->dense[i].out, e->dense[i].tanh ? " tanh" : "");
    fprintf(stderr, "attnd: embeddings: %s%s pooling%s%s%s: %d dimensions (%s)\n", project,
            enc_pooling_name(e->mode), dense, e->int8_tanh ? ", round(127 tanh) (int8)" : "",
            e->normalize ? ", normalized" : "", enc_embed_width(e, enc_model_hparams(m)->d_model),
            t->pooling_from);
}

/* model.rerank_template into t->pair_template (NULL: the tokenizer's pair)
 * and what decided it: null is Qwen3-Reranker's prompt for a causal LM's
 * reranker (the model's head has score tokens), else none.  0, or -1 with
 * err naming the setting. */
static int template_from_config(const attnd_config *cfg, const enc_model *m, server_text *t,
                                enc_error *err)
{
    const char *v = cfg->model.rerank_template;
    const enc_head_info *h = enc_model_head(m);
    t->pair_template = NULL;
    t->pair_template_from = "model.rerank_template";
    if (!v) {
        if (!h || h->n_score_ids == 0)
            return 0;
        v = "qwen3-reranker";
        t->pair_template_from = "a causal LM's reranker";
        /* a chat template attnd does not render (zeroentropy/zerank-2's
         * prompt is its own): say which prompt pairs take instead */
        char path[4096];
        if (cfg->model.dir &&
            snprintf(path, sizeof path, "%s/chat_template.jinja", cfg->model.dir) <
                (int)sizeof path &&
            access(path, F_OK) == 0)
            fprintf(stderr,
                    "attnd: warning: %s is not rendered: each [query, document] pair takes "
                    "Qwen3-Reranker's prompt; where the model card's differs, give it as "
                    "model.rerank_template (--rerank-template)\n",
                    path);
    }
    if (strcmp(v, "none") == 0)
        return 0;
    const char *doc = strstr(v, "{document}");
    if (strcmp(v, "qwen3-reranker") == 0)
        t->pair_template = QWEN3_RERANKER;
    else if (!doc || strstr(doc + 1, "{document}") || !strstr(v, "{query}"))
        return enc_error_set(err, ENC_EINVAL,
                             "model.rerank_template must hold {query} and {document} once (or "
                             "be qwen3-reranker or none)");
    else
        t->pair_template = v;
    if (!t->tokenizer)
        return enc_error_set(err, ENC_EINVAL,
                             "model.rerank_template: pairs made one text need a tokenizer "
                             "(model.dir's tokenizer.json, or model.tokenizer)");
    return 0;
}

/* The start-up steps that --check-config checks too: the model (logged),
 * its tokenizer, model.dir's sentence-transformers settings and how
 * /v1/embeddings pools, into *model, *tokenizer (NULL when there is none),
 * *sentence, *modules and *t (pointing at the three).  0, or -1 with the
 * error printed; what was loaded is the caller's to free either way. */
static int load_model(const attnd_config *cfg, enc_model **model, tok_tokenizer **tokenizer,
                      enc_st_text *sentence, enc_st_config *modules, server_text *t, enc_error *err)
{
    enc_hparams hp = cfg->model.hp;
    tok_tokenizer *early = NULL;
    if (score_tokens_from_config(cfg, &early, &hp, err) < 0 ||
        !(*model = model_from_config(cfg, &hp, err))) {
        tok_free(early);
        fprintf(stderr, "attnd: %s%s\n", cfg->model.weights ? "model.weights: " : "", err->message);
        return -1;
    }
    log_model(cfg, *model);
    bool pooling_failed = false;
    if ((!(*tokenizer = tokenizer_from_config(cfg, *model, early, &t->tokenizer_source, err)) &&
         err->status != ENC_OK) ||
        sentence_from_config(cfg, sentence, err) < 0 ||
        (pooling_failed = pooling_from_config(cfg, *model, sentence, modules, t, err) < 0)) {
        fprintf(stderr, "attnd: %s\n%s", err->message, pooling_failed ? POOLING_HINT : "");
        return -1;
    }
    t->tokenizer = *tokenizer;
    t->sentence = sentence;
    if (template_from_config(cfg, *model, t, err) < 0) {
        fprintf(stderr, "attnd: %s\n", err->message);
        return -1;
    }
    log_embeddings(*model, t);
    return 0;
}

/* server.drain_seconds after the first SIGTERM or SIGINT (sig): readiness
 * down, still serving, until the period ends or a second signal comes. */
static void drain(server *srv, const sigset_t *stop, int sig, int seconds)
{
    const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    if (seconds <= 0) {
        fprintf(stderr, "attnd: %s\n", name);
        return;
    }
    server_drain(srv, seconds); /* first: the line below says readiness is 503 */
    fprintf(stderr,
            "attnd: %s: draining for %d s: readiness 503, still accepting and serving "
            "(a second signal ends the drain)\n",
            name, seconds);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += seconds;
    for (;;) {
        struct timespec now, left;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left.tv_sec = end.tv_sec - now.tv_sec;
        left.tv_nsec = end.tv_nsec - now.tv_nsec;
        if (left.tv_nsec < 0)
            left.tv_sec--, left.tv_nsec += 1000000000L;
        if (left.tv_sec < 0)
            break;
        const int got = sigtimedwait(stop, NULL, &left);
        if (got == SIGTERM || got == SIGINT) {
            fprintf(stderr, "attnd: %s: the drain ends now\n",
                    got == SIGINT ? "SIGINT" : "SIGTERM");
            return;
        }
        if (got < 0 && errno != EINTR)
            break; /* EAGAIN: the period is over */
    }
    fprintf(stderr, "attnd: the drain period is over\n");
}

static pthread_t main_thread;

/* SIGTERM or SIGINT delivered to a thread that does not block it: to the
 * main thread, whose sigwait takes it.  Only OpenBLAS's threads, started
 * by its constructor before main could block anything, can receive one;
 * without this their default action would end the process at once. */
static void pass_to_main(int sig)
{
    const int saved = errno;
    pthread_kill(main_thread, sig); /* async-signal-safe (POSIX.1-2008) */
    errno = saved;
}

int main(int argc, char **argv)
{
    /* Signals are taken by sigwait below, so block them in every thread we
     * start; a thread started before main passes them on (pass_to_main). */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    main_thread = pthread_self();
    struct sigaction pass = {.sa_handler = pass_to_main, .sa_flags = SA_RESTART};
    sigemptyset(&pass.sa_mask);
    sigaction(SIGTERM, &pass, NULL);
    sigaction(SIGINT, &pass, NULL);
    signal(SIGPIPE, SIG_IGN);

    attnd_config cfg;
    enc_error err = {0};
    int status = EXIT_FAILURE;
    enc_model *model = NULL;
    tok_tokenizer *tokenizer = NULL;
    server_text text_in = {0};
    enc_st_text sentence = {0};
    enc_st_config modules = {0}; /* model.dir's sentence-transformers modules */
    pool *workers = NULL;
    server *srv = NULL;
    spinners *spin = NULL;

    if (config_load(&cfg, argc, argv, environ, &err) < 0) {
        fprintf(stderr, "attnd: %s\n", err.message);
        config_free(&cfg);
        return 2;
    }
    if (cfg.help) {
        char *text = config_help_text();
        fputs(text ? text : "out of memory\n", stdout);
        free(text);
        status = EXIT_SUCCESS;
        goto done;
    }
    if (cfg.version) {
        printf("attnd %s\n", ATTND_VERSION);
        status = EXIT_SUCCESS;
        goto done;
    }
    enc_set_threads(cfg.compute.forward_threads);

    if (cfg.check_config) {
        if (load_model(&cfg, &model, &tokenizer, &sentence, &modules, &text_in, &err) < 0)
            goto done;
        if (pool_check(model, cfg.compute.workers, &err) < 0) {
            fprintf(stderr, "attnd: %s\n", err.message);
            goto done;
        }
        fprintf(stderr, "attnd: configuration OK\n");
        status = EXIT_SUCCESS;
        goto done;
    }

    raise_open_files(&cfg);
    char spin_note[64];
    spin = start_spinners(&cfg, spin_note, sizeof spin_note);
    /* Listen first, so /health answers 503 while a large model loads. */
    if (!(srv = server_new(&cfg, spin, &err)) || server_start(srv, &err) < 0) {
        fprintf(stderr, "attnd: %s\n", err.message);
        goto done;
    }
    const bool v6 = strchr(cfg.server.host, ':') != NULL; /* an IPv6 address: [::1]:8080 */
    fprintf(stderr, "attnd %s: listening on http://%s%s%s:%d\n", ATTND_VERSION, v6 ? "[" : "",
            cfg.server.host, v6 ? "]" : "", server_port(srv));
    if (load_model(&cfg, &model, &tokenizer, &sentence, &modules, &text_in, &err) < 0)
        goto done;
    log_text(&cfg, model, &text_in);
    pool_options popt = {.workers = cfg.compute.workers,
                         .queue_size = cfg.compute.queue_size,
                         .batch_tokens = cfg.compute.batch_tokens,
                         .batch_delay_ms = cfg.compute.batch_delay_ms,
                         .short_tokens = cfg.compute.short_tokens,
                         .on_forward = server_on_forward,
                         .on_forward_arg = srv};
    if (!(workers = pool_new(model, &popt, &err))) {
        fprintf(stderr, "attnd: %s\n", err.message);
        goto done;
    }
    server_set_model(srv, model, &text_in, workers);
    enc_platform pf;
    enc_platform_get(&pf);
    if (pf.blas_core_generic)
        fprintf(stderr,
                "attnd: warning: OpenBLAS runs its %s kernels on a CPU with %s (it does not know "
                "this CPU): its sgemm may run at a fraction of the CPU's speed; set "
                "OPENBLAS_CORETYPE=%s (docs/deploy.md)\n",
                pf.blas_core, pf.cpu_simd,
                strcmp(pf.cpu_simd, "avx512f") == 0 ? "SkylakeX" : "Haswell");
    char linears[64] = "float32";
    if (enc_model_dtype(model) == ENC_DTYPE_BFLOAT16)
        snprintf(linears, sizeof linears, "bfloat16 on %s", pf.bf16_kernel);
    else if (enc_model_dtype(model) == ENC_DTYPE_INT8)
        snprintf(linears, sizeof linears, "int8 on %s", pf.int8_kernel);
    fprintf(stderr,
            "attnd: ready (%d compute worker%s x %d forward threads, %d HTTP threads, %d "
            "tokenize thread%s, %s; %s kernels, Linears in %s, CPU %s, OpenBLAS core %s)\n",
            cfg.compute.workers, cfg.compute.workers == 1 ? "" : "s", cfg.compute.forward_threads,
            cfg.server.threads, cfg.server.tokenize_threads,
            cfg.server.tokenize_threads == 1 ? "" : "s", spin_note, pf.kernels, linears,
            pf.cpu_simd, pf.blas_core);

    int sig = 0;
    sigwait(&stop, &sig);
    drain(srv, &stop, sig, cfg.server.drain_seconds);
    fprintf(stderr, "attnd: no longer accepting; finishing requests in flight, then exiting\n");
    server_shutdown(srv);
    server_free(srv);
    pool_free(workers);
    spinners_free(spin);
    enc_model_free(model);
    tok_free(tokenizer);
    enc_st_text_free(&sentence);
    enc_st_config_free(&modules);
    config_free(&cfg);
    fprintf(stderr, "attnd: stopped\n");
    return EXIT_SUCCESS;
done:
    server_free(srv);
    pool_free(workers);
    spinners_free(spin);
    enc_model_free(model);
    tok_free(tokenizer);
    enc_st_text_free(&sentence);
    enc_st_config_free(&modules);
    config_free(&cfg);
    return status;
}
