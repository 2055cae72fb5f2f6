/* hparams.c - model hyperparameters: defaults, names and validation. */
#include "encoder.h"

#include <math.h>
#include <string.h>

static const char *const activation_names[] = {
    [ENC_ACT_RELU] = "relu",
    [ENC_ACT_GELU] = "gelu",
    [ENC_ACT_GELU_TANH] = "gelu_tanh",
};

void enc_hparams_default(enc_hparams *hp)
{
    *hp = (enc_hparams){
        .d_model = 512,
        .n_heads = 8,
        .n_kv_heads = 8,
        .d_ff = 2048,
        .n_layers = 1,
        .activation = ENC_ACT_RELU,
        .norm_first = false,
        .layer_norm_eps = 1e-5f,
        .bias = true,
    };
}

int enc_activation_parse(const char *name, enc_activation *out)
{
    for (size_t i = 0; i < sizeof activation_names / sizeof *activation_names; i++) {
        if (name && strcmp(name, activation_names[i]) == 0) {
            *out = (enc_activation)i;
            return ENC_OK;
        }
    }
    return ENC_EINVAL;
}

const char *enc_activation_name(enc_activation act)
{
    if ((unsigned)act < sizeof activation_names / sizeof *activation_names)
        return activation_names[act];
    return "unknown";
}

/* Checks one integer setting is in [lo, hi]. */
static int check_range(const char *name, int v, int lo, int hi, enc_error *err)
{
    if (v < lo || v > hi)
        return enc_error_set(err, ENC_EINVAL, "%s (%d) must be between %d and %d", name, v, lo,
                             hi);
    return ENC_OK;
}

int enc_hparams_validate(const enc_hparams *hp, enc_error *err)
{
    int rc;
    if ((rc = check_range("d_model", hp->d_model, 1, ENC_MAX_DIM, err)) < 0 ||
        (rc = check_range("n_heads", hp->n_heads, 1, hp->d_model, err)) < 0)
        return rc;
    if (hp->d_model % hp->n_heads != 0)
        return enc_error_set(err, ENC_EINVAL, "n_heads (%d) must divide d_model (%d)", hp->n_heads,
                             hp->d_model);
    if ((rc = check_range("n_kv_heads", hp->n_kv_heads, 1, hp->n_heads, err)) < 0 ||
        (rc = check_range("d_ff", hp->d_ff, 1, 4 * ENC_MAX_DIM, err)) < 0 ||
        (rc = check_range("n_layers", hp->n_layers, 1, ENC_MAX_LAYERS, err)) < 0)
        return rc;
    if (hp->n_heads % hp->n_kv_heads != 0)
        return enc_error_set(err, ENC_EINVAL, "n_kv_heads (%d) must divide n_heads (%d)",
                             hp->n_kv_heads, hp->n_heads);
    if ((unsigned)hp->activation > ENC_ACT_GELU_TANH)
        return enc_error_set(err, ENC_EINVAL, "activation (%d) must be relu, gelu or gelu_tanh",
                             (int)hp->activation);
    if (!(hp->layer_norm_eps > 0.0f) || !isfinite(hp->layer_norm_eps))
        return enc_error_set(err, ENC_EINVAL, "layer_norm_eps (%g) must be a positive number",
                             (double)hp->layer_norm_eps);
    return ENC_OK;
}
