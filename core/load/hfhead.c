/* hfhead.c - a directory's task head from its config.json (hfhead.h): the
 * class architectures names, bound to one layout per family and kind, each
 * written after transformers' modeling code (docs/model.md, "Task heads"). */
#include "load/hfhead.h"

#include "base/file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BAD(...) enc_error_set(err, ENC_EINVAL, __VA_ARGS__)

/* The class name's ending for each kind attnd computes. */
static const struct {
    const char *suffix;
    enc_head_kind kind;
} KINDS[] = {
    {"ForSequenceClassification", ENC_HEAD_SEQUENCE},
    {"ForTokenClassification", ENC_HEAD_TOKEN},
    {"ForMaskedLM", ENC_HEAD_MASKED_LM},
};

static bool ends_with(const char *s, const char *end)
{
    const size_t n = strlen(s), k = strlen(end);
    return n >= k && strcmp(s + n - k, end) == 0;
}

static void set(char *dst, size_t size, const char *a, const char *b)
{
    snprintf(dst, size, "%s%s", a, b);
}
#define SET(field, a, b) set(names->field, sizeof names->field, (a), (b))

/* An activation the head computes, by its config.json name; what names the
 * field for the message. */
static int act_of(const char *name, const char *what, head_act *act, enc_error *err)
{
    if (!head_act_parse(name, act))
        return BAD("config.json: %s '%.40s' is not supported (gelu, gelu_new, gelu_pytorch_tanh, "
                   "relu, silu, tanh)",
                   what, name);
    return ENC_OK;
}

/* ModernBERT's prediction head (ModernBertPredictionHead: dense with
 * classifier_bias, ACT2FN[classifier_activation], LayerNorm with norm_bias
 * and norm_eps), and its classifier_pooling. */
static int modernbert_head(const json_t *root, const enc_hf_config *c, model_head *h,
                           hf_head_names *names, enc_error *err)
{
    const json_t *pool = json_object_get(root, "classifier_pooling");
    const json_t *act = json_object_get(root, "classifier_activation");
    const json_t *bias = json_object_get(root, "classifier_bias");
    if (pool && !json_is_null(pool)) {
        const char *p = json_string_value(pool);
        if (!p || (strcmp(p, "cls") != 0 && strcmp(p, "mean") != 0))
            return BAD("config.json: classifier_pooling must be \"cls\" or \"mean\"");
        h->info.mean_pooling = strcmp(p, "mean") == 0;
    }
    if (act && !json_is_string(act))
        return BAD("config.json: a string expected for 'classifier_activation'");
    if (act_of(act ? json_string_value(act) : "gelu", "classifier_activation", &h->act, err) < 0)
        return err->status;
    if (bias && !json_is_boolean(bias))
        return BAD("config.json: a boolean expected for 'classifier_bias'");
    SET(dense, "head.dense.", "");
    names->dense_bias = bias && json_is_true(bias);
    SET(norm, "head.norm.", "");
    names->norm_bias = c->hp.norm == ENC_NORM_LAYERNORM;
    h->eps = c->hp.layer_norm_eps;
    return ENC_OK;
}

/* The head's tensors and math for family fam ("bert", "roberta" for the
 * RoBERTa family and MPNet, "electra", "distilbert", "modernbert", "new":
 * GTE's, Alibaba-NLP/new-impl's classes, "deberta-v2", "qwen3",
 * "gemma3_text") and h's
 * kind. */
static int layout(const json_t *root, const enc_hf_config *c, const char *fam, const char *prefix,
                  model_head *h, hf_head_names *names, bool *unsupported, enc_error *err)
{
    const enc_head_kind kind = h->info.kind;
    const bool roberta = strcmp(fam, "roberta") == 0, modern = strcmp(fam, "modernbert") == 0;
    names->dense_bias = names->norm_bias = true;
    h->eps = c->hp.layer_norm_eps;
    if (modern && modernbert_head(root, c, h, names, err) < 0)
        return err->status;
    const bool gemma3 = strcmp(fam, "gemma3_text") == 0;
    if (gemma3 && kind != ENC_HEAD_SEQUENCE) { /* Gemma 3 has no such class */
        *unsupported = true;
        return ENC_OK;
    }
    if ((strcmp(fam, "qwen3") == 0 || gemma3) && kind != ENC_HEAD_MASKED_LM) {
        /* GenericForSequenceClassification (Qwen3's, Gemma3Text's): score
         * (no bias) on the last token that is not pad_token_id;
         * GenericForTokenClassification: score (a bias) on every token */
        SET(out_w, "score.weight", "");
        if (kind == ENC_HEAD_TOKEN)
            SET(out_b, "score.bias", "");
        h->info.last_pooling = kind == ENC_HEAD_SEQUENCE;
        h->info.pad_token_id = c->pad_token_id;
        return ENC_OK;
    }
    if (kind == ENC_HEAD_TOKEN) { /* every family: a classifier on each token (ModernBERT's
                                     after its head) */
        if (!modern)
            names->dense[0] = names->norm[0] = '\0';
        SET(out_w, "classifier.weight", "");
        SET(out_b, "classifier.bias", "");
        return ENC_OK;
    }
    if (kind == ENC_HEAD_SEQUENCE) {
        SET(out_w, "classifier.weight", "");
        SET(out_b, "classifier.bias", "");
        if (strcmp(fam, "bert") == 0 || strcmp(fam, "new") == 0) {
            /* BertPooler (GTE's NewPooler): tanh(dense(h[:, 0])), then classifier */
            SET(dense, prefix, "pooler.dense.");
            h->act = HEAD_ACT_TANH;
        } else if (roberta || strcmp(fam, "electra") == 0) {
            /* RobertaClassificationHead: dense, tanh, out_proj;
             * ElectraClassificationHead: dense, gelu, out_proj */
            SET(dense, "classifier.dense.", "");
            h->act = roberta ? HEAD_ACT_TANH : HEAD_ACT_GELU;
            SET(out_w, "classifier.out_proj.weight", "");
            SET(out_b, "classifier.out_proj.bias", "");
        } else if (strcmp(fam, "distilbert") == 0) { /* pre_classifier, ReLU, classifier */
            SET(dense, "pre_classifier.", "");
            h->act = HEAD_ACT_RELU;
        } else if (strcmp(fam, "deberta-v2") == 0) {
            /* ContextPooler: ACT2FN[pooler_hidden_act](dense(h[:, 0])), then classifier */
            const json_t *act = json_object_get(root, "pooler_hidden_act");
            const json_t *size = json_object_get(root, "pooler_hidden_size");
            if (act && !json_is_null(act) && !json_is_string(act))
                return BAD("config.json: a string expected for 'pooler_hidden_act'");
            if (size && !json_is_null(size) &&
                (!json_is_integer(size) || json_integer_value(size) != c->hp.d_model))
                return BAD("config.json: pooler_hidden_size must be hidden_size (%d)",
                           c->hp.d_model);
            SET(dense, "pooler.dense.", "");
            if (act_of(act && json_is_string(act) ? json_string_value(act) : "gelu",
                       "pooler_hidden_act", &h->act, err) < 0)
                return err->status;
        }
        return ENC_OK;
    }
    /* masked LM: a transform (dense, act, LayerNorm), then the decoder, the
     * word table unless tie_word_embeddings is false (PretrainedConfig's
     * default: true) */
    const json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return BAD("config.json: a boolean expected for 'tie_word_embeddings'");
    names->tied = !tie || json_is_true(tie);
    const json_t *legacy = json_object_get(root, "legacy");
    if (legacy && !json_is_null(legacy) && !json_is_boolean(legacy))
        return BAD("config.json: a boolean expected for 'legacy'");
    if (strcmp(fam, "deberta-v2") == 0 && legacy && json_is_false(legacy)) {
        /* DebertaV2LMPredictionHead (legacy false): dense, hidden_act,
         * LayerNorm, then the word table itself (no decoder of its own) */
        SET(dense, "lm_predictions.lm_head.dense.", "");
        SET(norm, "lm_predictions.lm_head.LayerNorm.", "");
        SET(out_w, "lm_predictions.lm_head.decoder.weight", "");
        SET(out_b, "lm_predictions.lm_head.bias", "");
        names->tied = true;
        return act_of(c->activation, "hidden_act", &h->act, err);
    }
    if (strcmp(fam, "bert") == 0 || strcmp(fam, "deberta-v2") == 0) {
        /* BertLMPredictionHead; DeBERTa's LegacyDebertaV2LMPredictionHead
         * (config.json's legacy, DebertaV2Config's default true), the same */
        SET(dense, "cls.predictions.transform.dense.", "");
        SET(norm, "cls.predictions.transform.LayerNorm.", "");
        SET(out_w, "cls.predictions.decoder.weight", "");
        SET(out_b, "cls.predictions.bias", "");
        SET(out_b2, "cls.predictions.decoder.bias", "");
        return act_of(c->activation, "hidden_act", &h->act, err);
    }
    if (roberta) { /* RobertaLMHead: dense, gelu, layer_norm, decoder */
        SET(dense, "lm_head.dense.", "");
        SET(norm, "lm_head.layer_norm.", "");
        SET(out_w, "lm_head.decoder.weight", "");
        SET(out_b, "lm_head.bias", "");
        SET(out_b2, "lm_head.decoder.bias", "");
        h->act = HEAD_ACT_GELU;
        return ENC_OK;
    }
    if (strcmp(fam, "new") == 0) { /* NewLMPredictionHead: dense, hidden_act, norm, decoder */
        SET(dense, "lm_head.dense.", "");
        SET(norm, "lm_head.norm.", "");
        SET(out_w, "lm_head.decoder.weight", "");
        SET(out_b, "lm_head.decoder.bias", "");
        return act_of(c->activation, "hidden_act", &h->act, err);
    }
    if (strcmp(fam, "distilbert") == 0) { /* vocab_transform, activation, vocab_layer_norm */
        SET(dense, "vocab_transform.", "");
        SET(norm, "vocab_layer_norm.", "");
        SET(out_w, "vocab_projector.weight", "");
        SET(out_b, "vocab_projector.bias", "");
        h->eps = 1e-12f;
        return act_of(c->activation, "activation", &h->act, err);
    }
    if (modern) { /* ModernBertForMaskedLM: head, then decoder (decoder_bias) */
        const json_t *db = json_object_get(root, "decoder_bias");
        if (db && !json_is_boolean(db))
            return BAD("config.json: a boolean expected for 'decoder_bias'");
        SET(out_w, "decoder.weight", "");
        if (!db || json_is_true(db))
            SET(out_b, "decoder.bias", "");
        return ENC_OK;
    }
    *unsupported = true; /* ElectraForMaskedLM (its generator head) */
    return ENC_OK;
}

/* id2label, in id order, into h (or num_labels' LABEL_i, or two). */
static int read_labels(const json_t *root, model_head *h, enc_error *err)
{
    const json_t *map = json_object_get(root, "id2label");
    const json_t *num = json_object_get(root, "num_labels");
    if (map && !json_is_null(map)) {
        if (!json_is_object(map) || json_object_size(map) == 0 || json_object_size(map) > 1000000)
            return BAD("config.json: id2label must be an object of labels by id");
        const size_t n = json_object_size(map);
        for (size_t i = 0; i < n; i++) {
            char key[24];
            snprintf(key, sizeof key, "%zu", i);
            const json_t *v = json_object_get(map, key);
            if (!json_is_string(v))
                return BAD("config.json: id2label has no string label for id %zu (ids 0..%zu "
                           "expected)",
                           i, n - 1);
            if (head_add_label(h, json_string_value(v)) < 0)
                return enc_error_set(err, ENC_ENOMEM, "out of memory");
        }
        return ENC_OK;
    }
    if (num &&
        (!json_is_integer(num) || json_integer_value(num) < 1 || json_integer_value(num) > 1000000))
        return BAD("config.json: num_labels must be a positive integer");
    const long long n = num ? json_integer_value(num) : 2; /* PretrainedConfig's */
    for (long long i = 0; i < n; i++) {
        char label[32];
        snprintf(label, sizeof label, "LABEL_%lld", i);
        if (head_add_label(h, label) < 0)
            return enc_error_set(err, ENC_ENOMEM, "out of memory");
    }
    return ENC_OK;
}

/* A CrossEncoder's activation, named as torch's class: into *fn; false
 * for another. */
static bool activation_name(const char *name, enc_head_function *fn)
{
    if (name && strcmp(name, "torch.nn.modules.activation.Sigmoid") == 0)
        *fn = ENC_HEAD_FN_SIGMOID;
    else if (name && strcmp(name, "torch.nn.modules.linear.Identity") == 0)
        *fn = ENC_HEAD_FN_NONE;
    else
        return false;
    return true;
}

/* dir/file's JSON, NULL (err clear) when there is no such file. */
static json_t *read_json(const char *dir, const char *file, enc_error *err)
{
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) {
        BAD("model.dir: the path is too long");
        return NULL;
    }
    if (access(path, F_OK) != 0)
        return NULL;
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        enc_error_set(err, ENC_EFORMAT, "%s: %s (line %d)", file, jerr.text, jerr.line);
    return j;
}

/* How scores come from logits: a sentence-transformers CrossEncoder's
 * activation (5.4+: config_sentence_transformers.json's activation_fn,
 * which wins; 4+: config.json's sentence_transformers.activation_fn;
 * earlier: sbert_ce_default_activation_function), else transformers'
 * TextClassificationPipeline's rule. */
static int read_function(const char *dir, const json_t *root, model_head *h, enc_error *err)
{
    const json_t *pt = json_object_get(root, "problem_type");
    if (pt && !json_is_null(pt)) {
        const char *p = json_string_value(pt);
        if (!p || (strcmp(p, "regression") != 0 && strcmp(p, "single_label_classification") != 0 &&
                   strcmp(p, "multi_label_classification") != 0))
            return BAD("config.json: problem_type must be regression, "
                       "single_label_classification or multi_label_classification");
        snprintf(h->problem_type, sizeof h->problem_type, "%s", p);
    }
    const char *p = h->problem_type;
    h->info.function = strcmp(p, "regression") == 0 ? ENC_HEAD_FN_NONE
                       : strcmp(p, "multi_label_classification") == 0 || h->n_labels == 1
                           ? ENC_HEAD_FN_SIGMOID
                           : ENC_HEAD_FN_SOFTMAX;
    json_t *stc = read_json(dir, "config_sentence_transformers.json", err);
    if (!stc && err->status)
        return err->status;
    const char *file = "config_sentence_transformers.json";
    const json_t *fn = stc ? json_object_get(stc, "activation_fn") : NULL;
    if (!fn || json_is_null(fn)) {
        const json_t *st = json_object_get(root, "sentence_transformers");
        file = "config.json";
        fn = st ? json_object_get(st, "activation_fn") : NULL;
        if (!fn)
            fn = json_object_get(root, "sbert_ce_default_activation_function");
    }
    int rc = ENC_OK;
    if (fn && !json_is_null(fn) && !activation_name(json_string_value(fn), &h->info.function))
        rc = BAD("%s: the CrossEncoder activation '%.80s' is not supported "
                 "(torch.nn.modules.activation.Sigmoid, torch.nn.modules.linear.Identity)",
                 file, json_is_string(fn) ? json_string_value(fn) : "(not a string)");
    json_decref(stc);
    return rc;
}

/* The token ids a causal LM's reranker differences: hp's, else those of
 * the directory's LogitScore module (sentence-transformers 5.4+ saves one
 * after a causal LM's Transformer: modules.json names it, its config.json
 * gives true_token_id and false_token_id, null for none); *n 0 when
 * neither names any. */
static int score_ids(const char *dir, const enc_hparams *hp, int vocab, int ids[2], int *n,
                     enc_error *err)
{
    *n = hp->n_score_ids;
    ids[0] = hp->score_ids[0];
    ids[1] = hp->score_ids[1];
    if (*n > 0) {
        for (int i = 0; i < *n; i++)
            if (ids[i] >= vocab)
                return BAD("model.score_tokens: token id %d is past vocab_size (%d)", ids[i],
                           vocab);
        return ENC_OK;
    }
    json_t *mods = read_json(dir, "modules.json", err);
    if (!mods)
        return err->status;
    int rc = ENC_OK;
    const char *sub = NULL;
    for (size_t i = 0; i < json_array_size(mods) && !sub; i++) {
        const json_t *m = json_array_get(mods, i);
        const char *type = json_string_value(json_object_get(m, "type"));
        const char *dot = type ? strrchr(type, '.') : NULL;
        if (dot && strcmp(dot + 1, "LogitScore") == 0)
            sub = json_string_value(json_object_get(m, "path"));
    }
    char file[300];
    json_t *cfg = NULL;
    if (sub && (size_t)snprintf(file, sizeof file, "%s/config.json", sub) < sizeof file &&
        (cfg = read_json(dir, file, err))) {
        const json_t *t = json_object_get(cfg, "true_token_id"),
                     *f = json_object_get(cfg, "false_token_id"),
                     *in = json_object_get(cfg, "module_input_name");
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= vocab ||
            (f && !json_is_null(f) &&
             (!json_is_integer(f) || json_integer_value(f) < 0 || json_integer_value(f) >= vocab)))
            rc = BAD("%s: true_token_id (and false_token_id, unless null) must be token ids "
                     "below vocab_size (%d)",
                     file, vocab);
        else if (in && !json_is_null(in) &&
                 (!json_is_string(in) || strcmp(json_string_value(in), "causal_logits") != 0))
            rc = BAD("%s: module_input_name must be \"causal_logits\" (the LM's logits)", file);
        else {
            ids[0] = (int)json_integer_value(t);
            ids[1] = f && !json_is_null(f) ? (int)json_integer_value(f) : 0;
            *n = f && !json_is_null(f) ? 2 : 1;
        }
        json_decref(cfg);
    } else if (sub && !err->status) {
        rc = BAD("modules.json: the LogitScore module's %s/config.json is missing", sub);
    }
    json_decref(mods);
    return err->status ? err->status : rc;
}

/* A causal LM read as a reranker (enc_hparams.score_ids): lm_head's rows
 * of the score ids, differenced, on the last token (transformers'
 * Qwen3ForCausalLM: lm_head, a Linear without bias, the word table when
 * tie_word_embeddings is true and it is not saved). */
static int score_head(const json_t *root, model_head *h, hf_head_names *names, const int ids[2],
                      int n, enc_error *err)
{
    const json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return BAD("config.json: a boolean expected for 'tie_word_embeddings'");
    names->tied = tie && json_is_true(tie); /* Qwen3Config's default: false */
    SET(out_w, "lm_head.weight", "");
    h->info.last_pooling = true;
    h->info.pad_token_id = -1; /* the sequence's own last token, as LogitScore reads it */
    h->info.n_score_ids = n;
    h->info.score_ids[0] = ids[0];
    h->info.score_ids[1] = n > 1 ? ids[1] : 0;
    return head_add_label(h, "LABEL_0") < 0 ? enc_error_set(err, ENC_ENOMEM, "out of memory")
                                            : ENC_OK;
}

/* model_type's family of heads (MPNet's are RoBERTa's: MPNetClassificationHead
 * and MPNetLMHead compute and name theirs the same way; Qwen2's, Mistral's
 * and pplx-embed's Qwen3's). */
static const char *family_of(const char *model_type)
{
    if (strcmp(model_type, "roberta") == 0 || strcmp(model_type, "xlm-roberta") == 0 ||
        strcmp(model_type, "camembert") == 0 || strcmp(model_type, "mpnet") == 0)
        return "roberta";
    if (strcmp(model_type, "qwen2") == 0 || strcmp(model_type, "mistral") == 0 ||
        strcmp(model_type, "bidirectional_pplx_qwen3") == 0)
        return "qwen3"; /* GenericFor*Classification, as Qwen3's */
    return model_type;
}

int hf_head_read(const char *dir, const enc_hf_config *c, const enc_hparams *hp, const char *prefix,
                 model_head **h, hf_head_names *names, char *klass, bool *unsupported,
                 enc_error *err)
{
    *h = NULL;
    *unsupported = false;
    klass[0] = '\0';
    memset(names, 0, sizeof *names);
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return BAD("model.dir: the path is too long");
    size_t len;
    char *text = file_read_whole(path, &len, err);
    if (!text)
        return err->status;
    json_t *root = json_loadb(text, len, 0, NULL); /* enc_hf_config_read checked it */
    free(text);
    if (!root)
        return enc_error_set(err, ENC_EFORMAT, "config.json: not JSON");
    int rc = ENC_OK;
    const json_t *arch = json_object_get(root, "architectures");
    const json_t *first = json_is_array(arch) ? json_array_get(arch, 0) : NULL;
    if (arch && !json_is_null(arch) && (!json_is_array(arch) || !json_is_string(first))) {
        rc = BAD("config.json: architectures must be an array of class names");
        goto done;
    }
    const bool causal_lm = first && ends_with(json_string_value(first), "ForCausalLM");
    if (hp->n_score_ids > 0 && !causal_lm) {
        rc = BAD("model.score_tokens: config.json's architectures[0] (%.80s) is not a causal LM "
                 "(...ForCausalLM), whose lm_head the score tokens are read from",
                 first ? json_string_value(first) : "none");
        goto done;
    }
    if (!first)
        goto done;
    snprintf(klass, 80, "%s", json_string_value(first));
    enc_head_kind kind = ENC_HEAD_NONE;
    for (size_t i = 0; i < sizeof KINDS / sizeof *KINDS; i++)
        if (ends_with(klass, KINDS[i].suffix))
            kind = KINDS[i].kind;
    int ids[2] = {0, 0}, n_ids = 0;
    if (causal_lm && (rc = score_ids(dir, hp, c->vocab_size, ids, &n_ids, err)) < 0)
        goto done;
    if (n_ids > 0 && strncmp(c->model_type, "qwen", 4) != 0) {
        rc = BAD("%s read as a reranker: attnd computes a causal LM's score tokens for Qwen2 "
                 "and Qwen3 (model_type '%s')",
                 klass, c->model_type);
        goto done;
    }
    if (n_ids > 0)
        kind = ENC_HEAD_SEQUENCE;
    if (kind == ENC_HEAD_NONE) {
        *unsupported = !ends_with(klass, "Model"); /* BertModel: no head */
        goto done;
    }
    if (!(*h = head_new(kind, klass))) {
        rc = enc_error_set(err, ENC_ENOMEM, "out of memory");
        goto done;
    }
    /* The task classes of code a repository carries (trust_remote_code:
     * NomicBERT's, JinaBERT's, with their own pooling and names), not
     * transformers': not read, but JinaBertForSequenceClassification
     * (jina-reranker-v1), which subclasses BertForSequenceClassification:
     * BertPooler and classifier on JinaBertModel.  JinaBertForMaskedLM is
     * what jina-embeddings-v2 directories name, whose files hold JinaBertModel
     * alone. */
    *unsupported = strcmp(c->model_type, "nomic_bert") == 0 ||
                   (strncmp(klass, "JinaBert", 8) == 0 &&
                    strcmp(klass, "JinaBertForSequenceClassification") != 0);
    if (n_ids > 0)
        rc = score_head(root, *h, names, ids, n_ids, err);
    else if (!*unsupported)
        rc = layout(root, c, family_of(c->model_type), prefix, *h, names, unsupported, err);
    if (rc < 0)
        goto done;
    if (*unsupported) {
        head_free(*h);
        *h = NULL;
        goto done;
    }
    names->dense_out = c->hp.d_model;
    if (kind == ENC_HEAD_MASKED_LM) {
        if (c->vocab_size < 1) {
            rc = BAD("config.json: a masked LM needs vocab_size");
            goto done;
        }
        (*h)->out.N = c->vocab_size;
    } else {
        if ((n_ids == 0 && (rc = read_labels(root, *h, err)) < 0) ||
            (kind == ENC_HEAD_SEQUENCE && (rc = read_function(dir, root, *h, err)) < 0))
            goto done;
        (*h)->out.N = (*h)->n_labels;
    }
done:
    if (rc < 0) {
        head_free(*h);
        *h = NULL;
    }
    json_decref(root);
    return rc;
}
