/* hfconfig.c - a Hugging Face directory's config.json read into
 * hyperparameters and the embedding module's settings (enc_hf_config_read),
 * one table of where each family keeps its sizes. */
#include "base/file.h"
#include "encoder.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a family's config.json says beyond the sizes (positions, the
 * fields it refuses, the embedding module's; ModernBERT's block), into c. */
typedef int (*read_extras)(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_bert(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_distilbert(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_modernbert(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_mpnet(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_nomic(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_gte(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_deberta(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_qwen2(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_qwen3(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_mistral(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_pplx(const json_t *root, enc_hf_config *c, enc_error *err);
static int read_gemma3(const json_t *root, enc_hf_config *c, enc_error *err);

/* The architectures a directory's config.json may name and where it keeps
 * each hyperparameter (checkpoint.c's SCHEMES names their tensors).  gated:
 * the feed-forward is a GLU whose activation the activation field names
 * (silu: SwiGLU); glu_names: the field names the GLU itself (swiglu,
 * geglu) and any other name is refused. */
typedef struct family {
    const char *model_type;
    const char *d_model, *n_heads, *d_ff, *n_layers, *activation, *eps;
    read_extras extras;
    bool gated, glu_names;
} family;

static const family FAMILIES[] = {
    {"bert", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_bert, false, false},
    {"roberta", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_bert, false, false},
    {"xlm-roberta", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_bert, false, false},
    {"camembert", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_bert, false, false},
    {"electra", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_bert, false, false},
    /* DistilBERT's LayerNorms are nn.LayerNorm(eps=1e-12), not configurable. */
    {"distilbert", "dim", "n_heads", "hidden_dim", "n_layers", "activation", NULL, read_distilbert,
     false, false},
    {"modernbert", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_activation", "norm_eps", read_modernbert, true, false},
    {"mpnet", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_mpnet, false, false},
    /* NomicBertConfig is a GPT2Config: GPT-2's key names. */
    {"nomic_bert", "n_embd", "n_head", "n_inner", "n_layer", "activation_function",
     "layer_norm_epsilon", read_nomic, true, true},
    /* GTE's NewConfig (Alibaba-NLP/new-impl): its up_gate_proj gates with hidden_act */
    {"new", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_gte, true, false},
    /* DeBERTa-v2 and -v3 (DebertaV2Config) */
    {"deberta-v2", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "layer_norm_eps", read_deberta, false, false},
    /* Qwen2 (Qwen2Config): gte-Qwen2's decoder; Qwen2MLP gates with hidden_act */
    {"qwen2", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "rms_norm_eps", read_qwen2, true, false},
    /* Qwen3 (Qwen3Config): Qwen3-Embedding's decoder; Qwen3MLP gates with hidden_act */
    {"qwen3", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "rms_norm_eps", read_qwen3, true, false},
    /* pplx-embed-v1's PPLXQwen3Config: Qwen3Config under its own name */
    {"bidirectional_pplx_qwen3", "hidden_size", "num_attention_heads", "intermediate_size",
     "num_hidden_layers", "hidden_act", "rms_norm_eps", read_pplx, true, false},
    /* Mistral (MistralConfig): e5-mistral's decoder; MistralMLP gates with hidden_act */
    {"mistral", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_act", "rms_norm_eps", read_mistral, true, false},
    /* Gemma 3's text model (Gemma3TextConfig): EmbeddingGemma; Gemma3MLP gates with
     * hidden_activation */
    {"gemma3_text", "hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers",
     "hidden_activation", "rms_norm_eps", read_gemma3, true, false},
};
#define N_FAMILIES     (sizeof FAMILIES / sizeof *FAMILIES)
#define DISTILBERT_EPS 1e-12f

static const family *family_of(const char *model_type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (strcmp(FAMILIES[i].model_type, model_type) == 0)
            return &FAMILIES[i];
    return NULL;
}

/* src as printable ASCII for a message (others as '?'), cut to size. */
static void printable(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    for (; src[n] && n + 1 < size; n++)
        dst[n] = src[n] >= 0x20 && src[n] < 0x7f ? src[n] : '?';
    dst[n] = '\0';
}

/* ---- reading config.json ----------------------------------------------------- */

/* config.json as transformers 4.x and 5.x write it (PretrainedConfig's and
 * PreTrainedConfig's save_pretrained: every field of the model's
 * configuration class, sorted).  A field that changes what transformers
 * computes in eval mode is honoured or refused naming it; the others
 * (dropouts, initialisation, the heads', runtime switches, token ids other
 * than the padding one) are not read; dtype / torch_dtype only for
 * model.dtype auto (c->dtype: attnd reads each tensor's own dtype).  docs/model.md has the
 * table. */

/* An integer field of config.json in *out (1..ENC_MAX_DIM-ish bounds are
 * enc_hparams_validate's). */
static int int_field(const json_t *root, const char *key, int *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v)
        return enc_error_set(err, ENC_EINVAL, "config.json: missing '%s'", key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 30))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a positive integer", key);
    *out = (int)json_integer_value(v);
    return ENC_OK;
}

/* An optional integer field, at least lo (0 or 1), in *out; absent or null:
 * *out unchanged. */
static int opt_int_field(const json_t *root, const char *key, int lo, int *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return ENC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > (1 << 30))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a %s integer", key,
                             lo > 0 ? "positive" : "non-negative");
    *out = (int)json_integer_value(v);
    return ENC_OK;
}

/* A positive number field of obj in *out, where naming obj in messages
 * ("" for the top level, "rope_parameters.sliding_attention." for an
 * entry); absent or null: *out unchanged.  *given (when non-NULL) says
 * whether it was there. */
static int number_in(const json_t *obj, const char *where, const char *key, double *out,
                     bool *given, enc_error *err)
{
    const json_t *v = json_object_get(obj, key);
    if (given)
        *given = false;
    if (!v || json_is_null(v))
        return ENC_OK;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s%s' is not a positive number", where,
                             key);
    *out = json_number_value(v);
    if (given)
        *given = true;
    return ENC_OK;
}

/* A positive number field of config.json in *out; absent: *out unchanged. */
static int number_field(const json_t *root, const char *key, double *out, enc_error *err)
{
    return number_in(root, "", key, out, NULL, err);
}

/* A boolean field of config.json in *out; absent or null: dflt. */
static int bool_field(const json_t *root, const char *key, bool dflt, bool *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return ENC_OK;
    }
    if (!json_is_boolean(v))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not true or false", key);
    *out = json_is_true(v);
    return ENC_OK;
}

/* Whether config.json has key with a value other than null. */
static bool given(const json_t *root, const char *key)
{
    const json_t *v = json_object_get(root, key);
    return v && !json_is_null(v);
}

/* transformers' ACT2FN names (activations.py) attnd computes: one function
 * under several names. */
static const struct {
    const char *name;
    enc_activation act;
} ACTIVATIONS[] = {
    {"gelu", ENC_ACT_GELU},                   /* GELUActivation: nn.functional.gelu, erf */
    {"gelu_python", ENC_ACT_GELU},            /* the same written with torch.erf */
    {"gelu_new", ENC_ACT_GELU_TANH},          /* NewGELUActivation: the tanh form */
    {"gelu_pytorch_tanh", ENC_ACT_GELU_TANH}, /* gelu(approximate="tanh") */
    {"gelu_fast", ENC_ACT_GELU_TANH},         /* the tanh form, sqrt(2/pi) to 10 digits */
    {"gelu_accurate", ENC_ACT_GELU_TANH},     /* AccurateGELUActivation: the tanh form */
    {"relu", ENC_ACT_RELU},                   /* not for a gated feed-forward */
};
#define ACTIVATION_LIST "gelu, gelu_python, gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_accurate"

/* One entry of a rope_parameters object (transformers 5's RopeParameters),
 * where naming it in messages ("rope_parameters.", or
 * "rope_parameters.sliding_attention."): its rope_type (or the older
 * "type") must be default (a scaled RoPE is refused); its rope_theta and
 * partial_rotary_factor into *theta / *factor when given (*has_theta,
 * *has_factor say so).  The default RoPE reads no other key. */
static int rope_entry(const json_t *e, const char *where, double *theta, bool *has_theta,
                      double *factor, bool *has_factor, enc_error *err)
{
    if (!json_is_object(e))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%.*s' is not an object",
                             (int)strlen(where) - 1, where);
    const char *tkey = "rope_type";
    const json_t *t = json_object_get(e, tkey);
    if (!t || json_is_null(t))
        t = json_object_get(e, tkey = "type");
    if (t && !json_is_null(t)) {
        if (!json_is_string(t))
            return enc_error_set(err, ENC_EINVAL, "config.json: '%s%s' is not a string", where,
                                 tkey);
        if (strcmp(json_string_value(t), "default") != 0) {
            char shown[64];
            printable(shown, sizeof shown, json_string_value(t));
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: %s%s '%s' is not supported (default: attnd "
                                 "computes RoPE without scaling)",
                                 where, tkey, shown);
        }
    }
    int rc;
    if ((rc = number_in(e, where, "rope_theta", theta, has_theta, err)) < 0 ||
        (rc = number_in(e, where, "partial_rotary_factor", factor, has_factor, err)) < 0)
        return rc;
    return ENC_OK;
}

/* Positions inside attention (the BERT family and DistilBERT):
 * position_embedding_type absolute (or absent: the embeddings carry them)
 * is none; relative_key and relative_key_query (transformers 4.x's
 * BertSelfAttention: learned distance embeddings added to the scores) are
 * refused; alibi is ALiBi, rotary or rope is RoPE (both attnd's own:
 * transformers' classes of this family have neither) with its base and
 * partial_rotary_factor where transformers 5's RotaryEmbeddingConfigMixin
 * looks first, the one rope_parameters dict (this family has no
 * layer_types, so no per-layer-type entries), then the top-level rope_theta
 * (or rotary_emb_base; 10000 by default) and partial_rotary_factor 4.x
 * writes.  A rope_parameters of another rope_type, or with per-layer-type
 * entries, is refused whatever the position type, as rope_scaling is
 * (read_common). */
static int read_positions(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    double theta = hp->rope_theta, factor = 1.0;
    bool theta_given = false, factor_given = false;
    int rc;
    const json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && !json_is_null(rp)) { /* checked whatever the position type, as rope_scaling */
        if (json_is_object(rp) &&
            (json_object_get(rp, "full_attention") || json_object_get(rp, "sliding_attention")))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_parameters has entries per layer type, but a "
                                 "%s model has no layer_types: one dict for every layer expected",
                                 c->model_type);
        if ((rc = rope_entry(rp, "rope_parameters.", &theta, &theta_given, &factor, &factor_given,
                             err)) < 0)
            return rc;
    }
    const json_t *pos = json_object_get(root, "position_embedding_type");
    const char *type = json_is_string(pos) ? json_string_value(pos) : NULL;
    if (!pos || json_is_null(pos) || (type && strcmp(type, "absolute") == 0))
        return ENC_OK;
    if (type && strcmp(type, "alibi") == 0) {
        hp->position = ENC_POS_ALIBI;
        return ENC_OK;
    }
    if (!type || (strcmp(type, "rotary") != 0 && strcmp(type, "rope") != 0)) {
        char shown[64] = "(not a string)";
        if (type)
            printable(shown, sizeof shown, type);
        const bool relative = type && strncmp(type, "relative_key", 12) == 0;
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: position_embedding_type '%s' is not supported "
                             "(absolute, alibi, rotary)%s",
                             shown,
                             relative ? ": transformers adds learned distance embeddings to the "
                                        "attention scores, which attnd does not compute"
                                      : "");
    }
    hp->position = ENC_POS_ROPE;
    if (theta_given) {
        hp->rope_theta = theta;
        c->key_rope_theta = "rope_parameters.rope_theta";
    } else {
        c->key_rope_theta = given(root, "rope_theta") ? "rope_theta" : "rotary_emb_base";
        if ((rc = number_field(root, "rotary_emb_base", &hp->rope_theta, err)) < 0 ||
            (rc = number_field(root, "rope_theta", &hp->rope_theta, err)) < 0)
            return rc;
    }
    if (!factor_given && (rc = number_field(root, "partial_rotary_factor", &factor, err)) < 0)
        return rc;
    const int E = hp->d_model / (hp->n_heads > 0 ? hp->n_heads : 1);
    const int dim = (int)(factor * E) / 2 * 2;
    if (factor > 1.0 || dim < 2)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: %spartial_rotary_factor %g leaves no pair of the "
                             "head's %d dimensions to rotate",
                             factor_given ? "rope_parameters." : "", factor, E);
    hp->rope_dim = dim == E ? 0 : dim;
    return ENC_OK;
}

/* JinaBERT (jina-embeddings-v2: model_type bert, and the code of
 * jina-bert-implementation its auto_map names, which TEI runs as well):
 * feed_forward_type geglu makes every layer's feed-forward JinaBertGLUMLP,
 * gelu(h[:I]) * h[I:] with h = gated_layers(x) (nn.GELU(), erf, whatever
 * hidden_act says), then mlp.wo and mlp.layernorm: ffn geglu, the tensor
 * names checkpoint.c's JINA scheme binds.  original (JinaBertConfig's
 * default) or absent is BERT's feed-forward; reglu (a ReLU gate) and
 * anything else are refused, as is the field in another model_type. */
static int read_feed_forward(const json_t *root, enc_hf_config *c, enc_error *err)
{
    const json_t *v = json_object_get(root, "feed_forward_type");
    if (!v || json_is_null(v))
        return ENC_OK;
    const char *t = json_string_value(v);
    if (t && strcmp(t, "original") == 0)
        return ENC_OK;
    if (strcmp(c->model_type, "bert") != 0)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: feed_forward_type is not supported for model_type %s "
                             "(JinaBERT's field: model_type bert)",
                             c->model_type);
    if (!t || strcmp(t, "geglu") != 0) {
        char shown[64] = "(not a string)";
        if (t)
            printable(shown, sizeof shown, t);
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: feed_forward_type '%s' is not supported (geglu, "
                             "original)%s",
                             shown, t && strcmp(t, "reglu") == 0 ? ": a ReLU gate" : "");
    }
    c->hp.ffn = ENC_FFN_GEGLU;
    c->hp.activation = ENC_ACT_GELU;
    c->key_activation = "feed_forward_type";
    snprintf(c->activation, sizeof c->activation, "geglu");
    /* jina-bert-v2-qk-post-norm's code (jina-embeddings-v2-base-code): its
     * JinaBertSelfAttention normalizes the whole query and key
     * (layer_norm_q, layer_norm_k), its JinaBertLayer adds the residual
     * twice (layer_norm_1 after attention.output.LayerNorm): checkpoint.c's
     * JINA_CODE scheme.  Known, as TEI knows it, by the code auto_map
     * names. */
    json_t *am = json_object_get(root, "auto_map");
    const char *key;
    json_t *v_am;
    json_object_foreach(am, key, v_am)
    {
        const char *ref = json_string_value(v_am);
        if (ref && strstr(ref, "jina-bert-v2-qk-post-norm")) {
            c->hp.qk_norm = c->hp.qk_norm_whole = c->hp.double_residual = true;
            break;
        }
    }
    return ENC_OK;
}

/* The BERT family (BertConfig, RobertaConfig, XLMRobertaConfig,
 * CamembertConfig, ElectraConfig and modeling_bert.py's layers, which the
 * others copy): is_decoder true makes BertModel's self-attention causal
 * (its extended attention mask), add_cross_attention true adds a
 * cross-attention to each layer: both refused.  JinaBERT's
 * feed_forward_type; type_vocab_size and ELECTRA's embedding_size
 * (ElectraConfig's default 128) for the embedding module; then the
 * positions. */
static int read_bert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    bool decoder = false, cross = false;
    int rc;
    if ((rc = bool_field(root, "is_decoder", false, &decoder, err)) < 0 ||
        (rc = bool_field(root, "add_cross_attention", false, &cross, err)) < 0 ||
        (rc = read_feed_forward(root, c, err)) < 0)
        return rc;
    if (decoder)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: is_decoder true is not supported (transformers' %s "
                             "then masks its self-attention causally, as a decoder's)",
                             c->model_type);
    if (cross)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: add_cross_attention true is not supported (a "
                             "cross-attention to an encoder's states in every layer)");
    if ((rc = opt_int_field(root, "type_vocab_size", 0, &c->type_vocab_size, err)) < 0)
        return rc;
    if (strcmp(c->model_type, "electra") == 0) {
        c->embedding_size = 128;
        if ((rc = opt_int_field(root, "embedding_size", 1, &c->embedding_size, err)) < 0)
            return rc;
    }
    return read_positions(root, c, err);
}

/* DistilBERT (DistilBertConfig, modeling_distilbert.py): its attribute_map
 * lets hidden_size, num_attention_heads and num_hidden_layers stand for
 * dim, n_heads and n_layers (and win when both are given: refused when they
 * differ); sinusoidal_pos_embds for the embedding module; then the
 * positions. */
static int read_distilbert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    static const struct {
        const char *alias, *key;
        size_t off;
    } aliases[] = {
        {"hidden_size", "dim", offsetof(enc_hparams, d_model)},
        {"num_attention_heads", "n_heads", offsetof(enc_hparams, n_heads)},
        {"num_hidden_layers", "n_layers", offsetof(enc_hparams, n_layers)},
    };
    int rc;
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++) {
        const int have = *(const int *)((const char *)&c->hp + aliases[i].off);
        int v = have;
        if ((rc = opt_int_field(root, aliases[i].alias, 1, &v, err)) < 0)
            return rc;
        if (v != have)
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: '%s' (%d) and '%s' (%d) differ (DistilBertConfig "
                                 "reads %s as %s)",
                                 aliases[i].alias, v, aliases[i].key, have, aliases[i].alias,
                                 aliases[i].key);
    }
    if ((rc = bool_field(root, "sinusoidal_pos_embds", false, &c->sinusoidal, err)) < 0)
        return rc;
    return read_positions(root, c, err);
}

/* MPNet (MPNetConfig, modeling_mpnet.py): BERT's post-norm layer with a
 * relative position bias on every layer's scores, its table
 * relative_attention_num_buckets rows (MPNetConfig's default 32).
 * MPNetEncoder buckets into ENC_REL_BUCKETS whatever the field says, so a
 * smaller table is refused (transformers would index past it); a larger
 * one is read, its extra rows unused.  No token types; no positions inside
 * attention (the embeddings carry them, RoBERTa's way). */
static int read_mpnet(const json_t *root, enc_hf_config *c, enc_error *err)
{
    int rows = ENC_REL_BUCKETS, rc;
    if ((rc = opt_int_field(root, "relative_attention_num_buckets", 1, &rows, err)) < 0)
        return rc;
    if (rows < ENC_REL_BUCKETS)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: relative_attention_num_buckets (%d) is below %d: "
                             "MPNet buckets relative positions into %d whatever it says, and "
                             "would read past the table",
                             rows, ENC_REL_BUCKETS, ENC_REL_BUCKETS);
    c->hp.rel_buckets = rows;
    return ENC_OK;
}

/* NomicBERT (nomic-embed-text-v1 and v1.5: the model_type of the code
 * their repositories carry, modeling_hf_nomic_bert.py, which TEI runs as
 * well): BERT's post-norm block with a fused Wqkv, RoPE on the whole head
 * (rotate_half, base rotary_emb_base) in place of position embeddings, the
 * gated feed-forward (glu_names), biases per qkv_proj_bias, mlp_fc1_bias and
 * mlp_fc2_bias (one value: attnd's bias covers every Linear), LayerNorms
 * with biases whatever those say (use_rms_norm false), token types.  What
 * that code computes otherwise is refused naming the field: prenorm,
 * parallel_block, causal, use_rms_norm, a rotary_emb_fraction other than
 * 1, rotary_emb_interleaved, rotary_emb_scale_base (xPos),
 * rotary_scaling_factor (dynamic NTK past max_trained_positions: its base
 * then depends on the batch's padded length), mixture-of-experts layers
 * (nomic-embed-text-v2-moe), norm_mlp.  n_positions stands for
 * max_position_embeddings. */
static int read_nomic(const json_t *root, enc_hf_config *c, enc_error *err)
{
    static const struct {
        const char *key;
        bool ok; /* the one value attnd computes */
        const char *why;
    } flags[] = {
        {"prenorm", false, "the pre-norm block"},
        {"parallel_block", false, "attention and feed-forward side by side"},
        {"causal", false, "a causal mask"},
        {"use_rms_norm", false, "RMSNorm"},
        {"rotary_emb_interleaved", false, "GPT-J's pairs, not rotate_half's"},
        {"norm_mlp", false, "a LayerNorm inside the feed-forward"},
    };
    enc_hparams *hp = &c->hp;
    int rc;
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        bool v = flags[i].ok;
        if ((rc = bool_field(root, flags[i].key, flags[i].ok, &v, err)) < 0)
            return rc;
        if (v != flags[i].ok)
            return enc_error_set(err, ENC_EINVAL, "config.json: %s %s is not supported (%s)",
                                 flags[i].key, v ? "true" : "false", flags[i].why);
    }
    static const struct {
        const char *key, *why;
    } unsupported[] = {
        {"rotary_emb_scale_base", "xPos scaling of the rotary embedding"},
        {"rotary_scaling_factor",
         "dynamic NTK scaling past max_trained_positions, whose base depends on the batch's "
         "padded length; leave it null (the published config.json's value)"},
        {"moe_every_n_layers", "mixture-of-experts layers"},
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        const json_t *v = json_object_get(root, unsupported[i].key);
        if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
            return enc_error_set(err, ENC_EINVAL, "config.json: %s is not supported (%s)",
                                 unsupported[i].key, unsupported[i].why);
    }
    double fraction = 0.0; /* NomicBertConfig's default: learned positions, not RoPE */
    if ((rc = number_field(root, "rotary_emb_fraction", &fraction, err)) < 0)
        return rc;
    if (fraction != 1.0)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rotary_emb_fraction %g is not supported (1: RoPE on "
                             "the whole head, as nomic-embed-text's)",
                             fraction);
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = 10000.0; /* NomicBertConfig's default */
    if ((rc = number_field(root, "rotary_emb_base", &hp->rope_theta, err)) < 0)
        return rc;
    c->key_rope_theta = "rotary_emb_base";
    static const char *const bias_keys[] = {"qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"};
    bool bias[3];
    for (int i = 0; i < 3; i++)
        if ((rc = bool_field(root, bias_keys[i], true, &bias[i], err)) < 0)
            return rc;
    for (int i = 1; i < 3; i++)
        if (bias[i] != bias[0])
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: %s (%s) and %s (%s) differ; attnd's bias covers "
                                 "every Linear",
                                 bias_keys[0], bias[0] ? "true" : "false", bias_keys[i],
                                 bias[i] ? "true" : "false");
    hp->bias = bias[0];
    hp->norm = ENC_NORM_LAYERNORM_BIAS; /* nn.LayerNorm: a bias whatever the Linears have */
    /* NomciBertGatedMLP rounds its hidden width up to its multiple_of, 256
     * (3072, nomic-embed-text's n_inner, is one already) */
    hp->d_ff = (hp->d_ff + 255) / 256 * 256;
    c->type_vocab_size = 2; /* NomicBertConfig's default */
    if ((rc = opt_int_field(root, "type_vocab_size", 1, &c->type_vocab_size, err)) < 0 ||
        (rc = opt_int_field(root, "n_positions", 1, &c->max_position_embeddings, err)) < 0)
        return rc;
    return ENC_OK;
}

/* GTE (model_type new: gte-base-en-v1.5, gte-large-en-v1.5,
 * gte-multilingual-base and gte-multilingual-reranker-base, whose auto_map
 * names Alibaba-NLP/new-impl's modeling.py, which TEI runs as well): BERT's
 * post-norm block with a fused qkv_proj, RoPE over the
 * whole head (rotate_half, base rope_theta, NewConfig's default 10000) in
 * place of position embeddings, the gated feed-forward (up_gate_proj: the
 * up rows, then the gate's, activated by hidden_act; no bias), token types
 * when type_vocab_size > 0 (NewConfig's default 1; gte-base-en-v1.5's 0: no
 * table).  rope_scaling {"type": "ntk", "factor": f} is
 * NTKScalingRotaryEmbedding's fixed scaling (rope_ntk), which scales only
 * where f > 1; its mixed_b variant and other types are refused, as are
 * what that code computes otherwise: a position_embedding_type other than
 * rope (its absolute table is no published checkpoint's), layer_norm_type
 * rms_norm, logn_attention_scale true (queries scaled by log_512 of each
 * text's length), pack_qkv false (q_proj, k_proj and v_proj apart: no
 * published checkpoint's either).  unpad_inputs and use_memory_efficient_attention change
 * how, not what: not read. */
static int read_gte(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    int rc;
    const json_t *pos = json_object_get(root, "position_embedding_type");
    if (pos && !json_is_null(pos) &&
        (!json_is_string(pos) || strcmp(json_string_value(pos), "rope") != 0)) {
        char shown[64] = "(not a string)";
        if (json_is_string(pos))
            printable(shown, sizeof shown, json_string_value(pos));
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: position_embedding_type '%s' is not supported for "
                             "model_type new (rope)",
                             shown);
    }
    const json_t *norm = json_object_get(root, "layer_norm_type");
    if (norm && !json_is_null(norm) &&
        (!json_is_string(norm) || strcmp(json_string_value(norm), "layer_norm") != 0))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: layer_norm_type is not supported unless layer_norm "
                             "(rms_norm: RMSNorm)");
    bool logn = false, packed = true;
    if ((rc = bool_field(root, "logn_attention_scale", false, &logn, err)) < 0 ||
        (rc = bool_field(root, "pack_qkv", true, &packed, err)) < 0)
        return rc;
    if (!packed)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pack_qkv false is not supported (q_proj, k_proj and "
                             "v_proj apart; attnd reads qkv_proj)");
    if (logn)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: logn_attention_scale true is not supported (queries "
                             "scaled by log_512 of each text's length)");
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = 10000.0; /* NewConfig's default */
    if ((rc = number_field(root, "rope_theta", &hp->rope_theta, err)) < 0)
        return rc;
    c->key_rope_theta = "rope_theta";
    if (given(root, "rope_parameters"))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_parameters is not supported for model_type new "
                             "(its code reads rope_theta and rope_scaling)");
    const json_t *rs = json_object_get(root, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        const json_t *type = json_is_object(rs) ? json_object_get(rs, "type") : NULL;
        if (!json_is_string(type) || strcmp(json_string_value(type), "ntk") != 0)
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_scaling is not supported unless its type is "
                                 "ntk (GTE's fixed NTK scaling)");
        const json_t *mixed = json_object_get(rs, "mixed_b");
        if (mixed && !json_is_null(mixed))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: rope_scaling.mixed_b is not supported (a scale of "
                                 "its own for each frequency)");
        double f = 0.0;
        if ((rc = number_in(rs, "rope_scaling.", "factor", &f, NULL, err)) < 0)
            return rc;
        if (!(f > 0.0))
            return enc_error_set(err, ENC_EINVAL, "config.json: missing 'rope_scaling.factor'");
        hp->rope_ntk = f > 1.0 ? f : 1.0; /* the code scales only where f > 1 */
        c->key_rope_ntk = "rope_scaling.factor";
    }
    c->type_vocab_size = 1; /* NewConfig's default */
    c->no_types = true;
    return opt_int_field(root, "type_vocab_size", 0, &c->type_vocab_size, err);
}

/* An optional integer field of any sign (DebertaV2Config's -1: "none"), in
 * *out; absent or null: *out unchanged. */
static int any_int_field(const json_t *root, const char *key, int *out, enc_error *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return ENC_OK;
    if (!json_is_integer(v) || json_integer_value(v) < -(1 << 30) ||
        json_integer_value(v) > (1 << 30))
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not an integer", key);
    *out = (int)json_integer_value(v);
    return ENC_OK;
}

/* pos_att_type as DebertaV2Config keeps it: "p2c|c2p" (4.x's form), or a
 * list of the names (5.x's), into dis's c2p and p2c. */
static int pos_att_types(const json_t *v, enc_disentangled *dis, enc_error *err)
{
    char buf[128];
    size_t n = 0;
    if (json_is_string(v)) {
        printable(buf, sizeof buf, json_string_value(v));
    } else if (json_is_array(v)) {
        buf[0] = '\0';
        for (size_t i = 0; i < json_array_size(v); i++) {
            const char *t = json_string_value(json_array_get(v, i));
            if (!t)
                return enc_error_set(err, ENC_EINVAL,
                                     "config.json: pos_att_type[%zu] is not a string", i);
            n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%s", i ? "|" : "", t);
        }
    } else {
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pos_att_type is not a string or a list of them");
    }
    for (char *save = NULL, *t = strtok_r(buf, "|", &save); t; t = strtok_r(NULL, "|", &save)) {
        while (*t == ' ')
            t++;
        for (n = strlen(t); n > 0 && t[n - 1] == ' ';)
            t[--n] = '\0';
        if (strcmp(t, "c2p") == 0)
            dis->c2p = true;
        else if (strcmp(t, "p2c") == 0)
            dis->p2c = true;
        else
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: pos_att_type '%s' is not supported (c2p, p2c)", t);
    }
    if (!dis->c2p && !dis->p2c)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pos_att_type names neither c2p nor p2c (relative "
                             "attention without its terms is not supported)");
    return ENC_OK;
}

/* DeBERTa-v2 and -v3 (DebertaV2Config, modeling_deberta_v2.py): BERT's
 * post-norm layer whose attention adds DisentangledSelfAttention's c2p and
 * p2c terms from the encoder's rel_embeddings (hp.dis): att_span
 * position_buckets (or max_relative_positions, < 1: max_position_embeddings,
 * where there are no buckets), the table through the encoder's LayerNorm
 * when norm_rel_ebd says layer_norm, the terms pos_att_type names, each
 * layer's query and key Linears on the table (share_att_key).  The
 * embeddings: the word table, a position table only where
 * position_biased_input (DebertaV2Config's default true; deberta-v3's
 * false), token types only where type_vocab_size > 0, the LayerNorm.  What
 * else the code computes is refused naming the field: relative_attention
 * false, share_att_key false (pos_key_proj and pos_query_proj of their
 * own), another norm_rel_ebd, conv_kernel_size (deberta-v2-xlarge's
 * convolution beside layer 0), an attention_head_size other than
 * hidden_size / num_attention_heads, an embedding_size other than
 * hidden_size (embed_proj before the LayerNorm). */
static int read_deberta(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    enc_disentangled *dis = &hp->dis;
    bool rel = false, share = false, biased = true;
    int rc, max_rel = -1, buckets = -1, conv = 0, head = hp->d_model / hp->n_heads;
    int emb = hp->d_model;
    if ((rc = bool_field(root, "relative_attention", false, &rel, err)) < 0 ||
        (rc = bool_field(root, "share_att_key", false, &share, err)) < 0 ||
        (rc = bool_field(root, "position_biased_input", true, &biased, err)) < 0 ||
        (rc = opt_int_field(root, "conv_kernel_size", 0, &conv, err)) < 0 ||
        (rc = opt_int_field(root, "attention_head_size", 1, &head, err)) < 0 ||
        (rc = opt_int_field(root, "embedding_size", 1, &emb, err)) < 0)
        return rc;
    if ((rc = any_int_field(root, "max_relative_positions", &max_rel, err)) < 0 ||
        (rc = any_int_field(root, "position_buckets", &buckets, err)) < 0)
        return rc;
    if (!rel)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: relative_attention false is not supported (DeBERTa "
                             "without its relative attention)");
    if (!share)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: share_att_key false is not supported (pos_key_proj "
                             "and pos_query_proj of their own)");
    if (conv > 0)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: conv_kernel_size is not supported (the convolution "
                             "beside the first layer)");
    if (head != hp->d_model / hp->n_heads)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attention_head_size %d is not supported (hidden_size "
                             "/ num_attention_heads = %d)",
                             head, hp->d_model / hp->n_heads);
    if (emb != hp->d_model)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: embedding_size %d is not supported (embed_proj to "
                             "hidden_size %d)",
                             emb, hp->d_model);
    const json_t *pt = json_object_get(root, "pos_att_type");
    if (!pt || json_is_null(pt))
        return enc_error_set(err, ENC_EINVAL, "config.json: missing 'pos_att_type'");
    if ((rc = pos_att_types(pt, dis, err)) < 0)
        return rc;
    const json_t *nr = json_object_get(root, "norm_rel_ebd");
    const char *norm = nr && !json_is_null(nr) ? json_string_value(nr) : "none";
    if (!norm || (strcmp(norm, "none") != 0 && strcmp(norm, "layer_norm") != 0))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: norm_rel_ebd is not supported unless none or "
                             "layer_norm");
    dis->norm = strcmp(norm, "layer_norm") == 0;
    if (max_rel < 1) /* DebertaV2Encoder: max_position_embeddings' (DebertaV2Config's 512) */
        max_rel = c->max_position_embeddings > 0 ? c->max_position_embeddings : 512;
    if (buckets > 0 && max_rel - 1 <= buckets / 2)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: max_relative_positions (or max_position_embeddings) "
                             "%d must be above position_buckets / 2 + 1 (%d)",
                             max_rel, buckets / 2 + 1);
    dis->max_position = max_rel;
    dis->buckets = buckets > 0 ? buckets : 0;
    dis->span = buckets > 0 ? buckets : max_rel;
    c->no_positions = !biased;
    c->no_types = true; /* DebertaV2Config's type_vocab_size 0: none */
    return opt_int_field(root, "type_vocab_size", 0, &c->type_vocab_size, err);
}

/* layer_types (transformers 5's ModernBertConfig, Gemma3TextConfig:
 * "full_attention" or "sliding_attention" per layer) as attnd's
 * global_every and global_offset: layer l global when l mod every =
 * offset.  Its period is the distance between its first two full layers
 * (one full layer: the stack's length, none: one more than that); another
 * pattern is refused naming the first layer that breaks it. */
static int layer_pattern(const json_t *lt, int n_layers, int *every, int *offset, enc_error *err)
{
    if (!json_is_array(lt) || json_array_size(lt) != (size_t)n_layers)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: 'layer_types' is not a list of num_hidden_layers (%d) "
                             "entries",
                             n_layers);
    int first = -1, second = -1;
    for (int l = 0; l < n_layers; l++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)l));
        if (!s || (strcmp(s, "full_attention") != 0 && strcmp(s, "sliding_attention") != 0)) {
            char shown[64] = "(not a string)";
            if (s)
                printable(shown, sizeof shown, s);
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: layer_types[%d] '%s' is not supported "
                                 "(full_attention, sliding_attention)",
                                 l, shown);
        }
        if (s[0] == 'f' && first < 0)
            first = l;
        else if (s[0] == 'f' && second < 0)
            second = l;
    }
    const int n = second >= 0 ? second - first : first >= 0 ? n_layers : n_layers + 1;
    const int k = first >= 0 ? first % n : n_layers;
    for (int l = 0; l < n_layers; l++) {
        const bool full =
            strcmp(json_string_value(json_array_get(lt, (size_t)l)), "full_attention") == 0;
        if (full != (l % n == k))
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: layer_types is not a pattern attnd computes "
                                 "(layer l full_attention exactly when l mod N = K, here N %d, K "
                                 "%d): layer %d is %s",
                                 n, k, l, full ? "full_attention" : "sliding_attention");
    }
    *every = n > 1 ? n : 1;
    *offset = n > 1 ? k : 0;
    return ENC_OK;
}

/* The decoders read alike (read_decoder). */
typedef enum { DEC_QWEN2, DEC_QWEN3, DEC_MISTRAL } decoder_kind;

/* Qwen2, Qwen3 and Mistral (transformers' Qwen2Config, Qwen3Config and
 * MistralConfig; Qwen2Model, Qwen3Model and MistralModel:
 * Alibaba-NLP/gte-Qwen2-1.5B-instruct and -7B, Qwen/Qwen3-Embedding-0.6B,
 * -4B, -8B, intfloat/e5-mistral-7b-instruct, Salesforce/SFR-Embedding-
 * Mistral, Linq-AI-Research/Linq-Embed-Mistral and their fine-tunes):
 * decoders served as encoders.  Pre-norm with RMSNorm (rms_norm_eps) and a
 * final norm; num_key_value_heads key/value heads of head_dim (the default
 * hidden_size / num_attention_heads; Qwen3's own are wider: 16 x 128 over
 * hidden 1024); RoPE (rotate_half over the whole head, base
 * rope_parameters.rope_theta in 5.x, rope_theta in 4.x, default 10000);
 * down(act(gate(x)) * up(x)); the embeddings are embed_tokens alone.
 * Qwen2 gives q_proj, k_proj and v_proj a bias and nothing else one;
 * Qwen3 no Linear a bias, and each head's q and k an RMSNorm of its own
 * (q_norm, k_norm) before RoPE; Mistral neither.
 *
 * Qwen's attention is causal on every layer unless is_causal is false
 * (gte-Qwen2's config.json: the bidirectional attention its own modelling
 * code computes, which vLLM honours too) or use_bidirectional_attention
 * true (voyageai/voyage-4-nano's and perplexity-ai's pplx-embed's Qwen3:
 * the attention their code computes, which TEI honours).  Qwen3's
 * num_labels, where config.json gives the field itself, is the width of
 * voyage-4-nano's projection (checkpoint.c binds its linear.weight, as
 * TEI's qwen3.rs reads it).  Refused: Qwen3's
 * attention_bias true (no published checkpoint's), a sliding window
 * (use_sliding_window true in 4.x, a sliding_attention layer_types entry in
 * 5.x).
 *
 * Mistral's is causal, and on every layer within sliding_window W
 * (MistralConfig's default 4096 where the field is absent; null: none):
 * query i sees keys i - W < j <= i, as transformers' sliding-window
 * causal mask has it (later 4.x and 5.x), attnd's local window of
 * W - 1 on every layer (global_every one more than the layers).
 * num_key_value_heads absent is MistralConfig's 8, null the heads.  Not
 * read, as MistralModel reads neither: is_causal, layer_types (5.x's
 * MistralConfig warns of it).  use_bidirectional_attention true (TEI's
 * reading) attends both ways, with sliding_window null only: no code
 * defines a window both ways for Mistral. */
static int read_decoder(const json_t *root, enc_hf_config *c, decoder_kind kind, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    const bool qwen3 = kind == DEC_QWEN3, mistral = kind == DEC_MISTRAL;
    bool attn_bias = false, sliding = false, causal = true, bidir = false;
    int window = 4096, rc;
    if (mistral && !json_object_get(root, "num_key_value_heads"))
        hp->n_kv_heads = 8;
    if ((qwen3 && (rc = bool_field(root, "attention_bias", false, &attn_bias, err)) < 0) ||
        (!mistral && (rc = bool_field(root, "use_sliding_window", false, &sliding, err)) < 0) ||
        (!mistral && (rc = bool_field(root, "is_causal", true, &causal, err)) < 0) ||
        (rc = bool_field(root, "use_bidirectional_attention", false, &bidir, err)) < 0 ||
        (rc = opt_int_field(root, "num_key_value_heads", 1, &hp->n_kv_heads, err)) < 0 ||
        (qwen3 && (rc = opt_int_field(root, "num_labels", 1, &c->num_labels, err)) < 0) ||
        (rc = opt_int_field(root, "head_dim", 1, &hp->head_dim, err)) < 0)
        return rc;
    if (attn_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attention_bias true is not supported (biases on "
                             "q_proj, k_proj, v_proj and o_proj only)");
    if (sliding)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: use_sliding_window true is not supported (the layers "
                             "from max_window_layers on attend within sliding_window)");
    const json_t *lt = mistral ? NULL : json_object_get(root, "layer_types");
    if (lt && !json_is_null(lt) &&
        (!json_is_array(lt) || json_array_size(lt) != (size_t)hp->n_layers))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: 'layer_types' is not a list of num_hidden_layers (%d) "
                             "entries",
                             hp->n_layers);
    for (size_t l = 0; json_is_array(lt) && l < json_array_size(lt); l++) {
        const char *s = json_string_value(json_array_get(lt, l));
        if (!s || strcmp(s, "full_attention") != 0)
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: layer_types[%zu] is not supported unless "
                                 "full_attention (every layer attends to every token)",
                                 l);
    }
    if (mistral) {
        const json_t *w = json_object_get(root, "sliding_window");
        if (w && json_is_null(w))
            window = 0; /* none */
        else if ((rc = opt_int_field(root, "sliding_window", 1, &window, err)) < 0)
            return rc;
        if (window > ENC_MAX_POSITION)
            window = 0; /* wider than any sequence attnd takes: every key in reach */
        if (window > 0 && hp->n_layers >= ENC_MAX_LAYERS)
            return enc_error_set(err, ENC_EINVAL,
                                 "config.json: a sliding_window over num_hidden_layers %d is not "
                                 "supported (at most %d)",
                                 hp->n_layers, ENC_MAX_LAYERS - 1);
        if (bidir && window > 0)
            return enc_error_set(
                err, ENC_EINVAL,
                "config.json: use_bidirectional_attention true with sliding_window "
                "%d is not supported (no code defines Mistral's window both ways; "
                "sliding_window null: every key)",
                window);
    }
    hp->norm_first = true;
    hp->bias = kind == DEC_QWEN2; /* Qwen2's on q, k and v (checkpoint.c names no other) */
    hp->norm = ENC_NORM_RMS;
    hp->final_norm = true;
    hp->qk_norm = qwen3;
    hp->causal = causal && !bidir;
    if (window > 0) { /* every layer local: l mod (n + 1) = n never holds */
        hp->global_every = hp->n_layers + 1;
        hp->global_offset = hp->n_layers;
        hp->local_window = window - 1;
        c->key_local_window = "sliding_window - 1";
    }
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = 10000.0; /* Qwen2Config's, Qwen3Config's and MistralConfig's default */
    double factor = 1.0;
    bool theta_given = false, factor_given = false;
    const json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && !json_is_null(rp) &&
        (rc = rope_entry(rp, "rope_parameters.", &hp->rope_theta, &theta_given, &factor,
                         &factor_given, err)) < 0)
        return rc;
    if (factor_given && factor != 1.0)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_parameters.partial_rotary_factor %g is not "
                             "supported (%s rotates the whole head)",
                             factor,
                             mistral ? "Mistral"
                             : qwen3 ? "Qwen3"
                                     : "Qwen2");
    c->key_rope_theta = theta_given ? "rope_parameters.rope_theta" : "rope_theta";
    if (!theta_given && (rc = number_field(root, "rope_theta", &hp->rope_theta, err)) < 0)
        return rc;
    c->no_types = true; /* embed_tokens alone: no token types, no positions */
    c->no_positions = true;
    return ENC_OK;
}

static int read_qwen2(const json_t *root, enc_hf_config *c, enc_error *err)
{
    return read_decoder(root, c, DEC_QWEN2, err);
}

static int read_qwen3(const json_t *root, enc_hf_config *c, enc_error *err)
{
    return read_decoder(root, c, DEC_QWEN3, err);
}

static int read_mistral(const json_t *root, enc_hf_config *c, enc_error *err)
{
    return read_decoder(root, c, DEC_MISTRAL, err);
}

/* perplexity-ai/pplx-embed-v1-0.6b and -4b (model_type
 * bidirectional_pplx_qwen3, architectures PPLXQwen3Model): Qwen3Config's
 * fields, and a Qwen3Model whose every layer attends both ways whatever
 * the fields say (the checkpoint's modeling.py sets is_causal false on
 * each; its config.json says use_bidirectional_attention true too). */
static int read_pplx(const json_t *root, enc_hf_config *c, enc_error *err)
{
    int rc = read_decoder(root, c, DEC_QWEN3, err);
    c->hp.causal = false;
    return rc;
}

/* transformers 5's rope_parameters with an entry per layer type
 * (ModernBertConfig's, Gemma3TextConfig's: full_attention and
 * sliding_attention, each of rope_type default), their rope_theta into
 * *global / *local where given (*g_given, *l_given).  Any other key (cls
 * reads those two), and a partial_rotary_factor other than 1 (arch rotates
 * the whole head), is refused. */
static int layer_type_ropes(const json_t *root, const char *cls, const char *arch, double *global,
                            bool *g_given, double *local, bool *l_given, enc_error *err)
{
    json_t *rp = json_object_get(root, "rope_parameters");
    if (!rp || json_is_null(rp))
        return ENC_OK;
    if (!json_is_object(rp))
        return enc_error_set(err, ENC_EINVAL, "config.json: 'rope_parameters' is not an object");
    const char *key;
    json_t *v;
    json_object_foreach(rp, key, v)
    {
        if (strcmp(key, "full_attention") == 0 || strcmp(key, "sliding_attention") == 0)
            continue;
        char shown[64];
        printable(shown, sizeof shown, key);
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_parameters has '%s': %s reads one entry per layer "
                             "type, full_attention and sliding_attention",
                             shown, cls);
    }
    const json_t *full = json_object_get(rp, "full_attention");
    const json_t *sliding = json_object_get(rp, "sliding_attention");
    double gfactor = 1.0, lfactor = 1.0;
    bool gf_given = false, lf_given = false;
    int rc;
    if ((full && !json_is_null(full) &&
         (rc = rope_entry(full, "rope_parameters.full_attention.", global, g_given, &gfactor,
                          &gf_given, err)) < 0) ||
        (sliding && !json_is_null(sliding) &&
         (rc = rope_entry(sliding, "rope_parameters.sliding_attention.", local, l_given, &lfactor,
                          &lf_given, err)) < 0))
        return rc;
    if ((gf_given && gfactor != 1.0) || (lf_given && lfactor != 1.0))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_parameters.%s.partial_rotary_factor %g is not "
                             "supported (%s rotates the whole head)",
                             gf_given && gfactor != 1.0 ? "full_attention" : "sliding_attention",
                             gf_given && gfactor != 1.0 ? gfactor : lfactor, arch);
    return ENC_OK;
}

/* ModernBERT (transformers' ModernBertConfig, ModernBertEncoderLayer):
 * pre-norm, layer 0's attention norm the identity, a final norm; a GLU
 * feed-forward (input, gate = Wi(x).chunk(2)); RoPE (rotate_half) over the
 * whole head on every layer.  Biases: attention_bias and mlp_bias (must
 * agree: attnd's bias covers every Linear), norm_bias; defaults as
 * ModernBertConfig's.  position_embedding_type ("absolute" in
 * ModernBERT-base's) is not read: its positions are rotary whatever it
 * says.
 *
 * Which layers are local: transformers 5's layer_types when given (its
 * ModernBertModel picks each layer's mask and rotary table by it, and
 * builds it from global_attn_every_n_layers only when it is absent), else
 * 4.x's global_attn_every_n_layers (default 3): layer i global when i mod
 * N = 0.  A local layer sees local_attention // 2 keys each side (both
 * versions floor an odd one); transformers 5's sliding_window property is
 * that half window, and a different one in the file is refused.
 *
 * The bases, as transformers 5's ModernBertConfig.convert_rope_params_to_dict
 * sets them: rope_parameters' full_attention / sliding_attention entries
 * first (their rope_type default), then 4.x's global_rope_theta /
 * local_rope_theta, then ModernBertConfig's defaults 160000 / 10000.  A
 * local_rope_theta of null is 4.x's "the global one" (5.x cannot load it).
 * Inside rope_parameters a partial_rotary_factor other than 1 is refused;
 * a top-level one is not read (neither version's ModernBERT reads it), nor
 * 4.x's layer_norm_eps (norm_eps is the one). */
static int read_modernbert(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    bool attn_bias = false, mlp_bias = false, norm_bias = false;
    int every = 3, offset = 0, window = 128, rc;
    if ((rc = bool_field(root, "attention_bias", false, &attn_bias, err)) < 0 ||
        (rc = bool_field(root, "mlp_bias", false, &mlp_bias, err)) < 0 ||
        (rc = bool_field(root, "norm_bias", false, &norm_bias, err)) < 0 ||
        (json_object_get(root, "global_attn_every_n_layers") &&
         (rc = int_field(root, "global_attn_every_n_layers", &every, err)) < 0) ||
        (json_object_get(root, "local_attention") &&
         (rc = int_field(root, "local_attention", &window, err)) < 0))
        return rc;
    if (attn_bias != mlp_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attention_bias (%s) and mlp_bias (%s) differ; attnd's "
                             "bias covers every Linear",
                             attn_bias ? "true" : "false", mlp_bias ? "true" : "false");
    if (norm_bias && !attn_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: norm_bias true with attention_bias and mlp_bias false "
                             "is not supported (attnd's bias false drops the norms' biases too)");
    const char *every_key = "global_attn_every_n_layers";
    const json_t *lt = json_object_get(root, "layer_types");
    if (lt && !json_is_null(lt)) {
        if ((rc = layer_pattern(lt, hp->n_layers, &every, &offset, err)) < 0)
            return rc;
        every_key = "layer_types";
    }
    if (every > ENC_MAX_LAYERS)
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' gives global every %d, over %d",
                             every_key, every, ENC_MAX_LAYERS);
    int half = window / 2;
    if ((rc = opt_int_field(root, "sliding_window", 0, &half, err)) < 0)
        return rc;
    if (half != window / 2)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: sliding_window (%d) is not local_attention // 2 (%d): "
                             "transformers 5 would set local_attention from it, 4.x ignores it",
                             half, window / 2);
    int head_dim = 0;
    if ((rc = opt_int_field(root, "head_dim", 1, &head_dim, err)) < 0)
        return rc;
    if (head_dim && (long)head_dim * hp->n_heads != hp->d_model)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: head_dim (%d) is not hidden_size / "
                             "num_attention_heads; ModernBERT's heads and rotary tables take "
                             "their size from it",
                             head_dim);

    double global = 160000.0, local = 10000.0;
    bool g_given = false, l_given = false;
    if ((rc = layer_type_ropes(root, "ModernBertConfig", "ModernBERT", &global, &g_given, &local,
                               &l_given, err)) < 0)
        return rc;
    if (!g_given && (rc = number_field(root, "global_rope_theta", &global, err)) < 0)
        return rc;
    const json_t *lrt = json_object_get(root, "local_rope_theta");
    const bool local_is_global = !l_given && lrt && json_is_null(lrt);
    if (!l_given && (rc = number_field(root, "local_rope_theta", &local, err)) < 0)
        return rc;
    hp->norm_first = true;
    hp->first_norm_identity = true;
    hp->final_norm = true;
    hp->bias = attn_bias;
    hp->norm = norm_bias ? ENC_NORM_LAYERNORM : ENC_NORM_LAYERNORM_NOBIAS;
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = global;
    hp->global_every = every;
    hp->global_offset = offset;
    hp->local_window = every > 1 ? half : 0;
    hp->rope_theta_local = every > 1 ? (local_is_global ? global : local) : 0.0;
    c->key_rope_theta = g_given ? "rope_parameters.full_attention.rope_theta" : "global_rope_theta";
    c->key_norm = "norm_bias";
    c->key_global_every = every_key;
    c->key_local_window = "local_attention / 2";
    c->key_rope_theta_local = l_given           ? "rope_parameters.sliding_attention.rope_theta"
                              : local_is_global ? c->key_rope_theta
                                                : "local_rope_theta";
    return ENC_OK;
}

/* Gemma 3's text model (transformers' Gemma3TextConfig, Gemma3TextModel)
 * with use_bidirectional_attention true: google/embeddinggemma-300m and
 * its fine-tunes.  Pre-norm with Gemma3RMSNorm (rms_norm_eps; its 1 + w is
 * checkpoint.c's), each sublayer's output through a norm of its own
 * before the residual add (post_attention_layernorm,
 * post_feedforward_layernorm: sublayer_norm), a final norm; heads of
 * head_dim (Gemma3TextConfig's default 256) with num_key_value_heads
 * (default 4) key/value heads, q and k through RMSNorms of their own
 * before RoPE (rotate_half, whole head), scores over
 * sqrt(query_pre_attn_scalar) (default 256); Gemma3MLP's
 * down(act(gate(x)) * up(x)); no bias.  Its layers are full_attention or
 * sliding_attention (layer_types; else sliding_window_pattern, 4.57's
 * _sliding_window_pattern, default 6: layer i full when (i + 1) mod P =
 * 0); a sliding layer sees |i - j| < sliding_window // 2 + 1 (the
 * bidirectional window Gemma3TextConfig makes of sliding_window, default
 * 4096) and turns RoPE by rope_parameters.sliding_attention.rope_theta
 * (5.x) or rope_local_base_freq (4.x, default 10000), a full one by
 * rope_parameters.full_attention.rope_theta or rope_theta (default 1e6).
 * Refused naming the field: use_bidirectional_attention false or absent
 * (the causal text generator), attention_bias true, an
 * attn_logit_softcapping.  The embeddings are embed_tokens times
 * sqrt(hidden_size) (checkpoint.c's). */
static int read_gemma3(const json_t *root, enc_hf_config *c, enc_error *err)
{
    enc_hparams *hp = &c->hp;
    bool bidir = false, attn_bias = false;
    int window = 4096, rc;
    hp->n_kv_heads = 4; /* Gemma3TextConfig's defaults */
    hp->head_dim = 256;
    c->query_pre_attn_scalar = 256.0;
    if ((rc = bool_field(root, "use_bidirectional_attention", false, &bidir, err)) < 0 ||
        (rc = bool_field(root, "attention_bias", false, &attn_bias, err)) < 0 ||
        (rc = opt_int_field(root, "num_key_value_heads", 1, &hp->n_kv_heads, err)) < 0 ||
        (rc = opt_int_field(root, "head_dim", 1, &hp->head_dim, err)) < 0 ||
        (rc = opt_int_field(root, "sliding_window", 1, &window, err)) < 0 ||
        (rc = number_field(root, "query_pre_attn_scalar", &c->query_pre_attn_scalar, err)) < 0)
        return rc;
    if (!bidir)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: use_bidirectional_attention is not true: a causal "
                             "Gemma 3 (the text generator) is not supported (EmbeddingGemma's "
                             "is true)");
    if (attn_bias)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attention_bias true is not supported (biases on "
                             "q_proj, k_proj, v_proj and o_proj only)");
    if (given(root, "attn_logit_softcapping"))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: attn_logit_softcapping is not supported (scores "
                             "through c tanh(s / c); EmbeddingGemma's is null)");
    int every = 6, offset = 5;
    const char *every_key = "layer_types";
    const json_t *lt = json_object_get(root, "layer_types");
    if (lt && !json_is_null(lt)) {
        if ((rc = layer_pattern(lt, hp->n_layers, &every, &offset, err)) < 0)
            return rc;
    } else {
        every_key = given(root, "sliding_window_pattern") ? "sliding_window_pattern"
                                                          : "_sliding_window_pattern";
        if ((rc = opt_int_field(root, every_key, 1, &every, err)) < 0)
            return rc;
        offset = every - 1;
    }
    if (every > ENC_MAX_LAYERS)
        return enc_error_set(err, ENC_EINVAL, "config.json: '%s' gives global every %d, over %d",
                             every_key, every, ENC_MAX_LAYERS);
    double global = 1000000.0, local = 10000.0;
    bool g_given = false, l_given = false;
    if ((rc = layer_type_ropes(root, "Gemma3TextConfig", "Gemma 3", &global, &g_given, &local,
                               &l_given, err)) < 0 ||
        (!g_given && (rc = number_field(root, "rope_theta", &global, err)) < 0) ||
        (!l_given && (rc = number_field(root, "rope_local_base_freq", &local, err)) < 0))
        return rc;
    hp->norm_first = true;
    hp->sublayer_norm = true;
    hp->bias = false;
    hp->norm = ENC_NORM_RMS;
    hp->final_norm = true;
    hp->qk_norm = true;
    hp->position = ENC_POS_ROPE;
    hp->rope_style = ENC_ROPE_NEOX;
    hp->rope_dim = 0;
    hp->rope_theta = global;
    hp->global_every = every > 1 ? every : 1;
    hp->global_offset = every > 1 ? offset : 0;
    hp->local_window = every > 1 ? window / 2 : 0;
    hp->rope_theta_local = every > 1 ? local : 0.0;
    c->key_rope_theta = g_given ? "rope_parameters.full_attention.rope_theta" : "rope_theta";
    c->key_global_every = every_key;
    c->key_local_window = "sliding_window / 2";
    c->key_rope_theta_local =
        l_given ? "rope_parameters.sliding_attention.rope_theta" : "rope_local_base_freq";
    c->no_types = true; /* embed_tokens alone: no token types, no positions */
    c->no_positions = true;
    return ENC_OK;
}

/* What every family refuses or records: rope_scaling (a scaled RoPE: 4.x's
 * rotary embeddings read it, 5.x's turn it into rope_parameters; GTE's
 * fixed NTK scaling is read_gte's),
 * quantization_config (the tensors are not the float ones attnd binds),
 * pruned_heads (4.x's from_pretrained prunes those heads: smaller
 * projections); the embedding module's vocab_size, max_position_embeddings
 * and pad_token_id. */
static int read_common(const json_t *root, enc_hf_config *c, enc_error *err)
{
    if (given(root, "rope_scaling") && strcmp(c->model_type, "new") != 0) /* read_gte's */
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: rope_scaling is not supported (attnd computes RoPE "
                             "without scaling)");
    if (given(root, "quantization_config"))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: quantization_config is not supported (a quantized "
                             "checkpoint; attnd reads F32, F16 and BF16 tensors)");
    const json_t *pruned = json_object_get(root, "pruned_heads");
    if (pruned && !json_is_null(pruned) &&
        !(json_is_object(pruned) && json_object_size(pruned) == 0))
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pruned_heads is not supported (transformers prunes "
                             "those heads from the projections as it loads them)");
    c->embedding_size = c->hp.d_model;
    c->pad_token_id = -1;
    int rc;
    if ((rc = opt_int_field(root, "vocab_size", 1, &c->vocab_size, err)) < 0 ||
        (rc = opt_int_field(root, "max_position_embeddings", 1, &c->max_position_embeddings, err)) <
            0 ||
        (rc = opt_int_field(root, "pad_token_id", 0, &c->pad_token_id, err)) < 0)
        return rc;
    if (c->vocab_size > 0 && c->pad_token_id >= c->vocab_size)
        return enc_error_set(err, ENC_EINVAL,
                             "config.json: pad_token_id (%d) is not below vocab_size (%d)",
                             c->pad_token_id, c->vocab_size);
    return ENC_OK;
}

int enc_hf_config_read(const char *dir, enc_hf_config *c, enc_error *err)
{
    memset(c, 0, sizeof *c);
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return enc_error_set(err, ENC_EINVAL, "model.dir: the path is too long");
    size_t len;
    char *text = file_read_whole(path, &len, err);
    if (!text)
        return err->status;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    int rc = ENC_OK;
    if (!root)
        return enc_error_set(err, ENC_EFORMAT, "config.json: line %d, column %d: %s", jerr.line,
                             jerr.column, jerr.text);
    const json_t *mt = json_object_get(root, "model_type");
    const family *fam = NULL;
    if (!json_is_object(root)) {
        rc = enc_error_set(err, ENC_EFORMAT, "config.json: the top level is not an object");
        goto done;
    }
    if (!mt || !json_is_string(mt)) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s 'model_type'",
                           mt ? "a string expected for" : "missing");
        goto done;
    }
    if (!(fam = family_of(json_string_value(mt)))) {
        char shown[64];
        printable(shown, sizeof shown, json_string_value(mt));
        rc = enc_error_set(err, ENC_EINVAL,
                           "config.json: model_type '%s' is not supported (bert, roberta, "
                           "xlm-roberta, camembert, electra, distilbert, modernbert, mpnet, "
                           "nomic_bert, new, deberta-v2, qwen2, qwen3, "
                           "bidirectional_pplx_qwen3, mistral, gemma3_text)",
                           shown);
        goto done;
    }
    snprintf(c->model_type, sizeof c->model_type, "%s", fam->model_type);
    const json_t *dt = json_object_get(root, "dtype") ? json_object_get(root, "dtype")
                                                      : json_object_get(root, "torch_dtype");
    c->dtype = json_is_string(dt) && strcmp(json_string_value(dt), "bfloat16") == 0
                   ? ENC_DTYPE_BFLOAT16
                   : ENC_DTYPE_FLOAT32;
    c->key_d_model = fam->d_model;
    c->key_n_heads = fam->n_heads;
    c->key_d_ff = fam->d_ff;
    c->key_n_layers = fam->n_layers;
    c->key_activation = fam->activation;
    c->key_eps = fam->eps;
    enc_hparams *hp = &c->hp;
    enc_hparams_default(hp);
    hp->norm_first = false; /* every one of them is post-norm, with biases */
    hp->bias = true;
    if ((rc = int_field(root, fam->d_model, &hp->d_model, err)) < 0 ||
        (rc = int_field(root, fam->n_heads, &hp->n_heads, err)) < 0 ||
        (rc = int_field(root, fam->d_ff, &hp->d_ff, err)) < 0 ||
        (rc = int_field(root, fam->n_layers, &hp->n_layers, err)) < 0)
        goto done;
    hp->n_kv_heads = hp->n_heads;
    const json_t *act = json_object_get(root, fam->activation);
    if (!act || !json_is_string(act)) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s '%s'",
                           act ? "a string expected for" : "missing", fam->activation);
        goto done;
    }
    const char *a = json_string_value(act);
    printable(c->activation, sizeof c->activation, a);
    bool known = false;
    if (fam->glu_names) { /* NomicBertGatedMLP: fc11(x) * act(fc12(x)) */
        known = strcmp(a, "swiglu") == 0 || strcmp(a, "geglu") == 0;
        hp->ffn = a[0] == 's' ? ENC_FFN_SWIGLU : ENC_FFN_GEGLU;
        hp->activation = ENC_ACT_GELU; /* F.gelu, erf; SwiGLU's is not used */
    } else if (fam->gated && (strcmp(a, "silu") == 0 || strcmp(a, "swish") == 0)) {
        hp->ffn = ENC_FFN_SWIGLU; /* SiLU gates; activation is not used */
        hp->activation = ENC_ACT_GELU;
        known = true;
    }
    for (size_t i = 0; !known && !fam->glu_names && i < sizeof ACTIVATIONS / sizeof *ACTIVATIONS;
         i++)
        if (strcmp(a, ACTIVATIONS[i].name) == 0 &&
            !(fam->gated && ACTIVATIONS[i].act == ENC_ACT_RELU)) {
            hp->activation = ACTIVATIONS[i].act;
            hp->ffn = fam->gated ? ENC_FFN_GEGLU : ENC_FFN_MLP;
            known = true;
        }
    if (!known) {
        rc = enc_error_set(err, ENC_EINVAL, "config.json: %s '%s' is not supported (%s)",
                           fam->activation, c->activation,
                           fam->glu_names ? "swiglu, geglu: the gated feed-forward"
                           : fam->gated   ? ACTIVATION_LIST ", silu, swish"
                                          : ACTIVATION_LIST ", relu");
        goto done;
    }
    if (fam->eps) {
        const json_t *eps = json_object_get(root, fam->eps);
        if (!eps) {
            rc = enc_error_set(err, ENC_EINVAL, "config.json: missing '%s'", fam->eps);
            goto done;
        }
        if (!json_is_number(eps) || !(json_number_value(eps) > 0) ||
            !isfinite(json_number_value(eps))) {
            rc = enc_error_set(err, ENC_EINVAL, "config.json: '%s' is not a positive number",
                               fam->eps);
            goto done;
        }
        hp->layer_norm_eps = (float)json_number_value(eps);
    } else {
        hp->layer_norm_eps = DISTILBERT_EPS;
    }
    if ((rc = read_common(root, c, err)) < 0 || (rc = fam->extras(root, c, err)) < 0)
        goto done;
done:
    json_decref(root);
    return rc;
}
